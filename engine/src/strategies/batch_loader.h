// The run's data loader: every batch a strategy asks for, drawn from the synthetic task, and
// the next step's drawn ahead while the devices still run this one (as a DataLoader's workers
// prefetch), so the host adds no generation time between steps.
#pragma once

#include <map>
#include <memory>
#include <mutex>
#include <tuple>
#include <vector>

#include "pd/dataset.h"
#include "pd/model.h"

namespace pd {

struct HostBatch {
    std::vector<float> x;     // [rows x seq_len, input_dim]
    std::vector<int> labels;  // one per token
    int rows = 0;             // samples (sequences for the transformer)
};

class BatchLoader {
  public:
    BatchLoader(const SyntheticTask& task, const ModelShape& shape) : task_(task), shape_(shape) {}

    // Samples [first, first + rows) of `step`: the prefetched copy when there is one (the
    // same numbers: each sample has its own generator), else drawn now.
    std::shared_ptr<const HostBatch> load(int step, int first, int rows);
    // From now on rows are the dataset's examples as `plan` assigns them (rows of the global
    // batch); a row past the data (a pipeline that ran out) is zeros, never trained on.
    void read_from(const DataPlan* plan) { plan_ = plan; }
    // Draws, for step + 1, every slice `step` asked for: strategies ask for the same slices
    // each step. Call once the step's work is enqueued.
    void prefetch_after(int step);
    // Batches drawn ahead and not yet asked for.
    std::size_t prefetched() const {
        std::lock_guard lock(mutex_);
        return ready_.size();
    }

  private:
    using Key = std::tuple<int, int, int>;  // step, first sample, rows
    std::shared_ptr<const HostBatch> draw(int step, int first, int rows) const;

    const SyntheticTask& task_;
    const ModelShape& shape_;
    const DataPlan* plan_ = nullptr;
    mutable std::mutex mutex_;
    std::map<Key, std::shared_ptr<const HostBatch>> ready_;  // drawn ahead, not yet asked for
    std::vector<Key> asked_;                                 // the latest step's requests
};

}  // namespace pd
