// DeepSpeed-Ulysses' two layouts of an attention tensor, and the packing between them and its
// all-to-alls (Jacobs et al. 2023, "Core design"). Sequence shards: each of a ring's P devices
// holds its tokens of every sequence, all h columns ([samples x t, h], t = seq_len / P, the
// token positions its context-parallel rank gives). Head shards: each device holds every token
// of every sequence in position order, but only the columns of its heads / P heads
// ([samples x seq_len, h / P]). An all-to-all buffer holds one chunk per member in rank order
// (Communicator::all_to_all), each chunk one or more tensors back to back.
#pragma once

#include <cstddef>
#include <vector>

#include "backend/device_ops.h"

namespace pd {

class UlyssesExchange {
  public:
    // `positions[i]`: member i's token positions in each sequence (ascending, t of them).
    UlyssesExchange(int samples, int seq_len, int width, std::vector<std::vector<int>> positions);

    int members() const { return static_cast<int>(positions_.size()); }
    std::size_t shard_size() const { return rows_ * static_cast<std::size_t>(width_); }
    std::size_t head_group_size() const {  // one tensor's head shard: all tokens x h / P
        return static_cast<std::size_t>(samples_) * static_cast<std::size_t>(seq_len_) *
               static_cast<std::size_t>(group_width_);
    }
    // Elements of an all-to-all buffer of `tensors` tensors (a chunk of member's tokens x h / P
    // per member and tensor).
    std::size_t buffer_size(int tensors) const {
        return static_cast<std::size_t>(tensors) * shard_size();
    }

    // Member `self`'s sequence shards -> send buffer: chunk j holds, tensor after tensor, the
    // columns of head group j.
    void pack_heads(DeviceOps& ops, const std::vector<const float*>& shards, float* send) const;
    // Received chunks (chunk i: member i's tokens of this member's head group) -> head shards
    // of all the tokens in position order.
    void unpack_to_head_shards(DeviceOps& ops, const float* recv,
                               const std::vector<float*>& head_shards) const;
    // Head shards -> send buffer: chunk i holds member i's tokens, tensor after tensor.
    void pack_tokens(DeviceOps& ops, const std::vector<const float*>& head_shards,
                     float* send) const;
    // Received chunks (chunk j: this member's tokens of head group j) -> sequence shards.
    void unpack_to_sequence_shards(DeviceOps& ops, const float* recv,
                                   const std::vector<float*>& shards) const;

  private:
    // Calls copy(offset in a chunk, offset in a head shard, count) for each run of member i's
    // tokens (rows in shard order in a chunk, in position order in a head shard).
    template <class Copy>
    void for_member_tokens(int i, Copy&& copy) const;

    int samples_, seq_len_, width_, group_width_;
    std::size_t rows_;  // samples x t: one member's rows
    std::vector<std::vector<int>> positions_;
};

}  // namespace pd
