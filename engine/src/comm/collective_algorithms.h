// The all-reduce algorithms' shapes and their alpha-beta cost on a topology: one place that
// both the tuner (which algorithm a call uses) and the communicator (which transfers it makes)
// read, so what is predicted is what runs.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include "pd/cluster.h"
#include "pd/topology.h"

namespace pd {

// One of NCCL's double binary trees over a group's ranks 0..n-1: each rank's parent (-1 at
// the root) and children, and its depth. Tree 0 is heap-ordered (parent (r-1)/2); tree 1 is
// the same shape over the mirrored ranks n-1-r, so a rank that is a leaf in one is an
// interior node in the other wherever n allows (NCCL's construction mirrors or shifts in the
// same way, so that each rank sends and receives about the same in total).
struct BinaryTree {
    std::vector<int> parent;
    std::vector<std::vector<int>> children;
    std::vector<int> depth;
    int height = 0;  // the deepest rank's depth
};
BinaryTree binary_tree(int n, int which);

// The groups of a hierarchical all-reduce: members by node (each in ring order) and, for each
// position within a node, the members at that position across nodes. Empty when the group
// does not span 2 or more nodes with the same count on each.
struct NodeGroups {
    std::vector<std::vector<int>> local;  // device ids, per node
    std::vector<std::vector<int>> cross;  // device ids, per local position
    bool usable() const { return local.size() >= 2 && !cross.empty(); }
};
NodeGroups node_groups(const Topology& topology, const std::vector<int>& members);

// An in-network reduction's pipelining unit: the switch multicasts each chunk's sum as soon as
// every member's chunk is in (NCCL's NVLS and CollNet work in chunks of this order).
inline constexpr std::size_t kSwitchChunkBytes = std::size_t{128} << 10;

// Transfers that start together and carry `bytes` each.
struct Round {
    std::vector<Flow> flows;
    std::size_t bytes = 0;
};
// The algorithm's rounds for one all-reduce of `bytes` over `group` (device ids in ring order),
// beside the same call on `concurrent` groups (each group of a mesh axis; holds `group`).
std::vector<Round> all_reduce_rounds(CollectiveAlgorithm algorithm, const Topology& topology,
                                     const std::vector<int>& group,
                                     const std::vector<std::vector<int>>& concurrent,
                                     std::size_t bytes);
// Sum over rounds of the slowest flow's latency + bytes x sharing / bandwidth.
double rounds_ns(const Topology& topology, const std::vector<Round>& rounds);

struct AlgorithmEstimate {
    CollectiveAlgorithm algorithm = CollectiveAlgorithm::ring;
    bool usable = false;
    std::string why_not;  // when not usable
    double ns = 0.0;
};
struct AlgorithmChoice {
    CollectiveAlgorithm algorithm = CollectiveAlgorithm::ring;
    std::vector<AlgorithmEstimate> estimates;  // ring, tree, hierarchical, in-network
    std::string reason;
};
// What an all-reduce of `bytes` uses: `requested` if it can run on this group (else ring, with
// the reason), or under automatic the usable algorithm of least predicted time (ties to the
// earlier in ring, tree, hierarchical, in-network). A pure function of its arguments, so every
// member of the group makes the same choice.
AlgorithmChoice choose_all_reduce(CollectiveAlgorithm requested, const Topology& topology,
                                  const std::vector<int>& group,
                                  const std::vector<std::vector<int>>& concurrent,
                                  std::size_t bytes);

// The choice in NCCL_DEBUG=INFO's manner ("AllReduce 1048576 bytes, 8 ranks on 2 nodes:
// Ring via NET/IB, 1 channel; bandwidth-bound: ring 412.0 us < ...").
std::string describe_choice(const AlgorithmChoice& choice, const Topology& topology,
                            const std::vector<int>& group, std::size_t bytes);

}  // namespace pd
