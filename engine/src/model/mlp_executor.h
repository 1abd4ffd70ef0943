// Forward and backward of the model's units on one device, with every tensor accounted in
// that device's memory: saved activations live until their unit's backward has run.
#pragma once

#include "pd/device.h"
#include "pd/model.h"

namespace pd {

// What one unit keeps from forward for backward, for one micro-batch.
struct SavedUnit {
    Buffer input;  // the unit's input (x for unit 0, the residual stream otherwise)
    Buffer pre;    // block: pre-GELU [rows, 4h]; head: dlogits [rows, classes]
    Buffer post;   // block: post-GELU [rows, 4h]
    int rows = 0;
};

class MlpExecutor {
  public:
    MlpExecutor(const ModelShape& shape, const ParamLayout& layout, MemoryTracker& memory);

    // `params` points at the unit's own parameters (layout.unit_begin(unit)). Returns the
    // unit's output; the head returns nothing and adds its summed loss to `loss_sum`, keeping
    // dlogits (scaled by `grad_scale`) for backward.
    Buffer forward(int unit, const float* params, Buffer input, int rows, SavedUnit& saved,
                   const int* labels, float grad_scale, double& loss_sum);
    // Accumulates the unit's parameter gradients into `grads` (the unit's own range) and
    // returns the gradient of its input (nothing for unit 0). Frees the saved tensors.
    Buffer backward(int unit, const float* params, float* grads, Buffer dout, SavedUnit& saved);

    Buffer make_activation(std::size_t count) {
        return Buffer(memory_, MemoryCategory::activations, count);
    }

  private:
    const TensorSpec& tensor(int unit, int index) const;

    ModelShape shape_;
    const ParamLayout& layout_;
    MemoryTracker& memory_;
};

}  // namespace pd
