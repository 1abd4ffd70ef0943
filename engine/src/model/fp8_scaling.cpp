#include "model/fp8_scaling.h"

#include <algorithm>
#include <cmath>
#include <utility>

namespace pd {

void add_to(Fp8CastStats& total, const Fp8CastStats& one) {
    total.amax = std::fmax(total.amax, one.amax);
    total.nonzero += one.nonzero;
    total.saturated += one.saturated;
    total.flushed += one.flushed;
    total.error_squares += one.error_squares;
    total.value_squares += one.value_squares;
}

void add_to(Fp8StepStats& total, const Fp8StepStats& one) {
    add_to(total.forward, one.forward);
    add_to(total.gradients, one.gradients);
    if (one.min_scale > 0 && (total.min_scale == 0 || one.min_scale < total.min_scale))
        total.min_scale = one.min_scale;
    total.max_scale = std::max(total.max_scale, one.max_scale);
}

Fp8Scaling::Fp8Scaling(const Fp8Recipe& recipe, int units)
    : recipe_(recipe), units_(units), metas_(static_cast<std::size_t>(units) * kFp8Roles) {
    for (Meta& m : metas_)
        m.history.assign(static_cast<std::size_t>(std::max(recipe.amax_history_len, 1)), 0.0f);
}

float Fp8Scaling::cast(DeviceOps& ops, int unit, Fp8Role role, const float* src, float* dst,
                       std::size_t count) {
    Meta& m = meta(unit, role);
    const Fp8CastStats s = ops.cast_fp8(encoding(role), m.scale, src, dst, count);
    // Several casts of one tensor in a pass (micro-batches within it) keep the largest.
    m.history[0] = std::fmax(m.history[0], s.amax);
    m.cast = true;
    add_to(is_gradient(role) ? stats_.gradients : stats_.forward, s);
    if (stats_.min_scale == 0 || m.scale < stats_.min_scale) stats_.min_scale = m.scale;
    stats_.max_scale = std::max(stats_.max_scale, m.scale);
    return m.scale;
}

void Fp8Scaling::recast(DeviceOps& ops, Fp8Encoding encoding, float scale, const float* src,
                        float* dst, std::size_t count) {
    ops.cast_fp8(encoding, scale, src, dst, count);
}

void Fp8Scaling::update(bool forward) {
    const float margin = std::ldexp(1.0f, recipe_.margin);
    for (int unit = 0; unit < units_; ++unit)
        for (int r = 0; r < kFp8Roles; ++r) {
            const Fp8Role role = static_cast<Fp8Role>(r);
            if (is_gradient(role) == forward) continue;
            Meta& m = meta(unit, role);
            if (!m.cast) continue;  // a unit without FP8 products
            std::vector<float>& h = m.history;
            const float amax = recipe_.amax_compute_algo == AmaxAlgo::max
                                   ? *std::max_element(h.begin(), h.end())
                                   : h[0];
            // TE: sf = (fp8_max / amax) / 2^margin, kept where amax is 0 or not finite.
            if (amax > 0.0f && std::isfinite(amax))
                m.scale = (fp8_max(encoding(role)) / amax) / margin;
            std::rotate(h.begin(), h.begin() + 1, h.end());  // torch.roll(h, -1)
            h[0] = 0.0f;
        }
}

Fp8StepStats Fp8Scaling::take_step_stats() {
    for (Meta& m : metas_) m.cast = false;
    return std::exchange(stats_, Fp8StepStats{});
}

}  // namespace pd
