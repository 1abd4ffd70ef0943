#include "pd/model.h"

#include <algorithm>
#include <atomic>
#include <cmath>
#include <thread>
#include <vector>

#include "model/random.h"
#include "pd/run_config.h"

namespace pd {

ModelShape model_shape(const RunConfig& c) {
    ModelShape s;
    s.input_dim = c.input_dim;
    s.width = c.width;
    s.layers = c.layers;
    s.classes = c.classes;
    s.transformer = c.model == ModelKind::transformer;
    s.heads = s.transformer ? c.heads : 1;
    s.seq_len = c.tokens_per_sample();
    if (s.transformer && c.experts > 0) {
        s.experts = c.experts;
        s.top_k = c.top_k;
        s.capacity_factor = c.capacity_factor;
        s.aux_loss_weight = c.aux_loss_weight;
    }
    return s;
}

int ModelShape::expert_capacity() const {
    if (!moe()) return 0;
    const double room = std::ceil(capacity_factor * top_k * seq_len / experts - 1e-9);
    return std::clamp(static_cast<int>(room), 1, seq_len);
}

UnitKind ModelShape::unit_kind(int unit) const {
    if (unit <= 0) return UnitKind::input;
    if (unit >= units() - 1) return UnitKind::head;
    if (!transformer) return UnitKind::mlp;
    if (unit % 2 == 1) return UnitKind::attention;
    return experts > 0 ? UnitKind::moe : UnitKind::mlp;
}

int ModelShape::block_of(int unit) const {
    if (unit <= 0 || unit >= units() - 1) return -1;
    return transformer ? (unit - 1) / 2 : unit - 1;
}

const char* ModelShape::unit_name(int unit) const {
    switch (unit_kind(unit)) {
        case UnitKind::input:
            return "input";
        case UnitKind::head:
            return "head";
        case UnitKind::attention:
            return "attention";
        case UnitKind::mlp:
            return transformer ? "MLP" : "block";
        case UnitKind::moe:
            return "MoE";
    }
    return "?";
}

ParamLayout ParamLayout::build(const ModelShape& shape) {
    ParamLayout layout;
    auto add = [&](std::string name, int rows, int cols, int unit, int expert = -1) {
        TensorSpec t;
        t.name = std::move(name);
        t.offset = layout.total;
        t.rows = rows;
        t.cols = cols;
        t.count = static_cast<std::size_t>(rows) * static_cast<std::size_t>(cols);
        t.unit = unit;
        t.expert = expert;
        layout.total += t.count;
        layout.tensors.push_back(std::move(t));
    };
    add("input.w", shape.input_dim, shape.width, 0);
    add("input.b", 1, shape.width, 0);
    const int h = shape.width;
    for (int l = 0; l < shape.layers; ++l) {
        const std::string p = "block" + std::to_string(l) + ".";
        int mlp_unit = l + 1;
        if (shape.transformer) {
            const int attn = 2 * l + 1;
            add(p + "ln1.g", 1, h, attn);
            add(p + "ln1.b", 1, h, attn);
            // No key bias: q·(k + b) = q·k + q·b adds the same to every score of a query,
            // which the softmax ignores, so its gradient is exactly 0 and fp32 noise in it
            // would become full-size AdamW steps (LLaMA-style models drop it too).
            add(p + "wq", h, h, attn);
            add(p + "bq", 1, h, attn);
            add(p + "wk", h, h, attn);
            add(p + "wv", h, h, attn);
            add(p + "bv", 1, h, attn);
            add(p + "wo", h, h, attn);
            add(p + "bo", 1, h, attn);
            mlp_unit = 2 * l + 2;
            add(p + "ln2.g", 1, h, mlp_unit);
            add(p + "ln2.b", 1, h, mlp_unit);
            if (shape.moe()) {
                add(p + "router", h, shape.experts, mlp_unit);
                for (int e = 0; e < shape.experts; ++e) {
                    const std::string q = p + "expert" + std::to_string(e) + ".";
                    add(q + "w1", h, shape.hidden(), mlp_unit, e);
                    add(q + "b1", 1, shape.hidden(), mlp_unit, e);
                    add(q + "w2", shape.hidden(), h, mlp_unit, e);
                    add(q + "b2", 1, h, mlp_unit, e);
                }
                continue;
            }
        }
        add(p + "w1", h, shape.hidden(), mlp_unit);
        add(p + "b1", 1, shape.hidden(), mlp_unit);
        add(p + "w2", shape.hidden(), h, mlp_unit);
        add(p + "b2", 1, h, mlp_unit);
    }
    const int head = shape.units() - 1;
    add("head.w", h, shape.classes, head);
    add("head.b", 1, shape.classes, head);
    layout.units = shape.units();
    return layout;
}

std::size_t ParamLayout::unit_begin(int unit) const {
    for (const auto& t : tensors)
        if (t.unit == unit) return t.offset;
    return total;
}

std::size_t ParamLayout::unit_end(int unit) const {
    std::size_t end = unit_begin(unit);
    for (const auto& t : tensors)
        if (t.unit == unit) end = t.offset + t.count;
    return end;
}

ActivationEstimate transformer_activation_bytes(const ModelShape& shape, int samples, int tp,
                                                bool sequence_parallel) {
    const double sb = static_cast<double>(shape.tokens(samples));
    const double h = shape.width, a = shape.heads, s = shape.seq_len, t = tp;
    ActivationEstimate e;
    if (sequence_parallel && tp > 1) {
        e.per_block = (sb * h * (64.0 + 4.0 * a * s / h) + 16.0 * sb) / t;
        e.outside_blocks = 4.0 * sb * (shape.input_dim + h + shape.classes) / t;
    } else {
        e.per_block = sb * h * (16.0 + 48.0 / t + 4.0 * a * s / (h * t)) + 16.0 * sb;
        e.outside_blocks = 4.0 * sb * (shape.input_dim + h + shape.classes);
    }
    return e;
}

std::vector<float> initial_parameters(const ModelShape& shape, std::uint64_t seed) {
    const ParamLayout layout = ParamLayout::build(shape);
    std::vector<float> params(layout.total, 0.0f);
    std::vector<std::size_t> drawn;  // the tensors drawn at random, largest first
    for (std::size_t i = 0; i < layout.tensors.size(); ++i) {
        const TensorSpec& t = layout.tensors[i];
        if (t.name.ends_with(".g")) {  // LayerNorm gains start at one (the identity)
            std::fill_n(params.begin() + static_cast<std::ptrdiff_t>(t.offset), t.count, 1.0f);
            continue;
        }
        if (t.rows == 1) continue;  // biases start at zero
        // The classifier head starts at zero, as practitioners initialise it: every class has
        // the same logit, so step 0's loss is exactly ln(classes) and the first update moves
        // only the head. A random head instead starts above ln(classes) and, under AdamW's
        // sign-like first steps, amplifies every change of the body into the logits.
        if (t.unit == layout.units - 1) continue;
        drawn.push_back(i);
    }
    std::stable_sort(drawn.begin(), drawn.end(), [&](std::size_t a, std::size_t b) {
        return layout.tensors[a].count > layout.tensors[b].count;
    });
    auto draw = [&](std::size_t i) {
        const TensorSpec& t = layout.tensors[i];
        // Fan-in scaled normal; the linears that write into the residual stream (w2, and wo
        // in attention) start small so it stays well conditioned as blocks are added.
        float std_dev = 1.0f / std::sqrt(static_cast<float>(t.rows));
        if (t.name.ends_with("w2") || t.name.ends_with("wo"))
            std_dev *= 0.5f / std::sqrt(static_cast<float>(shape.layers));
        Rng rng(mix_seed(seed, 0x9a7a3e7e5ULL, i));
        for (std::size_t k = 0; k < t.count; ++k)
            params[t.offset + k] = static_cast<float>(rng.normal()) * std_dev;
    };
    // Each tensor has its own generator, so they are drawn on every core at once (the same
    // numbers in any order): at card sizes this was a third of a run's set-up.
    std::atomic<std::size_t> next{0};
    auto worker = [&] {
        for (std::size_t j; (j = next.fetch_add(1)) < drawn.size();) draw(drawn[j]);
    };
    const std::size_t helpers =
        std::min<std::size_t>(std::max(1u, std::thread::hardware_concurrency()), drawn.size());
    std::vector<std::thread> threads;
    for (std::size_t h = 1; h < helpers; ++h) threads.emplace_back(worker);
    worker();
    for (auto& t : threads) t.join();
    return params;
}

SyntheticTask::SyntheticTask(const ModelShape& shape, std::uint64_t seed, float input_scale)
    : shape_(shape), seed_(seed), input_scale_(input_scale) {
    Rng rng(mix_seed(seed, 0x7eac4e2ULL, 0));
    prototypes_.resize(static_cast<std::size_t>(shape.classes) * shape.input_dim);
    for (auto& p : prototypes_) p = static_cast<float>(rng.normal() * kPrototypeScale);
}

// One sample from its own generator: a uniform label, then its prototype plus noise (every
// token of a sequence). Drawn in this order so any device, and the dump, draws the same sample.
void SyntheticTask::draw(std::uint64_t sample_seed, float* x, int* labels) const {
    const int in = shape_.input_dim;
    Rng rng(sample_seed);
    const int label =
        std::min(static_cast<int>(rng.uniform() * shape_.classes), shape_.classes - 1);
    const float* prototype = prototypes_.data() + static_cast<std::size_t>(label) * in;
    if (shape_.transformer) {
        for (int t = 0; t < shape_.seq_len; ++t) {
            float* row = x + static_cast<std::size_t>(t) * in;
            for (int j = 0; j < in; ++j)
                row[j] = (prototype[j] + static_cast<float>(rng.normal() * kSequenceNoise)) *
                         input_scale_;
            labels[t] = label;
        }
        return;
    }
    for (int j = 0; j < in; ++j)
        x[j] = (prototype[j] + static_cast<float>(rng.normal())) * input_scale_;
    labels[0] = label;
}

void SyntheticTask::batch(int step, int first, int count, float* x, int* labels) const {
    const std::size_t tokens = static_cast<std::size_t>(shape_.transformer ? shape_.seq_len : 1);
    for (int i = 0; i < count; ++i)
        draw(mix_seed(seed_, static_cast<std::uint64_t>(step) + 1,
                      static_cast<std::uint64_t>(first + i)),
             x + i * tokens * static_cast<std::size_t>(shape_.input_dim), labels + i * tokens);
}

void SyntheticTask::example(int id, float* x, int* labels) const {
    // Stream 0 is no step's (steps use step + 1): a dataset's examples are their own samples.
    draw(mix_seed(seed_, 0, static_cast<std::uint64_t>(id)), x, labels);
}

}  // namespace pd
