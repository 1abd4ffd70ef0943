// A run's cluster as the device clock sees it: which node and NIC each device is on, which tier
// a transfer crosses, and how long it takes when other transfers share the way.
//
// Sharing rule: the transfers one algorithm step starts together (a ring step's n sends, a
// tree level's sends; for a mesh axis, every group of that axis doing the same step) are its
// flows. Each flow uses resources: the sender's port out, the receiver's port in, and across
// nodes each side's NIC (out and in); on PCIe, its node's host bridge. A resource used by k
// flows gives each 1/k of its bandwidth, so a flow takes
//     latency + bytes x (most flows on any resource it uses) / bandwidth.
// Deterministic by construction: it depends on the program, not on thread timing.
#pragma once

#include <cstddef>
#include <vector>

#include "pd/cluster.h"

namespace pd {

// A transfer between two devices; kSwitch as one end is a reducing switch (NVLS, SHARP).
// A reduction server's reducer k is the end reducer(k): a node of its own with one NIC.
struct Flow {
    static constexpr int kSwitch = -1;
    static constexpr int reducer(int k) { return -2 - k; }
    static constexpr bool is_reducer(int end) { return end <= -2; }
    int src = 0;
    int dst = 0;
    LinkTier via = LinkTier::none;  // a switch flow's tier (nvls or sharp)
};

class Topology {
  public:
    // Every device on one node, over `intra`.
    explicit Topology(LinkModel intra = {});
    Topology(const ClusterConfig& cluster, LinkModel intra, int devices);

    int nodes() const { return nodes_; }
    int devices_per_node() const { return per_node_; }
    int node_of(int device) const { return device / per_node_; }
    int local_of(int device) const { return device % per_node_; }
    // The NIC a device's inter-node traffic leaves by (global index).
    int nic_of(int device) const;
    const ClusterConfig& cluster() const { return cluster_; }

    // The tier a device-to-device transfer crosses.
    LinkTier tier(int src, int dst) const;
    // A reducing switch's tier for a group: NVLS when every member is on one node and the node
    // has it; SHARP when the members span nodes and the fabric has it; none otherwise.
    LinkTier switch_tier(const std::vector<int>& members) const;
    const LinkModel& link(LinkTier tier) const;

    // The most flows sharing one resource with `flow` among `concurrent` (which holds `flow`).
    int load(const Flow& flow, const std::vector<Flow>& concurrent) const;
    // The same for every flow of `flows` at once (one pass over them).
    std::vector<int> loads(const std::vector<Flow>& flows) const;
    // Per flow of `flows` (all starting together): nanoseconds per byte, the slowest of the
    // resources it crosses, each resource's bandwidth divided among the flows that use it.
    std::vector<double> ns_per_byte(const std::vector<Flow>& flows) const;
    // The tier a flow crosses (a switch flow's `via`; a reducer's: inter-node).
    LinkTier flow_tier(const Flow& flow) const;
    // The modelled time of `flow` carrying `bytes` beside `concurrent`, on `tier`.
    double transfer_ns(const Flow& flow, LinkTier tier, std::size_t bytes,
                       const std::vector<Flow>& concurrent) const;
    // A transfer alone on the link (no sharing): latency + bytes / bandwidth of its tier.
    double alone_ns(int src, int dst, std::size_t bytes) const {
        return link(tier(src, dst)).transfer_ns(bytes);
    }

    // The transport a tier is in NCCL's words: "P2P/NVLink", "P2P/PCIe", "NET/IB",
    // "NET/Socket", "DCN", "NVLS", "CollNet/SHARP".
    const char* transport_name(LinkTier tier) const;

  private:
    ClusterConfig cluster_;
    LinkModel intra_;
    int nodes_ = 1;
    int per_node_ = 1 << 30;
};

}  // namespace pd
