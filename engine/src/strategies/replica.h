// A full copy of the model on one device: parameters, gradients, optionally optimizer state,
// and the compute-stream work of forward, backward and the update.
#pragma once

#include <functional>
#include <optional>
#include <vector>

#include "model/grad_scaler.h"
#include "model/model_executor.h"
#include "strategies/strategy.h"

namespace pd {

class Replica {
  public:
    Replica(RunEnvironment& env, Device& device);

    // Compute stream: allocate parameters (initialised when `initialise`, else zero until
    // filled by a broadcast or a pull), gradients and, when `with_optimizer_state`, its state.
    void enqueue_allocate(bool initialise, bool with_optimizer_state);
    // Compute stream: forward and backward of `rows` samples starting at global sample `first`
    // of the step's batch, adding into the gradients (zeroed first when `zero_grads`). `micro`
    // numbers the micro-steps of one optimizer step (gradient accumulation); the loss sum
    // restarts at micro-step 0. `after_backward(unit)` is called on the host right after the
    // backward of each unit is enqueued, so a strategy can record an event there.
    void enqueue_forward_backward(int step, int micro, int first, int rows, bool zero_grads,
                                  const std::function<void(int unit)>& after_backward);
    // Compute stream: the update. Under mixed precision or clipping it first checks the
    // gradients (fp16: unscales them, skips the update on inf or NaN and updates the scale,
    // as GradScaler does), then clips them, and records what it read (numerics()).
    void enqueue_optimizer(int step);
    // After synchronize: what the last update read from the gradients (see StepRecord);
    // false where this run does not check them.
    bool numerics(StepRecord& record) const;

    Device& device() { return device_; }
    Buffer& params() { return params_; }
    Buffer& grads() { return grads_; }
    const Buffer& params() const { return params_; }
    // The fp32 master weights in this replica's optimizer state (empty without them).
    std::vector<float> master() const;
    // The whole model's parameters (the fp32 master copy where there is one) and state.
    StateSlice state_slice();
    double loss_sum() const { return loss_.read(); }

  private:
    RunEnvironment& env_;
    Device& device_;
    ShardLayout layout_;  // the whole model, unsharded
    ModelExecutor executor_;
    Buffer params_, grads_, state_;
    std::vector<SavedUnit> saved_;
    Buffer activation_;  // the residual stream between units (or its gradient in backward)
    DeviceScalar loss_;  // the step's summed loss, on the device
    bool checks_gradients_;
    bool rounds_products_;               // TF32 or bf16 product inputs (CPU)
    double product_input_error_ = -1.0;  // their rounding this step
    // The run's optimizer settings, with this replica's own quantisation-error slots
    // (adamw8bit).
    OptimizerSettings optimizer_;
    std::vector<StateQuantError> quant_errors_;
    std::optional<GradScaler> scaler_;  // fp16-mixed only
    StepRecord numerics_;               // written by the update, read after synchronize
    std::optional<Fp8Scaling> fp8_;     // FP8 products (config.fp8)
    Fp8StepStats fp8_step_;             // this step's casts, summed over its micro-steps
};

// Gradient buckets in the order backward produces them (as DDP forms them): each bucket is a
// contiguous parameter range, ready once the unit holding its first element has run backward.
// A bucket closes at `bucket_bytes` of gradients of `dtype` (DDP's bucket_cap_mb counts bytes,
// so a bf16 bucket holds twice the elements of an fp32 one).
struct GradBucket {
    std::size_t begin = 0;
    std::size_t end = 0;
    int ready_after_unit = 0;
};
std::vector<GradBucket> make_grad_buckets(const ParamLayout& layout, std::size_t bucket_bytes,
                                          DType dtype = DType::fp32);

}  // namespace pd
