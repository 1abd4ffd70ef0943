#pragma once

#include <memory>
#include <vector>

#include "strategies/replica.h"

namespace pd {

// `ps`: device 0 is the parameter server; it alone holds the optimizer state. Devices 1..n-1
// are workers that each take a slice of the global batch, push their gradient buckets to the
// server as backward produces them, and pull the parameters they compute the next step on.
// Synchronous: step k computes on version k, the server's parameters after k updates, so a
// worker waits for the update of step k-1. Asynchronous with staleness S (bounded-staleness,
// as Ho et al.'s Stale Synchronous Parallel server, NIPS 2013): step k computes on version
// k - S, so workers run up to S steps ahead of the server and do not wait for each other's
// last S steps. The engine pins each step to exactly that version, the bound itself, where a
// real server would hand over whatever is newest: which version is newest depends on timing,
// and pinning keeps a seed's run deterministic. The server still applies each step's
// gradients together, one update per step, so S = 0 is the synchronous server.

class ParameterServer : public Strategy {
  public:
    explicit ParameterServer(RunEnvironment& env);
    void enqueue_setup() override;
    void enqueue_step(int step) override;
    double step_loss() const override;
    std::vector<float> parameters() const override;
    std::vector<float> master_parameters() const override;
    std::vector<GradientUpdate> gradient_updates() const override { return updates_; }

  private:
    RunEnvironment& env_;
    std::unique_ptr<Replica> server_;
    std::vector<std::unique_ptr<Replica>> workers_;
    std::unique_ptr<Communicator> comm_;
    std::vector<GradBucket> buckets_;
    std::vector<GradientUpdate> updates_;
};

}  // namespace pd
