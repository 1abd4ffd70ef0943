#include "pd/run_config.h"

#include <algorithm>
#include <cmath>
#include <utility>

#include "pd/error.h"
#include "pd/units.h"

namespace pd {

namespace {
constexpr std::pair<StrategyKind, std::string_view> kStrategies[] = {
    {StrategyKind::single, "single"}, {StrategyKind::dp, "dp"},
    {StrategyKind::ps, "ps"},         {StrategyKind::pipeline, "pipeline"},
    {StrategyKind::tp, "tp"},         {StrategyKind::zero1, "zero1"},
    {StrategyKind::zero2, "zero2"},   {StrategyKind::zero3, "zero3"},
    {StrategyKind::hybrid, "hybrid"}, {StrategyKind::cp, "cp"},
    {StrategyKind::ep, "ep"}};
constexpr std::pair<PipelineSchedule, std::string_view> kSchedules[] = {
    {PipelineSchedule::gpipe, "gpipe"},
    {PipelineSchedule::one_f_one_b, "1f1b"},
    {PipelineSchedule::interleaved, "interleaved"},
    {PipelineSchedule::zb_h1, "zb-h1"},
    {PipelineSchedule::zb_v, "zb-v"}};
constexpr std::pair<RecomputeMode, std::string_view> kRecomputeModes[] = {
    {RecomputeMode::none, "none"},
    {RecomputeMode::selective, "selective"},
    {RecomputeMode::full, "full"}};
constexpr std::pair<ModelKind, std::string_view> kModels[] = {
    {ModelKind::mlp, "mlp"}, {ModelKind::transformer, "transformer"}};
constexpr std::pair<Precision, std::string_view> kPrecisions[] = {
    {Precision::fp32, "fp32"},
    {Precision::bf16_mixed, "bf16-mixed"},
    {Precision::fp16_mixed, "fp16-mixed"}};
}  // namespace

std::string_view name_of(StrategyKind s) {
    for (const auto& [kind, name] : kStrategies)
        if (kind == s) return name;
    return "?";
}

std::string_view name_of(PipelineSchedule s) {
    for (const auto& [kind, name] : kSchedules)
        if (kind == s) return name;
    return "?";
}

std::string_view name_of(Precision p) {
    for (const auto& [kind, name] : kPrecisions)
        if (kind == p) return name;
    return "?";
}

std::string_view name_of(Fp8Format f) {
    return f == Fp8Format::hybrid ? "hybrid" : f == Fp8Format::e4m3 ? "e4m3" : "off";
}
std::string_view name_of(AmaxAlgo a) {
    return a == AmaxAlgo::max ? "max" : "most_recent";
}

std::optional<Precision> precision_from_name(std::string_view name) {
    for (const auto& [kind, n] : kPrecisions)
        if (n == name) return kind;
    return std::nullopt;
}

std::string_view name_of(ModelKind m) {
    for (const auto& [kind, name] : kModels)
        if (kind == m) return name;
    return "?";
}

std::optional<ModelKind> model_from_name(std::string_view name) {
    for (const auto& [kind, n] : kModels)
        if (n == name) return kind;
    return std::nullopt;
}

std::string_view name_of(RecomputeMode r) {
    for (const auto& [kind, name] : kRecomputeModes)
        if (kind == r) return name;
    return "?";
}

std::optional<RecomputeMode> recompute_from_name(std::string_view name) {
    for (const auto& [kind, n] : kRecomputeModes)
        if (n == name) return kind;
    return std::nullopt;
}

std::optional<StrategyKind> strategy_from_name(std::string_view name) {
    for (const auto& [kind, n] : kStrategies)
        if (n == name) return kind;
    return std::nullopt;
}

std::optional<PipelineSchedule> schedule_from_name(std::string_view name) {
    for (const auto& [kind, n] : kSchedules)
        if (n == name) return kind;
    return std::nullopt;
}

std::string_view name_of(OffloadDevice d) {
    switch (d) {
        case OffloadDevice::none:
            return "none";
        case OffloadDevice::cpu:
            return "cpu";
        case OffloadDevice::nvme:
            return "nvme";
    }
    return "?";
}

std::optional<OffloadDevice> offload_device_from_name(std::string_view name) {
    for (OffloadDevice d : {OffloadDevice::none, OffloadDevice::cpu, OffloadDevice::nvme})
        if (name_of(d) == name) return d;
    return std::nullopt;
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
    switch (o) {
        case OptimizerKind::sgd:
            return "sgd";
        case OptimizerKind::adamw:
            return "adamw";
        case OptimizerKind::lamb:
            return "lamb";
        case OptimizerKind::adamw8bit:
            return "adamw8bit";
    }
    return "adamw";
}

std::string_view name_of(BackendKind b) {
    return b == BackendKind::cpu ? "cpu" : "cuda";
}

std::optional<BackendKind> backend_from_name(std::string_view name) {
    if (name == "cpu") return BackendKind::cpu;
    if (name == "cuda") return BackendKind::cuda;
    return std::nullopt;
}

std::optional<OptimizerKind> optimizer_from_name(std::string_view name) {
    for (OptimizerKind o :
         {OptimizerKind::sgd, OptimizerKind::adamw, OptimizerKind::lamb, OptimizerKind::adamw8bit})
        if (name == name_of(o)) return o;
    return std::nullopt;
}

double RunConfig::effective_lr() const {
    if (lr > 0) return lr;
    if (optimizer == OptimizerKind::sgd) return 0.01;
    // AdamW moves every weight by about lr per step whatever its gradient's scale, so a
    // layer's output moves by about lr x fan-in: scaling lr as 1 / width keeps that move the
    // same at every width (muP's rule for Adam's hidden and output layers). 1e-3 at width 128.
    return kAdamwLrTimesWidth / width;
}

int RunConfig::data_parallel_replicas() const {
    if (strategy == StrategyKind::ps) return devices - 1;
    return effective_mesh().dp;
}

Mesh RunConfig::effective_mesh() const {
    switch (strategy) {
        case StrategyKind::single:
            return {1, 1, 1};
        case StrategyKind::dp:
        case StrategyKind::zero1:
        case StrategyKind::zero2:
        case StrategyKind::zero3:
            return {devices, 1, 1};
        case StrategyKind::ps:
            return {devices - 1, 1, 1};
        case StrategyKind::pipeline:
            return {1, devices, 1};
        case StrategyKind::tp:
            return {1, 1, devices};
        case StrategyKind::hybrid:
            return mesh;
        case StrategyKind::cp:  // each replica's ring holds its slice's sequences, in part
            return {std::max(1, mesh.dp), 1, 1};
        case StrategyKind::ep:  // every device trains on its own slice of the batch
            return {devices, 1, 1};
    }
    return {1, 1, 1};
}

int RunConfig::effective_microbatches() const {
    if (microbatches > 0) return microbatches;
    const int pp = effective_mesh().pp;
    return pp > 1 ? 2 * pp : 1;
}

int RunConfig::effective_chunks() const {
    if (schedule == PipelineSchedule::zb_v) return 2;  // the V: down the stages and back
    return schedule == PipelineSchedule::interleaved ? chunks : 1;
}

namespace {

bool accumulates(StrategyKind s) {
    return s == StrategyKind::single || s == StrategyKind::dp || s == StrategyKind::zero1 ||
           s == StrategyKind::zero2 || s == StrategyKind::zero3;
}

std::string source_of(const ConfigSources& sources, const std::string& key) {
    const auto it = sources.find(key);
    if (it != sources.end()) return it->second;
    std::string flag = "--" + key;
    for (char& ch : flag)
        if (ch == '_') ch = '-';
    return flag;
}

}  // namespace

bool setting_applies(const RunConfig& c, std::string_view key) {
    const bool pipelined = c.strategy == StrategyKind::pipeline ||
                           (c.strategy == StrategyKind::hybrid && c.mesh.pp > 1);
    if (key == "bucket_bytes" || key == "no_overlap" || key == "overlap")
        return c.strategy == StrategyKind::dp;
    if (key == "schedule" || key == "microbatches") return pipelined;
    if (key == "chunks") return pipelined && c.schedule == PipelineSchedule::interleaved;
    if (key == "dp")
        return c.strategy == StrategyKind::hybrid || c.strategy == StrategyKind::cp ||
               c.strategy == StrategyKind::ep;
    if (key == "pp" || key == "tp") return c.strategy == StrategyKind::hybrid;
    if (key == "accumulate") return accumulates(c.strategy);
    if (key == "reduce_every_microstep")
        return accumulates(c.strategy) && c.strategy != StrategyKind::single;
    if (key == "async") return c.strategy == StrategyKind::ps;
    if (key == "max_staleness") return c.strategy == StrategyKind::ps && c.async_updates;
    if (key == "hybrid_shard")
        return c.strategy == StrategyKind::zero2 || c.strategy == StrategyKind::zero3;
    if (key == "reshard_after_forward" || key == "reduce_dtype" || key == "quantized_weights" ||
        key == "quantized_gradients")
        return c.strategy == StrategyKind::zero3;
    if (key == "heads" || key == "seq_len") return c.model == ModelKind::transformer;
    if (key == "fp8_amax_history_len" || key == "fp8_amax_compute_algo" || key == "fp8_margin")
        return c.fp8.enabled();
    if (key == "offload_optimizer")
        return c.strategy == StrategyKind::zero1 || c.strategy == StrategyKind::zero2 ||
               c.strategy == StrategyKind::zero3;
    if (key == "offload_param") return c.strategy == StrategyKind::zero3;
    if (key == "host_capacity" || key == "pcie_gbps") return c.offloads();
    if (key == "nvme_capacity" || key == "nvme_read_gbps" || key == "nvme_write_gbps")
        return c.uses_nvme();
    if (key == "loss_scale" || key == "loss_scale_init" || key == "loss_scale_growth_interval")
        return c.precision == Precision::fp16_mixed;
    if (key == "clip_grad_norm")
        return c.strategy == StrategyKind::single || c.strategy == StrategyKind::dp;
    if (key == "master_weights") return c.precision != Precision::fp32;
    if (key == "comm_hook" || key == "loss_reduction") return c.strategy == StrategyKind::dp;
    // Every PowerSGD setting applies to dp (a comparison run with powersgd_rank 0 keeps them).
    if (key == "powersgd_rank" || key == "powersgd_start_iter" ||
        key == "powersgd_error_feedback" || key == "powersgd_warm_start" ||
        key == "powersgd_min_compression_rate")
        return c.strategy == StrategyKind::dp;
    if (key == "sequence_parallel")
        return c.model == ModelKind::transformer && c.effective_mesh().tp > 1;
    if (key == "cp_load_balance" || key == "cp_algorithm") return c.strategy == StrategyKind::cp;
    if (key == "experts") return c.model == ModelKind::transformer;
    if (key == "top_k" || key == "capacity_factor" || key == "aux_loss_weight")
        return c.model == ModelKind::transformer && c.experts > 0;
    return true;
}

std::string where_setting_applies(std::string_view key) {
    if (key == "bucket_bytes" || key == "no_overlap" || key == "overlap") return "strategy 'dp'";
    if (key == "schedule" || key == "microbatches")
        return "strategy 'pipeline' (or 'hybrid' with pp > 1)";
    if (key == "chunks") return "the interleaved schedule";
    if (key == "dp") return "strategies 'hybrid', 'cp' and 'ep'";
    if (key == "pp" || key == "tp") return "strategy 'hybrid'";
    if (key == "accumulate") return "strategies single, dp, zero1, zero2 and zero3";
    if (key == "reduce_every_microstep") return "strategies dp, zero1, zero2 and zero3";
    if (key == "async") return "strategy 'ps'";
    if (key == "max_staleness") return "strategy 'ps' with async";
    if (key == "hybrid_shard") return "strategies zero2 and zero3";
    if (key == "reshard_after_forward" || key == "reduce_dtype" || key == "quantized_weights" ||
        key == "quantized_gradients")
        return "strategy 'zero3' (FSDP's full sharding)";
    if (key == "heads" || key == "seq_len") return "model 'transformer'";
    if (key == "fp8_amax_history_len" || key == "fp8_amax_compute_algo" || key == "fp8_margin")
        return "FP8 runs (fp8 hybrid or e4m3)";
    if (key == "offload_optimizer") return "strategies zero1, zero2 and zero3";
    if (key == "offload_param") return "strategy 'zero3' (ZeRO-Infinity's parameter offload)";
    if (key == "host_capacity" || key == "pcie_gbps")
        return "runs that offload (offload_optimizer cpu or nvme)";
    if (key == "nvme_capacity" || key == "nvme_read_gbps" || key == "nvme_write_gbps")
        return "runs that offload to NVMe (offload_optimizer or offload_param nvme)";
    if (key == "loss_scale" || key == "loss_scale_init" || key == "loss_scale_growth_interval")
        return "precision 'fp16-mixed' (GradScaler's loss scaling)";
    if (key == "clip_grad_norm") return "strategies single and dp";
    if (key == "master_weights") return "precisions bf16-mixed and fp16-mixed";
    if (key == "comm_hook" || key.starts_with("powersgd_"))
        return "strategy 'dp' (DDP's communication hooks)";
    if (key == "loss_reduction") return "strategy 'dp' (replicas whose gradients are summed)";
    if (key == "cp_load_balance" || key == "cp_algorithm") return "strategy 'cp'";
    if (key == "experts") return "model 'transformer'";
    if (key == "top_k" || key == "capacity_factor" || key == "aux_loss_weight")
        return "a mixture of experts (model 'transformer' with experts)";
    if (key == "sequence_parallel")
        return "model 'transformer' with tensor parallelism (strategy 'tp', or 'hybrid' with tp > "
               "1)";
    return "every strategy";
}

namespace {

template <class Fail>
void validate_cluster(const RunConfig& c, Fail fail) {
    const ClusterConfig& k = c.cluster;
    const std::string devices = std::to_string(c.devices);
    if (k.nodes < 0) fail("nodes", "must be at least 1 (got " + std::to_string(k.nodes) + ")");
    if (k.devices_per_node < 0)
        fail("devices_per_node",
             "must be at least 1 (got " + std::to_string(k.devices_per_node) + ")");
    if (k.nodes > 0 && k.devices_per_node > 0 && k.nodes * k.devices_per_node != c.devices)
        fail("nodes", std::to_string(k.nodes) + " nodes x " + std::to_string(k.devices_per_node) +
                          " devices per node is not the run's " + devices + " devices");
    if (k.nodes > c.devices)
        fail("nodes", std::to_string(k.nodes) + " nodes for " + devices +
                          " devices: every node needs at least one");
    if (k.nodes > 0 && c.devices % k.nodes != 0)
        fail("nodes",
             devices + " devices do not split evenly over " + std::to_string(k.nodes) + " nodes");
    if (k.nodes == 0 && k.devices_per_node > 0 && c.devices % k.devices_per_node != 0)
        fail("devices_per_node", devices + " devices do not fill nodes of " +
                                     std::to_string(k.devices_per_node) +
                                     " (set nodes, or devices_per_node to a divisor)");
    if (k.devices_per_nic < 1)
        fail("devices_per_nic",
             "must be at least 1 (got " + std::to_string(k.devices_per_nic) + ")");
    auto check_link = [&](const LinkModel& l, const char* gbps, const char* latency) {
        if (!(l.latency_us >= 0) || !std::isfinite(l.latency_us))
            fail(latency, "must be 0 or more microseconds");
        if (!(l.bytes_per_ns > 0) || !std::isfinite(l.bytes_per_ns))
            fail(gbps, "must be more than 0 Gb/s");
    };
    check_link(k.inter, "inter_gbps", "inter_latency_us");
    check_link(k.socket, "socket_gbps", "socket_latency_us");
    const int nodes = k.node_count(c.devices);
    if (nodes > 1 && c.backend != BackendKind::cpu)
        fail("nodes",
             "a cluster of nodes is modelled on the CPU backend's device clock (a CUDA run's "
             "GPUs are the machine's own)");
    if (nodes > 1 && c.clock == ClockMode::wall)
        fail("clock",
             "'wall' times real copies inside this machine; a cluster's link tiers are "
             "modelled on the device clock (use device or auto)");
    if (c.allreduce_algorithm != CollectiveAlgorithm::ring && c.backend != BackendKind::cpu)
        fail("allreduce_algorithm",
             "chooses among the engine's own algorithms on the CPU backend (on CUDA, NCCL "
             "picks its own: set NCCL_ALGO)");
    if (c.allreduce_algorithm == CollectiveAlgorithm::in_network && !k.nvls && !k.sharp)
        fail("allreduce_algorithm",
             "'in-network' needs a switch that reduces: set nvls (inside an NVSwitch node) or "
             "sharp (InfiniBand switches across nodes)");
    if (c.allreduce_algorithm == CollectiveAlgorithm::hierarchical && nodes < 2)
        fail("allreduce_algorithm",
             "'hierarchical' reduces inside each node, then across nodes: it needs 2 or more "
             "nodes (set nodes or devices_per_node)");
    if (k.nvls && k.intra != IntraNodeLink::nvswitch)
        fail("nvls", "NVLS is the NVSwitch's reduction; a PCIe node has no switch that reduces");
    if (k.sharp && k.transport != InterNodeTransport::ib)
        fail("sharp", "SHARP runs in InfiniBand switches (inter_transport ib)");
    if (k.reducers < 0 || k.reducers > 64)
        fail("reducers",
             "must be between 0 and 64 reducer nodes (got " + std::to_string(k.reducers) + ")");
    check_link(k.reducer, "reducer_gbps", "reducer_gbps");
    if (c.allreduce_algorithm == CollectiveAlgorithm::reduction_server && k.reducers < 1)
        fail("allreduce_algorithm",
             "'reduction-server' sends the gradients to reducer nodes: set reducers (1 or more)");
    if (c.hybrid_shard && nodes < 2)
        fail("hybrid_shard",
             "shards within each node and replicates across nodes: it needs 2 or more nodes "
             "(set nodes or devices_per_node)");
    if (c.hybrid_shard && c.precision != Precision::fp32)
        fail("hybrid_shard", "runs in fp32 (its two-level gradient sum has no bf16 replay yet)");
    if (c.straggler.active()) {
        if (c.straggler.device >= c.devices)
            fail("straggler", "device " + std::to_string(c.straggler.device) +
                                  " is not in a run of " + devices + " devices");
        if (!(c.straggler.slowdown >= 1.0 && c.straggler.slowdown <= 100.0))
            fail("straggler", "slowdown must be between 1 and 100 (times its measured compute)");
        if (c.clock == ClockMode::wall || c.backend != BackendKind::cpu)
            fail("straggler",
                 "slows a device on the device clock (CPU backend, clock device or auto)");
    } else if (c.straggler.device != -1) {
        fail("straggler",
             "device must be 0 or more (got " + std::to_string(c.straggler.device) + ")");
    }
}

}  // namespace

// Strategies whose devices are data-parallel replicas of the whole model (a ZeRO shard is a
// replica's part of it): what checkpoints, datasets and restarts are built for so far.
bool replicas_own_the_model(StrategyKind s) {
    return s == StrategyKind::single || s == StrategyKind::dp || s == StrategyKind::zero1 ||
           s == StrategyKind::zero2 || s == StrategyKind::zero3;
}

void validate(const RunConfig& c, const ConfigSources& sources) {
    auto fail = [&](const std::string& key, const std::string& reason) {
        throw BadInput(source_of(sources, key), reason, __FILE__, __LINE__);
    };
    constexpr int kMaxDevices = 64;
    constexpr int kMaxThreads = 256;
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
    constexpr int kMaxBatch = 1 << 24;
    if (c.batch < 1 || c.batch > kMaxBatch)
        fail("batch", "must be between 1 and " + std::to_string(kMaxBatch) + " (got " +
                          std::to_string(c.batch) + ")");
    if (c.steps < 1 || c.steps > 100000)
        fail("steps", "must be between 1 and 100000 (got " + std::to_string(c.steps) + ")");
    if (c.strategy == StrategyKind::hybrid) {
        for (const auto& [key, size] :
             {std::pair{"dp", c.mesh.dp}, std::pair{"pp", c.mesh.pp}, std::pair{"tp", c.mesh.tp}})
            if (size < 1 || size > kMaxDevices)
                fail(key, "each mesh size must be between 1 and " + std::to_string(kMaxDevices) +
                              " (got " + std::to_string(size) + ")");
        if (c.mesh.size() != c.devices)
            fail("devices", "the mesh dp x pp x tp = " + std::to_string(c.mesh.dp) + " x " +
                                std::to_string(c.mesh.pp) + " x " + std::to_string(c.mesh.tp) +
                                " = " + std::to_string(c.mesh.size()) +
                                " does not match the device count " + std::to_string(c.devices));
    }
    // The groups --dp asks for, before anything is divided by them: a batch that does not
    // split over an impossible mesh is the mesh's fault, and the message names --dp.
    if ((c.strategy == StrategyKind::cp || c.strategy == StrategyKind::ep) &&
        (c.mesh.dp < 1 || c.devices % c.mesh.dp != 0))
        fail("dp", "the " + std::to_string(c.devices) + " devices do not split into " +
                       std::to_string(c.mesh.dp) +
                       (c.strategy == StrategyKind::cp ? " data-parallel rings"
                                                       : " expert-parallel groups"));
    const Mesh mesh = c.effective_mesh();
    const int replicas = c.data_parallel_replicas();
    const int m = c.effective_microbatches();
    if (c.microbatches < 0)
        fail("microbatches", "must be at least 1 (got " + std::to_string(c.microbatches) + ")");
    if (c.chunks < 1 || c.chunks > 256)
        fail("chunks", "must be between 1 and 256 (got " + std::to_string(c.chunks) + ")");
    if (c.batch % replicas != 0)
        fail("batch",
             "the global batch " + std::to_string(c.batch) + " does not divide evenly over " +
                 std::to_string(replicas) +
                 (c.strategy == StrategyKind::ps ? " workers" : " data-parallel replicas"));
    if ((c.batch / replicas) % m != 0)
        fail("microbatches", "each replica's batch of " + std::to_string(c.batch / replicas) +
                                 " samples does not split into " + std::to_string(m) +
                                 " equal micro-batches");
    constexpr int kMaxAccumulate = 256;
    if (c.accumulate < 1 || c.accumulate > kMaxAccumulate)
        fail("accumulate", "must be between 1 and " + std::to_string(kMaxAccumulate) + " (got " +
                               std::to_string(c.accumulate) + ")");
    if ((c.batch / replicas) % c.accumulate != 0)
        fail("accumulate", "each replica's batch of " + std::to_string(c.batch / replicas) +
                               " samples does not split into " + std::to_string(c.accumulate) +
                               " equal micro-steps");
    constexpr int kMaxRepeats = 10;
    if (c.repeats < 1 || c.repeats > kMaxRepeats)
        fail("repeats", "must be between 1 and " + std::to_string(kMaxRepeats) + " runs (got " +
                            std::to_string(c.repeats) + ")");
    if (c.max_staleness < 0 || c.max_staleness > 1000)
        fail("max_staleness",
             "must be between 0 and 1000 versions (got " + std::to_string(c.max_staleness) + ")");
    const bool transformer = c.model == ModelKind::transformer;
    if (c.strategy == StrategyKind::cp) {
        if (!transformer)
            fail("strategy", "'cp' splits sequences, so it needs model 'transformer'");
        if (c.mesh.dp < 1 || c.devices % c.mesh.dp != 0)
            fail("dp", "the " + std::to_string(c.devices) + " devices do not split into " +
                           std::to_string(c.mesh.dp) + " data-parallel rings");
        const int ring = c.devices / c.mesh.dp;
        const int parts = c.cp_load_balance ? 2 * ring : ring;
        if (c.seq_len % parts != 0)
            fail("seq_len", "context parallelism over " + std::to_string(ring) +
                                " devices cuts each sequence into " + std::to_string(parts) +
                                (c.cp_load_balance ? " chunks (2 per device, load balanced)"
                                                   : " equal parts") +
                                "; " + std::to_string(c.seq_len) + " tokens do not divide");
        if (c.cp_ulysses && c.heads % ring != 0)
            fail("cp_algorithm",
                 "'ulysses' gives each of the ring's " + std::to_string(ring) +
                     " devices whole heads for the whole sequence, so the heads must divide by " +
                     std::to_string(ring) + " (got " + std::to_string(c.heads) +
                     " heads); use 'ring', fewer devices in each ring (more dp) or more heads");
    }
    constexpr int kMaxExperts = 64;
    if (c.experts != 0 && (c.experts < 2 || c.experts > kMaxExperts))
        fail("experts", "must be 0 (a dense MLP) or between 2 and " + std::to_string(kMaxExperts) +
                            " (got " + std::to_string(c.experts) + ")");
    if (c.experts > 0) {
        if (!transformer)
            fail("experts",
                 "a mixture of experts replaces the transformer's MLP; use model "
                 "'transformer'");
        if (c.top_k < 1 || c.top_k > c.experts)
            fail("top_k", "must be between 1 and the " + std::to_string(c.experts) +
                              " experts (got " + std::to_string(c.top_k) + ")");
        if (!(c.capacity_factor > 0) || !(c.capacity_factor <= 64))
            fail("capacity_factor", "must be more than 0 and at most 64");
        if (!(c.aux_loss_weight >= 0) || !(c.aux_loss_weight <= 10))
            fail("aux_loss_weight", "must be between 0 and 10");
        if (mesh.tp > 1)
            fail("experts",
                 "tensor parallelism inside the experts is not modelled; spread the experts "
                 "over devices with strategy 'ep' instead");
        if (c.strategy == StrategyKind::cp)
            fail("experts",
                 "context parallelism with a mixture of experts is not modelled "
                 "(each sequence's capacity is counted on one device)");
    }
    if (c.strategy == StrategyKind::ep) {
        if (c.experts < 2)
            fail("strategy",
                 "'ep' spreads a mixture of experts over devices: set experts "
                 "(at least 2)");
        if (c.mesh.dp < 1 || c.devices % c.mesh.dp != 0)
            fail("dp", "the " + std::to_string(c.devices) + " devices do not split into " +
                           std::to_string(c.mesh.dp) + " expert-parallel groups");
        const int group = c.devices / c.mesh.dp;
        if (c.experts % group != 0)
            fail("experts", std::to_string(c.experts) + " experts do not spread evenly over " +
                                std::to_string(group) + " expert-parallel devices");
    }
    constexpr int kMaxSeqLen = 4096;
    if (transformer) {
        if (c.heads < 1 || c.heads > c.width || c.width % c.heads != 0)
            fail("heads", "the width " + std::to_string(c.width) +
                              " must split evenly into the attention heads (got " +
                              std::to_string(c.heads) + " heads)");
        if (c.seq_len < 1 || c.seq_len > kMaxSeqLen)
            fail("seq_len", "must be between 1 and " + std::to_string(kMaxSeqLen) +
                                " tokens (got " + std::to_string(c.seq_len) + ")");
        if (static_cast<long long>(c.batch) * c.seq_len > (1 << 24))
            fail("seq_len", "batch x seq_len = " +
                                std::to_string(static_cast<long long>(c.batch) * c.seq_len) +
                                " tokens a step is more than the 16777216 supported");
        if (mesh.tp > 1 && c.heads % mesh.tp != 0)
            fail("heads", "tensor parallelism over " + std::to_string(mesh.tp) +
                              " devices splits the attention heads evenly; " +
                              std::to_string(c.heads) + " heads do not divide by " +
                              std::to_string(mesh.tp));
        if (c.sequence_parallel && mesh.tp > 1) {
            const long long tokens =
                static_cast<long long>(c.batch / std::max(1, replicas) / std::max(1, m)) *
                c.seq_len;
            if (tokens % mesh.tp != 0)
                fail("sequence_parallel",
                     "splits each micro-batch's " + std::to_string(tokens) +
                         " tokens evenly over the " + std::to_string(mesh.tp) +
                         " tensor-parallel devices; choose a batch or seq_len where they divide");
        }
        if (c.precision != Precision::fp32)
            fail("precision",
                 "the transformer runs in fp32 only (bf16-mixed has the MLP's "
                 "rounding points, not yet LayerNorm's and attention's)");
        if (c.backend != BackendKind::cpu)
            fail("model",
                 "the transformer runs on the CPU backend only (its LayerNorm and "
                 "attention kernels have no CUDA version yet)");
        if (c.recompute != RecomputeMode::none)
            fail("recompute",
                 "the transformer keeps every activation (recomputation is "
                 "implemented for the MLP model only)");
        if (c.schedule == PipelineSchedule::zb_h1 || c.schedule == PipelineSchedule::zb_v)
            if (setting_applies(c, "schedule"))
                fail("schedule",
                     "zero-bubble schedules split the MLP's backward only; the "
                     "transformer runs gpipe, 1f1b or interleaved");
    }
    if (mesh.tp > 1 && (4 * c.width) % mesh.tp != 0)
        fail("width", "tensor parallelism over " + std::to_string(mesh.tp) +
                          " devices splits the 4 x width = " + std::to_string(4 * c.width) +
                          " hidden units evenly; choose a width where 4 x width divides by " +
                          std::to_string(mesh.tp));
    if (c.schedule == PipelineSchedule::interleaved && mesh.pp > 1) {
        if (m % mesh.pp != 0)
            fail("microbatches", "the interleaved schedule needs the micro-batch count (" +
                                     std::to_string(m) + ") to be a multiple of the " +
                                     std::to_string(mesh.pp) + " pipeline stages");
    }
    const int model_chunks = mesh.pp * c.effective_chunks();
    if (model_chunks > 1 && c.layers < model_chunks)
        fail("layers", std::to_string(mesh.pp) + " pipeline stages x " +
                           std::to_string(c.effective_chunks()) + " chunks need at least " +
                           std::to_string(model_chunks) + " blocks (got " +
                           std::to_string(c.layers) + ")");
    // Settings only some strategies read: naming one elsewhere would silently do nothing, so it
    // is an error that says where the setting applies.
    for (const auto& [key, spelled] : sources)
        if (const std::string where = where_setting_applies(key); !setting_applies(c, key))
            fail(key, "applies to " + where + " only (this run's strategy is '" +
                          std::string(name_of(c.strategy)) + "')");
    const bool pipelined = setting_applies(c, "microbatches");
    if (c.reduce_every_microstep && c.accumulate == 1)
        fail(sources.count("reduce_every_microstep") ? "reduce_every_microstep" : "accumulate",
             "reducing every micro-step needs accumulate of 2 or more (there is one micro-step)");
    if (c.async_updates && c.clock == ClockMode::wall)
        fail("clock",
             "an asynchronous parameter server runs on the device clock (the runner "
             "waits for every stream at the end of each step to read its loss, which in "
             "real time would hold the workers back; use device or auto)");
    if (c.async_updates && c.backend != BackendKind::cpu)
        fail("async",
             "runs on the CPU backend only (NCCL's send waits for its receive, and an "
             "asynchronous server sends versions its workers read later)");
    if (pipelined && c.schedule == PipelineSchedule::interleaved && c.chunks < 2)
        fail("chunks", "the interleaved schedule needs at least 2 model chunks per device (got " +
                           std::to_string(c.chunks) + ")");
    if (!(c.lr >= 0) || !std::isfinite(c.lr))
        fail("lr", "must be a positive number (or 0 for the optimizer's default)");
    if (c.bucket_bytes < sizeof(float)) fail("bucket_bytes", "must be at least 4 bytes");
    if (c.capacity_bytes == 0) fail("capacity", "must be more than 0 bytes");
    if (!(c.link.latency_us >= 0) || !std::isfinite(c.link.latency_us))
        fail("link_latency_us", "must be 0 or more microseconds");
    if (!(c.link.bytes_per_ns > 0) || !std::isfinite(c.link.bytes_per_ns))
        fail("link_gbps", "must be more than 0 Gb/s");
    validate_cluster(c, fail);
    if (!(c.collective_timeout_s > 0)) fail("timeout_s", "must be more than 0 seconds");
    if (c.threads < 0 || c.threads > kMaxThreads)
        fail("threads", "must be between 1 and " + std::to_string(kMaxThreads) +
                            " (or 0 for hardware threads / devices; got " +
                            std::to_string(c.threads) + ")");
    if (c.backend == BackendKind::cuda && c.clock == ClockMode::device)
        fail("clock",
             "'device' times CPU threads; a CUDA run is timed by CUDA events on each stream "
             "(use wall or auto)");
    // On the CPU, TF32 is emulated: every product's inputs rounded to 10 mantissa bits.
    if (c.tf32 && c.backend == BackendKind::cpu && c.model == ModelKind::transformer)
        fail("tf32",
             "the CPU backend rounds the MLP's products to TF32; the transformer's attention "
             "kernels have no TF32 rounding yet");
    if (c.bf16_products) {
        if (c.tf32)
            fail("float32_matmul_precision",
                 "'medium' rounds products' inputs to bf16 and tf32 to TF32: choose one");
        if (c.backend != BackendKind::cpu)
            fail("float32_matmul_precision",
                 "'medium' is emulated on the CPU backend only (bf16 product inputs)");
        if (c.model == ModelKind::transformer)
            fail("float32_matmul_precision",
                 "'medium': the CPU backend rounds the MLP's products; the transformer's "
                 "attention kernels have no bf16 input rounding yet");
        if (c.precision != Precision::fp32)
            fail("float32_matmul_precision", "'medium' rounds float32 products; under '" +
                                                 std::string(name_of(c.precision)) +
                                                 "' their inputs are 16-bit already");
    }
    if (c.tf32 && c.precision != Precision::fp32)
        fail("tf32", "rounds float32 products; under '" + std::string(name_of(c.precision)) +
                         "' their inputs are 16-bit already");
    if (c.precision != Precision::fp32 && c.backend != BackendKind::cpu)
        fail("precision", "'" + std::string(name_of(c.precision)) +
                              "' runs on the CPU backend only (its 16-bit rounding and fp32 "
                              "master weights have no CUDA kernels yet; use --backend cpu or "
                              "precision fp32)");
    if (c.precision == Precision::fp16_mixed && c.strategy != StrategyKind::single &&
        c.strategy != StrategyKind::dp)
        fail("precision",
             "'fp16-mixed' runs under strategies single and dp so far (their replicas hold whole "
             "gradients, so each finds the same inf or NaN; a sharded or model-parallel run "
             "needs ShardedGradScaler's all-reduce of that finding, not built yet)");
    if (c.fp8.enabled()) {
        const std::string fp8 = "'" + std::string(name_of(c.fp8.format)) + "' ";
        if (c.strategy != StrategyKind::single && c.strategy != StrategyKind::dp)
            fail("fp8", fp8 +
                            "runs under strategies single and dp so far (each replica keeps its "
                            "own scales; sharded and model-parallel products have none yet)");
        if (c.model != ModelKind::mlp)
            fail("fp8", fp8 +
                            "casts the MLP model's block products; the transformer's have no "
                            "FP8 casts yet (model mlp)");
        if (c.backend != BackendKind::cpu)
            fail("fp8", fp8 + "is emulated on the CPU backend only (no CUDA FP8 kernels yet)");
        if (c.precision == Precision::fp16_mixed)
            fail("fp8", fp8 +
                            "runs beside fp32 or bf16-mixed (TE's FP8 recipes take no loss "
                            "scaling; got fp16-mixed)");
        if (c.recompute != RecomputeMode::none)
            fail("fp8", fp8 + "with recomputation is not built yet (recompute none)");
        if (c.tf32 || c.bf16_products)
            fail("fp8", fp8 +
                            "and tf32 (or float32_matmul_precision) both round the products' "
                            "inputs: choose one");
        if (c.accumulate > 1)
            fail("fp8", fp8 + "with gradient accumulation is not built yet (accumulate 1)");
    }
    if (c.offloads()) {
        const std::string device = "'" + std::string(name_of(c.offload_optimizer)) + "' ";
        if (c.backend != BackendKind::cpu)
            fail("offload_optimizer",
                 device +
                     "runs on the CPU backend only so far (its PCIe copies from a GPU are not "
                     "built yet)");
        if (c.quantized_gradients || c.hybrid_shard || c.fp32_reduce)
            fail("offload_optimizer",
                 device + "with qgZ, hybrid sharding or reduce_dtype fp32 is not built yet");
        if (c.optimizer == OptimizerKind::lamb || c.optimizer == OptimizerKind::adamw8bit)
            fail("offload_optimizer", device + "runs SGD and AdamW (DeepSpeedCPUAdam's), not '" +
                                          std::string(name_of(c.optimizer)) + "'");
        if (c.host_capacity_bytes == 0) fail("host_capacity", "must be more than 0 bytes");
    }
    if (c.offload_param != OffloadDevice::none) {
        if (c.strategy != StrategyKind::zero3)
            fail("offload_param",
                 "is ZeRO-3's (ZeRO-Infinity shards the parameters first): use "
                 "strategy zero3");
        if (!c.offloads())
            fail("offload_param",
                 "needs offload_optimizer cpu or nvme as well: the host's update writes the "
                 "offloaded parameter shard in place (a device-side update of a host shard is "
                 "not built)");
    }
    if (c.dataset.enabled()) {
        if (!replicas_own_the_model(c.strategy))
            fail("dataset",
                 "is read by strategies single, dp and zero1-3 (each device a replica "
                 "with its own slice of the batch), not '" +
                     std::string(name_of(c.strategy)) + "'");
        if (c.accumulate > 1)
            fail("dataset",
                 "with accumulate is not built (a micro-step's slices are not the "
                 "replicas' own batches)");
        const DataPlan plan = plan_data(c.dataset, replicas, c.cluster.node_count(c.devices),
                                        source_of(sources, "dataset"));
        if (c.batch != plan.global_batch)
            fail("batch", "is " + std::to_string(c.batch) +
                              ", but the dataset makes a global "
                              "batch of " +
                              std::to_string(plan.global_batch) +
                              " (leave batch out: the dataset sets it)");
    }
    if (c.failure.enabled()) {
        const FailurePlan& f = c.failure;
        const int nodes = c.cluster.node_count(c.devices);
        if (!replicas_own_the_model(c.strategy))
            fail("fail",
                 "restarts reload a checkpoint: strategies single, dp and zero1-3 (those "
                 "that checkpoint so far)");
        if ((f.device >= 0) == (f.node >= 0)) fail("fail", "names either a device or a node");
        if (f.device >= c.devices)
            fail("fail", "device " + std::to_string(f.device) + " is not one of the " +
                             std::to_string(c.devices) + " devices");
        if (f.node >= nodes)
            fail("fail", "node " + std::to_string(f.node) + " is not one of the " +
                             std::to_string(nodes) + " nodes");
        if (f.step >= c.steps)
            fail("fail", "step " + std::to_string(f.step) + " is past the run's " +
                             std::to_string(c.steps) + " steps (counting from 0)");
        if (f.worker_only && !f.replaced)
            fail("fail",
                 "restart worker restarts the failed worker in place: it needs its node "
                 "(replaced true)");
        if (!f.replaced && f.node < 0)
            fail("fail", "replaced false is for a node (a device fails with its node)");
        if (c.dataset.enabled() || c.resume_from_step > 0 || !c.resume_dir.empty())
            fail("fail", "with a dataset, resume or resume_from is not built");
        if (c.max_restarts < 0 || c.max_restarts > 100)
            fail("max_restarts", "must be between 0 and 100");
        if (c.min_nodes < 0 || c.min_nodes > nodes)
            fail("min_nodes", "must be between 1 and the job's " + std::to_string(nodes) +
                                  " nodes (0: all of them)");
        if (!f.replaced && c.min_nodes > 0 && c.min_nodes < nodes) {
            // The job on the nodes left must be one the engine can run.
            RunConfig smaller = c;
            smaller.failure = {};
            smaller.max_restarts = smaller.min_nodes = 0;
            smaller.devices -= c.devices / nodes;
            smaller.cluster.nodes = nodes - 1;
            smaller.cluster.devices_per_node = 0;
            try {
                validate(smaller);
            } catch (const BadInput& e) {
                fail("min_nodes", std::string("the job on the ") + std::to_string(nodes - 1) +
                                      " nodes left after the failure cannot run: " + e.what());
            }
        }
    } else if (c.max_restarts != 0 || c.min_nodes != 0) {
        fail(c.max_restarts != 0 ? "max_restarts" : "min_nodes",
             "applies to a job with a failure (fail)");
    }
    if (c.checkpoint_every < 0)
        fail("checkpoint_every",
             "must be 0 (none) or more (got " + std::to_string(c.checkpoint_every) + ")");
    if (c.resume_from_step > 0 && !c.resume_dir.empty())
        fail("resume_from", "and resume both name where to start from: choose one");
    if (c.resume_from_step > 0 && c.resume_from_step >= c.steps)
        fail("resume_from", "after_step " + std::to_string(c.resume_from_step) +
                                " leaves none of this run's " + std::to_string(c.steps) +
                                " steps to run");
    if (c.checkpoints()) {
        const std::string key = c.checkpoint_every > 0   ? "checkpoint_every"
                                : c.resume_from_step > 0 ? "resume_from"
                                                         : "resume";
        if (!replicas_own_the_model(c.strategy))
            fail(key,
                 "checkpoints are built for strategies single, dp and zero1-3 so far (this "
                 "run's is '" +
                     std::string(name_of(c.strategy)) + "')");
        if (c.backend != BackendKind::cpu)
            fail(key, "checkpoints run on the CPU backend only so far");
        if (c.optimizer != OptimizerKind::sgd && c.optimizer != OptimizerKind::adamw)
            fail(key, "checkpoints hold SGD and AdamW state so far, not '" +
                          std::string(name_of(c.optimizer)) + "'");
        if (c.precision == Precision::fp16_mixed || c.fp8.enabled() || c.powersgd.rank > 0 ||
            c.hybrid_shard)
            fail(key,
                 "checkpoints do not hold GradScaler, FP8 scaling, PowerSGD or hybrid-shard "
                 "state yet (fp32 or bf16-mixed, plain data parallelism or ZeRO)");
    }
    if (c.uses_nvme() && c.nvme_capacity_bytes == 0)
        fail("nvme_capacity", "must be more than 0 bytes");
    if (!(c.pcie.bytes_per_ns > 0) || !std::isfinite(c.pcie.bytes_per_ns))
        fail("pcie_gbps", "must be more than 0 Gb/s");
    if (!(c.nvme_read.bytes_per_ns > 0) || !std::isfinite(c.nvme_read.bytes_per_ns))
        fail("nvme_read_gbps", "must be more than 0 Gb/s");
    if (!(c.nvme_write.bytes_per_ns > 0) || !std::isfinite(c.nvme_write.bytes_per_ns))
        fail("nvme_write_gbps", "must be more than 0 Gb/s");
    if (c.fp8.amax_history_len < 1 || c.fp8.amax_history_len > 65536)
        fail("fp8_amax_history_len", "must be from 1 to 65536 (TE's default 1024; got " +
                                         std::to_string(c.fp8.amax_history_len) + ")");
    if (c.fp8.margin < 0 || c.fp8.margin > 30)
        fail("fp8_margin", "must be from 0 to 30 (scale = fp8 max / amax / 2^margin; got " +
                               std::to_string(c.fp8.margin) + ")");
    if (c.optimizer == OptimizerKind::lamb || c.optimizer == OptimizerKind::adamw8bit) {
        const std::string name(name_of(c.optimizer));
        if (c.strategy != StrategyKind::single && c.strategy != StrategyKind::dp)
            fail("optimizer",
                 "'" + name +
                     "' runs under strategies single and dp so far (it works tensor by tensor: "
                     "LAMB's trust ratio needs each tensor's norm, 8-bit blocks restart at each "
                     "tensor; a sharded or model-parallel run would need those across devices)");
        if (c.backend != BackendKind::cpu)
            fail("optimizer", "'" + name + "' runs on the CPU backend only (no CUDA kernel yet)");
    }
    if (c.optimizer == OptimizerKind::adamw8bit && c.precision != Precision::fp32)
        fail("optimizer", "'adamw8bit' updates fp32 parameters (precision fp32; got '" +
                              std::string(name_of(c.precision)) + "')");
    // Above 4096 bitsandbytes has no kernel; a block as large as the tensor is Dettmers et
    // al.'s baseline, one absmax for the whole tensor.
    if (c.optimizer_blocksize < 64 || c.optimizer_blocksize > (1 << 24) ||
        (c.optimizer_blocksize & (c.optimizer_blocksize - 1)) != 0)
        fail("optimizer_blocksize",
             "must be a power of two from 64 to 2^24 (bitsandbytes: 256 or 2048; one larger "
             "than a tensor quantizes it with one absmax; got " +
                 std::to_string(c.optimizer_blocksize) + ")");
    if (c.min_8bit_size < 1)
        fail("min_8bit_size",
             "must be at least 1 element (got " + std::to_string(c.min_8bit_size) + ")");
    if (c.quantized_weights && c.backend != BackendKind::cpu)
        fail("quantized_weights", "runs on the CPU backend only (no CUDA quantization kernel)");
    if (c.quantized_gradients && c.strategy == StrategyKind::zero3) {
        if (c.backend != BackendKind::cpu)
            fail("quantized_gradients",
                 "runs on the CPU backend only (no CUDA quantization kernel)");
        if (c.fp32_reduce)
            fail("quantized_gradients",
                 "sends int8 gradients, so it cannot also reduce them in fp32 (reduce_dtype "
                 "fp32): choose one");
        if (c.hybrid_shard)
            fail("quantized_gradients",
                 "is built for one shard group (one all-to-all hop); ZeRO++'s second hop "
                 "across nodes, which hybrid_shard needs, is not");
    }
    if (c.reshard_to != 0 && !c.reshard_after_forward)
        fail("reshard_after_forward", "is either false or a group size, not both");
    if (c.reshard_to != 0) {
        if (c.reshard_to < 2 || c.reshard_to >= c.devices || c.devices % c.reshard_to != 0)
            fail("reshard_after_forward",
                 "as an integer, the group size to reshard to: a divisor of the " +
                     std::to_string(c.devices) + " devices other than 1 and " +
                     std::to_string(c.devices) + " (FSDP2's rule; got " +
                     std::to_string(c.reshard_to) + ")");
        if (c.hybrid_shard)
            fail("reshard_after_forward",
                 "an integer group size needs one shard group over every device (not "
                 "hybrid_shard)");
    }
    if (c.fp32_reduce && c.precision != Precision::bf16_mixed)
        fail("reduce_dtype",
             "'fp32' is MixedPrecisionPolicy(param_dtype=bf16, reduce_dtype=fp32): it needs "
             "precision 'bf16-mixed' (got '" +
                 std::string(name_of(c.precision)) + "')");
    if (c.fp32_reduce && !c.master_weights)
        fail("master_weights",
             "under reduce_dtype fp32 the fp32 sharded parameters are the optimizer's copy; "
             "there is no separate master to drop");
    const LossScaling& ls = c.loss_scaling;
    if (!(ls.init > 0) || !std::isfinite(ls.init) || ls.init > 0x1p64)
        fail(sources.count("loss_scale_init") ? "loss_scale_init" : "loss_scale",
             "the loss scale must be more than 0 and at most 2^64");
    if (ls.growth_interval < 1 || ls.growth_interval > 1000000)
        fail("loss_scale_growth_interval", "must be between 1 and 1000000 steps (got " +
                                               std::to_string(ls.growth_interval) + ")");
    if (c.comm_hook != DType::fp32 && c.precision != Precision::fp32)
        fail("comm_hook", "compresses fp32 gradients; under '" + std::string(name_of(c.precision)) +
                              "' they are 16-bit already");
    if (c.comm_hook != DType::fp32 && c.backend != BackendKind::cpu)
        fail("comm_hook", "runs on the CPU backend only (its 16-bit rounding has no CUDA kernel)");
    const RunConfig::PowerSgd& ps = c.powersgd;
    if (ps.rank < 0 || ps.rank > 1024)
        fail("powersgd_rank",
             "must be between 1 and 1024 (or 0 for none; got " + std::to_string(ps.rank) + ")");
    if (ps.rank > 0) {
        if (c.comm_hook != DType::fp32)
            fail("powersgd_rank", "PowerSGD is its own communication hook: drop comm_hook");
        if (c.precision != Precision::fp32)
            fail("powersgd_rank", "compresses fp32 gradients (precision fp32)");
        if (c.backend != BackendKind::cpu) fail("powersgd_rank", "runs on the CPU backend only");
        if (c.accumulate > 1 && c.reduce_every_microstep)
            fail("powersgd_rank", "compresses once per step: not with reduce_every_microstep");
        // As torch's PowerSGDState: DDP rebuilds its buckets after the first iteration.
        if (ps.start_iter < 2 && (ps.error_feedback || ps.warm_start))
            fail("powersgd_start_iter",
                 "must be 2 or more with error feedback or warm start (PowerSGD can start only "
                 "after DDP's first two iterations; got " +
                     std::to_string(ps.start_iter) + ")");
        if (ps.start_iter < 0) fail("powersgd_start_iter", "must be 0 or more");
        if (!(ps.min_compression_rate >= 0) || !std::isfinite(ps.min_compression_rate))
            fail("powersgd_min_compression_rate", "must be 0 or more");
    }
    if (!(c.clip_grad_norm >= 0) || !std::isfinite(c.clip_grad_norm))
        fail("clip_grad_norm", "must be more than 0 (or 0 for no clipping)");
    if (!(c.input_scale > 0) || !std::isfinite(c.input_scale) || c.input_scale > 1e30)
        fail("input_scale", "must be more than 0 and at most 1e30");
    if (c.native_collectives && c.backend != BackendKind::cuda)
        fail("native_collectives", "applies to the CUDA backend only (NCCL)");
}

ClockMode resolve_clock(const RunConfig& config, unsigned hardware_threads) {
    if (config.clock != ClockMode::automatic) return config.clock;
    if (config.strategy == StrategyKind::ps && config.async_updates) return ClockMode::device;
    if (config.backend == BackendKind::cuda) return ClockMode::wall;  // CUDA events
    // Link tiers and a straggler's slowdown exist on the device clock only.
    if (config.cluster.node_count(config.devices) > 1 || config.straggler.active())
        return ClockMode::device;
    const unsigned streams = static_cast<unsigned>(config.devices) * 2;  // compute + comm
    return streams <= std::max(1u, hardware_threads) ? ClockMode::wall : ClockMode::device;
}

int resolve_intra_op_threads(const RunConfig& config, ClockMode resolved_clock,
                             unsigned hardware_threads) {
    if (config.backend != BackendKind::cpu || resolved_clock == ClockMode::device) return 1;
    if (config.threads > 0) return config.threads;
    return std::max(1, static_cast<int>(hardware_threads) / std::max(1, config.devices));
}

}  // namespace pd
