#include "model/shard_layout.h"

#include <algorithm>

#include "pd/error.h"

namespace pd {

ShardLayout::ShardLayout(const ModelShape& shape, const ParamLayout& full, int unit_begin,
                         int unit_end, int tp_rank, int tp_size, int ep_rank, int ep_size)
    : unit_begin_(unit_begin),
      unit_end_(unit_end),
      tp_rank_(tp_rank),
      tp_size_(tp_size),
      hidden_local_(shape.hidden() / tp_size),
      width_local_(shape.width / tp_size),
      heads_local_(shape.heads / tp_size),
      experts_local_(shape.experts / ep_size),
      first_expert_(ep_rank * (shape.experts / ep_size)) {
    if (shape.experts % ep_size != 0)
        throw Error("the experts must divide by the expert-parallel size", __FILE__, __LINE__);
    if (shape.hidden() % tp_size != 0)
        throw Error("4 x width must divide by the tensor-parallel size", __FILE__, __LINE__);
    if (shape.transformer && shape.heads % tp_size != 0)
        throw Error("the attention heads must divide by the tensor-parallel size", __FILE__,
                    __LINE__);
    auto named = [](const std::string& name, std::initializer_list<const char*> suffixes) {
        for (const char* suffix : suffixes)
            if (name.ends_with(suffix)) return true;
        return false;
    };
    const int last_unit = full.units - 1;
    for (const auto& t : full.tensors) {
        if (!holds(t.unit)) continue;
        if (t.expert >= 0 &&
            (t.expert < first_expert_ || t.expert >= first_expert_ + experts_local_))
            continue;  // another device's expert
        Piece p;
        p.unit = t.unit;
        p.full_offset = t.offset;
        p.rows = t.rows;
        p.cols = t.cols;
        p.full_cols = t.cols;
        p.name = t.name;
        const bool block = t.unit > 0 && t.unit < last_unit;
        const bool by_columns = named(t.name, {".w1", ".b1", ".wq", ".bq", ".wk", ".wv", ".bv"});
        const bool by_rows = named(t.name, {".w2", ".wo"});
        if (block && by_columns) {
            p.cols = t.cols / tp_size;
            p.col_begin = tp_rank * p.cols;
        } else if (block && by_rows) {  // a contiguous row window
            p.rows = t.rows / tp_size;
            p.full_offset = t.offset + static_cast<std::size_t>(tp_rank) *
                                           static_cast<std::size_t>(p.rows) *
                                           static_cast<std::size_t>(t.cols);
        }
        p.local_offset = size_;
        size_ += static_cast<std::size_t>(p.rows) * static_cast<std::size_t>(p.cols);
        pieces_.push_back(p);
    }
}

std::size_t ShardLayout::unit_offset(int unit) const {
    for (const auto& p : pieces_)
        if (p.unit == unit) return p.local_offset;
    throw Error("unit " + std::to_string(unit) + " is not held here", __FILE__, __LINE__);
}

std::size_t ShardLayout::unit_size(int unit) const {
    std::size_t n = 0;
    for (const auto& p : pieces_)
        if (p.unit == unit)
            n += static_cast<std::size_t>(p.rows) * static_cast<std::size_t>(p.cols);
    return n;
}

std::size_t ShardLayout::tensor_offset(int unit, int index) const {
    const std::size_t base = unit_offset(unit);
    int seen = 0;
    for (const auto& p : pieces_) {
        if (p.unit != unit) continue;
        if (seen++ == index) return p.local_offset - base;
    }
    throw Error("unit " + std::to_string(unit) + " has no tensor " + std::to_string(index),
                __FILE__, __LINE__);
}

std::vector<std::pair<std::size_t, std::size_t>> ShardLayout::local_ranges(
    const std::function<bool(const std::string&)>& pick) const {
    std::vector<std::pair<std::size_t, std::size_t>> ranges;
    for (const auto& p : pieces_)
        if (pick(p.name))
            ranges.emplace_back(p.local_offset,
                                p.local_offset + static_cast<std::size_t>(p.rows) *
                                                     static_cast<std::size_t>(p.cols));
    return ranges;
}

void ShardLayout::scatter(const float* full, float* local) const {
    for (const auto& p : pieces_)
        for (int r = 0; r < p.rows; ++r)
            std::copy_n(
                full + p.full_offset + static_cast<std::size_t>(r) * p.full_cols + p.col_begin,
                p.cols, local + p.local_offset + static_cast<std::size_t>(r) * p.cols);
}

void ShardLayout::gather(const float* local, float* full) const {
    for (const auto& p : pieces_)
        for (int r = 0; r < p.rows; ++r)
            std::copy_n(
                local + p.local_offset + static_cast<std::size_t>(r) * p.cols, p.cols,
                full + p.full_offset + static_cast<std::size_t>(r) * p.full_cols + p.col_begin);
}

}  // namespace pd
