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

// A resource a flow uses: (kind, index, direction). Kinds: 0 device port, 1 NIC, 2 host bridge,
// 3 a reducer's NIC.
using Resource = std::tuple<int, int, int>;
struct Use {
    Resource resource;
    double bytes_per_ns;
};

}  // namespace

LinkTier Topology::flow_tier(const Flow& f) const {
    if (f.src == Flow::kSwitch || f.dst == Flow::kSwitch) return f.via;
    if (Flow::is_reducer(f.src) || Flow::is_reducer(f.dst)) return LinkTier::inter_node;
    return tier(f.src, f.dst);
}

static std::vector<Use> uses_of(const Topology& t, const Flow& f) {
    std::vector<Use> u;
    const LinkTier tier = t.flow_tier(f);
    const double port = t.link(tier).bytes_per_ns;
    const double nic = t.cluster().inter_link().bytes_per_ns;
    const bool crosses_nodes = tier == LinkTier::inter_node || tier == LinkTier::sharp;
    for (int dir = 0; dir < 2; ++dir) {
        const int end = dir == 0 ? f.src : f.dst;
        if (end >= 0) {
            u.push_back({{0, end, dir}, port});
            if (crosses_nodes) u.push_back({{1, t.nic_of(end), dir}, nic});
        } else if (Flow::is_reducer(end)) {
            u.push_back({{3, -2 - end, dir}, t.cluster().reducer.bytes_per_ns});
        }
    }
    if (tier == LinkTier::intra_node && t.cluster().intra == IntraNodeLink::pcie)
        u.push_back({{2, t.node_of(f.src), 0}, port});  // both directions share the bridge
    return u;
}

namespace {

// Each flow's resources, and how many of the flows use each resource.
struct Sharing {
    std::vector<std::vector<Use>> used;  // per flow
    std::map<Resource, int> users;
};

}  // namespace

static Sharing sharing_of(const Topology& t, const std::vector<Flow>& flows) {
    Sharing s;
    s.used.reserve(flows.size());
    for (const Flow& f : flows) {
        s.used.push_back(uses_of(t, f));
        for (const Use& x : s.used.back()) ++s.users[x.resource];
    }
    return s;
}

std::vector<double> Topology::ns_per_byte(const std::vector<Flow>& flows) const {
    Sharing s = sharing_of(*this, flows);
    std::vector<double> out;
    out.reserve(flows.size());
    for (const auto& us : s.used) {
        double slowest = 0.0;
        for (const Use& x : us) slowest = std::max(slowest, s.users[x.resource] / x.bytes_per_ns);
        out.push_back(slowest);
    }
    return out;
}

std::vector<int> Topology::loads(const std::vector<Flow>& flows) const {
    Sharing s = sharing_of(*this, flows);
    std::vector<int> out;
    out.reserve(flows.size());
    for (const auto& us : s.used) {
        int most = 1;
        for (const Use& x : us) most = std::max(most, s.users[x.resource]);
        out.push_back(most);
    }
    return out;
}

// `concurrent` with `flow` in it (added if it is not), and where.
static std::size_t place(std::vector<Flow>& all, const Flow& flow) {
    for (std::size_t i = 0; i < all.size(); ++i)
        if (all[i].src == flow.src && all[i].dst == flow.dst && all[i].via == flow.via) return i;
    all.push_back(flow);
    return all.size() - 1;
}

int Topology::load(const Flow& flow, const std::vector<Flow>& concurrent) const {
    std::vector<Flow> all = concurrent;
    const std::size_t at = place(all, flow);
    return loads(all)[at];
}

double Topology::transfer_ns(const Flow& flow, LinkTier tier, std::size_t bytes,
                             const std::vector<Flow>& concurrent) const {
    std::vector<Flow> all = concurrent;
    const std::size_t at = place(all, flow);
    return link(tier).latency_us * 1e3 + static_cast<double>(bytes) * ns_per_byte(all)[at];
}

const char* Topology::transport_name(LinkTier tier) const {
    switch (tier) {
        case LinkTier::intra_node:
            if (cluster_.transport == InterNodeTransport::dcn) return "ICI";  // a TPU slice
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
        case LinkTier::host:
            return "PCIe to host";
        case LinkTier::nvme:
            return "NVMe";
        case LinkTier::none:
            return "local";
    }
    return "?";
}

}  // namespace pd
