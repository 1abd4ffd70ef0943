#include "pd/cluster_metrics.h"

#include <algorithm>
#include <tuple>
#include <vector>

#include "pd/metrics.h"

namespace pd {

namespace {

bool counted(const std::optional<StepRange>& steps, int step) {
    return step >= 0 && (!steps || steps->contains(step));
}

StragglerMetrics find_straggler(const Trace& trace, const std::optional<StepRange>& steps,
                                double step_count) {
    // The k-th call of one collective (same op, label and step) on each device is one call of
    // the group: match them, and name the device whose call was the shortest.
    using Key = std::tuple<std::string, std::string, int, int>;  // op, label, step, k
    std::map<Key, std::vector<const CollectiveRecord*>> calls;
    std::map<std::tuple<int, std::string, std::string, int>, int> seen;
    std::vector<const CollectiveRecord*> ordered;
    for (const auto& c : trace.collectives)
        if (counted(steps, c.step) && c.op != "send" && c.op != "recv") ordered.push_back(&c);
    std::stable_sort(ordered.begin(), ordered.end(),
                     [](const auto* a, const auto* b) { return a->start_ns < b->start_ns; });
    for (const CollectiveRecord* c : ordered) {
        const int k = seen[{c->device, c->op, c->label, c->step}]++;
        calls[{c->op, c->label, c->step, k}].push_back(c);
    }
    StragglerMetrics s;
    std::map<int, int> last;
    double waited = 0.0;
    for (const auto& [key, records] : calls) {
        if (records.size() < 2) continue;
        const CollectiveRecord* shortest = records.front();
        std::int64_t longest = 0;
        for (const auto* r : records) {
            longest = std::max(longest, r->end_ns - r->start_ns);
            if (r->end_ns - r->start_ns < shortest->end_ns - shortest->start_ns ||
                (r->end_ns - r->start_ns == shortest->end_ns - shortest->start_ns &&
                 r->device < shortest->device))
                shortest = r;
        }
        // A call that every member entered at about the same time (the second of two back-to-
        // back all-reduces) names no one: only calls where someone waited at least a fifth of
        // it count as arrivals.
        if (5 * (longest - (shortest->end_ns - shortest->start_ns)) < longest) continue;
        ++s.calls;
        ++last[shortest->device];
        for (const auto* r : records)
            waited += static_cast<double>((r->end_ns - r->start_ns) -
                                          (shortest->end_ns - shortest->start_ns)) *
                      1e-9;
    }
    if (s.calls == 0) return s;
    int most = 0;
    for (const auto& [device, count] : last)
        if (count > most) {
            most = count;
            s.device = device;
        }
    s.last_fraction = static_cast<double>(most) / s.calls;
    s.wait_s_per_step = waited / std::max(1.0, step_count) / std::max(1, trace.devices);
    return s;
}

}  // namespace

ClusterMetrics cluster_metrics(const Trace& trace, std::optional<StepRange> steps) {
    ClusterMetrics m;
    std::map<int, bool> step_seen;
    for (const auto& e : trace.events)
        if (counted(steps, e.step)) step_seen[e.step] = true;
    const double step_count = std::max<std::size_t>(1, step_seen.size());
    // Summed as integers, divided once: a count that is the same every step reads exactly.
    std::array<unsigned long long, kLinkTierCount> bytes{}, busy_ns{};
    for (const auto& e : trace.events) {
        if (!counted(steps, e.step) || e.tier == LinkTier::none ||
            (!is_communication(e.kind) && e.tier != LinkTier::host &&
             e.tier != LinkTier::nvme))  // PCIe copies and NVMe swaps count
            continue;
        const auto i = static_cast<std::size_t>(e.tier);
        bytes[i] += e.bytes;
        busy_ns[i] += static_cast<unsigned long long>(std::max<std::int64_t>(0, e.duration_ns()));
        ++m.tiers[i].transfers;
    }
    for (std::size_t i = 0; i < m.tiers.size(); ++i) {
        m.tiers[i].bytes_per_step = static_cast<double>(bytes[i]) / step_count;
        m.tiers[i].busy_s_per_step = static_cast<double>(busy_ns[i]) * 1e-9 / step_count;
    }
    for (const auto& c : trace.collectives)
        if (counted(steps, c.step) && c.op == "all_reduce" && !c.algorithm.empty())
            m.allreduce_calls_per_step[c.algorithm] +=
                1.0 / step_count / std::max(1, trace.devices);
    m.straggler = find_straggler(trace, steps, step_count);
    return m;
}

}  // namespace pd
