#pragma once

#include <memory>
#include <vector>

#include "strategies/powersgd.h"
#include "strategies/replica.h"

namespace pd {

// `dp`: every device holds a replica and a slice of the global batch. Gradients are grouped
// into buckets in backward order; each bucket's ring all-reduce starts on the comm stream as
// soon as backward has produced it (overlap), or after the whole backward (no overlap).
class DataParallel : public Strategy {
  public:
    explicit DataParallel(RunEnvironment& env);
    void enqueue_setup() override;
    void enqueue_step(int step) override;
    double step_loss() const override;
    std::vector<float> parameters() const override;
    std::vector<float> master_parameters() const override;
    bool step_numerics(StepRecord& record) const override;
    std::vector<StateSlice> state_slices() override;

  private:
    RunEnvironment& env_;
    std::vector<std::unique_ptr<Replica>> replicas_;
    std::unique_ptr<Communicator> comm_;
    std::vector<GradBucket> buckets_;
    std::vector<PowerSgdBucket> powersgd_buckets_;            // powersgd_rank > 0 only
    std::vector<std::unique_ptr<PowerSgdReplica>> powersgd_;  // one per replica
};

}  // namespace pd
