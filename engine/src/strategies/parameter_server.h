#pragma once

#include <memory>
#include <vector>

#include "strategies/replica.h"

namespace pd {

// `ps`: device 0 is the parameter server; it alone holds the optimizer state. Devices 1..n-1
// are workers that each take a slice of the global batch, push their gradient buckets to the
// server as backward produces them, and pull the updated parameters after the server's step.
class ParameterServer : public Strategy {
  public:
    explicit ParameterServer(RunEnvironment& env);
    void enqueue_setup() override;
    void enqueue_step(int step) override;
    double step_loss() const override;
    std::vector<float> parameters() const override;

  private:
    RunEnvironment& env_;
    std::unique_ptr<Replica> server_;
    std::vector<std::unique_ptr<Replica>> workers_;
    std::unique_ptr<Communicator> comm_;
    std::vector<GradBucket> buckets_;
};

}  // namespace pd
