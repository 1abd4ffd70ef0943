#include "pd/optimizer.h"

#include <cmath>

namespace pd {

OptimizerSettings OptimizerSettings::from(const RunConfig& config) {
    OptimizerSettings s;
    s.kind = config.optimizer;
    s.lr = static_cast<float>(config.effective_lr());
    if (s.kind == OptimizerKind::sgd) s.weight_decay = 0.0f;
    return s;
}

void optimizer_update(const OptimizerSettings& s, int t, float* params, const float* grads,
                      float* state, std::size_t count) {
    if (s.kind == OptimizerKind::sgd) {
        // PyTorch's SGD with momentum: v = mu v + g; p -= lr v.
        float* v = state;
        for (std::size_t i = 0; i < count; ++i) {
            v[i] = s.momentum * v[i] + grads[i];
            params[i] -= s.lr * v[i];
        }
        return;
    }
    float* m = state;
    float* v = state + count;
    const double bc1 = 1.0 - std::pow(static_cast<double>(s.beta1), t);
    const double bc2 = 1.0 - std::pow(static_cast<double>(s.beta2), t);
    const float step = static_cast<float>(s.lr / bc1);
    const float inv_sqrt_bc2 = static_cast<float>(1.0 / std::sqrt(bc2));
    for (std::size_t i = 0; i < count; ++i) {
        const float g = grads[i];
        m[i] = s.beta1 * m[i] + (1.0f - s.beta1) * g;
        v[i] = s.beta2 * v[i] + (1.0f - s.beta2) * g * g;
        params[i] -= s.lr * s.weight_decay * params[i];
        params[i] -= step * m[i] / (std::sqrt(v[i]) * inv_sqrt_bc2 + s.eps);
    }
}

}  // namespace pd
