// Crafted inputs for all-reduce, reduce-scatter, all-gather and broadcast (small integers, so
// float sums are exact whatever the order) and the exact check of their results, shared by
// every communicator test: threads on the CPU, the library path, virtual devices on a GPU.
#pragma once

#include <QtTest>

#include <cstddef>
#include <vector>

#include "pd/communicator.h"

namespace pd::test {

struct CraftedCollectives {
    // Per rank, the buffer each collective runs on in place (inputs, then results).
    std::vector<std::vector<float>> all_reduce, reduce_scatter, all_gather, broadcast;
    int n;
    std::size_t count;
    static constexpr int kBroadcastSeed = 7;  // the root (last rank) sends value(7, i)

    static float value(int rank, std::size_t i) {
        return static_cast<float>(rank * 1000 + static_cast<int>(i % 97));
    }

    CraftedCollectives(int ranks, std::size_t elements) : n(ranks), count(elements) {
        const auto per_rank = std::vector<std::vector<float>>(static_cast<std::size_t>(n),
                                                              std::vector<float>(count, 0.0f));
        all_reduce = reduce_scatter = all_gather = broadcast = per_rank;
        for (int r = 0; r < n; ++r) {
            const auto ri = static_cast<std::size_t>(r);
            for (std::size_t i = 0; i < count; ++i) {
                all_reduce[ri][i] = reduce_scatter[ri][i] = value(r, i);
                broadcast[ri][i] = r == n - 1 ? value(kBroadcastSeed, i) : -1.0f;
            }
            // All-gather: member r contributes its own chunk only.
            for (std::size_t i = Communicator::chunk_begin(count, n, r);
                 i < Communicator::chunk_end(count, n, r); ++i)
                all_gather[ri][i] = value(r, i);
        }
    }

    // On member `rank`'s stream: the four collectives, in place on its host buffers.
    void run(Communicator& comm, int rank) {
        const auto ri = static_cast<std::size_t>(rank);
        comm.all_reduce(rank, all_reduce[ri].data(), count, 0);
        comm.reduce_scatter(rank, reduce_scatter[ri].data(), count, 0);
        comm.all_gather(rank, all_gather[ri].data(), count, 0);
        comm.broadcast(rank, broadcast[ri].data(), count, n - 1, 0);
    }

    // Every member has the sum (all-reduce), the sum in its own chunk (reduce-scatter), every
    // member's chunk (all-gather) and the root's data (broadcast rooted at rank n-1).
    void verify() const {
        for (int r = 0; r < n; ++r) {
            const auto ri = static_cast<std::size_t>(r);
            for (std::size_t i = 0; i < count; ++i) {
                float sum = 0;
                for (int q = 0; q < n; ++q) sum += value(q, i);
                QCOMPARE(all_reduce[ri][i], sum);
                QCOMPARE(broadcast[ri][i], value(kBroadcastSeed, i));
                int owner = 0;
                while (i >= Communicator::chunk_end(count, n, owner)) ++owner;
                QCOMPARE(all_gather[ri][i], value(owner, i));
                if (owner == r) QCOMPARE(reduce_scatter[ri][i], sum);
            }
        }
    }
};

}  // namespace pd::test
