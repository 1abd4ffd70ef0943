// Metrics derived from a trace, never typed in: step times, throughput, busy and idle time,
// exposed versus overlapped communication, bandwidth per collective and peak memory.
#pragma once

#include <array>
#include <cstddef>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "pd/memory_category.h"
#include "pd/run_config.h"
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

// Pipeline bubble: measured = 1 - sum(compute busy of every device) / (devices x step time),
// theoretical = (p-1)/(m+p-1), interleaved (p-1)/(v*m+p-1).
struct BubbleMetrics {
    int stages = 1;
    int microbatches = 1;
    int chunks = 1;
    double measured = 0.0;
    double theoretical = 0.0;
};

// Per device (one pipeline stage of one replica): activation memory at its peak.
struct StageActivationMetrics {
    int device = 0;
    int stage = 0;
    std::size_t peak_activation_bytes = 0;
    int microbatches_alive_at_peak = 0;  // forward started, backward not yet finished
    int max_microbatches_alive = 0;
};

// Parameters, gradients and optimizer state live at the end of the run beside the analytic
// value for the strategy (fp32; AdamW keeps 2 floats of state per parameter, SGD 1).
struct ModelStateMetrics {
    int device = 0;
    std::size_t parameters = 0, gradients = 0, optimizer_state = 0;
    double analytic_parameters = 0, analytic_gradients = 0, analytic_optimizer_state = 0;
};

struct StageBoundary {
    int chunk = 0;  // global model chunk
    int device_stage = 0;
    int first_unit = 0;  // units: 0 input projection, 1..L blocks, L+1 head
    int end_unit = 0;
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

    // Filled by the config-aware overload.
    std::size_t parameter_count = 0;
    std::optional<BubbleMetrics> bubble;  // pipelined runs
    std::vector<StageActivationMetrics> stage_activations;
    std::vector<ModelStateMetrics> model_state;
    std::vector<StageBoundary> stage_boundaries;
    // Buffer bytes each device hands to collectives (and sends), per step, by kind.
    std::map<std::string, double> comm_bytes_per_step;
};

// nccl-tests' bus-bandwidth factors: all-reduce 2(n-1)/n, reduce-scatter and all-gather
// (n-1)/n, broadcast 1.
double bus_bandwidth_factor(const std::string& op, int ranks);

RunMetrics compute_metrics(const Trace& trace, int global_batch);
// All of the above plus what needs the run's settings: bubble, activations per stage, model
// state beside its analytic size, stage boundaries, communication bytes per step.
RunMetrics compute_metrics(const Trace& trace, const RunConfig& config);

// Units of each global model chunk for a pipelined config (balanced by parameter count).
std::vector<StageBoundary> stage_boundaries(const RunConfig& config);

}  // namespace pd
