#include "pd/run_config.h"

#include <cmath>

#include "pd/error.h"
#include "pd/units.h"

namespace pd {

std::string_view name_of(StrategyKind s) {
    switch (s) {
        case StrategyKind::single:
            return "single";
        case StrategyKind::dp:
            return "dp";
        case StrategyKind::ps:
            return "ps";
    }
    return "?";
}

std::string_view name_of(ClockMode c) {
    switch (c) {
        case ClockMode::wall:
            return "wall";
        case ClockMode::device:
            return "device";
        case ClockMode::automatic:
            return "auto";
    }
    return "?";
}

std::string_view name_of(OptimizerKind o) {
    return o == OptimizerKind::sgd ? "sgd" : "adamw";
}

double RunConfig::effective_lr() const {
    if (lr > 0) return lr;
    return optimizer == OptimizerKind::sgd ? 0.05 : 2e-3;
}

int RunConfig::data_parallel_replicas() const {
    switch (strategy) {
        case StrategyKind::single:
            return 1;
        case StrategyKind::dp:
            return devices;
        case StrategyKind::ps:
            return devices - 1;
    }
    return 1;
}

namespace {

std::string source_of(const ConfigSources& sources, const std::string& key) {
    const auto it = sources.find(key);
    if (it != sources.end()) return it->second;
    std::string flag = "--" + key;
    for (char& ch : flag)
        if (ch == '_') ch = '-';
    return flag;
}

}  // namespace

void validate(const RunConfig& c, const ConfigSources& sources) {
    auto fail = [&](const std::string& key, const std::string& reason) {
        throw BadInput(source_of(sources, key), reason, __FILE__, __LINE__);
    };
    constexpr int kMaxDevices = 64;
    if (c.devices < 1)
        fail("devices", "must be at least 1 (got " + std::to_string(c.devices) + ")");
    if (c.devices > kMaxDevices)
        fail("devices", "at most " + std::to_string(kMaxDevices) + " devices are supported (got " +
                            std::to_string(c.devices) + ")");
    if (c.strategy == StrategyKind::single && c.devices != 1)
        fail("devices", "strategy 'single' runs on exactly 1 device (got " +
                            std::to_string(c.devices) + "); use 'dp' or 'ps' for more");
    if (c.strategy == StrategyKind::ps && c.devices < 2)
        fail("devices",
             "strategy 'ps' needs at least 2 devices: device 0 is the parameter "
             "server and the others are workers (got " +
                 std::to_string(c.devices) + ")");
    if (c.layers < 1 || c.layers > 256)
        fail("layers", "must be between 1 and 256 (got " + std::to_string(c.layers) + ")");
    if (c.width < 1 || c.width > 8192)
        fail("width", "must be between 1 and 8192 (got " + std::to_string(c.width) + ")");
    if (c.input_dim < 1) fail("input_dim", "must be at least 1");
    if (c.classes < 2) fail("classes", "must be at least 2");
    if (c.batch < 1) fail("batch", "must be at least 1 (got " + std::to_string(c.batch) + ")");
    if (c.steps < 1 || c.steps > 100000)
        fail("steps", "must be between 1 and 100000 (got " + std::to_string(c.steps) + ")");
    const int replicas = c.data_parallel_replicas();
    if (c.batch % replicas != 0)
        fail("batch", "the global batch " + std::to_string(c.batch) +
                          " does not divide evenly over " + std::to_string(replicas) +
                          (c.strategy == StrategyKind::ps ? " workers" : " devices"));
    if (!(c.lr >= 0) || !std::isfinite(c.lr))
        fail("lr", "must be a positive number (or 0 for the optimizer's default)");
    if (c.bucket_bytes < sizeof(float)) fail("bucket_bytes", "must be at least 4 bytes");
    if (c.capacity_bytes == 0) fail("capacity", "must be more than 0 bytes");
    if (!(c.link.latency_us >= 0) || !std::isfinite(c.link.latency_us))
        fail("link_latency_us", "must be 0 or more microseconds");
    if (!(c.link.gbps > 0) || !std::isfinite(c.link.gbps))
        fail("link_gbps", "must be more than 0 GB/s");
    if (!(c.collective_timeout_s > 0)) fail("timeout_s", "must be more than 0 seconds");
}

ClockMode resolve_clock(const RunConfig& config, unsigned hardware_threads) {
    if (config.clock != ClockMode::automatic) return config.clock;
    const unsigned streams = static_cast<unsigned>(config.devices) * 2;
    return streams <= std::max(1u, hardware_threads) ? ClockMode::wall : ClockMode::device;
}

}  // namespace pd
