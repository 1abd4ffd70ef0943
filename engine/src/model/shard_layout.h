// Where a device keeps its part of the model: a contiguous range of units (a pipeline chunk)
// and, for tensor parallelism, its shard of each block (Megatron: the first linear split by
// columns, the second by rows; b2, the input projection and the head replicated). Attention
// is split by heads: wq, wk, wv (and their biases) by columns, each device taking whole heads,
// and wo by the same rows; bo and the LayerNorms are replicated. Expert parallelism keeps
// only experts [ep_rank x E / ep_size, (ep_rank + 1) x E / ep_size) of each MoE unit (and
// everything else whole).
#pragma once

#include <cstddef>
#include <functional>
#include <string>
#include <utility>
#include <vector>

#include "pd/model.h"

namespace pd {

class ShardLayout {
  public:
    ShardLayout(const ModelShape& shape, const ParamLayout& full, int unit_begin, int unit_end,
                int tp_rank, int tp_size, int ep_rank = 0, int ep_size = 1);

    int unit_begin() const { return unit_begin_; }
    int unit_end() const { return unit_end_; }
    bool holds(int unit) const { return unit >= unit_begin_ && unit < unit_end_; }
    int tp_rank() const { return tp_rank_; }
    int tp_size() const { return tp_size_; }
    int hidden_local() const { return hidden_local_; }    // 4h / tp
    int width_local() const { return width_local_; }      // h / tp: this device's heads' columns
    int heads_local() const { return heads_local_; }      // heads / tp
    int experts_local() const { return experts_local_; }  // experts / ep
    int first_expert() const { return first_expert_; }
    std::size_t size() const { return size_; }
    std::size_t unit_offset(int unit) const;  // local offset of the unit's first tensor
    std::size_t unit_size(int unit) const;
    // Offset of the unit's index-th tensor, relative to unit_offset(unit).
    std::size_t tensor_offset(int unit, int index) const;

    // Local ranges [begin, end) of the held tensors whose name `pick` accepts.
    std::vector<std::pair<std::size_t, std::size_t>> local_ranges(
        const std::function<bool(const std::string&)>& pick) const;

    void scatter(const float* full, float* local) const;  // take this device's part
    void gather(const float* local, float* full) const;   // put it back in place

  private:
    struct Piece {  // one local tensor: rows x cols taken from a full tensor's column window
        int unit = 0;
        std::size_t local_offset = 0;
        std::size_t full_offset = 0;
        int rows = 0;
        int cols = 0;       // local columns
        int full_cols = 0;  // the full tensor's columns
        int col_begin = 0;  // first full column taken
        std::string name;
    };
    int unit_begin_, unit_end_, tp_rank_, tp_size_, hidden_local_, width_local_, heads_local_;
    int experts_local_ = 0, first_expert_ = 0;
    std::size_t size_ = 0;
    std::vector<Piece> pieces_;
};

}  // namespace pd
