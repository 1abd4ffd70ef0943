#include "pd/cluster.h"

namespace pd {

std::string_view name_of(CollectiveAlgorithm a) {
    switch (a) {
        case CollectiveAlgorithm::ring:
            return "ring";
        case CollectiveAlgorithm::tree:
            return "tree";
        case CollectiveAlgorithm::hierarchical:
            return "hierarchical";
        case CollectiveAlgorithm::in_network:
            return "in-network";
        case CollectiveAlgorithm::reduction_server:
            return "reduction-server";
        case CollectiveAlgorithm::automatic:
            return "auto";
    }
    return "?";
}

std::optional<CollectiveAlgorithm> collective_algorithm_from_name(std::string_view name) {
    for (auto a : {CollectiveAlgorithm::ring, CollectiveAlgorithm::tree,
                   CollectiveAlgorithm::hierarchical, CollectiveAlgorithm::in_network,
                   CollectiveAlgorithm::reduction_server, CollectiveAlgorithm::automatic})
        if (name == name_of(a)) return a;
    return std::nullopt;
}

std::string_view name_of(IntraNodeLink l) {
    return l == IntraNodeLink::pcie ? "pcie" : "nvswitch";
}

std::string_view name_of(InterNodeTransport t) {
    switch (t) {
        case InterNodeTransport::ib:
            return "ib";
        case InterNodeTransport::sockets:
            return "sockets";
        case InterNodeTransport::dcn:
            return "dcn";
    }
    return "?";
}

std::string_view name_of(LinkTier t) {
    switch (t) {
        case LinkTier::none:
            return "none";
        case LinkTier::intra_node:
            return "intra-node";
        case LinkTier::inter_node:
            return "inter-node";
        case LinkTier::nvls:
            return "nvls";
        case LinkTier::sharp:
            return "sharp";
        case LinkTier::host:
            return "host";
        case LinkTier::nvme:
            return "nvme";
    }
    return "?";
}

// Each figure is cited in the README's "Cluster presets" table. Bandwidths are per direction.
bool apply_cluster_preset(std::string_view name, ClusterConfig& c, LinkModel& intra) {
    if (name == "hgx-h100") {
        // 8 H100 SXM on NVSwitch: 900 GB/s NVLink 4 per GPU, both directions together; eight
        // ConnectX-7 400 Gb/s NICs, one per GPU (rail-optimised); NVSwitch gen 3 reduces in the
        // switch (NVLS).
        c.devices_per_node = 8;
        c.intra = IntraNodeLink::nvswitch;
        intra = LinkModel{1.0, 450.0};
        c.transport = InterNodeTransport::ib;
        c.inter = LinkModel{5.0, 50.0};
        c.devices_per_nic = 1;
        c.nvls = true;
    } else if (name == "pcie-workstation") {
        // 4 GPUs on PCIe 4.0 x16 (about 32 GB/s a direction) through one host bridge, and a
        // 25 Gb/s Ethernet port to the next machine (no RDMA: NCCL uses sockets).
        c.devices_per_node = 4;
        c.intra = IntraNodeLink::pcie;
        intra = LinkModel{2.0, 32.0};
        c.transport = InterNodeTransport::sockets;
        c.socket = LinkModel{50.0, 3.125};
        c.devices_per_nic = 4;
        c.nvls = false;
    } else if (name == "tpu-v5p-slice") {
        // A TPU v5p slice of 4 chips (one host): 1200 GB/s inter-chip interconnect (ICI) per
        // chip, both directions together; slices joined over the data-centre network at 50 Gb/s
        // per chip (Google's v5p table).
        c.devices_per_node = 4;
        c.intra = IntraNodeLink::nvswitch;
        intra = LinkModel{1.0, 600.0};
        c.transport = InterNodeTransport::dcn;
        c.inter = LinkModel{10.0, 6.25};
        c.devices_per_nic = 1;
        c.nvls = false;
    } else {
        return false;
    }
    c.preset = std::string(name);
    return true;
}

}  // namespace pd
