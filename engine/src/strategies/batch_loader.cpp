#include "strategies/batch_loader.h"

#include <algorithm>

namespace pd {

std::shared_ptr<const HostBatch> BatchLoader::draw(int step, int first, int rows) const {
    auto batch = std::make_shared<HostBatch>();
    batch->rows = rows;
    const auto tokens = static_cast<std::size_t>(shape_.tokens(rows));
    batch->x.resize(tokens * static_cast<std::size_t>(shape_.input_dim));
    batch->labels.resize(tokens);
    if (!plan_) {
        task_.batch(step, first, rows, batch->x.data(), batch->labels.data());
        return batch;
    }
    const auto tokens_per_row = static_cast<std::size_t>(shape_.tokens(1));
    const auto in = static_cast<std::size_t>(shape_.input_dim);
    for (int i = 0; i < rows; ++i)
        if (const auto id = plan_->example_at(step, first + i))
            task_.example(*id, batch->x.data() + i * tokens_per_row * in,
                          batch->labels.data() + i * tokens_per_row);
    return batch;
}

std::shared_ptr<const HostBatch> BatchLoader::load(int step, int first, int rows) {
    const Key key{step, first, rows};
    std::lock_guard lock(mutex_);
    if (!asked_.empty() && std::get<0>(asked_.front()) != step) asked_.clear();
    if (std::find(asked_.begin(), asked_.end(), key) == asked_.end()) asked_.push_back(key);
    if (auto it = ready_.find(key); it != ready_.end()) {
        auto batch = std::move(it->second);
        ready_.erase(it);
        return batch;
    }
    return draw(step, first, rows);
}

void BatchLoader::prefetch_after(int step) {
    std::lock_guard lock(mutex_);
    // What was drawn ahead and never asked for (a strategy that changed its slices) goes.
    std::erase_if(ready_, [step](const auto& entry) { return std::get<0>(entry.first) <= step; });
    for (const auto& [s, first, rows] : asked_)
        if (s == step) ready_.try_emplace(Key{step + 1, first, rows}, draw(step + 1, first, rows));
}

}  // namespace pd
