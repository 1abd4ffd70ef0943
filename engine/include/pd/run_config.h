// Everything that defines a run: the strategy, the model, the devices and the clock.
// One struct feeds the CLI, scenario files and the app alike.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>

#include "pd/cluster.h"
#include "pd/dataset.h"
#include "pd/dtype.h"
#include "pd/fp8.h"
#include "pd/memory_category.h"

namespace pd {

// cp: context parallelism (transformer only): every device trains the whole model on its
// part of each sequence, with ring attention passing keys and values round the devices.
// ep: expert parallelism (a mixture of experts): each device holds experts / ep of every MoE
// block's experts and its own slice of the batch; tokens travel to their experts and back by
// all-to-all.
enum class StrategyKind { single, dp, ps, pipeline, tp, zero1, zero2, zero3, hybrid, cp, ep };
// zb_h1 and zb_v split each backward into B (input gradient) and W (weight gradient), as
// Qi et al., "Zero Bubble Pipeline Parallelism" (ICLR 2024) do.
enum class PipelineSchedule { gpipe, one_f_one_b, interleaved, zb_h1, zb_v };
// Activation recomputation: none keeps every activation for backward; selective keeps the
// matrix products' outputs and recomputes the element-wise GELU; full keeps each unit's input
// and re-runs its forward inside the backward.
enum class RecomputeMode { none, selective, full };
// Mixed precision (as PyTorch autocast with Megatron's fp32 master weights): bf16_mixed keeps
// parameters, activations and gradients in bf16 and the optimizer's master weights and state
// in fp32; losses and softmax cross-entropy are computed in fp32. fp16_mixed does the same in
// IEEE half precision, with loss scaling (LossScaling). CPU backend only.
enum class Precision { fp32, bf16_mixed, fp16_mixed };
// The model every strategy trains (pd/model.h): residual MLP blocks on independent samples, or
// pre-LayerNorm transformer blocks (causal multi-head self-attention, then an MLP) on sequences.
enum class ModelKind { mlp, transformer };
enum class ClockMode { wall, device, automatic };
// sgd and adamw as torch.optim; lamb: You et al. 2019's Algorithm 2 (AdamW's step scaled per
// tensor by the trust ratio ||w|| / ||update||); adamw8bit: bitsandbytes' AdamW8bit (both
// states stored in 8 bits, block-wise dynamic quantisation). See pd/optimizer.h.
enum class OptimizerKind { sgd, adamw, lamb, adamw8bit };
enum class BackendKind { cpu, cuda };

std::string_view name_of(StrategyKind s);
std::string_view name_of(PipelineSchedule s);
std::string_view name_of(ClockMode c);
std::string_view name_of(OptimizerKind o);
std::string_view name_of(BackendKind b);
std::string_view name_of(RecomputeMode r);
std::string_view name_of(Precision p);
std::string_view name_of(ModelKind m);
std::optional<ModelKind> model_from_name(std::string_view name);
std::optional<Precision> precision_from_name(std::string_view name);
std::optional<RecomputeMode> recompute_from_name(std::string_view name);
std::optional<BackendKind> backend_from_name(std::string_view name);
std::optional<OptimizerKind> optimizer_from_name(std::string_view name);
inline constexpr const char* kOptimizerNames = "sgd, adamw, lamb, adamw8bit";
std::optional<StrategyKind> strategy_from_name(std::string_view name);
std::optional<PipelineSchedule> schedule_from_name(std::string_view name);
std::optional<OffloadDevice> offload_device_from_name(std::string_view name);
inline constexpr const char* kStrategyNames =
    "single, dp, ps, pipeline, tp, zero1, zero2, zero3, hybrid, cp, ep";
inline constexpr const char* kScheduleNames = "gpipe, 1f1b, interleaved, zb-h1, zb-v";
inline constexpr const char* kRecomputeNames = "none, selective, full";
inline constexpr const char* kPrecisionNames = "fp32, bf16-mixed, fp16-mixed";
inline constexpr const char* kModelNames = "mlp, transformer";

// A device mesh: data-parallel replicas x pipeline stages x tensor-parallel shards.
struct Mesh {
    int dp = 1;
    int pp = 1;
    int tp = 1;
    int size() const { return dp * pp * tp; }
};

// A device that computes slower than its peers (thermal throttling, a noisy neighbour, a bad
// host): under the device clock its compute time counts `slowdown` times what it measured.
struct Straggler {
    int device = -1;  // -1: none
    double slowdown = 1.0;
    bool active() const { return device >= 0; }
};

// A device or a whole node that fails at the start of a step (scenario key `fail`): its work
// stops, the run aborts, and with restarts left the job starts again from its newest
// checkpoint (torchrun's --max-restarts), on a replacement node or, elastically, without it.
struct FailurePlan {
    int device = -1;       // the device that fails, or
    int node = -1;         // every device of this node
    int step = -1;         // -1: no failure
    bool replaced = true;  // the scheduler replaces the node (else the job shrinks, if elastic)
    // What restarts: every worker (torchrun; Vertex AI with restartJobOnWorkerRestart), or only
    // the failed one (Vertex AI's default): its peers then wait for it in their collectives,
    // since a new process is not in their communicator, until the collective timeout.
    bool worker_only = false;
    bool enabled() const { return step >= 0; }
};

// fp16_mixed's loss scaling, as torch.amp.GradScaler does it: the loss (so every gradient) is
// multiplied by the scale before backward; the optimizer step unscales the gradients in fp32
// and is skipped when any of them is inf or NaN. Dynamic: a skipped step multiplies the scale
// by backoff_factor, and growth_interval clean steps in a row multiply it by growth_factor
// (GradScaler's defaults: 65536, 2000, 2, 0.5). Static: `init` on every step (1: no scaling),
// steps with inf or NaN still skipped.
struct LossScaling {
    bool dynamic = true;
    double init = 65536.0;
    int growth_interval = 2000;
    double growth_factor = 2.0;
    double backoff_factor = 0.5;
};

// AdamW's default learning rate is this over the width (1e-3 at width 128).
inline constexpr double kAdamwLrTimesWidth = 0.128;

struct RunConfig {
    StrategyKind strategy = StrategyKind::single;
    int devices = 1;
    int layers = 4;
    int width = 128;
    int input_dim = 32;  // features of the synthetic task
    int classes = 10;
    // transformer: attention heads per block and tokens per sequence; a sample is then a
    // sequence, so `batch` counts sequences and a step trains batch x seq_len tokens.
    ModelKind model = ModelKind::mlp;
    int heads = 4;
    int seq_len = 16;
    // transformer with tensor parallelism: Megatron's sequence parallelism (Korthikanti et al.
    // 2022). Each tp rank keeps 1/tp of the tokens between the blocks' tensor-parallel parts
    // (LayerNorms, residuals, input projection, head), and each block's all-reduce becomes an
    // all-gather before it and a reduce-scatter after it.
    bool sequence_parallel = false;
    // cp: causal load balancing (Llama 3's): the sequence is cut into 2 x devices chunks and
    // device r holds chunks r and 2 x devices - 1 - r, so every device has as many keys
    // in its queries' past. Off: device r holds the r-th contiguous part of each sequence.
    bool cp_load_balance = false;
    // cp: how a device's queries see the other devices' keys and values. Ring: ring attention
    // (above). Ulysses: DeepSpeed-Ulysses (Jacobs et al. 2023): an all-to-all trades each
    // device's tokens of q, k and v for whole sequences of heads / ring of the heads, attention
    // runs locally on those heads, and a second all-to-all returns the output to each device's
    // tokens (backward: the same two, reversed). The heads must divide by the ring's devices.
    bool cp_ulysses = false;
    // transformer: a mixture of experts in place of every block's MLP (Switch Transformer,
    // GShard): a router picks each token's top_k of `experts` expert MLPs; each expert takes
    // at most capacity_factor x top_k x seq_len / experts tokens of each sequence (rounded up)
    // and the rest of its tokens are dropped (they pass by the residual alone); the
    // load-balancing loss aux_loss_weight x experts x sum_e f_e P_e is added to the objective.
    // 0 experts: the dense MLP.
    int experts = 0;
    int top_k = 1;
    double capacity_factor = 1.25;
    double aux_loss_weight = 0.01;
    int batch = 32;  // global batch per step (samples; sequences for the transformer)
    int steps = 10;
    std::uint64_t seed = 42;
    OptimizerKind optimizer = OptimizerKind::adamw;
    double lr = 0.0;  // 0 = the optimizer's default (see effective_lr); constant, no schedule
    // adamw8bit: elements per quantisation block of each state (2048 in Dettmers et al. 2022
    // and bitsandbytes before 0.44; 256 since its commit aa57bd89), and the smallest tensor
    // whose states are 8-bit (bitsandbytes' min_8bit_size; smaller ones keep fp32 states).
    int optimizer_blocksize = 2048;
    int min_8bit_size = 4096;
    std::size_t bucket_bytes = 256 * 1024;
    bool overlap = true;
    std::size_t capacity_bytes = std::size_t{4} << 30;
    ClockMode clock = ClockMode::automatic;
    // The link inside a node (every link when the run has one node): scenario keys link_gbps
    // and link_latency_us. The device clock times transfers by it (see pd/topology.h).
    LinkModel link;
    // Nodes, NICs, the inter-node transport and the reducing switches (scenario keys nodes,
    // devices_per_node, cluster, intra_link, inter_gbps, inter_latency_us, inter_transport,
    // devices_per_nic, nvls, sharp).
    ClusterConfig cluster;
    // zero2/zero3: hybrid sharding (FSDP's HYBRID_SHARD, an FSDP2 2-D mesh, DeepSpeed's
    // MiCS): shards within each node, replicas across nodes; each shard's gradients are
    // reduce-scattered inside the node, then all-reduced with the same shard on the other nodes.
    bool hybrid_shard = false;
    // zero3: FSDP2's fully_shard(reshard_after_forward): true frees each unit's gathered
    // parameters after its forward and all-gathers them again for backward; false keeps them
    // from forward to backward (one all-gather per unit per micro-step, more memory).
    bool reshard_after_forward = true;
    // ... or, as an integer k (FSDP2's reshard_after_forward=int, ZeRO++'s hpZ): after each
    // unit's forward every device keeps a 1/k slice of the gathered parameters, sharded over
    // groups of k consecutive devices (a node's), and the backward all-gathers within its
    // group only. 0: not used (reshard_after_forward decides).
    int reshard_to = 0;
    // zero3: ZeRO++'s qwZ (DeepSpeed's zero_quantized_weights): every parameter all-gather
    // sends each rank's chunk quantized to int8 in groups (model/weight_quantization.h), 1
    // byte an element; the units compute with the dequantized weights, the shards stay exact.
    bool quantized_weights = false;
    // zero3: ZeRO++'s qgZ (DeepSpeed's zero_quantized_gradients): each unit's gradients go to
    // their owners by an all-to-all instead of a ring reduce-scatter, each destination's chunk
    // quantized to int8 in groups (1 byte an element); every owner dequantizes the chunks it
    // receives and sums them in fp32, in rank order, so each value is quantized once (a ring
    // would re-quantize every partial sum). One hop within the shard group (ZeRO++ makes it
    // two, within and across nodes).
    bool quantized_gradients = false;
    // zero3 under bf16-mixed: FSDP2's MixedPrecisionPolicy(param_dtype=bf16,
    // reduce_dtype=fp32) (scenario key reduce_dtype "fp32"): the sharded parameters stay fp32
    // and are the optimizer's own (no separate master copy), gathered and computed in bf16,
    // and the gradients are reduce-scattered in fp32 into fp32 gradient shards. Else (bf16)
    // the shards are bf16 with an fp32 master in the optimizer state (DeepSpeed's layout) and
    // gradients are reduced in bf16.
    bool fp32_reduce = false;
    // zero1, zero2, zero3: ZeRO-Offload (DeepSpeed's offload_optimizer device "cpu"): each
    // device's optimizer state, an fp32 copy of its parameter shard and its gradient shard
    // live in host memory (host_capacity_bytes each, a budget of its own); every step the
    // reduced gradient shard crosses PCIe to the host, the CPU runs the update there (on the
    // device's host stream), and the updated shard crosses back before the all-gather.
    // "nvme" (ZeRO-Infinity): the optimizer state lives in the device's NVMe share instead
    // and is swapped into host memory one unit (bucket) at a time for the update.
    OffloadDevice offload_optimizer = OffloadDevice::none;
    // zero3 with offload_optimizer: ZeRO-Infinity's offload_param: the parameter shard lives
    // in host memory ("cpu") or NVMe ("nvme") only; each unit's own chunk crosses PCIe (read
    // from NVMe first) just before its all-gather, and the host's update writes it in place.
    OffloadDevice offload_param = OffloadDevice::none;
    std::size_t host_capacity_bytes = std::size_t{64} << 30;
    // Each device's share of NVMe (a budget, not a hardware figure).
    std::size_t nvme_capacity_bytes = std::size_t{1} << 40;
    // Host <-> device: PCIe 4.0 x16 (16 GT/s x 16 lanes, 128b/130b: 31.5 GB/s each way) by
    // default; the device clock times every offload copy by it (scenario key pcie_gbps).
    LinkModel pcie{2.0, 31.5};
    // NVMe <-> host: DeepNVMe's measured 10 GB/s reads and 5 GB/s writes on an Azure
    // NC96ads_A100_v4 VM (DeepSpeed's DeepNVMe blog, 2024) by default, each device taking
    // its share at that speed (scenario keys nvme_read_gbps, nvme_write_gbps); 20 us an
    // access, an assumed order of magnitude for an NVMe read.
    LinkModel nvme_read{20.0, 10.0};
    LinkModel nvme_write{20.0, 5.0};
    bool offloads() const { return offload_optimizer != OffloadDevice::none; }
    // Sharded checkpoints (single, dp, zero1-3; CPU backend): after every `checkpoint_every`
    // steps each device writes what it owns into checkpoint_dir/step-N (see
    // runtime/checkpoint.h); 0: none. `resume_dir`: a checkpoint (a step-N directory, or the
    // newest inside a root) the run starts from, under any device count and strategy that can
    // checkpoint; its step is the first one run.
    // An empty checkpoint_dir is a temporary directory, removed when the run ends.
    int checkpoint_every = 0;
    std::string checkpoint_dir;
    std::string resume_dir;
    // Scenario key resume_from {"after_step": N, <keys>...}: before this run, the same job
    // with those keys changed (another strategy, device count) runs N steps and checkpoints;
    // this run resumes from it (a card's "saved on 4, resumed on 2"). JSON text of the keys.
    int resume_from_step = 0;
    std::string resume_from;
    bool checkpoints() const {
        return checkpoint_every > 0 || !resume_dir.empty() || resume_from_step > 0;
    }
    bool uses_nvme() const {
        return offload_optimizer == OffloadDevice::nvme || offload_param == OffloadDevice::nvme;
    }
    // How all-reduces move their data (CPU backend; a CUDA run's library picks its own).
    CollectiveAlgorithm allreduce_algorithm = CollectiveAlgorithm::ring;
    Straggler straggler;
    // Model parallelism (pipeline, tp, hybrid).
    PipelineSchedule schedule = PipelineSchedule::one_f_one_b;
    int microbatches = 0;  // 0 = 2 x pipeline stages when pipelined, else 1
    int chunks = 1;        // interleaved: model chunks per device (zb-v: always 2)
    Mesh mesh;             // hybrid only; other strategies derive theirs (see effective_mesh)
    bool trace_enabled = true;
    // Where the run executes. CUDA: one device per GPU, or several virtual devices sharing
    // one when there are more devices than GPUs. TF32 matrix products are off by default so
    // a GPU run matches the CPU run.
    BackendKind backend = BackendKind::cpu;
    bool tf32 = false;
    // torch.set_float32_matmul_precision('medium') (scenario key float32_matmul_precision,
    // which also sets tf32 for 'high'): every product's inputs rounded to bf16 instead (CPU).
    bool bf16_products = false;
    // CUDA, each device its own GPU: whole NCCL collectives in one call each instead of the
    // explicit ring of NCCL send/recv steps (faster; the phases are then not visible).
    bool native_collectives = false;
    double collective_timeout_s = 30.0;
    // Intra-op threads per device (CPU): 0 = hardware threads / devices, at least 1. The
    // device clock always uses 1 (see resolve_intra_op_threads).
    int threads = 0;
    RecomputeMode recompute = RecomputeMode::none;
    // Gradient accumulation (single, dp, zero1-3): each optimizer step runs `accumulate`
    // micro-steps of batch / accumulate samples, summing gradients. Like DDP's no_sync, dp and
    // ZeRO reduce only after the last micro-step unless `reduce_every_microstep`.
    int accumulate = 1;
    bool reduce_every_microstep = false;
    // ps: workers do not wait for the update of the step before: step k's gradients are
    // computed on the server's parameters of version k - max_staleness (a bounded-staleness
    // parameter server; 0 is the synchronous one).
    bool async_updates = false;
    int max_staleness = 0;
    Precision precision = Precision::fp32;
    // Transformer Engine's FP8 (pd/fp8.h): the MLP blocks' products take FP8 inputs, weights
    // and output gradients scaled by DelayedScaling (scenario keys fp8, fp8_amax_history_len,
    // fp8_amax_compute_algo, fp8_margin). Strategies single and dp, MLP model, CPU backend.
    Fp8Recipe fp8;
    LossScaling loss_scaling;  // fp16_mixed only
    // Mixed precision: the optimizer's fp32 master copy of the weights. Without it the update
    // is computed in fp32 from the 16-bit weights and rounded back into them, so an update
    // smaller than half a 16-bit step is lost (what the master copy is for).
    bool master_weights = true;
    // torch.nn.utils.clip_grad_norm_ before the update (single, dp): when the global L2 norm
    // of the (unscaled) gradients exceeds it, they are multiplied by max / (norm + 1e-6).
    // 0: no clipping.
    double clip_grad_norm = 0.0;
    // dp: how each replica reduces its loss before the gradients are summed over replicas.
    // False (global batch, tf.nn.compute_average_loss; the same as DDP's averaged per-replica
    // means): every replica divides by the global batch's tokens. True (a custom training
    // loop's tf.reduce_mean under MirroredStrategy): each divides by its own slice's, so the
    // summed gradients come out `replicas` times too large.
    bool loss_replica_mean = false;
    // The synthetic task's inputs multiplied by this (1: as drawn). Large inputs make large
    // activations: a model whose values exceed fp16's range but not bf16's.
    double input_scale = 1.0;
    // dp, fp32: DDP's default communication hooks fp16_compress_hook and bf16_compress_hook:
    // each bucket's gradients are cast to the 16-bit type, all-reduced in it (2 bytes an
    // element, every partial sum rounded) and cast back. fp32: no hook.
    DType comm_hook = DType::fp32;
    // dp, fp32: DDP's powerSGD_hook (Vogels et al. 2019, torch's PowerSGDState). rank 0: off.
    // From step start_iter on (plain all-reduces before), each bucket's weight gradients M that
    // compress at least min_compression_rate times are replaced by P Q^T of rank `rank`: P = M Q
    // all-reduced and orthogonalised, Q = M^T P all-reduced; the rest (biases) is all-reduced
    // whole. error_feedback adds each replica's residual M - P Q^T to its next gradient;
    // warm_start starts each step's Q from the last one (else a fresh random Q each step).
    struct PowerSgd {
        int rank = 0;
        int start_iter = 1000;
        double min_compression_rate = 2.0;
        bool error_feedback = true;
        bool warm_start = true;
    } powersgd;
    // A finite dataset of files read by one input pipeline per node (pd/dataset.h); strategies
    // single, dp and zero1-3. Its global batch is the run's `batch` (the scenario parser sets
    // it). Empty: fresh synthetic samples every step.
    DatasetConfig dataset;
    // Failures and restarts (README, Failures and restarts): `fail`; torchrun's max_restarts
    // (a failure counts, 0: the first failure ends the job); min_nodes, the elastic lower bound
    // of --nnodes=min:max (0: the job needs all its nodes); where checkpoints are kept: on each
    // node's local disk (lost with the node) or persistent storage (a bucket, /gcs/).
    FailurePlan failure;
    int max_restarts = 0;
    int min_nodes = 0;
    bool checkpoint_local = false;
    // How many times a card's run is repeated for its figures (scenario key `repeats`): timed
    // figures then cover every repeat's steps, so a card whose effect is small against the
    // machine's noise can show both. One run's trace is what the timeline shows.
    int repeats = 1;

    // The element type of parameters, gradients and activations (and everything a
    // collective moves): bf16 under bf16_mixed, fp16 under fp16_mixed, else fp32.
    DType tensor_dtype() const {
        return precision == Precision::bf16_mixed   ? DType::bf16
               : precision == Precision::fp16_mixed ? DType::fp16
                                                    : DType::fp32;
    }

    // Tokens per sample: seq_len for the transformer, 1 for the MLP.
    int tokens_per_sample() const { return model == ModelKind::transformer ? seq_len : 1; }

    // The learning rate the optimizer uses, at every step (no warm-up or decay): `lr` when set,
    // else SGD 0.01 and AdamW kAdamwLrTimesWidth / width.
    double effective_lr() const;
    // Replicas that each process a slice of the global batch.
    int data_parallel_replicas() const;
    // The dp x pp x tp mesh the strategy runs on (dp: devices x 1 x 1, pipeline: 1 x devices x 1).
    Mesh effective_mesh() const;
    int effective_microbatches() const;
    int effective_chunks() const;
};

// Where each setting came from ("--devices" or "scenario key 'devices'"), so that an error
// names what the user typed.
using ConfigSources = std::map<std::string, std::string>;

// Whether a setting does anything for this config's strategy (a dp bucket size on a pipeline
// run does nothing); `validate` rejects settings named in `sources` that do not apply.
bool setting_applies(const RunConfig& config, std::string_view key);
// Where a strategy-specific setting applies ("strategy 'dp'"), for messages.
std::string where_setting_applies(std::string_view key);

// Throws BadInput naming the offending key. `sources` maps key -> how the user spelt it.
void validate(const RunConfig& config, const ConfigSources& sources = {});

// The clock a run really uses once `automatic` is resolved against this machine.
ClockMode resolve_clock(const RunConfig& config, unsigned hardware_threads);

// The intra-op threads each CPU device of a run really uses, given its resolved clock: 1 under
// the device clock (an op is timed there by its stream thread's CPU time, which would miss
// helper threads' work; and that clock is chosen when streams already outnumber cores), else
// `threads`, or hardware threads / devices when it is 0.
int resolve_intra_op_threads(const RunConfig& config, ClockMode resolved_clock,
                             unsigned hardware_threads);

}  // namespace pd
