#include "strategies/ulysses_exchange.h"

#include <utility>

#include "pd/error.h"

namespace pd {

namespace {

// rows x cols floats between row-major buffers of leading dimensions dst_ld and src_ld.
void copy_rows(DeviceOps& ops, float* dst, std::size_t dst_ld, const float* src, std::size_t src_ld,
               std::size_t rows, std::size_t cols) {
    if (dst_ld == cols && src_ld == cols) return ops.copy(dst, src, rows * cols);
    for (std::size_t r = 0; r < rows; ++r) ops.copy(dst + r * dst_ld, src + r * src_ld, cols);
}

}  // namespace

UlyssesExchange::UlyssesExchange(int samples, int seq_len, int width,
                                 std::vector<std::vector<int>> positions)
    : samples_(samples), seq_len_(seq_len), width_(width), positions_(std::move(positions)) {
    const int p = members();
    if (p < 1 || width % p != 0 || seq_len % p != 0)
        // validate() refuses these first (naming cp_algorithm and heads); reaching here is a
        // bug, reported where it happened.
        throw Error("Ulysses: width and seq_len must divide by the ring's devices", __FILE__,
                    __LINE__);
    group_width_ = width / p;
    for (const auto& pos : positions_)
        if (static_cast<int>(pos.size()) != seq_len / p)
            throw Error("Ulysses: every device holds seq_len / devices tokens", __FILE__, __LINE__);
    rows_ = static_cast<std::size_t>(samples) * static_cast<std::size_t>(seq_len / p);
}

template <class Copy>
void UlyssesExchange::for_member_tokens(int i, Copy&& copy) const {
    const std::vector<int>& pos = positions_[static_cast<std::size_t>(i)];
    const std::size_t t = pos.size(), gw = static_cast<std::size_t>(group_width_);
    for (std::size_t b = 0; b < static_cast<std::size_t>(samples_); ++b)
        // Runs of consecutive positions (one or two per member) go as one copy each.
        for (std::size_t first = 0; first < t;) {
            std::size_t last = first + 1;
            while (last < t && pos[last] == pos[last - 1] + 1) ++last;
            const std::size_t in_shard =
                b * static_cast<std::size_t>(seq_len_) + static_cast<std::size_t>(pos[first]);
            copy((b * t + first) * gw, in_shard * gw, (last - first) * gw);
            first = last;
        }
}

void UlyssesExchange::pack_heads(DeviceOps& ops, const std::vector<const float*>& shards,
                                 float* send) const {
    const std::size_t part = rows_ * static_cast<std::size_t>(group_width_);
    const std::size_t chunk = part * shards.size();
    for (int j = 0; j < members(); ++j)
        for (std::size_t x = 0; x < shards.size(); ++x)
            copy_rows(ops, send + static_cast<std::size_t>(j) * chunk + x * part,
                      static_cast<std::size_t>(group_width_),
                      shards[x] + static_cast<std::size_t>(j) * group_width_,
                      static_cast<std::size_t>(width_), rows_,
                      static_cast<std::size_t>(group_width_));
}

void UlyssesExchange::unpack_to_head_shards(DeviceOps& ops, const float* recv,
                                            const std::vector<float*>& head_shards) const {
    const std::size_t part = rows_ * static_cast<std::size_t>(group_width_);
    const std::size_t chunk = part * head_shards.size();
    for (int i = 0; i < members(); ++i)
        for (std::size_t x = 0; x < head_shards.size(); ++x) {
            const float* from = recv + static_cast<std::size_t>(i) * chunk + x * part;
            for_member_tokens(i, [&](std::size_t at_chunk, std::size_t at_shard, std::size_t n) {
                ops.copy(head_shards[x] + at_shard, from + at_chunk, n);
            });
        }
}

void UlyssesExchange::pack_tokens(DeviceOps& ops, const std::vector<const float*>& head_shards,
                                  float* send) const {
    const std::size_t part = rows_ * static_cast<std::size_t>(group_width_);
    const std::size_t chunk = part * head_shards.size();
    for (int i = 0; i < members(); ++i)
        for (std::size_t x = 0; x < head_shards.size(); ++x) {
            float* to = send + static_cast<std::size_t>(i) * chunk + x * part;
            for_member_tokens(i, [&](std::size_t at_chunk, std::size_t at_shard, std::size_t n) {
                ops.copy(to + at_chunk, head_shards[x] + at_shard, n);
            });
        }
}

void UlyssesExchange::unpack_to_sequence_shards(DeviceOps& ops, const float* recv,
                                                const std::vector<float*>& shards) const {
    const std::size_t part = rows_ * static_cast<std::size_t>(group_width_);
    const std::size_t chunk = part * shards.size();
    for (int j = 0; j < members(); ++j)
        for (std::size_t x = 0; x < shards.size(); ++x)
            copy_rows(ops, shards[x] + static_cast<std::size_t>(j) * group_width_,
                      static_cast<std::size_t>(width_),
                      recv + static_cast<std::size_t>(j) * chunk + x * part,
                      static_cast<std::size_t>(group_width_), rows_,
                      static_cast<std::size_t>(group_width_));
}

}  // namespace pd
