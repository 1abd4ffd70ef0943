#include <algorithm>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <optional>

#include "model/dynamic_quantization.h"
#include "model/weight_quantization.h"
#include "pd/atomic_file.h"
#include "pd/error.h"
#include "pd/exports.h"
#include "pd/model.h"
#include "pd/optimizer.h"
#include "strategies/batch_loader.h"
#include "strategies/powersgd.h"
#include "strategies/replica.h"

namespace pd {

namespace {

void write_npy_raw(const std::string& path, const std::vector<std::size_t>& shape,
                   const char* descr, const void* data, std::size_t bytes) {
    std::string dims;  // numpy's own spelling: (n,) or (a, b)
    for (std::size_t i = 0; i < shape.size(); ++i)
        dims += (i ? ", " : "") + std::to_string(shape[i]);
    if (shape.size() == 1) dims += ",";
    std::string header = "{'descr': '" + std::string(descr) +
                         "', 'fortran_order': False, 'shape': (" + dims + "), }";
    // Magic (6) + version (2) + length (2) + header + '\n' is padded to a multiple of 64.
    const std::size_t unpadded = 10 + header.size() + 1;
    header.append((64 - unpadded % 64) % 64, ' ');
    header += '\n';
    std::ofstream out(path, std::ios::binary);
    if (!out) throw Error("cannot write '" + path + "'", __FILE__, __LINE__);
    const unsigned char preamble[8] = {0x93, 'N', 'U', 'M', 'P', 'Y', 1, 0};
    out.write(reinterpret_cast<const char*>(preamble), 8);
    const auto len = static_cast<std::uint16_t>(header.size());
    const unsigned char len_le[2] = {static_cast<unsigned char>(len & 0xff),
                                     static_cast<unsigned char>(len >> 8)};
    out.write(reinterpret_cast<const char*>(len_le), 2);
    out.write(header.data(), static_cast<std::streamsize>(header.size()));
    out.write(static_cast<const char*>(data), static_cast<std::streamsize>(bytes));
    if (!out) throw Error("failed writing '" + path + "'", __FILE__, __LINE__);
}

std::size_t elements(const std::vector<std::size_t>& shape) {
    std::size_t n = 1;
    for (auto s : shape) n *= s;
    return n;
}

}  // namespace

void write_npy(const std::string& path, const std::vector<std::size_t>& shape, const float* data) {
    write_npy_raw(path, shape, "<f4", data, elements(shape) * sizeof(float));
}

void write_npy(const std::string& path, const std::vector<std::size_t>& shape, const int* data) {
    static_assert(sizeof(int) == 4);
    write_npy_raw(path, shape, "<i4", data, elements(shape) * sizeof(int));
}

void write_text_file(const std::string& path, const std::string& text) {
    AtomicFile file(path);
    file.stream() << text;
    file.commit();
}

void dump_run_inputs(const RunConfig& config, const std::string& directory) {
    namespace fs = std::filesystem;
    std::error_code ec;
    fs::create_directories(directory, ec);
    if (ec) throw Error("cannot create '" + directory + "': " + ec.message(), __FILE__, __LINE__);
    const ModelShape shape = model_shape(config);
    const ParamLayout layout = ParamLayout::build(shape);
    const std::vector<float> params = initial_parameters(shape, config.seed);
    nlohmann::json manifest;
    manifest["format"] = "paralleldeck-dump";
    // How the steps update the weights: at the current weights, or (an asynchronous parameter
    // server) at the weights of S updates before, as ParameterServer computes them.
    const bool async =
        config.strategy == StrategyKind::ps && config.async_updates && config.max_staleness > 0;
    const int staleness = async ? config.max_staleness : 0;
    manifest["note"] =
        "Weights are [in, out] row-major (y = x @ w + b). The forward and the loss: model.note. " +
        std::string(async ? "Asynchronous parameter server (updates): step s computes the loss and "
                            "gradient of batch s at the weights after max(0, s - S) updates, S = "
                            "updates.staleness (steps 0 .. S all at the initial weights), then "
                            "applies them as one optimizer update (t = s + 1) to the current "
                            "weights, those after s updates; the reported loss of step s is the "
                            "one of the weights it was computed at."
                          : "Step s computes the loss and gradient of batch s at the current "
                            "weights, then applies one optimizer update (t = s + 1); the reported "
                            "loss of step s is the one before its update.") +
        (config.accumulate > 1 ? " Each step's gradient is the sum over its micro-steps "
                                 "(accumulate)."
                               : "");
    manifest["updates"] = {
        {"mode", async ? "asynchronous" : "synchronous"},
        {"staleness", staleness},
        {"rule", async ? "gradient of step s at the weights after max(0, s - staleness) "
                         "updates, applied to the weights after s updates"
                       : "gradient of step s at the weights after s updates"}};
    // Gradient accumulation: the rows of each micro-step and where the sum is reduced (a bf16
    // run rounds the running sum after each micro-step's add, so a replay needs the split).
    {
        const int replicas = std::max(1, config.data_parallel_replicas());
        const int k = std::max(1, config.accumulate);
        nlohmann::json acc = {{"micro_steps", k},
                              {"rows_per_micro_step", config.batch / (replicas * k)},
                              {"reduce_every_microstep", config.reduce_every_microstep}};
        if (k > 1)
            acc["rule"] =
                "replica r's micro-step i (i = 0 .. micro_steps - 1) takes rows [(i * replicas "
                "+ r) * n, (i * replicas + r + 1) * n) of the step's batch, n = "
                "rows_per_micro_step; its backward adds into the same gradient buffer (dlogits "
                "divided by the whole global batch, so the sum is the global batch's mean "
                "gradient); " +
                std::string(config.reduce_every_microstep
                                ? "the replicas' sum is reduced after every micro-step"
                                : "the replicas reduce only the sum, after the last micro-step "
                                  "(DDP's no_sync)") +
                "; one optimizer update per step";
        manifest["accumulate"] = std::move(acc);
    }
    manifest["model"] = {{"kind", std::string(name_of(config.model))},
                         {"input_dim", config.input_dim},
                         {"width", config.width},
                         {"hidden", shape.hidden()},
                         {"layers", config.layers},
                         {"classes", config.classes}};
    if (!shape.transformer)
        manifest["model"]["note"] =
            "Residual MLP. x is [batch, input_dim], y [batch]. h = x @ input.w + input.b; per "
            "block: h = h + (gelu_tanh(h @ w1 + b1) @ w2 + b2); logits = h @ head.w + head.b; "
            "loss: mean softmax cross-entropy over the global batch.";
    if (shape.transformer) {
        manifest["model"]["heads"] = shape.heads;
        manifest["model"]["seq_len"] = shape.seq_len;
        manifest["model"]["note"] =
            "Pre-LayerNorm transformer. x is [batch, seq_len, input_dim], y [batch, seq_len] (a "
            "label per token). h = x @ input.w + input.b; per block l: a = LN(h; ln1.g, ln1.b), "
            "q = a @ wq + bq, k = a @ wk (no key bias), v = a @ wv + bv, split into `heads` heads "
            "of width / heads "
            "columns (head j: columns j*d .. (j+1)*d - 1), causal softmax(q k^T / sqrt(d)) v per "
            "head, concatenated, h = h + (that @ wo + bo); then m = LN(h; ln2.g, ln2.b), h = h + "
            "(gelu_tanh(m @ w1 + b1) @ w2 + b2). LayerNorm: eps 1e-5, biased variance. No "
            "position embedding, no final LayerNorm. logits = h @ head.w + head.b per token; "
            "loss: mean cross-entropy over all batch x seq_len tokens.";
        if (shape.moe()) {
            manifest["model"]["experts"] = shape.experts;
            manifest["model"]["top_k"] = shape.top_k;
            manifest["model"]["capacity_factor"] = shape.capacity_factor;
            manifest["model"]["capacity"] = shape.expert_capacity();
            manifest["model"]["aux_loss_weight"] = shape.aux_loss_weight;
            manifest["model"]["moe_note"] =
                "Mixture of experts in place of every block's MLP: m = LN(h; ln2.g, ln2.b), p = "
                "softmax(m @ router) per token over the experts; each token's top_k experts by "
                "p (ties to the lower index). Per sequence, slots are given in order: every "
                "token's first choice in token order, then every token's second choice, ...; an "
                "expert that already has `capacity` tokens of this sequence drops the choice. "
                "h = h + sum over kept choices e of p_e * (gelu_tanh(m @ expertE.w1 + "
                "expertE.b1) @ expertE.w2 + expertE.b2) (gates not renormalised; a token with "
                "no kept choice gets only the residual). Objective = mean cross-entropy + the "
                "mean over the batch's sequences of sum over MoE blocks of aux_loss_weight x "
                "experts x sum_e f_e P_e, with f_e the share of the sequence's seq_len x top_k "
                "choices (before capacity) that picked e (no gradient) and P_e the mean of p_e "
                "over its tokens. The reported loss is the cross-entropy alone.";
        }
    }
    manifest["batch"] = config.batch;
    manifest["steps"] = config.steps;
    manifest["seed"] = config.seed;
    // Everything another framework needs to apply the same updates, from the very settings the
    // strategies use, so the manifest cannot disagree with the run.
    const OptimizerSettings opt = OptimizerSettings::from(config);
    nlohmann::json optimizer = {{"name", std::string(name_of(opt.kind))}, {"lr", opt.lr}};
    if (opt.kind == OptimizerKind::sgd) {
        optimizer["momentum"] = opt.momentum;
        optimizer["dampening"] = 0.0;
        optimizer["nesterov"] = false;
        optimizer["weight_decay"] = opt.weight_decay;
        optimizer["rule"] = "torch.optim.SGD: v = momentum * v + g (v starts at 0); p -= lr * v";
    } else {
        optimizer["betas"] = {opt.beta1, opt.beta2};
        optimizer["eps"] = opt.eps;
        optimizer["weight_decay"] = opt.weight_decay;
        optimizer["amsgrad"] = false;
        if (opt.kind == OptimizerKind::lamb)
            optimizer["rule"] =
                "LAMB (You et al. 2019, Algorithm 2), per tensor: m = b1 m + (1 - b1) g; v = b2 v "
                "+ (1 - b2) g^2; u = (m / (1 - b1^t)) / (sqrt(v / (1 - b2^t)) + eps) + "
                "weight_decay * p; p -= lr * (||p|| / ||u||) * u (ratio 1 where a norm is 0)";
        else if (opt.kind == OptimizerKind::adamw8bit) {
            optimizer["rule"] =
                "bitsandbytes AdamW8bit (kOptimizerStatic8bit2StateBlockwise), per tensor of at "
                "least min_8bit_size elements: m, v dequantized (code[q] * absmax of the block), "
                "m = m b1 + (1 - b1) g; v = v b2 + (1 - b2) g g; p += -lr sqrt(1 - b2^t) / (1 - "
                "b1^t) * m / (sqrt(v) + eps sqrt(1 - b2^t)); p *= 1 - lr weight_decay; each "
                "block's absmax = max |state|; codes = nearest code of state / absmax (m's code "
                "keeps m's sign); smaller tensors: the same update on fp32 states";
            optimizer["blocksize"] = opt.blocksize;
            optimizer["min_8bit_size"] = opt.min_8bit_size;
            const QuantCode& m = dynamic_map(true);
            const QuantCode& v = dynamic_map(false);
            optimizer["code_signed"] = std::vector<float>(m.begin(), m.end());
            optimizer["code_unsigned"] = std::vector<float>(v.begin(), v.end());
        } else
            optimizer["rule"] =
                "torch.optim.AdamW: p -= lr * weight_decay * p; m = b1 m + (1 - b1) g; v = b2 v + "
                "(1 - b2) g^2; p -= lr / (1 - b1^t) * m / (sqrt(v) / sqrt(1 - b2^t) + eps)";
    }
    optimizer["applies_to"] = "every tensor, biases included (one parameter group)";
    optimizer["lr_schedule"] = {{"kind", "constant"},
                                {"warmup_steps", 0},
                                {"lr_at_step", "lr at every update t = 1 .. steps"}};
    manifest["optimizer"] = std::move(optimizer);
    // Where a mixed-precision run rounds (bf16(v) or fp16(v): round to nearest even, as
    // torch.Tensor.to(torch.bfloat16 / torch.float16)); every product and element-wise op
    // computes in fp32 on its (16-bit) inputs. tests/replay/replay_dump.py follows these points.
    nlohmann::json precision = {{"name", std::string(name_of(config.precision))}};
    if (config.precision != Precision::fp32) {
        const std::string t(name_of(config.tensor_dtype()));
        // The rounding points are the same for both 16-bit types: "H16(v)" below is t(v).
        auto points = [&t](std::string text) {
            for (std::size_t at; (at = text.find("H16(")) != std::string::npos;)
                text.replace(at, 3, t);
            return text;
        };
        precision["parameters"] =
            points("H16(master); the fp32 master starts at the init_*.npy values");
        precision["master_weights"] = points(
            "fp32, in the optimizer state: the update above is applied to the master with the "
            "gradients (fp16: unscaled, and clipped where clip_grad_norm is set), then "
            "parameters = H16(master)");
        precision["forward"] = points(
            "x0 = H16(x); h = H16(x0 @ w + b) (input); block: pre = H16(h @ w1 + b1), post = "
            "H16(gelu_tanh(pre)), out = H16(H16(post @ w2) + b2 + h); head: logits = H16(h @ w + "
            "b), "
            "loss in fp32 from the 16-bit logits");
        precision["backward"] = points(
            "dlogits = H16((softmax(logits) - onehot) * (loss_scale / batch)) (loss_scale: 1 "
            "unless fp16's loss_scaling below sets it); every linear: dw = "
            "H16(dw + x^T dy), db = H16(db + sum(dy)), dx = H16(dy @ w^T); block: dpost = H16(dout "
            "@ "
            "w2^T), dpre = H16(gelu'(pre) * dpost), dh = H16(H16(dpre @ w1^T) + dout)");
        precision["reductions"] = points(
            "gradients (and tensor-parallel partial sums) are reduced in " + t +
            ": each partial sum is rounded as a ring step or an accumulating receive stores it");
    }
    if (config.fp32_reduce && config.strategy == StrategyKind::zero3) {
        precision["reduce_dtype"] = "fp32";
        precision["parameters"] =
            "bf16(fp32 sharded parameters), cast before each all-gather; the shards start at "
            "the init_*.npy values";
        precision["master_weights"] =
            "the fp32 sharded parameters themselves (FSDP2's MixedPrecisionPolicy: the update "
            "above is applied to them; no separate master copy)";
        precision["reductions"] =
            "each replica's bf16 gradients are cast to fp32 and reduce-scattered in fp32: each "
            "partial sum is an fp32 add";
    }
    if (config.precision != Precision::fp32 && !config.master_weights) {
        precision["parameters"] =
            std::string(name_of(config.tensor_dtype())) + "(init_*.npy values), no master copy";
        precision["master_weights"] =
            "none: the update above is computed in fp32 on the 16-bit parameters and the "
            "result rounded back to " +
            std::string(name_of(config.tensor_dtype())) +
            " (an update under half a 16-bit step is lost); the optimizer state is fp32";
        precision["no_master_weights"] = true;
    }
    if (config.precision == Precision::fp16_mixed) {
        const LossScaling& ls = config.loss_scaling;
        precision["loss_scaling"] = {
            {"dynamic", ls.dynamic},
            {"init_scale", ls.init},
            {"growth_interval", ls.growth_interval},
            {"growth_factor", ls.growth_factor},
            {"backoff_factor", ls.backoff_factor},
            {"rule",
             "torch.amp.GradScaler: loss_scale = the scale (float32) in the backward above; before "
             "the update the gradients are multiplied by float32(1 / scale) (unscale_); any inf or "
             "NaN among them skips the update (Adam's step count does not advance) and, when "
             "dynamic, multiplies the scale by backoff_factor; growth_interval applied steps in a "
             "row multiply it by growth_factor"}};
    }
    if (config.clip_grad_norm > 0)
        manifest["clip_grad_norm"] = {
            {"max_norm", config.clip_grad_norm},
            {"rule",
             "torch.nn.utils.clip_grad_norm_ over every tensor after unscaling: the gradients "
             "are multiplied by min(1, max_norm / (total L2 norm + 1e-6))"}};
    // How a data-parallel bf16 run sums its replicas' (bf16) gradients, so a replay can round
    // each partial sum where the engine does: each bucket [begin, end) of the flat gradient
    // (tensors in the order listed below) is split into `replicas` chunks [begin + c * n / R,
    // begin + (c + 1) * n / R); a ring sums chunk c over replicas c+1, c+2, ..., c+R (mod R),
    // rounding after each add; a parameter server adds workers 0, 1, ... in order.
    const bool reduces =
        config.strategy == StrategyKind::dp || config.strategy == StrategyKind::ps ||
        config.strategy == StrategyKind::zero1 || config.strategy == StrategyKind::zero2 ||
        config.strategy == StrategyKind::zero3;
    if ((config.precision != Precision::fp32 || config.comm_hook != DType::fp32 ||
         config.powersgd.rank > 0 || config.fp8.enabled()) &&
        reduces && config.accumulate == 1 && config.data_parallel_replicas() > 1) {
        nlohmann::json buckets = nlohmann::json::array();
        if (config.strategy == StrategyKind::zero3) {
            for (int u = 0; u < layout.units; ++u)
                buckets.push_back({layout.unit_begin(u), layout.unit_end(u)});
        } else {
            for (const GradBucket& b :
                 make_grad_buckets(layout, config.bucket_bytes, config.tensor_dtype()))
                buckets.push_back({b.begin, b.end});
        }
        precision["gradient_reduction"] = {
            {"replicas", config.data_parallel_replicas()},
            {"order", config.strategy == StrategyKind::ps ? "sequential" : "ring"},
            {"buckets", std::move(buckets)}};
    }
    if (config.tf32 && config.backend == BackendKind::cpu)
        precision["tf32_products"] =
            "every matrix product's two inputs rounded to TF32 (fp32 with 10 of its 23 mantissa "
            "bits, to nearest even) before the product, which sums in fp32; bias gradients are "
            "sums of the fp32 output gradient";
    if (config.bf16_products && config.backend == BackendKind::cpu)
        precision["bf16_products"] =
            "torch.set_float32_matmul_precision('medium'): every matrix product's two inputs "
            "rounded to bf16 (to nearest even) before the product, which sums in fp32; bias "
            "gradients are sums of the fp32 output gradient";
    if (config.fp8.enabled())
        precision["fp8"] = {
            {"format", std::string(name_of(config.fp8.format))},
            {"amax_history_len", config.fp8.amax_history_len},
            {"amax_compute_algo", std::string(name_of(config.fp8.amax_compute_algo))},
            {"margin", config.fp8.margin},
            {"rule",
             "Transformer Engine's DelayedScaling on each block's two products (input projection "
             "and head not FP8), per replica (no amax all-reduce). Forward: the product's input x "
             "and weight w are cast as q = fp8(v * s) with their own scales s (E4M3; fp8() rounds "
             "to nearest even and saturates at the largest finite value), and y = (qx qw) * "
             "(1/sx * 1/sw) + b, summed in fp32. Backward: the output gradient dy is cast with "
             "its own scale (E5M2 under hybrid, E4M3 under e4m3), x and w are cast again with "
             "the scales forward used; dw = (qx^T qdy) * (1/sx * 1/sdy), dx = (qdy qw^T) * "
             "(1/sdy * 1/sw), db = column sums of the unscaled dy. Every scale starts at 1 with a "
             "zero history; each cast writes max(|v|) into slot 0 of its tensor's history (the "
             "largest over the pass). After each forward pass (backward pass) the forward "
             "(backward) tensors are updated: amax = max(history) (or history[0] for "
             "most_recent); if amax > 0 and finite, s = float32(fp8_max / amax) / 2^margin; "
             "then history = roll(history, -1) and history[0] = 0"}};
    manifest["precision"] = std::move(precision);
    // ZeRO++'s int8 quantization (qwZ, qgZ): the ranks, the group size and each unit's flat
    // range, which the ranks' chunks split, with the rule in words.
    const auto zeropp = [&](const char* rule) {
        nlohmann::json units = nlohmann::json::array();
        for (int u = 0; u < layout.units; ++u)
            units.push_back({layout.unit_begin(u), layout.unit_end(u)});
        return nlohmann::json{{"ranks", config.devices},
                              {"group", kQuantizedWeightGroup},
                              {"units", std::move(units)},
                              {"rule", rule}};
    };
    if (config.quantized_weights && config.strategy == StrategyKind::zero3) {
        manifest["quantized_weights"] = zeropp(
            "ZeRO++ qwZ: before every parameter all-gather, each unit's flat parameters "
            "[begin, end) are split into `ranks` chunks [begin + c n / R, begin + (c + 1) n / "
            "R); each chunk is quantized in groups of `group` elements: scale = absmax / 127 "
            "(float32), code = round_half_even(x / scale) in [-127, 127], value = code * scale; "
            "forward and backward use those values, the update applies the gradient to the "
            "exact parameters");
    }
    if (config.loss_replica_mean && config.strategy == StrategyKind::dp)
        manifest["loss_reduction"] = {
            {"gradient_multiplier", config.data_parallel_replicas()},
            {"rule",
             "each replica divides its loss by its own slice's tokens and the gradients are "
             "summed over the replicas: the global-batch gradient times the replica count"}};
    if (config.quantized_gradients && config.strategy == StrategyKind::zero3) {
        manifest["quantized_gradients"] = zeropp(
            "ZeRO++ qgZ: each rank's gradient of its slice of the batch (rows [B r / R, B (r + "
            "1) / R)), per unit, split into the ranks' chunks as quantized_weights' and "
            "quantized in groups the same way; the owner dequantizes the R chunks it receives "
            "and sums them in float32 in rank order");
    }
    if (config.comm_hook != DType::fp32) {
        const std::string t(name_of(config.comm_hook));
        manifest["comm_hook"] = {
            {"name", t + "_compress_hook"},
            {"dtype", t},
            {"rule",
             "each replica's fp32 gradients (already divided by the replica count) are "
             "cast to " +
                 t +
                 " (round to nearest even) and summed as "
                 "precision.gradient_reduction says, each partial sum rounded to " +
                 t + "; the sum is cast back to fp32 for the update"}};
    }
    if (config.powersgd.rank > 0) {
        // The hook's buckets and tensors, and the standard normal Qs it drew (before
        // orthogonalising), so a replay runs the same low-rank all-reduces.
        const RunConfig::PowerSgd& ps = config.powersgd;
        const auto plan = powersgd_buckets(
            layout, make_grad_buckets(layout, config.bucket_bytes, config.tensor_dtype()), ps);
        nlohmann::json buckets = nlohmann::json::array();
        nlohmann::json random_q = nlohmann::json::array();
        for (std::size_t b = 0; b < plan.size(); ++b) {
            nlohmann::json ts = nlohmann::json::array();
            for (std::size_t k = 0; k < plan[b].tensors.size(); ++k) {
                const PowerSgdTensor& t = plan[b].tensors[k];
                ts.push_back({{"offset", t.offset},
                              {"count", t.count},
                              {"n", t.n},
                              {"m", t.m},
                              {"rank", t.rank},
                              {"compress", t.compress}});
                if (!t.compress) continue;
                for (int s = ps.start_iter; s < config.steps; ++s) {
                    if (ps.warm_start && s > ps.start_iter) break;
                    std::vector<float> q(static_cast<std::size_t>(t.m) * t.rank);
                    powersgd_random_q(config.seed, s, static_cast<int>(b), static_cast<int>(k),
                                      q.data(), q.size());
                    char name[128];
                    std::snprintf(name, sizeof name, "powersgd_q_step%04d_b%zu_t%zu.npy", s, b, k);
                    write_npy((fs::path(directory) / name).string(),
                              {static_cast<std::size_t>(t.m), static_cast<std::size_t>(t.rank)},
                              q.data());
                    random_q.push_back({{"step", s}, {"bucket", b}, {"tensor", k}, {"file", name}});
                }
            }
            buckets.push_back({{"begin", plan[b].begin}, {"end", plan[b].end}, {"tensors", ts}});
        }
        manifest["powersgd"] = {
            {"rank", ps.rank},
            {"start_iter", ps.start_iter},
            {"min_compression_rate", ps.min_compression_rate},
            {"error_feedback", ps.error_feedback},
            {"warm_start", ps.warm_start},
            {"buckets", std::move(buckets)},
            {"random_q", std::move(random_q)},
            {"rule",
             "torch's powerSGD_hook on each bucket, from step start_iter (plain all-reduces "
             "before): the bucket's gradient times the replica count (each replica's own mean "
             "gradient, as DDP's hook sees it) plus its error; tensors not compressed (a tensor "
             "is M = the weight transposed, n x m; compress when (n + m) x rank x "
             "min_compression_rate < n x m) all-reduced and divided by the replica count; Q "
             "(the step's random_q, or the last Q with warm start) orthogonalised, P = M Q "
             "all-reduced, P orthogonalised, Q = M^T P all-reduced and divided, M = P Q^T; error "
             "= the input - the result"}};
    }
    manifest["strategy"] = std::string(name_of(config.strategy));
    manifest["data_parallel_replicas"] = config.data_parallel_replicas();
    nlohmann::json tensors = nlohmann::json::array();
    for (const auto& t : layout.tensors) {
        const std::string file = "init_" + t.name + ".npy";
        std::vector<std::size_t> dims =
            t.rows == 1 ? std::vector<std::size_t>{t.count}
                        : std::vector<std::size_t>{static_cast<std::size_t>(t.rows),
                                                   static_cast<std::size_t>(t.cols)};
        write_npy((fs::path(directory) / file).string(), dims, params.data() + t.offset);
        tensors.push_back({{"name", t.name}, {"file", file}, {"shape", dims}});
    }
    manifest["tensors"] = std::move(tensors);
    SyntheticTask task(shape, config.seed, static_cast<float>(config.input_scale));
    const std::size_t tokens = static_cast<std::size_t>(shape.tokens(config.batch));
    std::vector<float> x(tokens * static_cast<std::size_t>(config.input_dim));
    std::vector<int> y(tokens);
    const auto batch = static_cast<std::size_t>(config.batch);
    const auto seq = static_cast<std::size_t>(shape.seq_len);
    const auto in = static_cast<std::size_t>(config.input_dim);
    const std::vector<std::size_t> x_dims = shape.transformer
                                                ? std::vector<std::size_t>{batch, seq, in}
                                                : std::vector<std::size_t>{batch, in};
    const std::vector<std::size_t> y_dims =
        shape.transformer ? std::vector<std::size_t>{batch, seq} : std::vector<std::size_t>{batch};
    nlohmann::json batches = nlohmann::json::array();
    // The run's own loader: a dataset's examples where the run reads one.
    BatchLoader loader(task, shape);
    std::optional<DataPlan> plan;
    if (config.dataset.enabled()) {
        plan = plan_data(config.dataset, config.data_parallel_replicas(),
                         config.cluster.node_count(config.devices), "scenario key 'dataset'");
        loader.read_from(&*plan);
    }
    for (int s = 0; s < config.steps; ++s) {
        const auto drawn = loader.load(s, 0, config.batch);
        std::copy(drawn->x.begin(), drawn->x.end(), x.begin());
        std::copy(drawn->labels.begin(), drawn->labels.end(), y.begin());
        char name[32];
        std::snprintf(name, sizeof name, "step%04d", s);
        const std::string xf = std::string(name) + "_x.npy", yf = std::string(name) + "_y.npy";
        write_npy((fs::path(directory) / xf).string(), x_dims, x.data());
        write_npy((fs::path(directory) / yf).string(), y_dims, y.data());
        batches.push_back({{"step", s}, {"x", xf}, {"y", yf}});
    }
    manifest["batches"] = std::move(batches);
    write_text_file((fs::path(directory) / "manifest.json").string(), manifest.dump(2));
}

}  // namespace pd
