// Bytes per device and memory category at one moment (peak over the run, or live at the
// playback cursor), with each device's capacity and the allocation that did not fit.
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <vector>

#include "pd/metrics.h"
#include "pd/run.h"

namespace pd::vis {

struct MemorySnapshot {
    std::vector<std::array<double, pd::kMemoryCategoryCount>> bytes;  // [device][category]
    std::vector<double> capacity;                                     // per device
    // ZeRO-Offload: after the devices' rows, `host_rows` rows of devices 0, 1, ...'s shares
    // of host memory, then (ZeRO-Infinity) `nvme_rows` of their NVMe shares, each a bar of
    // its own beside the devices' (0: nothing offloaded there).
    int host_rows = 0;
    int nvme_rows = 0;
    int devices() const { return static_cast<int>(bytes.size()) - host_rows - nvme_rows; }
    // The out-of-memory requests, one per device that ran out (RunResult::ooms, lowest device
    // first): each drawn on top of its row's bar (the device's, or its host or NVMe share's),
    // past capacity.
    std::vector<pd::OomInfo> ooms;
    int row_of(const pd::OomInfo& o) const;
    // The request that did not fit in row `row`, or null.
    const pd::OomInfo* oom_on(int row) const;
    double total(int device) const;
    // Live bytes plus a failed request, compared with capacity.
    bool over_capacity(int device) const;
};

// Peaks per category as metrics measured them (each category's own peak).
MemorySnapshot peak_memory(const pd::RunResult& result, const pd::RunMetrics& metrics);

// Live bytes at a time, found by binary search over the run's memory samples.
class MemoryTimeline {
  public:
    MemoryTimeline() = default;
    explicit MemoryTimeline(const pd::RunResult& result);
    MemorySnapshot at(std::int64_t t_ns) const;

  private:
    struct Sample {
        std::int64_t t_ns;
        double bytes;
    };
    std::vector<std::array<std::vector<Sample>, pd::kMemoryCategoryCount>> series_;
    std::vector<double> capacity_;
    std::vector<pd::OomInfo> ooms_;
    std::int64_t end_ns_ = 0;
    int host_rows_ = 0;
    int nvme_rows_ = 0;
};

}  // namespace pd::vis
