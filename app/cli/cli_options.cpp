#include "cli_options.h"

#include <nlohmann/json.hpp>
#include <vector>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <cstdlib>
#include <iostream>
#include <tuple>

#include "pd/error.h"
#include "pd/run.h"
#include "pd/scenario.h"
#include "pd/units.h"

namespace pd::cli {

std::optional<RunRequest> parse_run_args(int argc, char** argv, int& exit_code) {
    CLI::App app{
        "paralleldeck-run: train a small model on several simulated devices and "
        "record what happened (trace, summary, inputs)."};
    app.set_version_flag("--version", std::string("paralleldeck-run 0.1.0"));

    std::string scenario;
    std::optional<std::string> strategy, optimizer, clock, capacity, bucket, backend, link_speed;
    std::optional<int> devices, layers, width, heads, seq_len, batch, steps, microbatches, chunks,
        dp, pp, tp, threads, accumulate, max_staleness, experts, top_k;
    std::optional<std::string> schedule, recompute, precision, model;
    std::optional<std::uint64_t> seed;
    std::optional<double> lr, latency, timeout, capacity_factor, aux_loss_weight;
    std::optional<double> loss_scale_init, clip_grad_norm, input_scale;
    std::optional<std::string> loss_scale, comm_hook, cp_algorithm, loss_reduction;
    std::optional<int> loss_scale_growth_interval, powersgd_rank, powersgd_start_iter;
    std::optional<int> optimizer_blocksize, min_8bit_size;
    std::optional<std::string> reduce_dtype, fp8, fp8_amax_compute_algo, matmul_precision;
    std::optional<std::string> offload_optimizer, offload_param, host_capacity, pcie_speed;
    std::optional<std::string> nvme_capacity, nvme_read_speed, nvme_write_speed;
    std::optional<int> fp8_amax_history_len, fp8_margin;
    std::optional<int> reshard_to;
    std::optional<int> checkpoint_every;
    std::optional<std::string> checkpoint_dir, resume_dir;
    std::optional<double> powersgd_min_rate;
    bool powersgd_no_error_feedback = false, powersgd_no_warm_start = false;
    bool sequence_parallel = false, cp_load_balance = false;
    bool no_master_weights = false, no_reshard_after_forward = false, quantized_weights = false,
         quantized_gradients = false;
    bool no_overlap = false, tf32 = false, native_collectives = false, reduce_every = false,
         async_updates = false;
    RunRequest req;

    app.add_option("--scenario", scenario, "Scenario JSON file (same keys as the flags)");
    app.add_option("--strategy", strategy,
                   "single | dp | ps | pipeline | tp | zero1 | zero2 | zero3 | hybrid | cp | ep");
    app.add_option("--devices", devices, "Number of devices (ps: server + workers)");
    app.add_option("--model", model,
                   "mlp (residual MLP blocks on samples) | transformer (pre-LayerNorm blocks: "
                   "causal self-attention, then an MLP, on sequences)");
    app.add_option("--layers", layers, "Blocks (residual MLP or transformer)");
    app.add_option("--width", width, "Hidden size h (MLPs are h -> 4h -> h)");
    app.add_option("--heads", heads, "transformer: attention heads per block (divide the width)");
    app.add_option("--seq-len", seq_len, "transformer: tokens per sequence");
    app.add_flag("--sequence-parallel", sequence_parallel,
                 "transformer with tp: shard LayerNorm/residual regions over the tp group "
                 "(all-gather + reduce-scatter instead of all-reduce)");
    app.add_flag("--cp-load-balance", cp_load_balance,
                 "cp: each device holds two mirrored chunks of every sequence (Llama 3's causal "
                 "load balancing)");
    app.add_option("--experts", experts,
                   "transformer: a mixture of this many experts in place of each MLP (0: dense)");
    app.add_option("--top-k", top_k, "experts: the experts each token is routed to");
    app.add_option("--capacity-factor", capacity_factor,
                   "experts: each expert takes at most factor x top-k x seq-len / experts tokens "
                   "of a sequence; the rest are dropped");
    app.add_option("--aux-loss-weight", aux_loss_weight,
                   "experts: weight of the load-balancing loss (default 0.01)");
    app.add_option("--batch", batch, "Global batch per step (transformer: sequences)");
    app.add_option("--steps", steps, "Training steps");
    app.add_option("--seed", seed, "Seed for weights and data");
    app.add_option("--optimizer", optimizer,
                   "sgd | adamw | lamb | adamw8bit (LAMB's layer-wise trust ratio; "
                   "bitsandbytes' AdamW8bit: both states in 8 bits, block-wise)");
    app.add_option("--optimizer-blocksize", optimizer_blocksize,
                   "adamw8bit: elements per quantisation block (default 2048; bitsandbytes "
                   "0.44+ uses 256)");
    app.add_option("--min-8bit-size", min_8bit_size,
                   "adamw8bit: smaller tensors keep fp32 states (default 4096)");
    app.add_option("--lr", lr,
                   "Learning rate, constant over the run (default: sgd 0.01, adamw 0.128 / width)");
    app.add_option("--bucket-bytes", bucket, "Gradient bucket size, e.g. 256KiB");
    app.add_flag("--no-overlap", no_overlap, "dp: all-reduce only after the whole backward");
    app.add_option("--capacity", capacity, "Memory per device, e.g. 64MiB");
    app.add_option("--clock", clock, "wall | device | auto");
    app.add_option("--link-latency-us", latency, "Simulated link latency (device clock)");
    app.add_option("--link-gbps", link_speed,
                   "Simulated link bandwidth (device clock): Gb/s, or with a unit such as "
                   "100Gb/s or 12.5GB/s");
    app.add_option("--schedule", schedule,
                   "Pipeline schedule: gpipe | 1f1b | interleaved | zb-h1 | zb-v (zero bubble: "
                   "backward split into B and W)");
    app.add_option("--recompute", recompute,
                   "Activation recomputation: none | selective (GELU outputs) | full (each "
                   "block's forward re-run in its backward)");
    app.add_option("--precision", precision,
                   "Numeric precision: fp32 | bf16-mixed | fp16-mixed (16-bit parameters, "
                   "activations and gradients; fp32 master weights and optimizer state; CPU "
                   "backend; fp16 with loss scaling)");
    app.add_option("--loss-scale", loss_scale,
                   "fp16-mixed: dynamic (GradScaler, the default) or a static scale (1: none)");
    app.add_option("--loss-scale-init", loss_scale_init,
                   "fp16-mixed, dynamic: the first scale (GradScaler's init_scale, 65536)");
    app.add_option("--loss-scale-growth-interval", loss_scale_growth_interval,
                   "fp16-mixed, dynamic: clean steps before the scale doubles (2000)");
    app.add_option("--clip-grad-norm", clip_grad_norm,
                   "single, dp: clip the gradients' global L2 norm to this (after unscaling)");
    app.add_option("--cp-algorithm", cp_algorithm,
                   "cp: ring (ring attention, the default) | ulysses (DeepSpeed-Ulysses: "
                   "all-to-alls between sequence and head shards; heads must divide by the ring)");
    app.add_option("--loss-reduction", loss_reduction,
                   "dp: global_batch (each replica divides its loss by the global batch, the "
                   "default) | replica_mean (by its own slice: summed gradients x replicas)");
    app.add_option("--comm-hook", comm_hook,
                   "dp, fp32: DDP's compression hook: none | fp16 | bf16 (gradients all-reduced "
                   "in 16 bits)");
    app.add_option("--powersgd-rank", powersgd_rank,
                   "dp, fp32: DDP's powerSGD_hook with this matrix_approximation_rank (0: off)");
    app.add_option("--powersgd-start-iter", powersgd_start_iter,
                   "powerSGD: plain all-reduces before this step (torch's default 1000)");
    app.add_option("--powersgd-min-compression-rate", powersgd_min_rate,
                   "powerSGD: compress a matrix only if it shrinks this many times (2)");
    app.add_flag("--powersgd-no-error-feedback", powersgd_no_error_feedback,
                 "powerSGD: no error feedback (the residual is dropped)");
    app.add_flag("--powersgd-no-warm-start", powersgd_no_warm_start,
                 "powerSGD: a fresh random Q every step");
    app.add_option("--reduce-dtype", reduce_dtype,
                   "zero3, bf16-mixed: fp32 is FSDP2's MixedPrecisionPolicy(param_dtype=bf16, "
                   "reduce_dtype=fp32): fp32 sharded parameters (no separate master), "
                   "gradients reduce-scattered in fp32 (default bf16)");
    app.add_option("--reshard-after-forward", reshard_to,
                   "zero3: after forward keep parameters sharded over groups of this many "
                   "devices, so the backward all-gathers within a group (FSDP2's int, ZeRO++'s "
                   "hpZ)");
    app.add_flag("--quantized-weights", quantized_weights,
                 "zero3: ZeRO++'s qwZ: parameter all-gathers send int8, quantized in groups of "
                 "2048 (1 byte an element)");
    app.add_flag("--quantized-gradients", quantized_gradients,
                 "zero3: ZeRO++'s qgZ: gradients sent to their owners by an all-to-all of int8 "
                 "(groups of 2048), dequantized and summed in fp32");
    app.add_flag("--no-reshard-after-forward", no_reshard_after_forward,
                 "zero3: keep each unit's gathered parameters from forward to backward (FSDP2's "
                 "reshard_after_forward=False): no second all-gather, more memory");
    app.add_flag("--no-master-weights", no_master_weights,
                 "bf16-mixed, fp16-mixed: no fp32 master copy; updates are rounded into the "
                 "16-bit weights");
    app.add_option("--offload-optimizer", offload_optimizer,
                   "zero1-3, CPU: ZeRO-Offload: none | cpu (optimizer state, fp32 parameter and "
                   "gradient shards in host memory; the update runs on the host, PCIe copies "
                   "each way) | nvme (ZeRO-Infinity: the optimizer state on NVMe, swapped in "
                   "a unit at a time)");
    app.add_option("--checkpoint-every", checkpoint_every,
                   "single, dp, zero1-3, CPU: write a sharded checkpoint (a file per device and "
                   "metadata.json) into --checkpoint-dir/step-N every N steps");
    app.add_option("--checkpoint-dir", checkpoint_dir, "Where --checkpoint-every writes");
    app.add_option("--resume", resume_dir,
                   "Start from a checkpoint (a step-N directory, or the newest in a "
                   "--checkpoint-dir), under any device count and strategy that checkpoints");
    app.add_option("--offload-param", offload_param,
                   "zero3 with --offload-optimizer: ZeRO-Infinity: none | cpu | nvme (the "
                   "parameter shard kept off the device; each unit's chunk crosses PCIe before "
                   "its all-gather)");
    app.add_option("--host-capacity", host_capacity,
                   "With --offload-optimizer: each device's host memory budget (64GiB)");
    app.add_option("--nvme-capacity", nvme_capacity,
                   "Offloading to nvme: each device's NVMe budget (1TiB)");
    app.add_option("--pcie-gbps", pcie_speed,
                   "With --offload-optimizer: host <-> device link speed (252 Gb/s, PCIe 4.0 "
                   "x16)");
    app.add_option("--nvme-read-gbps", nvme_read_speed,
                   "Offloading to nvme: NVMe -> host speed (80 Gb/s, DeepNVMe's measured 10 GB/s)");
    app.add_option("--nvme-write-gbps", nvme_write_speed,
                   "Offloading to nvme: host -> NVMe speed (40 Gb/s, DeepNVMe's measured 5 GB/s)");
    app.add_option("--float32-matmul-precision", matmul_precision,
                   "fp32, MLP, CPU: torch.set_float32_matmul_precision: highest (fp32 product "
                   "inputs, the default) | high (TF32, as --tf32) | medium (bf16 inputs)");
    app.add_option("--fp8", fp8,
                   "single, dp, MLP, CPU: Transformer Engine's FP8 for the blocks' products: off | "
                   "hybrid (E4M3 forward, E5M2 gradients) | e4m3 (everywhere); scales by "
                   "DelayedScaling");
    app.add_option("--fp8-amax-history-len", fp8_amax_history_len,
                   "fp8: amax history window per tensor (TE's default 1024)");
    app.add_option("--fp8-amax-compute-algo", fp8_amax_compute_algo,
                   "fp8: max (largest amax in the window, the default) | most_recent");
    app.add_option("--fp8-margin", fp8_margin, "fp8: scale = fp8 max / amax / 2^margin (0)");
    app.add_option("--input-scale", input_scale,
                   "Multiply the task's inputs by this (large activations; default 1)");
    app.add_option("--accumulate", accumulate,
                   "Gradient accumulation: micro-steps per optimizer step (single, dp, zero1-3)");
    app.add_flag("--reduce-every-microstep", reduce_every,
                 "dp, zero1-3 with --accumulate: reduce after every micro-step (no no_sync)");
    app.add_flag("--async", async_updates,
                 "ps: step k's gradients are computed on the server's parameters of version "
                 "k - S (S = --max-staleness), exactly S versions old once k >= S; the first S "
                 "steps use the initial ones");
    app.add_option("--max-staleness", max_staleness,
                   "ps --async: S, how many versions a worker's parameters lag the server "
                   "(0: the synchronous server)");
    app.add_option("--microbatches", microbatches,
                   "Micro-batches per step (pipeline, hybrid); 0 or unset: the default, 2 x "
                   "pipeline stages");
    app.add_option("--chunks", chunks, "Model chunks per device (interleaved)");
    app.add_option("--dp", dp,
                   "hybrid, cp, ep: data-parallel replicas (of each ring or expert group)");
    app.add_option("--pp", pp, "hybrid: pipeline stages");
    app.add_option("--tp", tp, "hybrid: tensor-parallel shards");
    app.add_option("--timeout-s", timeout, "Seconds a collective waits for a peer");
    app.add_option("--threads", threads,
                   "Intra-op threads per device (default: hardware threads / devices; the "
                   "device clock uses 1)");
    app.add_option("--backend", backend,
                   "cpu | cuda (CUDA: one device per GPU, or virtual devices sharing one)");
    app.add_flag("--tf32", tf32,
                 "TF32 matrix products (torch's allow_tf32): cuda runs them on tensor cores; the "
                 "cpu rounds every product's inputs to 10 mantissa bits (MLP model)");
    app.add_flag("--native-collectives", native_collectives,
                 "cuda, one GPU per device: whole NCCL collectives (phases not shown)");
    app.add_option("--trace", req.trace_path, "Write Chrome Trace Event JSON (Perfetto)");
    app.add_option("--summary", req.summary_path, "Write the summary JSON");
    app.add_option("--dump-dir", req.dump_dir, "Write initial weights and batches as .npy");
    app.add_flag("--quiet", req.quiet, "No progress on stderr");
    app.add_flag("--verbose", req.verbose,
                 "Also print each matrix product's shape, the kernel that ran it, and its "
                 "speed as a fraction of the CPU's measured FMA peak (CPU backend)");

    app.add_flag("--check-claims", req.check_claims,
                 "Check the scenario's expect claims (as a card's Show me does), print each "
                 "outcome; exit 4 when one fails");
    app.add_flag("--comm-log", req.comm_log,
                 "Print each all-reduce's algorithm, transport and why, one line per call as "
                 "NCCL_DEBUG=INFO does");
    // The cluster's flags: each is the scenario key of the same name (one parser, one rule).
    struct ClusterFlag {
        const char* flag;
        const char* key;
        const char* help;
        bool text;
        std::optional<std::string> value;
    };
    std::vector<ClusterFlag> cluster_flags = {
        {"--cluster",
         "cluster",
         "A named machine: hgx-h100 | pcie-workstation | tpu-v5p-slice",
         true,
         {}},
        {"--nodes", "nodes", "Nodes the devices are grouped into (device clock)", false, {}},
        {"--devices-per-node", "devices_per_node", "Devices per node", false, {}},
        {"--intra-link", "intra_link", "Inside a node: nvswitch | pcie", true, {}},
        {"--inter-transport", "inter_transport", "Between nodes: ib | sockets | dcn", true, {}},
        {"--inter-gbps", "inter_gbps", "Each NIC's bandwidth (Gb/s, or with a unit)", true, {}},
        {"--inter-latency-us", "inter_latency_us", "Latency between nodes", false, {}},
        {"--devices-per-nic",
         "devices_per_nic",
         "Devices sharing one NIC (1: rail-optimised)",
         false,
         {}},
        {"--nvls", "nvls", "true | false: the NVSwitch reduces (NVLink SHARP)", false, {}},
        {"--sharp", "sharp", "true | false: the InfiniBand switches reduce (SHARP)", false, {}},
        {"--reducers", "reducers", "Reduction Server: reducer nodes", false, {}},
        {"--reducer-gbps", "reducer_gbps", "Reduction Server: each reducer's NIC", true, {}},
        {"--hybrid-shard",
         "hybrid_shard",
         "true | false: zero2/zero3 shard inside each node, replicate across nodes",
         false,
         {}},
        {"--allreduce-algorithm",
         "allreduce_algorithm",
         "ring | tree | hierarchical | in-network | reduction-server | auto",
         true,
         {}},
    };
    for (auto& f : cluster_flags) app.add_option(f.flag, f.value, f.help);
    std::optional<std::string> straggler;
    app.add_option("--straggler", straggler,
                   "DEVICE:SLOWDOWN, e.g. 3:1.5: that device computes 1.5 times slower (device "
                   "clock)");

    try {
        app.parse(argc, argv);
    } catch (const CLI::ParseError& e) {
        exit_code = app.exit(e);
        if (exit_code != 0) exit_code = 2;
        return std::nullopt;
    }

    RunConfig& c = req.config;
    ConfigSources& src = req.sources;
    if (!scenario.empty()) apply_scenario_file(scenario, c, src);
    req.scenario_path = scenario;
    if (req.check_claims && scenario.empty())
        throw BadInput("--check-claims", "needs --scenario (the claims are its expect key)",
                       __FILE__, __LINE__);

    auto choose = [](const std::string& flag, const std::string& value,
                     std::initializer_list<const char*> options) {
        for (const char* o : options)
            if (value == o) return;
        std::string list;
        for (const char* o : options) list += std::string(list.empty() ? "" : ", ") + o;
        throw BadInput(flag, "unknown value '" + value + "' (available: " + list + ")", __FILE__,
                       __LINE__);
    };
    if (strategy) {
        const auto kind = strategy_from_name(*strategy);
        if (!kind)
            throw BadInput("--strategy",
                           "unknown value '" + *strategy + "' (available: " + kStrategyNames + ")",
                           __FILE__, __LINE__);
        c.strategy = *kind;
        src["strategy"] = "--strategy";
    }
    if (schedule) {
        const auto kind = schedule_from_name(*schedule);
        if (!kind)
            throw BadInput("--schedule",
                           "unknown value '" + *schedule + "' (available: " + kScheduleNames + ")",
                           __FILE__, __LINE__);
        c.schedule = *kind;
        src["schedule"] = "--schedule";
    }
    auto set_int = [&](const std::optional<int>& v, int& field, const char* key) {
        if (!v) return;
        field = *v;
        std::string flag = std::string("--") + key;
        std::replace(flag.begin(), flag.end(), '_', '-');
        src[key] = flag;
    };
    // A flag given sets `field` to `value`; it is named by its key, as set_int names.
    auto set_flag = [&](bool given, bool& field, bool value, const char* key) {
        if (!given) return;
        field = value;
        std::string flag = std::string("--") + key;
        std::replace(flag.begin(), flag.end(), '_', '-');
        src[key] = flag;
    };
    // A named value (--model, --recompute, --precision): unknown names list the known ones.
    auto set_named = [&](const std::optional<std::string>& text, auto& field, auto from_name,
                         const char* known, const char* key) {
        if (!text) return;
        const auto value = from_name(*text);
        const std::string flag = std::string("--") + key;
        if (!value)
            throw BadInput(flag, "unknown value '" + *text + "' (available: " + known + ")",
                           __FILE__, __LINE__);
        field = *value;
        src[key] = flag;
    };
    set_int(devices, c.devices, "devices");
    set_int(layers, c.layers, "layers");
    set_int(width, c.width, "width");
    set_int(heads, c.heads, "heads");
    set_int(seq_len, c.seq_len, "seq_len");
    set_flag(cp_load_balance, c.cp_load_balance, true, "cp_load_balance");
    set_flag(sequence_parallel, c.sequence_parallel, true, "sequence_parallel");
    set_named(model, c.model, model_from_name, kModelNames, "model");
    set_int(experts, c.experts, "experts");
    set_int(top_k, c.top_k, "top_k");
    if (capacity_factor) {
        c.capacity_factor = *capacity_factor;
        src["capacity_factor"] = "--capacity-factor";
    }
    if (aux_loss_weight) {
        c.aux_loss_weight = *aux_loss_weight;
        src["aux_loss_weight"] = "--aux-loss-weight";
    }
    set_int(batch, c.batch, "batch");
    set_int(steps, c.steps, "steps");
    set_int(microbatches, c.microbatches, "microbatches");
    set_int(chunks, c.chunks, "chunks");
    set_int(dp, c.mesh.dp, "dp");
    set_int(pp, c.mesh.pp, "pp");
    set_int(tp, c.mesh.tp, "tp");
    set_int(threads, c.threads, "threads");
    set_int(accumulate, c.accumulate, "accumulate");
    set_int(max_staleness, c.max_staleness, "max_staleness");
    set_flag(reduce_every, c.reduce_every_microstep, true, "reduce_every_microstep");
    set_flag(async_updates, c.async_updates, true, "async");
    set_named(recompute, c.recompute, recompute_from_name, kRecomputeNames, "recompute");
    set_named(precision, c.precision, precision_from_name, kPrecisionNames, "precision");
    if (loss_scale) {
        src["loss_scale"] = "--loss-scale";
        if (*loss_scale == "dynamic") {
            c.loss_scaling.dynamic = true;
        } else {
            char* end = nullptr;
            const double value = std::strtod(loss_scale->c_str(), &end);
            if (loss_scale->empty() || *end != '\0')
                throw BadInput("--loss-scale",
                               "'" + *loss_scale + "' is neither 'dynamic' nor a number", __FILE__,
                               __LINE__);
            c.loss_scaling.dynamic = false;
            c.loss_scaling.init = value;
        }
    }
    if (loss_scale_init) {
        c.loss_scaling.init = *loss_scale_init;
        src["loss_scale_init"] = "--loss-scale-init";
    }
    set_int(loss_scale_growth_interval, c.loss_scaling.growth_interval,
            "loss_scale_growth_interval");
    if (clip_grad_norm) {
        c.clip_grad_norm = *clip_grad_norm;
        src["clip_grad_norm"] = "--clip-grad-norm";
    }
    if (cp_algorithm) {
        choose("--cp-algorithm", *cp_algorithm, {"ring", "ulysses"});
        c.cp_ulysses = *cp_algorithm == "ulysses";
        src["cp_algorithm"] = "--cp-algorithm";
    }
    if (loss_reduction) {
        choose("--loss-reduction", *loss_reduction, {"global_batch", "replica_mean"});
        c.loss_replica_mean = *loss_reduction == "replica_mean";
        src["loss_reduction"] = "--loss-reduction";
    }
    if (comm_hook) {
        choose("--comm-hook", *comm_hook, {"none", "fp16", "bf16"});
        c.comm_hook = *comm_hook == "fp16"   ? DType::fp16
                      : *comm_hook == "bf16" ? DType::bf16
                                             : DType::fp32;
        src["comm_hook"] = "--comm-hook";
    }
    set_int(powersgd_rank, c.powersgd.rank, "powersgd_rank");
    set_int(powersgd_start_iter, c.powersgd.start_iter, "powersgd_start_iter");
    if (powersgd_min_rate) {
        c.powersgd.min_compression_rate = *powersgd_min_rate;
        src["powersgd_min_compression_rate"] = "--powersgd-min-compression-rate";
    }
    if (powersgd_no_error_feedback) {
        c.powersgd.error_feedback = false;
        src["powersgd_error_feedback"] = "--powersgd-no-error-feedback";
    }
    if (powersgd_no_warm_start) {
        c.powersgd.warm_start = false;
        src["powersgd_warm_start"] = "--powersgd-no-warm-start";
    }
    if (reduce_dtype) {
        choose("--reduce-dtype", *reduce_dtype, {"bf16", "fp32"});
        c.fp32_reduce = *reduce_dtype == "fp32";
        src["reduce_dtype"] = "--reduce-dtype";
    }
    if (offload_optimizer) {
        choose("--offload-optimizer", *offload_optimizer, {"none", "cpu", "nvme"});
        c.offload_optimizer = *offload_device_from_name(*offload_optimizer);
        src["offload_optimizer"] = "--offload-optimizer";
    }
    if (offload_param) {
        choose("--offload-param", *offload_param, {"none", "cpu", "nvme"});
        c.offload_param = *offload_device_from_name(*offload_param);
        src["offload_param"] = "--offload-param";
    }
    const auto size_option = [&](const char* flag, const char* key,
                                 const std::optional<std::string>& text, std::size_t& out) {
        if (!text) return;
        const auto bytes = parse_byte_size(*text);
        if (!bytes)
            throw BadInput(flag, "'" + *text + "' is not a size (e.g. 8GiB)", __FILE__, __LINE__);
        out = *bytes;
        src[key] = flag;
    };
    size_option("--host-capacity", "host_capacity", host_capacity, c.host_capacity_bytes);
    size_option("--nvme-capacity", "nvme_capacity", nvme_capacity, c.nvme_capacity_bytes);
    const auto speed_option = [&](const char* flag, const char* key,
                                  const std::optional<std::string>& text, LinkModel& out) {
        if (!text) return;
        const auto gbit = parse_link_speed_gbit(*text);
        if (!gbit)
            throw BadInput(flag, "'" + *text + "' is not a speed (e.g. 252)", __FILE__, __LINE__);
        out.set_gbit_per_s(*gbit);
        src[key] = flag;
    };
    speed_option("--pcie-gbps", "pcie_gbps", pcie_speed, c.pcie);
    speed_option("--nvme-read-gbps", "nvme_read_gbps", nvme_read_speed, c.nvme_read);
    speed_option("--nvme-write-gbps", "nvme_write_gbps", nvme_write_speed, c.nvme_write);
    if (matmul_precision) {
        choose("--float32-matmul-precision", *matmul_precision, {"highest", "high", "medium"});
        c.tf32 = *matmul_precision == "high";
        c.bf16_products = *matmul_precision == "medium";
        src["float32_matmul_precision"] = "--float32-matmul-precision";
        if (c.tf32) src["tf32"] = "--float32-matmul-precision";
    }
    if (fp8) {
        choose("--fp8", *fp8, {"off", "hybrid", "e4m3"});
        c.fp8.format = *fp8 == "hybrid" ? Fp8Format::hybrid
                       : *fp8 == "e4m3" ? Fp8Format::e4m3
                                        : Fp8Format::off;
        src["fp8"] = "--fp8";
    }
    if (fp8_amax_compute_algo) {
        choose("--fp8-amax-compute-algo", *fp8_amax_compute_algo, {"max", "most_recent"});
        c.fp8.amax_compute_algo =
            *fp8_amax_compute_algo == "max" ? AmaxAlgo::max : AmaxAlgo::most_recent;
        src["fp8_amax_compute_algo"] = "--fp8-amax-compute-algo";
    }
    set_int(fp8_amax_history_len, c.fp8.amax_history_len, "fp8_amax_history_len");
    set_int(fp8_margin, c.fp8.margin, "fp8_margin");
    set_flag(quantized_weights, c.quantized_weights, true, "quantized_weights");
    set_flag(quantized_gradients, c.quantized_gradients, true, "quantized_gradients");
    set_int(checkpoint_every, c.checkpoint_every, "checkpoint_every");
    for (const auto& [text, field, key, flag] :
         {std::tuple{&checkpoint_dir, &c.checkpoint_dir, "checkpoint_dir", "--checkpoint-dir"},
          std::tuple{&resume_dir, &c.resume_dir, "resume", "--resume"}})
        if (*text) {
            *field = **text;
            src[key] = flag;
        }
    if (reshard_to) {
        c.reshard_to = *reshard_to;
        src["reshard_after_forward"] = "--reshard-after-forward";
    }
    if (no_reshard_after_forward) {
        c.reshard_after_forward = false;
        src["reshard_after_forward"] = "--no-reshard-after-forward";
    }
    if (no_master_weights) {
        c.master_weights = false;
        src["master_weights"] = "--no-master-weights";
    }
    if (input_scale) {
        c.input_scale = *input_scale;
        src["input_scale"] = "--input-scale";
    }
    if (seed) c.seed = *seed;
    if (optimizer) {
        choose("--optimizer", *optimizer, {"sgd", "adamw", "lamb", "adamw8bit"});
        c.optimizer = *optimizer_from_name(*optimizer);
        src["optimizer"] = "--optimizer";
    }
    set_int(optimizer_blocksize, c.optimizer_blocksize, "optimizer_blocksize");
    set_int(min_8bit_size, c.min_8bit_size, "min_8bit_size");
    if (lr) {
        c.lr = *lr;
        src["lr"] = "--lr";
    }
    auto size_flag = [](const std::string& flag, const std::string& text) {
        auto bytes = parse_byte_size(text);
        if (!bytes)
            throw BadInput(flag, "'" + text + "' is not a size (try 65536, 64KiB, 64MiB, 1GiB)",
                           __FILE__, __LINE__);
        return *bytes;
    };
    if (bucket) {
        c.bucket_bytes = size_flag("--bucket-bytes", *bucket);
        src["bucket_bytes"] = "--bucket-bytes";
    }
    set_flag(no_overlap, c.overlap, false, "no_overlap");
    if (capacity) {
        c.capacity_bytes = size_flag("--capacity", *capacity);
        src["capacity"] = "--capacity";
    }
    if (clock) {
        choose("--clock", *clock, {"wall", "device", "auto"});
        c.clock = *clock == "wall"     ? ClockMode::wall
                  : *clock == "device" ? ClockMode::device
                                       : ClockMode::automatic;
    }
    if (latency) {
        c.link.latency_us = *latency;
        src["link_latency_us"] = "--link-latency-us";
    }
    if (link_speed) {
        const auto gbit = parse_link_speed_gbit(*link_speed);
        if (!gbit)
            throw BadInput("--link-gbps",
                           "'" + *link_speed + "' is not a link speed; use " + kLinkSpeedForms,
                           __FILE__, __LINE__);
        c.link.set_gbit_per_s(*gbit);
        src["link_gbps"] = "--link-gbps";
    }
    if (timeout) {
        c.collective_timeout_s = *timeout;
        src["timeout_s"] = "--timeout-s";
    }
    if (backend) {
        choose("--backend", *backend, {"cpu", "cuda"});
        c.backend = *backend_from_name(*backend);
        src["backend"] = "--backend";
    }
    set_flag(tf32, c.tf32, true, "tf32");
    set_flag(native_collectives, c.native_collectives, true, "native_collectives");
    {
        // Read as scenario keys, so a value is checked by the one rule the files use.
        std::string json = "{";
        for (const auto& f : cluster_flags) {
            if (!f.value) continue;
            if (json.size() > 1) json += ",";
            json += "\"" + std::string(f.key) + "\":";
            json += f.text ? nlohmann::json(*f.value).dump() : *f.value;
        }
        if (straggler) {
            const auto colon = straggler->find(':');
            if (colon == std::string::npos)
                throw BadInput("--straggler", "'" + *straggler + "' is not DEVICE:SLOWDOWN",
                               __FILE__, __LINE__);
            if (json.size() > 1) json += ",";
            json += "\"straggler\":{\"device\":" + straggler->substr(0, colon) +
                    ",\"slowdown\":" + straggler->substr(colon + 1) + "}";
        }
        json += "}";
        if (json.size() > 2) {
            ConfigSources from_flags;
            try {
                apply_scenario_json(json, "the command line", c, from_flags);
            } catch (const BadInput& e) {
                // Name the flag, not the key it stands for.
                std::string message = e.what();
                for (const auto& f : cluster_flags)
                    if (f.value &&
                        message.find(std::string("'") + f.key + "'") != std::string::npos)
                        throw BadInput(f.flag, message.substr(message.find(':') + 2), __FILE__,
                                       __LINE__);
                throw BadInput("--straggler", message.substr(message.find(':') + 2), __FILE__,
                               __LINE__);
            }
            for (const auto& f : cluster_flags)
                if (f.value) src[f.key] = f.flag;
            if (straggler) src["straggler"] = "--straggler";
        }
    }
    validate(c, src);
    if (const std::string why = backend_unavailable_reason(c.backend); !why.empty())
        throw BadInput(src.count("backend") ? src["backend"] : std::string("backend"),
                       "'" + std::string(name_of(c.backend)) + "' cannot run here: " + why,
                       __FILE__, __LINE__);
    return req;
}

}  // namespace pd::cli
