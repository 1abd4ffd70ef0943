#include "pd/optimizer.h"

#include <algorithm>
#include <cfloat>
#include <cmath>
#include <cstdint>
#include <stdexcept>
#include <vector>

#include "cpu/elementwise.h"
#include "model/dynamic_quantization.h"

namespace pd {

OptimizerSettings OptimizerSettings::from(const RunConfig& config) {
    OptimizerSettings s;
    s.kind = config.optimizer;
    s.lr = static_cast<float>(config.effective_lr());
    if (s.kind == OptimizerKind::sgd) s.weight_decay = 0.0f;
    s.master_weights = config.precision != Precision::fp32 && config.master_weights;
    s.param_dtype = config.tensor_dtype();
    // FSDP2's MixedPrecisionPolicy: the optimizer steps on the fp32 sharded parameters.
    if (config.strategy == StrategyKind::zero3 && config.fp32_reduce) {
        s.master_weights = false;
        s.param_dtype = DType::fp32;
    }
    s.blocksize = config.optimizer_blocksize;
    s.min_8bit_size = static_cast<std::size_t>(config.min_8bit_size);
    return s;
}

void OptimizerSettings::set_tensors(const ParamLayout& layout) {
    tensors.clear();
    for (const TensorSpec& t : layout.tensors) tensors.push_back({t.offset, t.count});
    state_offsets_.clear();
    if (kind != OptimizerKind::adamw8bit) return;
    std::size_t at = 0;
    for (const OptimizerTensor& t : tensors) {
        state_offsets_.push_back(at);
        if (quantized(t)) {
            const std::size_t blocks = (t.count + static_cast<std::size_t>(blocksize) - 1) /
                                       static_cast<std::size_t>(blocksize);
            at += (2 * t.count + 3) / 4 + 2 * blocks;  // two codes a value, two absmaxes a block
        } else {
            at += 2 * t.count;
        }
    }
    state_offsets_.push_back(at);
}

std::size_t OptimizerSettings::state_floats(std::size_t count) const {
    if (kind != OptimizerKind::adamw8bit)
        return count * static_cast<std::size_t>(state_per_parameter());
    if (state_offsets_.empty())
        throw std::logic_error("adamw8bit's state needs the model's tensors (set_tensors)");
    return state_offsets_.back();
}

std::size_t OptimizerSettings::state_offset(std::size_t i) const {
    return state_offsets_.at(i);
}

namespace {

// LAMB on one tensor: m and v as AdamW's, then the update scaled by ||w|| / ||u||.
void lamb_tensor(const OptimizerSettings& s, int t, float* w, const float* g, float* m, float* v,
                 std::size_t n) {
    const float bc1 = static_cast<float>(1.0 - std::pow(static_cast<double>(s.beta1), t));
    const float bc2 = static_cast<float>(1.0 - std::pow(static_cast<double>(s.beta2), t));
    const float b1 = s.beta1, b2 = s.beta2, eps = s.eps, wd = s.weight_decay;
    auto direction = [&](std::size_t i) {
        return (m[i] / bc1) / (std::sqrt(v[i] / bc2) + eps) + wd * w[i];
    };
    double w_sq = 0, u_sq = 0;
    for (std::size_t i = 0; i < n; ++i) {
        m[i] = b1 * m[i] + (1.0f - b1) * g[i];
        v[i] = b2 * v[i] + (1.0f - b2) * g[i] * g[i];
        const float u = direction(i);
        w_sq += static_cast<double>(w[i]) * w[i];
        u_sq += static_cast<double>(u) * u;
    }
    const float trust =
        w_sq > 0 && u_sq > 0 ? static_cast<float>(std::sqrt(w_sq) / std::sqrt(u_sq)) : 1.0f;
    const float step = s.lr * trust;
    for (std::size_t i = 0; i < n; ++i) {
        const float u = direction(i);  // from the updated m, v and the weight before the step
        w[i] -= step * u;
    }
}

// bitsandbytes' 2-state Adam arithmetic (its 32-bit and 8-bit kernels share it): the step
// -lr * sqrt(1 - b2^t) / (1 - b1^t), eps scaled by sqrt(1 - b2^t), decay after the step.
struct BnbAdamStep {
    float b1, b2, step_size, eps_scaled, decay;
    BnbAdamStep(const OptimizerSettings& s, int t)
        : b1(s.beta1), b2(s.beta2), step_size(0), eps_scaled(0), decay(1.0f) {
        const float correction1 = 1.0f - std::pow(s.beta1, static_cast<float>(t));
        const float correction2 = std::sqrt(1.0f - std::pow(s.beta2, static_cast<float>(t)));
        step_size = -s.lr * correction2 / correction1;
        eps_scaled = s.eps * correction2;
        if (s.weight_decay > 0.0f) decay = 1.0f - s.lr * s.weight_decay;
    }
    float apply(float p, float m, float v) const {
        p = p + step_size * (m / (std::sqrt(v) + eps_scaled));
        return decay != 1.0f ? p * decay : p;
    }
};

// kOptimizer32bit2State's Adam on a tensor under min_8bit_size.
void bnb_adam32_tensor(const BnbAdamStep& a, float* w, const float* g, float* m, float* v,
                       std::size_t n) {
    for (std::size_t i = 0; i < n; ++i) {
        m[i] = m[i] * a.b1 + (1.0f - a.b1) * g[i];
        v[i] = v[i] * a.b2 + (1.0f - a.b2) * (g[i] * g[i]);
        w[i] = a.apply(w[i], m[i], v[i]);
    }
}

// kOptimizerStatic8bit2StateBlockwise on one tensor: codes q1 (m), q2 (v), absmaxes a1, a2.
void bnb_adam8bit_tensor(const BnbAdamStep& a, std::size_t block, float* w, const float* g,
                         std::uint8_t* q1, std::uint8_t* q2, float* a1, float* a2, std::size_t n,
                         StateQuantError* error) {
    const QuantCode& code1 = dynamic_map(true);
    const QuantCode& code2 = dynamic_map(false);
    std::vector<float> s1(block), s2(block), x1(block), x2(block);
    std::vector<int> pivots(block);
    for (std::size_t begin = 0, b = 0; begin < n; begin += block, ++b) {
        const std::size_t len = std::min(block, n - begin);
        float max1 = -FLT_MAX, max2 = -FLT_MAX;
        for (std::size_t j = 0; j < len; ++j) {
            const std::size_t i = begin + j;
            const float gv = g[i];
            if (std::isfinite(gv)) {
                s2[j] = code2[q2[i]] * a2[b];
                s2[j] = (s2[j] * a.b2) + ((1.0f - a.b2) * gv * gv);
                s1[j] = code1[q1[i]] * a1[b];
                s1[j] = (s1[j] * a.b1) + ((1.0f - a.b1) * gv);
                w[i] = a.apply(w[i], s1[j], s2[j]);
            } else {
                s1[j] = s2[j] = 0.0f;  // the kernel's rule: the state is reset, the weight kept
            }
            max1 = std::max(max1, std::fabs(s1[j]));
            max2 = std::max(max2, std::fabs(s2[j]));
        }
        a1[b] = max1;
        a2[b] = max2;
        // Each state over its block's new absmax (a block of zeros, absmax 0, stores code 0's
        // index: it dequantizes to 0 whatever the code).
        for (std::size_t j = 0; j < len; ++j) {
            x1[j] = max1 > 0 ? s1[j] / max1 : 0.0f;
            x2[j] = max2 > 0 ? s2[j] / max2 : 0.0f;
        }
        quantize_dynamic_n(code1, x1.data(), len, pivots.data(), q1 + begin);
        quantize_dynamic_n(code2, x2.data(), len, pivots.data(), q2 + begin);
        // The kernel keeps m's sign through quantisation: a code of the wrong sign moves one
        // step toward the value's side.
        for (std::size_t j = 0; j < len; ++j) {
            std::uint8_t& c1 = q1[begin + j];
            if (std::signbit(code1[c1]) != std::signbit(s1[j])) c1 += s1[j] > 0.0f ? 1 : -1;
        }
        if (error)
            for (std::size_t j = 0; j < len; ++j) {
                const double d1 = double(code1[q1[begin + j]]) * max1 - s1[j];
                const double d2 = double(code2[q2[begin + j]]) * max2 - s2[j];
                error->m_error += d1 * d1;
                error->m_norm += double(s1[j]) * s1[j];
                error->v_error += d2 * d2;
                error->v_norm += double(s2[j]) * s2[j];
            }
    }
}

}  // namespace

void optimizer_update_tensors(const OptimizerSettings& s, int t, float* params, const float* grads,
                              float* state, std::size_t count, std::size_t first, std::size_t end) {
    if (float* master = s.master(state, count)) {
        OptimizerSettings fp32 = s;
        fp32.master_weights = false;
        fp32.param_dtype = DType::fp32;
        optimizer_update_tensors(fp32, t, master, grads, state, count, first, end);
        for (std::size_t k = first; k < end; ++k) {
            const OptimizerTensor& tensor = s.tensors[k];
            for (std::size_t i = tensor.offset; i < tensor.offset + tensor.count; ++i)
                params[i] = round_to(s.param_dtype, master[i]);
        }
        return;
    }
    const BnbAdamStep bnb(s, t);
    for (std::size_t k = first; k < end; ++k) {
        const OptimizerTensor& tensor = s.tensors[k];
        float* w = params + tensor.offset;
        const float* g = grads + tensor.offset;
        const std::size_t n = tensor.count;
        if (s.kind == OptimizerKind::lamb) {
            lamb_tensor(s, t, w, g, state + tensor.offset, state + count + tensor.offset, n);
        } else if (!s.quantized(tensor)) {
            float* m = state + s.state_offset(k);
            bnb_adam32_tensor(bnb, w, g, m, m + n, n);
        } else {
            const std::size_t block = static_cast<std::size_t>(s.blocksize);
            const std::size_t blocks = (n + block - 1) / block;
            float* at = state + s.state_offset(k);
            auto* codes = reinterpret_cast<std::uint8_t*>(at);
            float* absmax = at + (2 * n + 3) / 4;
            StateQuantError* error = nullptr;
            if (s.quant_errors) {
                error = &s.quant_errors->at(k);
                *error = {};
            }
            bnb_adam8bit_tensor(bnb, block, w, g, codes, codes + n, absmax, absmax + blocks, n,
                                error);
        }
        if (s.param_dtype != DType::fp32)
            for (std::size_t i = 0; i < n; ++i) w[i] = round_to(s.param_dtype, w[i]);
    }
}

void optimizer_update(const OptimizerSettings& s, int t, float* params, const float* grads,
                      float* state, std::size_t count) {
    if (s.per_tensor())
        optimizer_update_tensors(s, t, params, grads, state, count, 0, s.tensors.size());
    else
        optimizer_update_range(s, t, params, grads, state, count, 0, count);
}

void optimizer_update_range(const OptimizerSettings& s, int t, float* params, const float* grads,
                            float* state, std::size_t count, std::size_t begin, std::size_t end) {
    if (s.per_tensor())
        throw std::logic_error(
            "lamb and adamw8bit update whole tensors (optimizer_update_tensors)");
    const std::size_t n = end - begin;
    // Mixed precision: the update is the fp32 master's; the 16-bit parameters its rounding.
    if (float* master = s.master(state, count)) {
        OptimizerSettings fp32 = s;
        fp32.master_weights = false;
        fp32.param_dtype = DType::fp32;
        optimizer_update_range(fp32, t, master, grads, state, count, begin, end);
        for (std::size_t i = begin; i < end; ++i) params[i] = round_to(s.param_dtype, master[i]);
        return;
    }
    if (s.kind == OptimizerKind::sgd) {
        cpu::sgd_update(params + begin, grads + begin, state + begin, n, s.lr, s.momentum);
    } else {
        const double bc1 = 1.0 - std::pow(static_cast<double>(s.beta1), t);
        const double bc2 = 1.0 - std::pow(static_cast<double>(s.beta2), t);
        cpu::AdamWStep step{s.lr,
                            s.beta1,
                            s.beta2,
                            s.eps,
                            s.weight_decay,
                            static_cast<float>(s.lr / bc1),
                            static_cast<float>(1.0 / std::sqrt(bc2))};
        cpu::adamw_update(params + begin, grads + begin, state + begin, state + count + begin, n,
                          step);
    }
    // 16-bit weights without a master copy: the updated weight is stored back in 16 bits.
    if (s.param_dtype != DType::fp32)
        for (std::size_t i = begin; i < end; ++i) params[i] = round_to(s.param_dtype, params[i]);
}

}  // namespace pd
