// The mixture of experts: routing (top-k, GShard's slot order, capacity) and the
// load-balancing loss on crafted router logits; every strategy that runs it, expert
// parallelism among them, trains to the single device's numbers with the same routing; an
// all-to-all moves every chunk to its member; expert parallelism's exchanges, memory and the
// settings it refuses.
#include <QtTest>
#include <filesystem>
#include <fstream>

#include "cpu/moe_kernels.h"
#include "engine_test_support.h"
#include "pd/communicator.h"
#include "pd/error.h"
#include "pd/exports.h"
#include "pd/metrics.h"
#include "pd/run_context.h"

using namespace pd;
using namespace pd::test;

Q_DECLARE_METATYPE(pd::StrategyKind)

namespace {

RunConfig moe_config(StrategyKind strategy, int devices) {
    RunConfig c = small_config(strategy, devices);
    c.model = ModelKind::transformer;
    c.layers = 2;
    c.width = 32;
    c.heads = 2;
    c.seq_len = 8;
    c.batch = 8;
    c.steps = 4;
    c.experts = 4;
    c.top_k = 2;
    c.capacity_factor = 1.0;
    return c;
}

struct Route {
    int expert, slot;
    float gate;
};
Route route(const std::vector<float>& routes, int token, int top_k, int j) {
    const std::size_t at = (static_cast<std::size_t>(token) * top_k + j) * 3;
    return {static_cast<int>(routes[at]), static_cast<int>(routes[at + 1]), routes[at + 2]};
}

}  // namespace

class TestMixtureOfExperts : public QObject {
    Q_OBJECT
  private slots:
    // Equal logits: every probability is 1/E, ties go to the lower index, so every token picks
    // experts 0 .. k-1; each takes `capacity` tokens of a sequence, first come first served,
    // and the load-balancing loss is exactly the weight (E x sum_e f_e / E).
    void routing_fills_slots_in_gshard_order() {
        const int seqs = 2, s = 5, experts = 4, top_k = 2, capacity = 3;
        const float weight = 0.01f;
        std::vector<float> logits(static_cast<std::size_t>(seqs * s * experts), 0.5f);
        std::vector<float> probs(logits.size()),
            routes(static_cast<std::size_t>(seqs * s * top_k * 3));
        std::vector<float> fractions(static_cast<std::size_t>(seqs * experts));
        double aux = 0;
        cpu::moe_route(logits.data(), seqs, s, experts, top_k, capacity, weight, probs.data(),
                       routes.data(), fractions.data(), &aux);
        QVERIFY(std::abs(aux - weight * seqs) < 1e-7);
        for (int g = 0; g < seqs; ++g)
            for (int t = 0; t < s; ++t)
                for (int j = 0; j < top_k; ++j) {
                    const Route r = route(routes, g * s + t, top_k, j);
                    QCOMPARE(r.expert, j);
                    QCOMPARE(r.gate, 0.25f);
                    // Expert j's slots of sequence g: rows ((j x seqs + g) x capacity ..).
                    const int expected = t < capacity ? (j * seqs + g) * capacity + t : -1;
                    QCOMPARE(r.slot, expected);
                }
        QCOMPARE(fractions[0], 0.5f);  // half of the sequence's choices picked expert 0
        QCOMPARE(fractions[2], 0.0f);
    }

    // A token's second choice waits for every first choice of its sequence.
    void second_choices_come_after_every_first_choice() {
        const int s = 3, experts = 2, top_k = 2, capacity = 2;
        // Tokens 0, 1 prefer expert 1, token 2 expert 0: expert 1 fills with the first choices
        // of tokens 0 and 1, so token 2's second choice (expert 1) is dropped, while token
        // 0's second choice (expert 0) finds room after token 2's first choice.
        const std::vector<float> logits{0, 2, 0, 2, 2, 0};
        std::vector<float> probs(6), routes(static_cast<std::size_t>(s * top_k * 3)), f(2);
        cpu::moe_route(logits.data(), 1, s, experts, top_k, capacity, 0.0f, probs.data(),
                       routes.data(), f.data(), nullptr);
        QCOMPARE(route(routes, 2, top_k, 0).slot, 0);   // expert 0, slot 0
        QCOMPARE(route(routes, 0, top_k, 1).slot, 1);   // expert 0, slot 1
        QCOMPARE(route(routes, 1, top_k, 1).slot, -1);  // expert 0 full
        QCOMPARE(route(routes, 2, top_k, 1).slot, -1);  // expert 1 full
        QCOMPARE(route(routes, 0, top_k, 0).slot, 2);   // expert 1's first slot (row 1 x 2)
    }

    void every_strategy_equals_the_single_device_data() {
        QTest::addColumn<StrategyKind>("strategy");
        QTest::addColumn<int>("devices");
        QTest::addColumn<int>("dp");
        QTest::addRow("ep x2") << StrategyKind::ep << 2 << 1;
        QTest::addRow("ep x4") << StrategyKind::ep << 4 << 1;
        QTest::addRow("dp2 x ep2") << StrategyKind::ep << 4 << 2;
        QTest::addRow("dp x2") << StrategyKind::dp << 2 << 1;
        QTest::addRow("zero2 x2") << StrategyKind::zero2 << 2 << 1;
        QTest::addRow("zero3 x2") << StrategyKind::zero3 << 2 << 1;
        QTest::addRow("pipeline x2") << StrategyKind::pipeline << 2 << 1;
    }
    void every_strategy_equals_the_single_device() {
        QFETCH(StrategyKind, strategy);
        QFETCH(int, devices);
        QFETCH(int, dp);
        const RunResult expected = run_config(moe_config(StrategyKind::single, 1));
        QVERIFY2(expected.status == RunStatus::ok, expected.error.c_str());
        RunConfig c = moe_config(strategy, devices);
        c.mesh.dp = dp;
        const RunResult got = run_config(c);
        QVERIFY2(got.status == RunStatus::ok, got.error.c_str());
        const double err = relative_error(got.final_parameters, expected.final_parameters);
        QVERIFY2(err < 1e-5, qPrintable(QString("parameters differ by %1").arg(err)));
        // The same routing: capacity is counted per sequence, whoever holds the sequence.
        QCOMPARE(got.trace.routing.tokens_per_expert, expected.trace.routing.tokens_per_expert);
        QCOMPARE(got.trace.routing.dropped, expected.trace.routing.dropped);
        QCOMPARE(got.trace.routing.aux_loss.size(), expected.trace.routing.aux_loss.size());
        for (std::size_t s = 0; s < got.trace.routing.aux_loss.size(); ++s)
            QVERIFY(std::abs(got.trace.routing.aux_loss[s] - expected.trace.routing.aux_loss[s]) <
                    1e-6);
    }

    // Every choice is counted once: kept by an expert or dropped. A factor of experts / top_k
    // gives every expert room for the whole sequence, so none is dropped; a small one drops.
    void capacity_decides_what_is_dropped() {
        RunConfig roomy = moe_config(StrategyKind::single, 1);
        roomy.capacity_factor = 2.0;  // 4 experts / top-2
        RunConfig tight = roomy;
        tight.capacity_factor = 0.5;
        const RunResult a = run_config(roomy), b = run_config(tight);
        QVERIFY2(a.status == RunStatus::ok && b.status == RunStatus::ok,
                 (a.error + b.error).c_str());
        const long long choices = static_cast<long long>(roomy.steps) * roomy.layers * roomy.batch *
                                  roomy.seq_len * roomy.top_k;
        for (const RunResult* r : {&a, &b}) {
            QCOMPARE(r->trace.routing.assignments, choices);
            long long kept = 0;
            for (long long t : r->trace.routing.tokens_per_expert) kept += t;
            QCOMPARE(kept + r->trace.routing.dropped, choices);
        }
        QCOMPARE(a.trace.routing.capacity, roomy.seq_len);
        QCOMPARE(a.trace.routing.dropped, 0LL);
        QCOMPARE(b.trace.routing.capacity, 2);  // ceil(0.5 x 2 x 8 / 4)
        // At most 2 of a sequence's 16 choices per expert are kept: 8 of 16 per sequence.
        QVERIFY(b.trace.routing.dropped >= choices / 2);
    }

    // The load-balancing loss is at least its weight per MoE layer (f and P both sum to 1, and
    // E x sum f_e P_e is 1 for uniform routing); it is in the objective, so the router learns.
    void load_balancing_loss_is_reported_per_step() {
        RunConfig c = moe_config(StrategyKind::single, 1);
        c.aux_loss_weight = 0.1;
        const RunResult r = run_config(c);
        QVERIFY2(r.status == RunStatus::ok, r.error.c_str());
        QCOMPARE(r.trace.routing.aux_loss.size(), static_cast<std::size_t>(c.steps));
        for (double aux : r.trace.routing.aux_loss) {
            QVERIFY2(aux > 0.9 * c.aux_loss_weight * c.layers, qPrintable(QString::number(aux)));
            QVERIFY2(aux < c.aux_loss_weight * c.experts * c.layers,
                     qPrintable(QString::number(aux)));
        }
        RunConfig none = c;
        none.aux_loss_weight = 0;
        const RunResult plain = run_config(none);
        QVERIFY(relative_error(plain.final_parameters, r.final_parameters) > 1e-6);
    }

    // Member r's chunk j lands as chunk r of member j, in n - 1 traced pairwise exchanges.
    void all_to_all_moves_every_chunk_to_its_member() {
        for (int n : {1, 2, 3, 5}) {
            RunContext ctx(ClockMode::device, LinkModel{}, true, 60.0);
            std::vector<std::unique_ptr<Device>> devices;
            std::vector<Device*> members;
            for (int d = 0; d < n; ++d) {
                devices.push_back(std::make_unique<Device>(d, std::size_t{1} << 30, ctx));
                members.push_back(devices.back().get());
            }
            Transport transport(ctx);  // after the devices: its messages live in their memory
            Communicator comm(transport, members, 1);
            const std::size_t m = 7, count = m * static_cast<std::size_t>(n);
            std::vector<std::vector<float>> send(static_cast<std::size_t>(n)),
                recv(static_cast<std::size_t>(n), std::vector<float>(count, -1.0f));
            for (int r = 0; r < n; ++r)
                for (std::size_t i = 0; i < count; ++i)
                    send[static_cast<std::size_t>(r)].push_back(static_cast<float>(r * 1000 + i));
            for (int d = 0; d < n; ++d)
                devices[static_cast<std::size_t>(d)]->comm().enqueue([&, d] {
                    comm.all_to_all(d, send[static_cast<std::size_t>(d)].data(),
                                    recv[static_cast<std::size_t>(d)].data(), count, 0, "test");
                });
            for (auto& dev : devices) dev->comm().synchronize();
            QVERIFY2(!ctx.aborted(), ctx.first_error_message().c_str());
            for (int j = 0; j < n; ++j)
                for (int r = 0; r < n; ++r)
                    for (std::size_t i = 0; i < m; ++i)
                        QCOMPARE(
                            recv[static_cast<std::size_t>(j)][static_cast<std::size_t>(r) * m + i],
                            static_cast<float>(r * 1000 + static_cast<std::size_t>(j) * m + i));
            for (int d = 0; d < n; ++d) {
                int exchanges = 0;
                for (const auto& e : devices[static_cast<std::size_t>(d)]->comm().take_events())
                    if (e.kind == EventKind::all_to_all_step) {
                        QCOMPARE(e.bytes, m * sizeof(float));
                        QCOMPARE(e.peer, (d + e.step_index + 1) % n);
                        ++exchanges;
                    }
                QCOMPARE(exchanges, n - 1);
            }
        }
    }

    // Per MoE block and step, two all-to-alls forward (dispatch, combine) and two backward,
    // each of every expert's slots for every sequence the device holds; each device keeps
    // only its experts.
    void expert_parallelism_exchanges_and_memory() {
        RunConfig c = moe_config(StrategyKind::ep, 4);
        const RunResult r = run_config(c);
        QVERIFY2(r.status == RunStatus::ok, r.error.c_str());
        const ModelShape shape = model_shape(c);
        const std::size_t slot_bytes = static_cast<std::size_t>(c.experts) * (c.batch / c.devices) *
                                       shape.expert_capacity() * c.width * sizeof(float);
        int calls = 0, exchanges = 0;
        for (const auto& rec : r.trace.collectives)
            if (rec.device == 0 && rec.step == 1 && rec.op == "all_to_all") {
                QCOMPARE(rec.bytes, slot_bytes);
                ++calls;
            }
        for (const auto& e : r.trace.events)
            exchanges += e.device == 0 && e.step == 1 && e.kind == EventKind::all_to_all_step;
        QCOMPARE(calls, 4 * c.layers);
        QCOMPARE(exchanges, 4 * c.layers * (c.devices - 1));
        const RunMetrics m = compute_metrics(r.trace, c);
        const ParamLayout full = ParamLayout::build(shape);
        std::size_t expert_params = 0;
        for (const auto& t : full.tensors)
            if (t.expert >= 0) expert_params += t.count;
        const std::size_t local = (full.total - expert_params + expert_params / c.devices) * 4;
        for (const auto& s : m.model_state) {
            QCOMPARE(s.parameters, local);
            QCOMPARE(s.analytic_parameters, static_cast<double>(local));
        }
    }

    void bad_settings_are_named_data() {
        QTest::addColumn<QString>("what");
        QTest::addColumn<QString>("key");
        QTest::addRow("experts on the MLP model") << "mlp"
                                                  << "--experts";
        QTest::addRow("one expert") << "one"
                                    << "--experts";
        QTest::addRow("top-k past the experts") << "topk"
                                                << "--top-k";
        QTest::addRow("capacity factor 0") << "cf"
                                           << "--capacity-factor";
        QTest::addRow("ep without experts") << "ep-dense"
                                            << "--strategy";
        QTest::addRow("experts do not spread") << "ep-spread"
                                               << "--experts";
        QTest::addRow("tp inside experts") << "tp"
                                           << "--experts";
        QTest::addRow("cp with experts") << "cp"
                                         << "--experts";
    }
    void bad_settings_are_named() {
        QFETCH(QString, what);
        QFETCH(QString, key);
        RunConfig c = moe_config(StrategyKind::single, 1);
        if (what == "mlp") c.model = ModelKind::mlp;
        if (what == "one") c.experts = 1;
        if (what == "topk") c.top_k = 5;
        if (what == "cf") c.capacity_factor = 0;
        if (what == "ep-dense") {
            c = moe_config(StrategyKind::ep, 2);
            c.experts = 0;
        }
        if (what == "ep-spread") {  // 4 experts over 3 devices
            c = moe_config(StrategyKind::ep, 3);
            c.batch = 12;
        }
        if (what == "tp") c = moe_config(StrategyKind::tp, 2);
        if (what == "cp") c = moe_config(StrategyKind::cp, 2);
        try {
            validate(c, {});
            QFAIL("accepted");
        } catch (const BadInput& e) {
            QVERIFY2(std::string(e.what()).find(key.toStdString()) != std::string::npos, e.what());
        }
    }

    // The dump names every expert's tensors and says how to route.
    void dump_describes_the_experts() {
        const RunConfig c = moe_config(StrategyKind::single, 1);
        const auto dir = std::filesystem::temp_directory_path() /
                         ("pd-moe-dump-" + std::to_string(QCoreApplication::applicationPid()));
        dump_run_inputs(c, dir.string());
        std::ifstream in(dir / "manifest.json");
        const std::string text((std::istreambuf_iterator<char>(in)), {});
        QVERIFY(text.find("\"experts\": 4") != std::string::npos);
        QVERIFY(text.find("\"capacity\": 4") != std::string::npos);
        QVERIFY(text.find("moe_note") != std::string::npos);
        QVERIFY(text.find("block1.expert3.w2") != std::string::npos);
        QVERIFY(text.find("block0.router") != std::string::npos);
        std::filesystem::remove_all(dir);
    }
};

QTEST_GUILESS_MAIN(TestMixtureOfExperts)

#include "test_mixture_of_experts.moc"
