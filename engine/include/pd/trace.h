// What a run records: timed events per stream, memory samples per device and category,
// collective calls, and the loss of every step. Plain data, produced by the engine and read
// by metrics, exporters and the visualizer.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "pd/memory_category.h"
#include "pd/run_config.h"

namespace pd {

enum class EventKind {
    forward,
    backward,
    optimizer,
    reduce_scatter_step,
    all_gather_step,
    broadcast,
    send,
    recv,
    wait,
    oom,
    copy,        // parameter/gradient staging on one device
    collective,  // a whole collective in one library call (NCCL): its phases are not visible
    // Zero-bubble schedules split a backward: `backward` is then B, the input gradient on the
    // critical path, and this is W, the weight gradient, which may wait to fill a bubble.
    backward_weight,
    recompute,  // activation recomputation: a forward re-run inside the backward
    // One pairwise exchange of an all-to-all (expert parallelism's dispatch and combine):
    // this device's chunk for `peer` sent while another's chunk arrives.
    all_to_all_step,
    // Imported traces: compute whose phase (forward, backward, optimizer) the trace does not
    // say, e.g. a GPU kernel launched outside autograd's backward and the optimizer.
    kernel,
};
// Every kind above: the last one plus one (keep it last).
inline constexpr std::size_t kEventKindCount = static_cast<std::size_t>(EventKind::kernel) + 1;
std::string_view name_of(EventKind k);
bool is_compute(EventKind k);
bool is_communication(EventKind k);

// host: the device's side of the host (ZeRO-Offload's PCIe copies and the optimizer step the
// CPU runs for it); a run that offloads nothing leaves it empty.
enum class StreamKind : int { compute = 0, comm = 1, host = 2 };
inline constexpr int kStreamsPerDevice = 3;
std::string_view name_of(StreamKind s);

enum class CollectivePhase { none, reduce_scatter, all_gather };

struct TraceEvent {
    int device = 0;
    StreamKind stream = StreamKind::compute;
    EventKind kind = EventKind::forward;
    std::string label;
    int step = -1;
    int microbatch = -1;
    int stage = -1;
    int layer = -1;
    CollectivePhase phase = CollectivePhase::none;
    int step_index = -1;  // index of a ring step within its collective
    int chunk = -1;
    int peer = -1;  // the device data went to (send) or came from (recv)
    std::size_t bytes = 0;
    // The link tier the transfer crossed (its time on the device clock came from that tier);
    // none for compute and for imported traces.
    LinkTier tier = LinkTier::none;
    std::uint64_t flow_id = 0;  // pairs a send with its recv (0 = none)
    bool flow_source = false;   // true on the sending side of a flow
    std::int64_t start_ns = 0;
    std::int64_t end_ns = 0;
    std::int64_t duration_ns() const { return end_ns - start_ns; }
};

struct MemorySample {
    int device = 0;
    MemoryCategory category = MemoryCategory::parameters;
    std::size_t bytes = 0;  // live bytes of that category after the change
    std::int64_t t_ns = 0;
};

// One call of a collective on one device, spanning all its steps.
struct CollectiveRecord {
    int device = 0;
    std::string op;     // all_reduce, reduce_scatter, all_gather, broadcast
    std::string label;  // what the call was for, e.g. "tp forward block 2"
    std::size_t bytes = 0;
    int ranks = 1;
    int step = -1;
    std::int64_t start_ns = 0;
    std::int64_t end_ns = 0;
    // How it moved its data ("ring", "tree", "hierarchical", "in-network"; empty: not known,
    // as in an imported trace) and, on the group's first member only, the choice in
    // NCCL_DEBUG=INFO's manner: algorithm, transport, channels and why (see --comm-log).
    std::string algorithm;
    std::string choice;
};

// A mixture of experts' routing over the whole run, summed over devices and MoE layers.
struct ExpertRouting {
    int experts = 0;  // 0: no mixture of experts in this run
    int top_k = 1;
    int capacity = 0;  // tokens of one sequence each expert has room for, per layer
    double capacity_factor = 0.0;
    std::vector<long long> tokens_per_expert;  // kept choices, forward passes only
    long long assignments = 0;                 // token-to-expert choices made
    long long dropped = 0;                     // of those, the ones with no room left
    std::vector<double> aux_loss;  // per step: the load-balancing loss added to the objective
};

// What one step's FP8 casts did to one kind of tensor (forward tensors, or gradients) on the
// device that reports it: values not zero before the cast, those flushed to zero and those
// saturated, and the cast's relative RMS error ||x s - fp8(x s)|| / ||x s||.
struct Fp8CastSummary {
    long long nonzero = 0;
    long long flushed = 0;
    long long saturated = 0;
    double relative_error = -1.0;  // < 0: nothing cast
};

struct StepRecord {
    int step = 0;
    double loss = 0.0;
    // What the optimizer step read from the gradients, where the run checks them (mixed
    // precision or clipping, strategies single and dp; else the defaults): fp16's loss scale
    // this step's backward used (0: no loss scaling), whether the update was skipped for an
    // inf or NaN, the gradients' global L2 norm after unscaling and before clipping (< 0: not
    // measured; NaN with inf or NaN in them), and the fraction of gradient values exactly
    // zero as the update received them (< 0: not measured).
    double loss_scale = 0.0;
    bool skipped = false;
    double grad_norm = -1.0;
    double grad_zero_fraction = -1.0;
    // adamw8bit: how far the 8-bit states stored by this step's update are from the fp32
    // values they quantize (relative RMS error over the 8-bit tensors: ||deq(q) - s|| / ||s||)
    // for m and v; < 0: no 8-bit state.
    double state_error_m = -1.0;
    double state_error_v = -1.0;
    // fp8: the blocks' FP8 casts this step, and the smallest and largest per-tensor scale they
    // used (0: no FP8 in this run).
    Fp8CastSummary fp8_forward{}, fp8_gradients{};
    // TF32 or bf16 product inputs (tf32, float32_matmul_precision): the relative RMS error of
    // the inputs rounded this step on the reporting device (< 0: not rounded).
    double product_input_error = -1.0;
    double fp8_min_scale = 0.0;
    double fp8_max_scale = 0.0;
};

// ps: one gradient the server applied. Its staleness is the server's version when applying it
// minus the version of the parameters it was computed on (0 for a synchronous server).
struct GradientUpdate {
    int step = 0;
    int worker = 0;               // the worker's device
    int computed_on_version = 0;  // parameters after this many updates
    int applied_at_version = 0;   // the server's version before this update
    int staleness() const { return applied_at_version - computed_on_version; }
};

// Where a trace came from: empty for the engine's own runs; for an imported one, the files it
// was read from and what they say about the job.
struct TraceOrigin {
    bool imported = false;
    std::string producer;                      // "PyTorch profiler (Kineto)", "ParallelDeck", ...
    std::vector<std::string> files;            // per device (rank order)
    std::vector<int> ranks;                    // per device: the rank it is in the job
    int world_size = 0;                        // ranks in the job (0: not recorded)
    std::string distributed_backend;           // "nccl", "gloo" (empty: not recorded)
    std::string clock_alignment;               // how the ranks' clocks were put on one axis
    bool aligned_on_first_collective = false;  // ranks shifted onto the first collective's end
    std::vector<int> profiler_steps;  // per step index: the profiler's step number (ProfilerStep#N)
    std::vector<std::string> unknown;  // figures the traces do not record, said once each
    std::vector<std::string> notes;    // what the reader left out or inferred, said once each
    std::size_t raw_events = 0;        // events read from the files
};

struct Trace {
    ClockMode clock = ClockMode::wall;  // resolved: wall or device
    int intra_op_threads = 1;           // per device, resolved (resolve_intra_op_threads)
    LinkModel link;
    ClusterConfig cluster;  // nodes, NICs and tiers (one node by default)
    int devices = 0;
    std::vector<std::size_t> capacity_bytes;       // per device
    std::vector<std::size_t> host_capacity_bytes;  // per device: its share of host memory
    std::vector<std::size_t> nvme_capacity_bytes;  // per device: its share of NVMe
    std::vector<std::string>
        device_names;  // "device 0 (cpu)", "device 1 (cuda:0 NVIDIA H200, ...)"
    BackendKind backend = BackendKind::cpu;
    // Per device, for GPU devices: the GPU's free and total memory at the end of the run
    // (cudaMemGetInfo); empty on the CPU.
    std::vector<std::pair<std::size_t, std::size_t>> gpu_memory_bytes;
    // Per device: the most bytes its caching allocator held at once, live or cached (PyTorch's
    // max_memory_reserved); the memory samples count live bytes only.
    std::vector<std::size_t> peak_reserved_bytes;
    std::vector<TraceEvent> events;    // sorted by device, stream, start
    std::vector<MemorySample> memory;  // sorted by time
    // Each device's share of host memory (ZeRO-Offload), apart from the device's own: sorted
    // by time, empty where nothing was offloaded.
    std::vector<MemorySample> host_memory;
    // Each device's share of NVMe (ZeRO-Infinity), likewise.
    std::vector<MemorySample> nvme_memory;
    std::vector<CollectiveRecord> collectives;
    std::vector<StepRecord> steps;
    // Checkpoints written (one record per device file) and the one the run resumed from.
    struct CheckpointWrite {
        int step = 0;  // steps completed when written
        int device = 0;
        std::size_t bytes = 0;
    };
    std::vector<CheckpointWrite> checkpoints;
    struct ResumedFrom {
        int step = -1;  // -1: the run started from its initial parameters
        std::string strategy;
        int devices = 0;
    } resumed_from;
    // What each device read from the run's dataset (pd/dataset.h); present is false without one.
    struct DataReads {
        bool present = false;
        std::string policy;  // the shard policy applied (auto resolved)
        std::string api;     // distribute_dataset or from_function
        bool repeat = true;
        int pipelines = 1, replicas_per_pipeline = 1;
        int dataset_batch = 0, per_replica_batch = 0, global_batch = 0;
        std::vector<int> file_examples;     // examples in each file
        std::vector<int> shard_examples;    // per pipeline: examples it keeps per epoch
        std::vector<int> scanned_examples;  // per pipeline: examples it reads per epoch
        std::vector<int> steps_per_epoch;   // per pipeline
        std::vector<int> files_opened;      // per pipeline: files it reads from
        // Examples first, first + stride, ... (count of them) that one device read in one step.
        struct Run {
            int first = 0, count = 0, stride = 1;
        };
        struct Slice {
            int step = 0, device = 0, epoch = 0;
            std::vector<Run> runs;
        };
        std::vector<Slice> reads;  // steps in order, devices in order within a step
        // A step some pipelines had no batch for (repeat false): their devices left the
        // training loop there; -1: none did. ended_at: every pipeline ran out, the loop ended.
        int left_at_step = -1;
        std::vector<int> left_devices;
        int ended_at_step = -1;
    } data;
    // A job that failed and restarted (RunConfig::failure): every attempt on one time axis,
    // its steps numbered in the order they ran, so a step replayed after a restart has its own
    // number; trained_step maps that number to the training step it ran (empty: no restart).
    struct Restart {
        int failed_at = 0;      // the executed step the failure struck
        int resumed_from = -1;  // training steps the checkpoint resumed from held (-1: none)
        int devices_after = 0;
        std::int64_t t_ns = 0;   // where the next attempt begins
        std::string why;         // the failure
        std::string checkpoint;  // what became of the checkpoints ("" when resumed)
    };
    std::vector<Restart> restarts;
    std::vector<int> trained_step;
    std::vector<GradientUpdate> gradient_updates;  // ps only
    ExpertRouting routing;                         // mixture of experts only
    TraceOrigin origin;
};

}  // namespace pd
