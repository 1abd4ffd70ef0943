#include "model/grad_scaler.h"

#include <cmath>

namespace pd {

GradScaler::GradScaler(const LossScaling& settings)
    : settings_(settings), scale_(static_cast<float>(settings.init)) {}

bool GradScaler::update(bool found_inf) {
    // torch._amp_update_scale_: the scale is a float32 tensor, multiplied in float32.
    if (found_inf) {
        if (settings_.dynamic) {
            scale_ *= static_cast<float>(settings_.backoff_factor);
            growth_tracker_ = 0;
        }
        return false;
    }
    ++applied_;
    if (settings_.dynamic && ++growth_tracker_ == settings_.growth_interval) {
        const float grown = scale_ * static_cast<float>(settings_.growth_factor);
        if (std::isfinite(grown)) scale_ = grown;  // as torch: never grown to infinity
        growth_tracker_ = 0;
    }
    return true;
}

}  // namespace pd
