// fp16 loss scaling as torch.amp.GradScaler does it (one per replica: every replica sees the
// same gradients, so every copy makes the same decisions, as each DDP rank's scaler does).
#pragma once

#include "pd/run_config.h"

namespace pd {

class GradScaler {
  public:
    explicit GradScaler(const LossScaling& settings);

    // The factor the loss (so every gradient) is multiplied by in this step's backward.
    float scale() const { return scale_; }
    // GradScaler.unscale_'s factor: the reciprocal computed in double, stored as a float.
    float inverse_scale() const { return static_cast<float>(1.0 / static_cast<double>(scale_)); }
    // GradScaler.update, once per optimizer step, after its gradients were checked: with inf
    // or NaN the step is skipped and the scale backs off; growth_interval clean steps in a row
    // grow it. Returns whether the step's update applies.
    bool update(bool found_inf);
    // Updates applied so far: the optimizer's step count (a skipped step does not count, as
    // Adam's state["step"] does not advance when scaler.step skips optimizer.step).
    int applied_steps() const { return applied_; }

  private:
    LossScaling settings_;
    float scale_;
    int growth_tracker_ = 0;
    int applied_ = 0;
};

}  // namespace pd
