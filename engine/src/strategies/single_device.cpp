// `single`: the reference run every other strategy must match.
#include "strategies/single_device.h"

namespace pd {

SingleDevice::SingleDevice(RunEnvironment& env) : env_(env), replica_(env, env.device(0)) {}

void SingleDevice::enqueue_setup() {
    replica_.enqueue_allocate(true, true);
}

void SingleDevice::enqueue_step(int step) {
    // Gradient accumulation: the step's batch in `accumulate` slices, gradients summed.
    const int k = env_.config.accumulate;
    const int rows = env_.config.batch / k;
    for (int micro = 0; micro < k; ++micro)
        replica_.enqueue_forward_backward(step, micro, micro * rows, rows, micro == 0, {});
    replica_.enqueue_optimizer(step);
}

double SingleDevice::step_loss() const {
    return replica_.loss_sum() / env_.loss_count();
}

bool SingleDevice::step_numerics(StepRecord& record) const {
    return replica_.numerics(record);
}

std::vector<float> SingleDevice::parameters() const {
    return replica_.params().to_host();
}

std::vector<float> SingleDevice::master_parameters() const {
    return replica_.master();
}

}  // namespace pd
