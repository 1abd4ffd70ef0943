// Helpers shared by the engine tests: small configs and numeric comparisons.
#pragma once

#include <algorithm>
#include <cmath>
#include <vector>

#include "pd/error.h"
#include "pd/model.h"
#include "pd/run.h"

namespace pd::test {

// Small enough to run quickly under ThreadSanitizer, large enough to have several buckets.
inline RunConfig small_config(StrategyKind strategy, int devices) {
    RunConfig c;
    c.strategy = strategy;
    c.devices = devices;
    c.layers = 3;
    c.width = 32;
    c.batch = 24;
    c.steps = 5;
    c.seed = 7;
    c.bucket_bytes = 16 * 1024;
    c.clock = ClockMode::device;
    c.collective_timeout_s = 60.0;
    return c;
}

inline double relative_error(const std::vector<float>& a, const std::vector<float>& b) {
    double diff = 0, norm = 0;
    for (std::size_t i = 0; i < a.size() && i < b.size(); ++i) {
        diff += (double(a[i]) - b[i]) * (double(a[i]) - b[i]);
        norm += double(b[i]) * b[i];
    }
    if (a.size() != b.size()) return INFINITY;
    return std::sqrt(diff) / std::max(std::sqrt(norm), 1e-30);
}

// The most live bytes of one memory category a device held during the run.
inline std::size_t peak_bytes(const RunResult& r, int device, MemoryCategory category) {
    std::size_t peak = 0;
    for (const auto& s : r.trace.memory)
        if (s.device == device && s.category == category) peak = std::max(peak, s.bytes);
    return peak;
}

// The BadInput a Run made from `c` is refused with, or "" when it is accepted.
inline std::string run_refusal(const RunConfig& c) {
    try {
        Run run(c);
    } catch (const BadInput& e) {
        return e.what();
    }
    return "";
}

inline RunResult run_config(const RunConfig& c) {
    Run run(c);
    return run.execute();
}

}  // namespace pd::test
