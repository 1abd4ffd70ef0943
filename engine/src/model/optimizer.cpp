#include "pd/optimizer.h"

#include <cmath>

#include "cpu/elementwise.h"

namespace pd {

OptimizerSettings OptimizerSettings::from(const RunConfig& config) {
    OptimizerSettings s;
    s.kind = config.optimizer;
    s.lr = static_cast<float>(config.effective_lr());
    if (s.kind == OptimizerKind::sgd) s.weight_decay = 0.0f;
    s.master_weights = config.precision != Precision::fp32 && config.master_weights;
    s.param_dtype = config.tensor_dtype();
    return s;
}

void optimizer_update(const OptimizerSettings& s, int t, float* params, const float* grads,
                      float* state, std::size_t count) {
    optimizer_update_range(s, t, params, grads, state, count, 0, count);
}

void optimizer_update_range(const OptimizerSettings& s, int t, float* params, const float* grads,
                            float* state, std::size_t count, std::size_t begin, std::size_t end) {
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
