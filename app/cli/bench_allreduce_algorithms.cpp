#include "bench_allreduce_algorithms.h"

#include <algorithm>
#include <cstdio>
#include <string>
#include <vector>

#include "comm/collective_algorithms.h"
#include "pd/communicator.h"
#include "pd/device_group.h"
#include "pd/run_context.h"

namespace pd::cli {

namespace {

struct NamedTopology {
    const char* name;
    int devices;
    ClusterConfig cluster;
    LinkModel intra;
};

std::vector<NamedTopology> topologies() {
    std::vector<NamedTopology> out;
    {  // One HGX-like node: NVLink 450 GB/s a direction, the switch reduces (NVLS).
        NamedTopology t{"1 node x 8, NVSwitch + NVLS", 8, {}, LinkModel{1.0, 450.0}};
        t.cluster.nvls = true;
        out.push_back(t);
    }
    {  // Two such nodes of 4 over 400 Gb/s InfiniBand, a NIC per device.
        NamedTopology t{"2 nodes x 4, IB 400 Gb/s rails", 8, {}, LinkModel{1.0, 450.0}};
        t.cluster.nodes = 2;
        t.cluster.inter = LinkModel{5.0, 50.0};
        out.push_back(t);
    }
    {  // The same over TCP sockets: one 25 Gb/s port per node.
        NamedTopology t{"2 nodes x 4, sockets 25 Gb/s", 8, {}, LinkModel{1.0, 450.0}};
        t.cluster.nodes = 2;
        t.cluster.transport = InterNodeTransport::sockets;
        out.push_back(t);
    }
    {  // Four nodes of 4 on IB with SHARP in the switches.
        NamedTopology t{"4 nodes x 4, IB 400 Gb/s + SHARP", 16, {}, LinkModel{1.0, 450.0}};
        t.cluster.nodes = 4;
        t.cluster.inter = LinkModel{5.0, 50.0};
        t.cluster.sharp = true;
        out.push_back(t);
    }
    {  // Eight single-GPU workers on 100 Gb/s NICs, and 8 reducer nodes of the same speed.
        NamedTopology t{"8 nodes x 1, 100 Gb/s + 8 reducers", 8, {}, LinkModel{1.0, 450.0}};
        t.cluster.nodes = 8;
        t.cluster.inter = LinkModel{5.0, 12.5};
        t.cluster.reducers = 8;
        t.cluster.reducer = LinkModel{5.0, 12.5};
        out.push_back(t);
    }
    return out;
}

// One all-reduce of `bytes` by `algorithm` on the device clock, `iters` times: the median
// call's span (first member in to last member out).
double measure_ns(const NamedTopology& t, CollectiveAlgorithm algorithm, std::size_t bytes,
                  int iters) {
    RunContext ctx(ClockMode::device, t.intra, true, 120.0);
    ctx.set_cluster(Topology(t.cluster, t.intra, t.devices), algorithm);
    RunConfig config;
    config.devices = t.devices;
    config.capacity_bytes = std::size_t{1} << 40;
    DeviceGroup group(config, ctx);
    Transport transport(ctx);
    Communicator comm(transport, group.members(), 1);
    const std::size_t count = std::max<std::size_t>(1, bytes / sizeof(float));
    std::vector<std::vector<float>> data(static_cast<std::size_t>(t.devices),
                                         std::vector<float>(count, 1.0f));
    for (int it = 0; it < iters; ++it)
        for (int d = 0; d < t.devices; ++d)
            group.device(d).comm().enqueue([&comm, &data, d, count, it] {
                comm.all_reduce(d, data[static_cast<std::size_t>(d)].data(), count, it);
            });
    group.synchronize();
    std::vector<std::int64_t> begin(static_cast<std::size_t>(iters), INT64_MAX),
        end(static_cast<std::size_t>(iters), 0);
    for (int d = 0; d < t.devices; ++d)
        for (const auto& r : group.device(d).comm().take_collectives()) {
            if (r.step < 0 || r.step >= iters) continue;
            const auto s = static_cast<std::size_t>(r.step);
            begin[s] = std::min(begin[s], r.start_ns);
            end[s] = std::max(end[s], r.end_ns);
        }
    std::vector<double> spans;
    for (int i = 0; i < iters; ++i)
        spans.push_back(static_cast<double>(end[static_cast<std::size_t>(i)] -
                                            begin[static_cast<std::size_t>(i)]));
    std::sort(spans.begin(), spans.end());
    return spans[spans.size() / 2];
}

}  // namespace

int bench_allreduce_algorithms(int iters) {
    iters = std::max(iters, 3);
    const CollectiveAlgorithm algorithms[] = {
        CollectiveAlgorithm::ring, CollectiveAlgorithm::tree, CollectiveAlgorithm::hierarchical,
        CollectiveAlgorithm::in_network, CollectiveAlgorithm::reduction_server};
    std::printf(
        "# paralleldeck-bench allreduce --algorithms: device clock (transfers by the cluster "
        "model, copies and adds by this CPU), median of %d calls; model = alpha-beta prediction\n",
        iters);
    for (const NamedTopology& t : topologies()) {
        const Topology topology(t.cluster, t.intra, t.devices);
        std::vector<int> group;
        for (int d = 0; d < t.devices; ++d) group.push_back(d);
        std::printf("\n## %s\n# %10s %-13s %12s %12s\n", t.name, "size(B)", "algorithm", "time(us)",
                    "model(us)");
        std::size_t measured_crossover = 0, predicted_crossover = 0;
        for (std::size_t bytes = 1024; bytes <= (std::size_t{16} << 20); bytes *= 4) {
            double ring_ns = 0, tree_ns = 0, ring_model = 0, tree_model = 0;
            for (CollectiveAlgorithm a : algorithms) {
                const AlgorithmChoice c = choose_all_reduce(a, topology, group, {group}, bytes);
                if (c.algorithm != a) continue;  // cannot run here (no switch, one node)
                const double model =
                    rounds_ns(topology, all_reduce_rounds(a, topology, group, {group}, bytes));
                const double ns = measure_ns(t, a, bytes, iters);
                std::printf(
                    "RESULT topology=\"%s\" bytes=%zu algorithm=%s time_us=%.1f "
                    "model_us=%.1f\n",
                    t.name, bytes, std::string(name_of(a)).c_str(), ns / 1e3, model / 1e3);
                if (a == CollectiveAlgorithm::ring) ring_ns = ns, ring_model = model;
                if (a == CollectiveAlgorithm::tree) tree_ns = ns, tree_model = model;
            }
            if (!measured_crossover && ring_ns > 0 && ring_ns <= tree_ns)
                measured_crossover = bytes;
            if (!predicted_crossover && ring_model > 0 && ring_model <= tree_model)
                predicted_crossover = bytes;
        }
        auto words = [](std::size_t b) {
            return b ? std::to_string(b) + " B" : std::string("none up to 16 MiB");
        };
        std::printf(
            "# ring/tree crossover (first size where ring is as fast): measured %s, "
            "model %s\n",
            words(measured_crossover).c_str(), words(predicted_crossover).c_str());
    }
    return 0;
}

}  // namespace pd::cli
