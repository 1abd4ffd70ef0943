// The cluster a run's devices sit in: nodes, the link inside a node, the NICs and transport
// between nodes, and the switches that can reduce in the network. The device clock times every
// transfer on the tier it crosses (pd/topology.h); the collective algorithms choose by it.
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>

namespace pd {

// One tier's alpha-beta model: a transfer of b bytes takes latency + b / bandwidth. Users type
// and read speeds in gigabits per second (Gb/s, as NICs and links are quoted: link_gbps,
// inter_gbps); the model keeps bytes per nanosecond, the same number as gigabytes per second.
struct LinkModel {
    double latency_us = 5.0;
    double bytes_per_ns = 25.0;  // 25 GB/s = 200 Gb/s
    double gbit_per_s() const { return bytes_per_ns * 8.0; }
    void set_gbit_per_s(double gbit) { bytes_per_ns = gbit / 8.0; }
    double transfer_ns(std::size_t bytes) const {
        return latency_us * 1e3 + static_cast<double>(bytes) / bytes_per_ns;
    }
};

// Inside a node: an NVSwitch-class all-to-all fabric (every device its own port at full
// speed), or PCIe through a host bridge that every transfer inside the node shares.
enum class IntraNodeLink { nvswitch, pcie };
// Between nodes: RDMA NICs (InfiniBand or RoCE: NCCL's NET/IB), or TCP sockets over the host's
// Ethernet (NCCL's NET/Socket fallback when it finds no RDMA device): one NIC per node, a
// kernel network stack in the path.
// dcn: the data-centre network between TPU slices (Multislice), by its per-chip figures.
enum class InterNodeTransport { ib, sockets, dcn };
// How an all-reduce moves its data (NCCL's NCCL_ALGO): ring; double binary tree; hierarchical
// (reduce-scatter inside each node, all-reduce across nodes, all-gather inside each node);
// in-network (a switch sums: NVLS inside an NVSwitch node, SHARP/CollNet across nodes);
// automatic picks per call by the alpha-beta model, as NCCL's tuner does in outline.
// reduction_server: Vertex AI's Reduction Server, a pool of reducer nodes: each worker sends
// 1/R of its buffer to each of R reducers and receives the sums back (once each way).
enum class CollectiveAlgorithm {
    ring,
    tree,
    hierarchical,
    in_network,
    reduction_server,
    automatic
};
inline constexpr const char* kCollectiveAlgorithmNames =
    "ring, tree, hierarchical, in-network, reduction-server, auto";
std::string_view name_of(CollectiveAlgorithm a);
std::optional<CollectiveAlgorithm> collective_algorithm_from_name(std::string_view name);
std::string_view name_of(IntraNodeLink l);
std::string_view name_of(InterNodeTransport t);

// The tier a transfer crossed: a link inside a node, the inter-node fabric, or a reducing
// switch (NVLS inside a node, SHARP across nodes). none: no transfer (a local copy).
// host: a device's PCIe link to its host's memory (ZeRO-Offload's copies); nvme: the host's
// reads and writes of a device's NVMe share (ZeRO-Infinity's swaps).
enum class LinkTier { none, intra_node, inter_node, nvls, sharp, host, nvme };
inline constexpr int kLinkTierCount = 7;
// "intra-node", "inter-node", "nvls", "sharp", "host", "nvme"
std::string_view name_of(LinkTier t);

struct ClusterConfig {
    std::string preset;  // the named machine these figures came from (empty: set by hand)
    // Devices are grouped into nodes in order. Either may be set (0: not set); with neither,
    // every device is on one node. node_count() resolves them against the device count.
    int nodes = 0;
    int devices_per_node = 0;
    IntraNodeLink intra = IntraNodeLink::nvswitch;  // its speed is RunConfig::link
    InterNodeTransport transport = InterNodeTransport::ib;
    LinkModel inter{5.0, 25.0};  // one NIC (IB/RoCE): 200 Gb/s HDR, 5 us
    // TCP sockets over the host's Ethernet: one per node, every device of the node behind it.
    LinkModel socket{50.0, 3.125};  // 25 Gb/s
    int devices_per_nic = 1;        // 1: rail-optimised (a NIC per device)
    bool nvls = false;              // the NVSwitch reduces (NVLink SHARP): intra-node in-network
    bool sharp = false;             // the IB switches reduce (SHARP / CollNet): across nodes
    // Vertex AI Reduction Server: reducer nodes (0: none), each one NIC of `reducer`'s speed.
    int reducers = 0;
    LinkModel reducer{5.0, 12.5};  // 100 Gb/s

    const LinkModel& inter_link() const {
        return transport == InterNodeTransport::sockets ? socket : inter;
    }
    int node_count(int devices) const {
        if (nodes > 0) return nodes;
        if (devices_per_node > 0) return devices / devices_per_node;
        return 1;
    }
};

// A named machine's figures (the README cites each). Applied before a scenario's other keys, so
// those override it. Returns false for an unknown name.
bool apply_cluster_preset(std::string_view name, ClusterConfig& cluster, LinkModel& intra_link);
inline constexpr const char* kClusterPresetNames = "hgx-h100, pcie-workstation, tpu-v5p-slice";

}  // namespace pd
