// `ep`: expert parallelism (GShard, Switch Transformer). Every device trains on its own slice
// of the batch and holds everything but the experts, of which it keeps experts / ep of every
// MoE block. A MoE block's forward is the router on the device's tokens, an all-to-all that
// sends each expert's slots to the device holding it, the experts on what arrived, and an
// all-to-all that brings the outputs back to their tokens for the gated sum; backward runs
// the same exchanges with the gradients. The dense parameters' gradients are all-reduced over
// every device; an expert's over the devices holding the same expert (with `dp` groups of
// ep devices each: devices g x ep .. g x ep + ep - 1 exchange tokens, and device g x ep + j
// holds the same experts in every group g).
#pragma once

#include <memory>
#include <vector>

#include "model/model_executor.h"
#include "strategies/strategy.h"

namespace pd {

class ExpertParallel : public Strategy {
  public:
    explicit ExpertParallel(RunEnvironment& env);
    ~ExpertParallel() override;
    void enqueue_setup() override;
    void enqueue_step(int step) override;
    double step_loss() const override;
    std::vector<float> parameters() const override;

  private:
    struct Rank;
    void enqueue_moe_forward(Rank& rank, int unit, int rows, int step);
    void enqueue_moe_backward(Rank& rank, int unit, int step);
    // On the comm stream, after compute's work so far (compute then waits for it): an
    // all-to-all of rank.out into a new buffer of `category`, left in rank.in.
    void enqueue_exchange(Rank& rank, MemoryCategory category, const std::string& label, int step);
    void enqueue_gradient_sync(Rank& rank, int step);

    RunEnvironment& env_;
    int dp_ = 1, ep_ = 1;                                 // groups x devices in each group
    std::unique_ptr<Communicator> all_;                   // every device: the dense gradients
    std::vector<std::unique_ptr<Communicator>> groups_;   // per group: the all-to-alls
    std::vector<std::unique_ptr<Communicator>> experts_;  // per ep rank: its experts' gradients
    std::vector<std::unique_ptr<Rank>> ranks_;
};

}  // namespace pd
