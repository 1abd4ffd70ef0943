#include "collective_algorithms.h"

#include <algorithm>
#include <cstdio>
#include <map>

namespace pd {

BinaryTree binary_tree(int n, int which) {
    BinaryTree t;
    const auto count = static_cast<std::size_t>(n);
    t.parent.assign(count, -1);
    t.children.assign(count, {});
    t.depth.assign(count, 0);
    // Heap order over positions p; tree 1 maps position p to rank n-1-p.
    auto rank_at = [&](int p) { return which == 0 ? p : n - 1 - p; };
    for (int p = 1; p < n; ++p) {
        const int r = rank_at(p), parent = rank_at((p - 1) / 2);
        t.parent[static_cast<std::size_t>(r)] = parent;
        t.children[static_cast<std::size_t>(parent)].push_back(r);
    }
    for (int p = 1; p < n; ++p) {
        const int r = rank_at(p);
        t.depth[static_cast<std::size_t>(r)] =
            t.depth[static_cast<std::size_t>(t.parent[static_cast<std::size_t>(r)])] + 1;
        t.height = std::max(t.height, t.depth[static_cast<std::size_t>(r)]);
    }
    return t;
}

NodeGroups node_groups(const Topology& topology, const std::vector<int>& members) {
    NodeGroups g;
    std::map<int, std::vector<int>> by_node;  // node -> members, in the group's order
    for (int d : members) by_node[topology.node_of(d)].push_back(d);
    if (by_node.size() < 2) return g;
    const std::size_t per_node = by_node.begin()->second.size();
    for (const auto& [node, ds] : by_node)
        if (ds.size() != per_node) return g;  // uneven: no hierarchy
    for (const auto& [node, ds] : by_node) g.local.push_back(ds);
    g.cross.assign(per_node, {});
    for (const auto& ds : g.local)
        for (std::size_t j = 0; j < per_node; ++j) g.cross[j].push_back(ds[j]);
    return g;
}

namespace {

std::size_t ceil_div(std::size_t a, std::size_t b) {
    return b == 0 ? a : (a + b - 1) / b;
}

void add_ring(std::vector<Flow>& flows, const std::vector<int>& ring) {
    const std::size_t n = ring.size();
    if (n < 2) return;
    for (std::size_t i = 0; i < n; ++i) flows.push_back({ring[i], ring[(i + 1) % n]});
}

// The rounds of a ring all-reduce's two phases (or one) over each of `rings` at once.
void ring_rounds(std::vector<Round>& out, const std::vector<std::vector<int>>& rings,
                 std::size_t bytes, int phases) {
    if (rings.empty() || rings.front().size() < 2) return;
    const std::size_t n = rings.front().size();
    Round r;
    for (const auto& ring : rings) add_ring(r.flows, ring);
    r.bytes = ceil_div(bytes, n);
    for (int p = 0; p < phases; ++p)
        for (std::size_t s = 0; s + 1 < n; ++s) out.push_back(r);
}

}  // namespace

std::vector<Round> all_reduce_rounds(CollectiveAlgorithm algorithm, const Topology& topology,
                                     const std::vector<int>& group,
                                     const std::vector<std::vector<int>>& concurrent,
                                     std::size_t bytes) {
    std::vector<Round> out;
    const int n = static_cast<int>(group.size());
    if (n < 2) return out;
    const auto& groups = concurrent.empty() ? std::vector<std::vector<int>>{group} : concurrent;
    switch (algorithm) {
        case CollectiveAlgorithm::ring:
        case CollectiveAlgorithm::automatic:
            ring_rounds(out, groups, bytes, 2);
            break;
        case CollectiveAlgorithm::tree: {
            // Both trees at once, half the data each: the reduce climbs level by level, the
            // broadcast descends.
            const BinaryTree trees[2] = {binary_tree(n, 0), binary_tree(n, 1)};
            const int height = trees[0].height;
            auto level = [&](int l, bool up) {
                Round r;
                r.bytes = ceil_div(bytes, 2);
                for (const auto& g : groups)
                    for (const auto& t : trees)
                        for (int k = 0; k < n; ++k)
                            if (t.depth[static_cast<std::size_t>(k)] == l) {
                                const int child = g[static_cast<std::size_t>(k)];
                                const int parent = g[static_cast<std::size_t>(
                                    t.parent[static_cast<std::size_t>(k)])];
                                r.flows.push_back(up ? Flow{child, parent} : Flow{parent, child});
                            }
                return r;
            };
            for (int l = height; l >= 1; --l) out.push_back(level(l, true));
            for (int l = 1; l <= height; ++l) out.push_back(level(l, false));
            break;
        }
        case CollectiveAlgorithm::hierarchical: {
            std::vector<std::vector<int>> locals, crosses;
            std::size_t per_node = 0, nodes = 0;
            for (const auto& g : groups) {
                const NodeGroups ng = node_groups(topology, g);
                if (!ng.usable()) return {};
                per_node = ng.cross.size();
                nodes = ng.local.size();
                locals.insert(locals.end(), ng.local.begin(), ng.local.end());
                crosses.insert(crosses.end(), ng.cross.begin(), ng.cross.end());
            }
            ring_rounds(out, locals, bytes, 1);                       // reduce-scatter
            ring_rounds(out, crosses, ceil_div(bytes, per_node), 2);  // all-reduce a shard
            ring_rounds(out, locals, bytes, 1);                       // all-gather
            (void)nodes;
            break;
        }
        case CollectiveAlgorithm::reduction_server: {
            // Each worker sends 1/R of its buffer to each reducer, which sums what the n
            // workers sent and sends it back as it forms (so, as for a switch, only the last
            // chunk's trip follows the last upload).
            const int reducers = topology.cluster().reducers;
            if (reducers < 1) return {};
            Round up, down;
            up.bytes = ceil_div(bytes, static_cast<std::size_t>(reducers));
            down.bytes = std::min(up.bytes, kSwitchChunkBytes);
            for (const auto& g : groups)
                for (int d : g)
                    for (int k = 0; k < reducers; ++k) {
                        up.flows.push_back({d, Flow::reducer(k)});
                        down.flows.push_back({Flow::reducer(k), d});
                    }
            out.push_back(up);
            out.push_back(down);
            break;
        }
        case CollectiveAlgorithm::in_network: {
            const LinkTier via = topology.switch_tier(group);
            if (via == LinkTier::none) return {};
            // The switch streams the sum back while the uploads still arrive (NVLS and SHARP
            // work in chunks), so after the last upload only the last chunk comes down.
            Round up, down;
            up.bytes = bytes;
            down.bytes = std::min(bytes, kSwitchChunkBytes);
            for (const auto& g : groups)
                for (int d : g) {
                    up.flows.push_back({d, Flow::kSwitch, via});
                    down.flows.push_back({Flow::kSwitch, d, via});
                }
            out.push_back(up);
            out.push_back(down);
            break;
        }
    }
    return out;
}

double rounds_ns(const Topology& topology, const std::vector<Round>& rounds) {
    double total = 0.0;
    for (const Round& r : rounds) {
        double slowest = 0.0;
        const std::vector<double> per_byte = topology.ns_per_byte(r.flows);
        for (std::size_t i = 0; i < r.flows.size(); ++i)
            slowest =
                std::max(slowest, topology.link(topology.flow_tier(r.flows[i])).latency_us * 1e3 +
                                      static_cast<double>(r.bytes) * per_byte[i]);
        total += slowest;
    }
    return total;
}

namespace {

double rounds_latency_ns(const Topology& topology, const std::vector<Round>& rounds) {
    double total = 0.0;
    for (const Round& r : rounds) {
        double most = 0.0;
        for (const Flow& f : r.flows)
            most = std::max(most, topology.link(topology.flow_tier(f)).latency_us * 1e3);
        total += most;
    }
    return total;
}

constexpr CollectiveAlgorithm kAlgorithms[] = {
    CollectiveAlgorithm::ring, CollectiveAlgorithm::tree, CollectiveAlgorithm::hierarchical,
    CollectiveAlgorithm::in_network, CollectiveAlgorithm::reduction_server};

std::string us(double ns) {
    char buf[32];
    std::snprintf(buf, sizeof buf, "%.1f us", ns / 1e3);
    return buf;
}

}  // namespace

AlgorithmChoice choose_all_reduce(CollectiveAlgorithm requested, const Topology& topology,
                                  const std::vector<int>& group,
                                  const std::vector<std::vector<int>>& concurrent,
                                  std::size_t bytes) {
    AlgorithmChoice c;
    for (CollectiveAlgorithm a : kAlgorithms) {
        AlgorithmEstimate e;
        e.algorithm = a;
        if (a == CollectiveAlgorithm::hierarchical && !node_groups(topology, group).usable())
            e.why_not = "the group is not spread evenly over 2 or more nodes";
        else if (a == CollectiveAlgorithm::in_network &&
                 topology.switch_tier(group) == LinkTier::none)
            e.why_not =
                topology.nodes() > 1 && !std::all_of(group.begin(), group.end(),
                                                     [&](int d) {
                                                         return topology.node_of(d) ==
                                                                topology.node_of(group.front());
                                                     })
                    ? "no switch reduces across nodes (sharp is off)"
                    : "no switch reduces inside the node (nvls is off)";
        else if (a == CollectiveAlgorithm::reduction_server && topology.cluster().reducers < 1)
            e.why_not = "no reducers (set reducers)";
        else {
            e.usable = true;
            e.ns = rounds_ns(topology, all_reduce_rounds(a, topology, group, concurrent, bytes));
        }
        c.estimates.push_back(e);
    }
    auto estimate = [&](CollectiveAlgorithm a) -> const AlgorithmEstimate& {
        for (const auto& e : c.estimates)
            if (e.algorithm == a) return e;
        return c.estimates.front();
    };
    if (requested != CollectiveAlgorithm::automatic) {
        const AlgorithmEstimate& e = estimate(requested);
        if (e.usable) {
            c.algorithm = requested;
            c.reason = "as set (allreduce_algorithm " + std::string(name_of(requested)) + ")";
        } else {
            c.algorithm = CollectiveAlgorithm::ring;
            c.reason =
                std::string(name_of(requested)) + " was set, but " + e.why_not + ": ring instead";
        }
        return c;
    }
    const AlgorithmEstimate* best = nullptr;
    for (const auto& e : c.estimates)
        if (e.usable && (!best || e.ns < best->ns)) best = &e;
    c.algorithm = best->algorithm;
    const auto ring =
        all_reduce_rounds(CollectiveAlgorithm::ring, topology, group, concurrent, bytes);
    const double latency = rounds_latency_ns(topology, ring);
    const double moving = rounds_ns(topology, ring) - latency;
    c.reason = std::string("auto: ") + (latency > moving ? "latency-bound" : "bandwidth-bound") +
               " (a ring would spend " + us(latency) + " in latencies and " + us(moving) +
               " moving bytes); least predicted time";
    return c;
}

std::string describe_choice(const AlgorithmChoice& choice, const Topology& topology,
                            const std::vector<int>& group, std::size_t bytes) {
    std::map<int, int> nodes;
    for (int d : group) ++nodes[topology.node_of(d)];
    LinkTier tier = LinkTier::intra_node;
    if (choice.algorithm == CollectiveAlgorithm::in_network)
        tier = topology.switch_tier(group);
    else if (nodes.size() > 1)
        tier = LinkTier::inter_node;
    std::string algo;
    switch (choice.algorithm) {
        case CollectiveAlgorithm::ring:
            algo = "Ring";
            break;
        case CollectiveAlgorithm::tree:
            algo = "Tree";
            break;
        case CollectiveAlgorithm::hierarchical:
            algo = "Hierarchical";
            break;
        case CollectiveAlgorithm::in_network:
            algo = tier == LinkTier::nvls ? "NVLS" : "CollNet";
            break;
        case CollectiveAlgorithm::reduction_server:
            algo = "ReductionServer (" + std::to_string(topology.cluster().reducers) + " reducers)";
            tier = LinkTier::inter_node;
            break;
        case CollectiveAlgorithm::automatic:
            algo = "?";
            break;
    }
    std::string s = "AllReduce " + std::to_string(bytes) + " bytes, " +
                    std::to_string(group.size()) + " ranks on " + std::to_string(nodes.size()) +
                    (nodes.size() == 1 ? " node" : " nodes") + ": " + algo + " via " +
                    topology.transport_name(tier) + ", 1 channel; " + choice.reason + "; predicted";
    bool first = true;
    for (const auto& e : choice.estimates) {
        s += first ? " " : ", ";
        first = false;
        s += std::string(name_of(e.algorithm)) + " " + (e.usable ? us(e.ns) : "n/a: " + e.why_not);
    }
    return s;
}

}  // namespace pd
