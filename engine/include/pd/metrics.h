// Metrics derived from a trace, never typed in: step times, throughput, busy and idle time,
// exposed versus overlapped communication, bandwidth per collective and peak memory.
#pragma once

#include <array>
#include <cstddef>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "pd/cluster_metrics.h"
#include "pd/memory_category.h"
#include "pd/run_config.h"
#include "pd/trace.h"

namespace pd {

struct StepMetrics {
    int step = 0;
    double loss = 0.0;
    double time_s = 0.0;
};

// One figure step's headline figures on their own: how much they move from step to step is
// the noise a learner must see beside them (a figure that moves by more than an effect does
// not show that effect).
struct StepFigures {
    int step = 0;
    double time_s = 0.0;
    std::optional<double> bubble;               // pipelined runs
    std::vector<double> busy_fraction;          // per device: compute busy / the step's span
    std::vector<double> exposed_comm_device_s;  // per device
    std::vector<double> comm_device_s;          // per device: covered by communication
    double exposed_comm_s = 0.0;                // summed over devices
    double mean_busy_fraction() const;
};

// The median of some samples with their smallest and largest.
struct Spread {
    double median = 0.0;
    double min = 0.0;
    double max = 0.0;
    int samples = 0;
    bool empty() const { return samples == 0; }
};
Spread spread_of(std::vector<double> samples);

// Busy, idle and communication times cover the figure steps (RunMetrics::figure_steps).
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
    // The most its caching allocator held at once, live or cached (PyTorch's
    // max_memory_reserved); 0 where the trace does not say (an imported trace).
    std::size_t peak_reserved_bytes = 0;
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

// The steps (0-based, inclusive) that the headline figures (bubble, busy, exposed
// communication) cover: every step but the cold first one (page faults, cold caches) when the
// run has two or more, else the one step there is. Empty when no step recorded any work.
struct StepRange {
    int first = 0;
    int last = -1;
    bool empty() const { return last < first; }
    bool contains(int step) const { return step >= first && step <= last; }
    int count() const { return empty() ? 0 : last - first + 1; }
};

// Why this run's predicted bubble differs from the textbook formula, in fractions of the step
// (0.021 = 2.1 points). Each cause is the change in the replayed bubble when that effect is
// added to the one before it, in this order, so the causes sum to predicted - theoretical.
struct BubbleCauses {
    // Equal forward and equal backward times everywhere, no transfers, no optimizer, against
    // the formula: what the schedule as the engine runs it adds (zero for GPipe and 1F1B).
    double schedule = 0.0;
    double stage_imbalance = 0.0;  // each stage's own mean forward/backward times
    double transfers = 0.0;        // point-to-point sends and collectives on the critical path
    // Stream time between a task's events that no event records (launches, event records,
    // buffer frees): small per task, but every hop of the critical path pays it.
    double untraced_gaps = 0.0;
    // The optimizer after the last backward, and (device clock) the previous step's
    // optimizer still running on a stage when this step's first forward starts.
    double optimizer_tail = 0.0;
    double cold_first_microbatch = 0.0;  // micro-batch 0's own times instead of the stage mean
    double microbatch_variation = 0.0;   // every other micro-batch's own times (noise)
    double sum() const {
        return schedule + stage_imbalance + transfers + untraced_gaps + optimizer_tail +
               cold_first_microbatch + microbatch_variation;
    }
};

// The causes in words, largest first, those under 0.0005 (0.05 points) left out; a
// zero-bubble schedule's `schedule` cause is named as what it is, its F:B:W times (W's share).
// The one list Show me's metrics and the numeric cards' grading both read.
struct NamedBubbleCause {
    double fraction = 0.0;
    std::string name;
};
std::vector<NamedBubbleCause> named_bubble_causes(const BubbleCauses& causes,
                                                  PipelineSchedule schedule);

// The bubble this run's own durations imply: the schedule's dependency graph (the order the
// engine runs on each stage's compute and comm streams) replayed with each figure step's
// measured forward, backward, transfer and optimizer times, its critical path taken as the
// step time; the median step's (the mean of the middle two for an even count).
struct BubblePrediction {
    double fraction = 0.0;
    double step_time_s = 0.0;  // the replayed critical path
    BubbleCauses causes;
};

// Pipeline bubble: measured = 1 - sum(compute busy of every device) / (devices x step time),
// the median over the figure steps; theoretical = (p-1)/(m+p-1), interleaved (p-1)/(v*m+p-1).
struct BubbleMetrics {
    int stages = 1;
    int microbatches = 1;
    int chunks = 1;
    double measured = 0.0;
    double theoretical = 0.0;
    // Absent when the trace does not hold the schedule's every task (tracing off, a failed run).
    std::optional<BubblePrediction> predicted;
    PipelineSchedule schedule = PipelineSchedule::one_f_one_b;  // which textbook figure
    std::map<int, double> measured_by_step;                     // each figure step's own bubble
};

// Per device (one pipeline stage of one replica): activation memory at its peak.
struct StageActivationMetrics {
    int device = 0;
    int stage = 0;
    std::size_t peak_activation_bytes = 0;
    int microbatches_alive_at_peak = 0;  // forward started, backward not yet finished
    int max_microbatches_alive = 0;
    // Pipelined runs: the same figure from the schedule's order alone (see
    // order_max_microbatches_alive); -1 elsewhere.
    int textbook_max_microbatches_alive = -1;
    // Transformer runs without a pipeline: the activation bytes one micro-batch keeps on this
    // device by Korthikanti et al.'s count (transformer_activation_bytes); -1 elsewhere.
    double analytic_activation_bytes = -1;
};

// Parameters, gradients and optimizer state live at the end of the run beside the analytic
// value for the strategy (fp32; AdamW keeps 2 floats of state per parameter, SGD 1).
struct ModelStateMetrics {
    int device = 0;
    std::size_t parameters = 0, gradients = 0, optimizer_state = 0;
    double analytic_parameters = 0, analytic_gradients = 0, analytic_optimizer_state = 0;
    // ZeRO-Offload: what the device keeps in host memory, measured and analytic.
    std::size_t host_parameters = 0, host_gradients = 0, host_optimizer_state = 0;
    double analytic_host = 0;
    std::size_t host_total() const {
        return host_parameters + host_gradients + host_optimizer_state;
    }
    // ZeRO-Infinity: what the device keeps in its NVMe share, measured and analytic.
    std::size_t nvme_parameters = 0, nvme_optimizer_state = 0;
    double analytic_nvme = 0;
    std::size_t nvme_total() const { return nvme_parameters + nvme_optimizer_state; }
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
    StepRange figure_steps;  // what busy, communication and bubble figures cover
    std::vector<DeviceMetrics> devices;
    std::vector<CollectiveMetrics> collectives;  // per device, over the whole run
    // The same over figure_steps only (empty when there are none): what a table under
    // "Figures over steps 2–3" counts.
    std::vector<CollectiveMetrics> figure_collectives;
    double exposed_comm_s = 0.0;     // summed over devices, over figure_steps
    double overlapped_comm_s = 0.0;  // summed over devices, over figure_steps
    // Each figure step's own figures, in step order (empty for a run whose steps overlap in
    // time, as an asynchronous parameter server's do: there a step has no span of its own).
    std::vector<StepFigures> figure_step_samples;
    // How many runs figure_step_samples (and the medians read from them) pool: a scenario's
    // repeats (pool_repeats), else 1.
    int runs_pooled = 1;

    // Link tiers, all-reduce algorithms and the straggler, over figure_steps.
    ClusterMetrics cluster;

    // Filled by the config-aware overload.
    std::size_t parameter_count = 0;
    std::optional<BubbleMetrics> bubble;  // pipelined runs
    std::vector<StageActivationMetrics> stage_activations;
    std::vector<ModelStateMetrics> model_state;
    std::vector<StageBoundary> stage_boundaries;
    // Buffer bytes each device hands to collectives (and sends), per step, by kind.
    std::map<std::string, double> comm_bytes_per_step;
    // ps: how many applied gradients had each staleness (versions behind the server).
    std::map<int, int> staleness_histogram;
};

// Adds the repeats' figure steps to `m`: their samples pooled, the median step time and
// bubble taken over all of them (the figures a card with `repeats` shows).
void pool_repeats(RunMetrics& m, const std::vector<RunMetrics>& repeats);

// nccl-tests' bus-bandwidth factors: all-reduce 2(n-1)/n, reduce-scatter and all-gather
// (n-1)/n, broadcast 1.
double bus_bandwidth_factor(const std::string& op, int ranks);

// The steady steps of a trace (see StepRange).
StepRange figure_steps(const Trace& trace);

// The share of gradient values exactly zero as the updates received them (StepRecord), mean
// over the applied steps after the first applied one (whose body gradients are all zero: the
// classifier head starts at zero); none where the run did not measure it or had no such step.
std::optional<double> gradient_zero_fraction(const std::vector<StepRecord>& steps);
// adamw8bit: the relative RMS error of the stored 8-bit state (m when `first_moment`, else v)
// against the fp32 values it quantizes, mean over the run's updates; none without 8-bit state.
std::optional<double> state_quantization_error(const std::vector<StepRecord>& steps,
                                               bool first_moment);
// fp8: what the blocks' FP8 casts did over a run (the reporting device's, StepRecord).
struct Fp8RunSummary {
    double forward_error = 0;  // relative RMS error of the forward casts, mean over the steps
    // The gradients' casts: the share of values flushed to zero in the first step whose
    // gradients had any (cast at scale 1: no amax history yet) and in the last step (scales
    // from the history), and the last step's relative RMS error (< 0: no gradients cast).
    double first_flushed = -1;
    double last_flushed = -1;
    double last_gradient_error = -1;
    long long saturated = 0;  // values clamped to the largest finite value, over the run
    double scale_spread = 0;  // the last step's largest per-tensor scale over its smallest
};
std::optional<Fp8RunSummary> fp8_run_summary(const std::vector<StepRecord>& steps);
// Collective calls grouped by operation, bytes and group size, counted per device: over the
// whole run, or over the calls tagged with one of `steps`.
std::vector<CollectiveMetrics> collective_metrics(const Trace& trace,
                                                  std::optional<StepRange> steps = std::nullopt);

// The last checkpoint a run wrote (Trace::checkpoints): its step (-1: none), its files and bytes,
// and each device's bytes (0 for a device that wrote nothing).
struct CheckpointSummary {
    int step = -1;
    int files = 0;
    std::size_t bytes = 0;
    std::vector<std::size_t> device_bytes;
};
CheckpointSummary last_checkpoint(const Trace& trace);

// What the run read from its dataset (Trace::data), device by device; present is false
// without one.
struct DataSummary {
    bool present = false;
    int examples = 0;  // in the dataset
    int distinct_read = 0;
    int reads = 0;  // examples read, all devices and steps
    // Reads of an example that another device also read in the same step, over all reads
    // (sharding off: every pipeline reads the same batches).
    double duplicate_fraction = 0.0;
    int epochs = 0;  // epochs begun (the most of any device)
    struct Device {
        int steps_per_epoch = 0;
        int examples_kept = 0;     // its pipeline's shard, per epoch
        int examples_scanned = 0;  // what its pipeline reads to get it, per epoch
        int files_opened = 0;      // files its pipeline reads from
        int files_read = 0;        // distinct files its reads came from
        int reads = 0;
    };
    std::vector<Device> devices;
};
DataSummary summarize_data(const Trace& trace);

RunMetrics compute_metrics(const Trace& trace, int global_batch);
// All of the above plus what needs the run's settings: bubble, activations per stage, model
// state beside its analytic size, stage boundaries, communication bytes per step.
RunMetrics compute_metrics(const Trace& trace, const RunConfig& config);

// Units of each global model chunk for a pipelined config (balanced by parameter count).
std::vector<StageBoundary> stage_boundaries(const RunConfig& config);

}  // namespace pd
