// The cluster: link tiers, sharing, the all-reduce algorithms and the tuner. Algorithms are
// exact on crafted inputs (small integers: every partial sum is exact, whatever the order) for
// 2-16 devices on 1-4 nodes; the device clock's transfer times are the tiers' alpha-beta
// figures; a shared NIC halves each transfer's rate; auto picks tree below the crossover and
// ring above it.
#include <QtTest>
#include <functional>
#include <memory>

#include "comm/collective_algorithms.h"
#include "engine/crafted_collectives.h"
#include "pd/communicator.h"
#include "pd/error.h"
#include "pd/metrics.h"
#include "pd/run.h"
#include "pd/run_context.h"
#include "pd/scenario.h"
#include "pd/trace_import.h"

using namespace pd;

namespace {

struct Cluster {
    RunContext ctx;
    std::vector<std::unique_ptr<Device>> devices;
    Transport transport;
    std::unique_ptr<Communicator> comm;

    Cluster(int n, const ClusterConfig& cluster, CollectiveAlgorithm algorithm,
            LinkModel intra = {})
        : ctx(ClockMode::device, intra, true, 60.0), transport(ctx) {
        ctx.set_cluster(Topology(cluster, intra, n), algorithm);
        std::vector<Device*> members;
        for (int d = 0; d < n; ++d) {
            devices.push_back(std::make_unique<Device>(d, std::size_t{1} << 30, ctx));
            members.push_back(devices.back().get());
        }
        comm = std::make_unique<Communicator>(transport, members, 1);
    }
    void run(const std::function<void(int)>& body) {
        for (std::size_t d = 0; d < devices.size(); ++d)
            devices[d]->comm().enqueue([body, d] { body(static_cast<int>(d)); });
        for (auto& dev : devices) dev->comm().synchronize();
    }
};

ClusterConfig nodes_of(int nodes, bool nvls = false, bool sharp = false) {
    ClusterConfig c;
    c.nodes = nodes;
    c.nvls = nvls;
    c.sharp = sharp;
    return c;
}

// Every step's loss of `b` equals `a`'s to 1e-6 (relative), the strategies' tolerance.
void same_losses(const RunResult& a, const RunResult& b) {
    QCOMPARE(b.trace.steps.size(), a.trace.steps.size());
    for (std::size_t s = 0; s < a.trace.steps.size(); ++s)
        QVERIFY2(std::abs(a.trace.steps[s].loss - b.trace.steps[s].loss) <=
                     1e-6 * std::max(1.0, std::abs(a.trace.steps[s].loss)),
                 qPrintable(QString::number(a.trace.steps[s].loss) + " vs " +
                            QString::number(b.trace.steps[s].loss)));
}

}  // namespace

class TestCluster : public QObject {
    Q_OBJECT
  private slots:
    void algorithms_are_exact_data() {
        QTest::addColumn<int>("algorithm");
        QTest::addColumn<int>("n");
        QTest::addColumn<int>("nodes");
        QTest::addColumn<int>("count");
        const CollectiveAlgorithm algorithms[] = {
            CollectiveAlgorithm::ring, CollectiveAlgorithm::tree, CollectiveAlgorithm::hierarchical,
            CollectiveAlgorithm::in_network, CollectiveAlgorithm::reduction_server};
        for (auto a : algorithms)
            for (int n : {2, 3, 4, 6, 8, 12, 16})
                for (int nodes : {1, 2, 3, 4}) {
                    if (n % nodes != 0 || nodes > n) continue;
                    if (a == CollectiveAlgorithm::hierarchical && nodes < 2) continue;
                    for (int count : {1, 7, 1001})
                        QTest::addRow("%s_n%d_nodes%d_count%d", name_of(a).data(), n, nodes, count)
                            << static_cast<int>(a) << n << nodes << count;
                }
    }

    void algorithms_are_exact() {
        QFETCH(int, algorithm);
        QFETCH(int, n);
        QFETCH(int, nodes);
        QFETCH(int, count);
        const auto a = static_cast<CollectiveAlgorithm>(algorithm);
        // In-network: NVLS inside one node, SHARP across nodes.
        ClusterConfig cluster = nodes_of(nodes, nodes == 1, nodes > 1);
        cluster.reducers = 3;
        Cluster g(n, cluster, a);
        test::CraftedCollectives c(n, static_cast<std::size_t>(count));
        g.run([&](int r) { c.run(*g.comm, r); });
        QVERIFY2(!g.ctx.aborted(), g.ctx.first_error_message().c_str());
        c.verify();
        // The all-reduce ran the algorithm asked for, said so, and its first member logged why.
        for (int r = 0; r < n; ++r) {
            const auto records = g.devices[static_cast<std::size_t>(r)]->comm().take_collectives();
            bool found = false;
            for (const auto& rec : records)
                if (rec.op == "all_reduce") {
                    found = true;
                    QCOMPARE(rec.algorithm, std::string(name_of(a)));
                    QCOMPARE(rec.choice.empty(), r != 0);
                }
            QVERIFY(found);
        }
    }

    // Two calls in a row on the switch: a member running ahead waits for the first to be read.
    void in_network_calls_in_a_row() {
        Cluster g(4, nodes_of(1, true), CollectiveAlgorithm::in_network);
        std::vector<std::vector<float>> data(4);
        g.run([&](int r) {
            auto& d = data[static_cast<std::size_t>(r)];
            for (int call = 0; call < 5; ++call) {
                d.assign(3, static_cast<float>(r + call));
                g.comm->all_reduce(r, d.data(), d.size(), call);
                QCOMPARE(d[0], static_cast<float>(6 + 4 * call));
            }
        });
        QVERIFY2(!g.ctx.aborted(), g.ctx.first_error_message().c_str());
    }

    // Vertex AI's Reduction Server: each worker sends its buffer once (1/R to each reducer)
    // and receives the sum once, where a ring moves 2(n-1)/n of it each way; with as much
    // reducer bandwidth as worker bandwidth, a large all-reduce takes about half the ring's
    // time on the same fabric. Too few reducers, and their NICs are the bottleneck.
    void reduction_server_against_ring() {
        ClusterConfig c = nodes_of(8);  // 8 workers, one per node
        c.inter = LinkModel{5.0, 12.5};
        c.reducer = LinkModel{5.0, 12.5};
        c.reducers = 8;
        const Topology t(c, LinkModel{}, 8);
        const std::vector<int> group{0, 1, 2, 3, 4, 5, 6, 7};
        const std::size_t bytes = 64u << 20;
        auto ns = [&](const Topology& topo, CollectiveAlgorithm a) {
            return rounds_ns(topo, all_reduce_rounds(a, topo, group, {group}, bytes));
        };
        const double ring = ns(t, CollectiveAlgorithm::ring);
        const double server = ns(t, CollectiveAlgorithm::reduction_server);
        QVERIFY2(server < 0.6 * ring, qPrintable(QString::number(server / ring)));
        // Two reducers for 8 workers: each reducer NIC takes 4x a worker's bytes.
        c.reducers = 2;
        const Topology few(c, LinkModel{}, 8);
        QVERIFY(ns(few, CollectiveAlgorithm::reduction_server) > ring);
        // Each worker's upload carries its whole buffer once.
        const auto rounds =
            all_reduce_rounds(CollectiveAlgorithm::reduction_server, t, group, {group}, bytes);
        std::size_t sent_by_0 = 0;
        for (const Flow& f : rounds[0].flows)
            if (f.src == 0) sent_by_0 += rounds[0].bytes;
        QCOMPARE(sent_by_0, bytes);
    }

    void tiers_and_alpha_beta() {
        ClusterConfig c = nodes_of(2);
        c.inter = LinkModel{5.0, 25.0};
        const LinkModel intra{1.0, 400.0};
        const Topology t(c, intra, 8);
        QCOMPARE(t.nodes(), 2);
        QCOMPARE(t.devices_per_node(), 4);
        QCOMPARE(t.tier(0, 3), LinkTier::intra_node);
        QCOMPARE(t.tier(3, 4), LinkTier::inter_node);
        // One flow alone: latency + bytes / bandwidth of the tier it crosses.
        QCOMPARE(t.transfer_ns({0, 3}, LinkTier::intra_node, 4000, {{0, 3}}), 1000.0 + 10.0);
        QCOMPARE(t.transfer_ns({3, 4}, LinkTier::inter_node, 25000, {{3, 4}}), 5000.0 + 1000.0);
        c.transport = InterNodeTransport::sockets;
        c.socket = LinkModel{50.0, 3.125};
        const Topology sockets(c, intra, 8);
        QCOMPARE(sockets.transfer_ns({3, 4}, LinkTier::inter_node, 25000, {{3, 4}}),
                 50000.0 + 8000.0);
        QCOMPARE(std::string(sockets.transport_name(LinkTier::inter_node)), "NET/Socket");
    }

    void a_shared_nic_halves_each_transfer_rate() {
        ClusterConfig c = nodes_of(2);
        c.inter = LinkModel{0.0, 10.0};
        const std::vector<Flow> both{{0, 2}, {1, 3}};
        c.devices_per_nic = 1;  // rail-optimised: each device its own NIC
        const Topology rails(c, LinkModel{}, 4);
        QCOMPARE(rails.transfer_ns({0, 2}, LinkTier::inter_node, 1000, both), 100.0);
        c.devices_per_nic = 2;  // devices 0 and 1 share one NIC, 2 and 3 another
        const Topology shared(c, LinkModel{}, 4);
        QCOMPARE(shared.load({0, 2}, both), 2);
        QCOMPARE(shared.transfer_ns({0, 2}, LinkTier::inter_node, 1000, both), 200.0);
        // Alone on the shared NIC, a transfer has it all.
        QCOMPARE(shared.transfer_ns({0, 2}, LinkTier::inter_node, 1000, {{0, 2}}), 100.0);
        // PCIe: transfers inside a node share its host bridge; NVSwitch ports do not.
        ClusterConfig p;
        p.intra = IntraNodeLink::pcie;
        const Topology pcie(p, LinkModel{0.0, 10.0}, 4);
        const std::vector<Flow> ring{{0, 1}, {1, 2}, {2, 3}, {3, 0}};
        QCOMPARE(pcie.load({0, 1}, ring), 4);
        const Topology nvswitch(ClusterConfig{}, LinkModel{0.0, 10.0}, 4);
        QCOMPARE(nvswitch.load({0, 1}, ring), 1);
    }

    // On the device clock a ring step across nodes takes at least the inter-node figure, and
    // says which tier it crossed; the time between the steps is what each step's copy cost.
    void ring_steps_are_timed_by_their_tier() {
        ClusterConfig c = nodes_of(2);
        c.inter = LinkModel{200.0, 0.001};  // 200 us, 1 MB/s: far above any copy's CPU time
        const LinkModel intra{1.0, 1000.0};
        Cluster g(4, c, CollectiveAlgorithm::ring, intra);
        std::vector<std::vector<float>> data(4, std::vector<float>(400, 1.0f));
        g.run([&](int r) {
            g.comm->all_reduce(r, data[static_cast<std::size_t>(r)].data(), 400, 0);
        });
        QVERIFY2(!g.ctx.aborted(), g.ctx.first_error_message().c_str());
        const Topology& t = g.ctx.topology();
        for (int r = 0; r < 4; ++r) {
            const int left = (r + 3) % 4;
            const LinkTier expected = t.tier(left, r);
            const double figure = t.alone_ns(left, r, 100 * sizeof(float));
            for (const auto& e : g.devices[static_cast<std::size_t>(r)]->comm().take_events()) {
                if (e.kind != EventKind::reduce_scatter_step &&
                    e.kind != EventKind::all_gather_step)
                    continue;
                QCOMPARE(e.tier, expected);
                // The step cannot end before its chunk left the left neighbour and crossed.
                QVERIFY2(e.duration_ns() + 1 >= 0, "negative step");
                if (expected == LinkTier::inter_node)
                    QVERIFY2(e.end_ns >= static_cast<std::int64_t>(figure),
                             qPrintable(QString::number(e.end_ns)));
            }
        }
    }

    void auto_picks_tree_below_the_crossover_and_ring_above() {
        // One node of 8 without a reducing switch: ring and tree are the candidates.
        const Topology t(ClusterConfig{}, LinkModel{5.0, 25.0}, 8);
        const std::vector<int> group{0, 1, 2, 3, 4, 5, 6, 7};
        auto choose = [&](std::size_t bytes) {
            return choose_all_reduce(CollectiveAlgorithm::automatic, t, group, {group}, bytes);
        };
        QCOMPARE(choose(1024).algorithm, CollectiveAlgorithm::tree);
        QCOMPARE(choose(64u << 20).algorithm, CollectiveAlgorithm::ring);
        // The crossover by the model: the first size (in 4 KiB steps) where ring wins.
        std::size_t crossover = 0;
        for (std::size_t b = 4096; b < (64u << 20); b += 4096)
            if (choose(b).algorithm == CollectiveAlgorithm::ring) {
                crossover = b;
                break;
            }
        QVERIFY(crossover > 0);
        auto ns = [&](CollectiveAlgorithm a, std::size_t b) {
            return rounds_ns(t, all_reduce_rounds(a, t, group, {group}, b));
        };
        QVERIFY(ns(CollectiveAlgorithm::ring, crossover) <=
                ns(CollectiveAlgorithm::tree, crossover));
        QVERIFY(ns(CollectiveAlgorithm::tree, crossover - 4096) <
                ns(CollectiveAlgorithm::ring, crossover - 4096));
        QVERIFY(choose(1024).reason.find("latency-bound") != std::string::npos);
        QVERIFY(choose(64u << 20).reason.find("bandwidth-bound") != std::string::npos);
        // With NVLS the switch wins at large sizes: each device sends and receives the buffer
        // once instead of 2(n-1)/n times.
        ClusterConfig nvls;
        nvls.nvls = true;
        const Topology with_switch(nvls, LinkModel{5.0, 25.0}, 8);
        QCOMPARE(choose_all_reduce(CollectiveAlgorithm::automatic, with_switch, group, {group},
                                   64u << 20)
                     .algorithm,
                 CollectiveAlgorithm::in_network);
    }

    void a_requested_algorithm_that_cannot_run_falls_back_to_ring() {
        const Topology t(nodes_of(2), LinkModel{}, 8);
        const std::vector<int> inside{0, 1, 2, 3};  // a group on one node
        const auto c =
            choose_all_reduce(CollectiveAlgorithm::hierarchical, t, inside, {inside}, 4096);
        QCOMPARE(c.algorithm, CollectiveAlgorithm::ring);
        QVERIFY(c.reason.find("not spread evenly") != std::string::npos);
    }

    void scenario_keys_data() {
        QTest::addColumn<QString>("json");
        QTest::addColumn<QString>("error");
        QTest::addRow("no switch")
            << R"({"strategy": "dp", "devices": 4, "allreduce_algorithm": "in-network"})"
            << "needs a switch that reduces";
        QTest::addRow("hierarchy on one node")
            << R"({"strategy": "dp", "devices": 4, "allreduce_algorithm": "hierarchical"})"
            << "2 or more nodes";
        QTest::addRow("uneven nodes")
            << R"({"strategy": "dp", "devices": 6, "batch": 12, "nodes": 4})"
            << "do not split evenly";
        QTest::addRow("unknown preset") << R"({"cluster": "dgx-9000"})"
                                        << "unknown cluster";
        QTest::addRow("wall clock on nodes")
            << R"({"strategy": "dp", "devices": 4, "nodes": 2, "clock": "wall"})"
            << "device clock";
        QTest::addRow("straggler outside")
            << R"({"strategy": "dp", "devices": 2, "straggler": {"device": 2, "slowdown": 2}})"
            << "not in a run of 2";
        QTest::addRow("straggler shape") << R"({"straggler": 3})"
                                         << "must be an object";
        QTest::addRow("sharp on sockets")
            << R"({"strategy": "dp", "devices": 4, "nodes": 2, "sharp": true, "inter_transport": "sockets"})"
            << "InfiniBand";
    }

    void scenario_keys() {
        QFETCH(QString, json);
        QFETCH(QString, error);
        RunConfig c;
        ConfigSources src;
        try {
            apply_scenario_json(json.toStdString(), "s.json", c, src);
            validate(c, src);
            QFAIL("accepted");
        } catch (const BadInput& e) {
            QVERIFY2(QString::fromStdString(e.what()).contains(error), e.what());
        }
    }

    void presets_and_overrides() {
        RunConfig c;
        ConfigSources src;
        // The preset applies first whatever the keys' order; the file's own keys override it.
        apply_scenario_json(
            R"({"inter_gbps": 100, "strategy": "dp", "devices": 16, "cluster": "hgx-h100"})",
            "s.json", c, src);
        validate(c, src);
        QCOMPARE(c.cluster.node_count(16), 2);
        QCOMPARE(c.cluster.inter.gbit_per_s(), 100.0);
        QCOMPARE(c.link.gbit_per_s(), 3600.0);  // 450 GB/s a direction
        QVERIFY(c.cluster.nvls);
        QCOMPARE(resolve_clock(c, 64), ClockMode::device);
        // Round trip through the scenario a run writes.
        RunConfig back;
        ConfigSources src2;
        apply_scenario_json(scenario_json(c), "again.json", back, src2);
        QCOMPARE(back.cluster.node_count(16), 2);
        QCOMPARE(back.cluster.inter.gbit_per_s(), 100.0);
        QCOMPARE(back.cluster.preset, std::string("hgx-h100"));
    }

    // A run on two nodes with every algorithm trains to the same loss as a single device
    // (within the summation-order tolerance every strategy test uses).
    void dp_on_two_nodes_equals_single_data() {
        QTest::addColumn<QString>("algorithm");
        for (const char* a : {"ring", "tree", "hierarchical", "in-network", "auto"})
            QTest::addRow("%s", a) << QString::fromLatin1(a);
    }
    void dp_on_two_nodes_equals_single() {
        QFETCH(QString, algorithm);
        RunConfig single;
        single.layers = 2;
        single.width = 32;
        single.batch = 16;
        single.steps = 3;
        single.clock = ClockMode::device;
        RunConfig dp = single;
        dp.strategy = StrategyKind::dp;
        dp.devices = 4;
        dp.cluster.nodes = 2;
        dp.cluster.sharp = true;
        dp.allreduce_algorithm = *collective_algorithm_from_name(algorithm.toStdString());
        validate(dp);
        const RunResult a = Run(single).execute();
        const RunResult b = Run(dp).execute();
        QCOMPARE(b.status, RunStatus::ok);
        same_losses(a, b);
        // Some transfer crossed the nodes, and the trace says so.
        bool inter = false;
        for (const auto& e : b.trace.events)
            inter = inter || e.tier == LinkTier::inter_node || e.tier == LinkTier::sharp;
        QVERIFY(inter);
    }

    // Every strategy on a cluster of two nodes, all-reduces chosen by the tuner, trains as the
    // single device does.
    void every_strategy_on_two_nodes_equals_single_data() {
        QTest::addColumn<QString>("strategy");
        for (const char* s : {"dp", "ps", "pipeline", "tp", "zero1", "zero2", "zero3", "hybrid"})
            QTest::addRow("%s", s) << QString::fromLatin1(s);
    }
    void every_strategy_on_two_nodes_equals_single() {
        QFETCH(QString, strategy);
        RunConfig single;
        single.layers = 4;
        single.width = 32;
        single.batch = 24;  // divides over 4 replicas and over ps's 3 workers
        single.steps = 3;
        single.clock = ClockMode::device;
        RunConfig c = single;
        c.strategy = *strategy_from_name(strategy.toStdString());
        c.devices = 4;
        c.cluster.nodes = 2;
        c.cluster.nvls = true;
        c.cluster.sharp = true;
        c.allreduce_algorithm = CollectiveAlgorithm::automatic;
        if (c.strategy == StrategyKind::hybrid) c.mesh = Mesh{2, 1, 2};
        validate(c);
        const RunResult a = Run(single).execute();
        const RunResult b = Run(c).execute();
        QCOMPARE(b.status, RunStatus::ok);
        // ps: device 0 is the server; its workers train on the batch's slices.
        same_losses(a, b);
    }

    // Hybrid sharding (FSDP's HYBRID_SHARD): ZeRO inside each node, replicas across nodes. It
    // trains as the single device does, its gathers and reduce-scatters stay inside the nodes,
    // and only the shards' all-reduce crosses them.
    void hybrid_sharding_equals_single_data() {
        QTest::addColumn<int>("level");
        QTest::addColumn<int>("nodes");
        QTest::addRow("zero3 2x2") << 3 << 2;
        QTest::addRow("zero3 2x3") << 3 << 2;
        QTest::addRow("zero2 3x2") << 2 << 3;
    }
    void hybrid_sharding_equals_single() {
        QFETCH(int, level);
        QFETCH(int, nodes);
        RunConfig single;
        single.layers = 2;
        single.width = 32;
        single.batch = 24;
        single.steps = 3;
        single.clock = ClockMode::device;
        RunConfig h = single;
        h.strategy = level == 3 ? StrategyKind::zero3 : StrategyKind::zero2;
        h.devices = QTest::currentDataTag() == QByteArray("zero3 2x3") ? 6 : 2 * nodes;
        h.cluster.nodes = nodes;
        h.hybrid_shard = true;
        validate(h);
        const RunResult a = Run(single).execute();
        const RunResult b = Run(h).execute();
        QCOMPARE(b.status, RunStatus::ok);
        same_losses(a, b);
        const Topology t(h.cluster, h.link, h.devices);
        bool crossed = false;
        for (const auto& c : b.trace.collectives) {
            if (c.op == "all_gather" || c.op == "reduce_scatter")
                QCOMPARE(c.ranks, h.devices / nodes);
            if (c.op == "all_reduce") QCOMPARE(c.ranks, nodes);
        }
        for (const auto& e : b.trace.events) crossed = crossed || e.tier == LinkTier::inter_node;
        QVERIFY(crossed);
    }

    // The straggler from the trace alone: the device whose collectives are the shortest (it
    // arrives last, everyone else waits in them).
    void the_straggler_is_named_on_an_engine_run() {
        RunConfig c;
        c.strategy = StrategyKind::dp;
        c.devices = 4;
        c.layers = 2;
        c.width = 256;
        c.batch = 64;
        c.steps = 4;
        c.clock = ClockMode::device;
        c.straggler = Straggler{2, 4.0};
        validate(c);
        const RunResult r = Run(c).execute();
        QCOMPARE(r.status, RunStatus::ok);
        const RunMetrics m = compute_metrics(r.trace, c);
        QCOMPARE(m.cluster.straggler.device, 2);
        QVERIFY(m.cluster.straggler.calls > 0);
        QVERIFY(m.cluster.straggler.wait_s_per_step > 0);
    }

    // A real two-rank DDP run (gloo, PyTorch's profiler) where rank 1 slept 30 ms before each
    // backward on purpose (tests/fixtures/traces/README.md): its all-reduces are the short ones.
    void the_straggler_is_named_on_a_pytorch_trace() {
        const std::string dir = std::string(PD_TRACE_FIXTURES_DIR) + "/ddp-gloo-2rank-straggler/";
        const Trace t = import_traces({dir + "rank0.json", dir + "rank1.json"});
        const RunMetrics m = compute_metrics(t, 16);
        QVERIFY(m.cluster.straggler.calls > 0);
        QCOMPARE(m.cluster.straggler.device, 1);
        QVERIFY2(m.cluster.straggler.last_fraction >= 0.9,
                 qPrintable(QString::number(m.cluster.straggler.last_fraction)));
        // The same job without the sleep names no one so clearly.
        const std::string even = std::string(PD_TRACE_FIXTURES_DIR) + "/ddp-gloo-2rank/";
        const RunMetrics e =
            compute_metrics(import_traces({even + "rank0.json", even + "rank1.json"}), 16);
        QVERIFY(e.cluster.straggler.wait_s_per_step < m.cluster.straggler.wait_s_per_step);
    }
};

QTEST_GUILESS_MAIN(TestCluster)
#include "test_cluster.moc"
