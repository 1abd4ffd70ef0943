#pragma once

#include "strategies/replica.h"

namespace pd {

class SingleDevice : public Strategy {
  public:
    explicit SingleDevice(RunEnvironment& env);
    void enqueue_setup() override;
    void enqueue_step(int step) override;
    double step_loss() const override;
    std::vector<float> parameters() const override;
    std::vector<float> master_parameters() const override;
    bool step_numerics(StepRecord& record) const override;
    std::vector<StateSlice> state_slices() override { return {replica_.state_slice()}; }

  private:
    RunEnvironment& env_;
    Replica replica_;
};

}  // namespace pd
