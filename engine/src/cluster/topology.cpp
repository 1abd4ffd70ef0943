#include "pd/topology.h"

#include <algorithm>
#include <map>
#include <tuple>

namespace pd {

Topology::Topology(LinkModel intra) : intra_(intra) {}

Topology::Topology(const ClusterConfig& cluster, LinkModel intra, int devices)
    : cluster_(cluster), intra_(intra) {
    nodes_ = std::max(1, cluster.node_count(devices));
    per_node_ = nodes_ > 1 ? std::max(1, devices / nodes_) : (1 << 30);
}

int Topology::nic_of(int device) const {
    if (cluster_.transport == InterNodeTransport::sockets) return node_of(device);  // the host's
    const int per_nic = std::max(1, cluster_.devices_per_nic);
    const int nics_per_node = (std::min(per_node_, 1 << 20) + per_nic - 1) / per_nic;
    return node_of(device) * nics_per_node + local_of(device) / per_nic;
}

LinkTier Topology::tier(int src, int dst) const {
    if (src == dst) return LinkTier::none;
    return node_of(src) == node_of(dst) ? LinkTier::intra_node : LinkTier::inter_node;
}

LinkTier Topology::switch_tier(const std::vector<int>& members) const {
    if (members.empty()) return LinkTier::none;
    const bool one_node = std::all_of(members.begin(), members.end(), [&](int d) {
        return node_of(d) == node_of(members.front());
    });
    if (one_node) return cluster_.nvls ? LinkTier::nvls : LinkTier::none;
    return cluster_.sharp ? LinkTier::sharp : LinkTier::none;
}

const LinkModel& Topology::link(LinkTier tier) const {
    switch (tier) {
        case LinkTier::inter_node:
        case LinkTier::sharp:
            return cluster_.inter_link();
        default:
            return intra_;
    }
}

namespace {

// A resource a flow uses: (kind, index, direction). Kinds: 0 device port, 1 NIC, 2 host bridge.
using Resource = std::tuple<int, int, int>;

}  // namespace

static std::vector<Resource> resources_of(const Topology& t, const Flow& f) {
    std::vector<Resource> r;
    if (f.src != Flow::kSwitch) r.emplace_back(0, f.src, 0);
    if (f.dst != Flow::kSwitch) r.emplace_back(0, f.dst, 1);
    const bool to_switch = f.src == Flow::kSwitch || f.dst == Flow::kSwitch;
    const bool crosses_nodes =
        to_switch ? f.via == LinkTier::sharp : t.node_of(f.src) != t.node_of(f.dst);
    if (crosses_nodes) {
        if (f.src != Flow::kSwitch) r.emplace_back(1, t.nic_of(f.src), 0);
        if (f.dst != Flow::kSwitch) r.emplace_back(1, t.nic_of(f.dst), 1);
    } else if (t.cluster().intra == IntraNodeLink::pcie && !to_switch) {
        r.emplace_back(2, t.node_of(f.src), 0);  // both directions share the bridge
    }
    return r;
}

std::vector<int> Topology::loads(const std::vector<Flow>& flows) const {
    std::map<Resource, int> users;
    std::vector<std::vector<Resource>> used;
    used.reserve(flows.size());
    for (const Flow& f : flows) {
        used.push_back(resources_of(*this, f));
        for (const Resource& r : used.back()) ++users[r];
    }
    std::vector<int> out;
    out.reserve(flows.size());
    for (const auto& rs : used) {
        int most = 1;
        for (const Resource& r : rs) most = std::max(most, users[r]);
        out.push_back(most);
    }
    return out;
}

int Topology::load(const Flow& flow, const std::vector<Flow>& concurrent) const {
    std::map<Resource, int> users;
    for (const Flow& f : concurrent)
        for (const Resource& r : resources_of(*this, f)) ++users[r];
    int most = 1;
    for (const Resource& r : resources_of(*this, flow)) most = std::max(most, users[r]);
    return most;
}

double Topology::transfer_ns(const Flow& flow, LinkTier tier, std::size_t bytes,
                             const std::vector<Flow>& concurrent) const {
    const LinkModel& l = link(tier);
    return l.latency_us * 1e3 +
           static_cast<double>(bytes) * load(flow, concurrent) / l.bytes_per_ns;
}

const char* Topology::transport_name(LinkTier tier) const {
    switch (tier) {
        case LinkTier::intra_node:
            return cluster_.intra == IntraNodeLink::pcie ? "P2P/PCIe" : "P2P/NVLink";
        case LinkTier::inter_node:
            switch (cluster_.transport) {
                case InterNodeTransport::ib:
                    return "NET/IB";
                case InterNodeTransport::sockets:
                    return "NET/Socket";
                case InterNodeTransport::dcn:
                    return "DCN";
            }
            return "NET";
        case LinkTier::nvls:
            return "NVLS";
        case LinkTier::sharp:
            return "CollNet/SHARP";
        case LinkTier::none:
            return "local";
    }
    return "?";
}

}  // namespace pd
