// Metrics derived from a trace, never typed in: step times, throughput, busy and idle time,
// exposed versus overlapped communication, bandwidth per collective and peak memory.
#pragma once

#include <array>
#include <cstddef>
#include <string>
#include <vector>

#include "pd/memory_category.h"
#include "pd/trace.h"

namespace pd {

struct StepMetrics {
    int step = 0;
    double loss = 0.0;
    double time_s = 0.0;
};

struct DeviceMetrics {
    int device = 0;
    double busy_s = 0.0;  // compute-stream time in forward, backward and optimizer work
    double idle_s = 0.0;
    double busy_fraction = 0.0;
    double comm_s = 0.0;          // time covered by communication events
    double exposed_comm_s = 0.0;  // communication not hidden behind compute
    double overlapped_comm_s = 0.0;
    std::array<std::size_t, kMemoryCategoryCount> peak_bytes{};
    std::size_t peak_total_bytes = 0;  // peak of the sum of categories
};

struct CollectiveMetrics {
    std::string op;
    std::size_t bytes = 0;  // per call, per device
    int ranks = 1;
    int count = 0;  // calls per device over the run
    double mean_time_s = 0.0;
    double algbw_gbps = 0.0;  // bytes / time
    double busbw_gbps = 0.0;  // algbw scaled as nccl-tests does
};

struct RunMetrics {
    std::vector<StepMetrics> steps;
    double final_loss = 0.0;
    double median_step_time_s = 0.0;
    double samples_per_s = 0.0;
    std::vector<DeviceMetrics> devices;
    std::vector<CollectiveMetrics> collectives;
    double exposed_comm_s = 0.0;  // summed over devices
    double overlapped_comm_s = 0.0;
};

// nccl-tests' bus-bandwidth factors: all-reduce 2(n-1)/n, reduce-scatter and all-gather
// (n-1)/n, broadcast 1.
double bus_bandwidth_factor(const std::string& op, int ranks);

RunMetrics compute_metrics(const Trace& trace, int global_batch);

}  // namespace pd
