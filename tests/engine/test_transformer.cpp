// The transformer model: its loss falls, every strategy (tensor parallelism over heads with and
// without sequence parallelism among them) trains to the single device's numbers, the
// collectives are Megatron's kinds and counts, and the activation memory measured equals
// Korthikanti et al.'s count in the engine's fp32 form.
#include <QtTest>
#include <filesystem>
#include <fstream>

#include "engine_test_support.h"
#include "pd/error.h"
#include "pd/exports.h"
#include "pd/metrics.h"
#include "strategies/context_parallel.h"

using namespace pd;
using namespace pd::test;

Q_DECLARE_METATYPE(pd::StrategyKind)
Q_DECLARE_METATYPE(pd::Mesh)

namespace {

RunConfig transformer_config(StrategyKind strategy, int devices) {
    RunConfig c = small_config(strategy, devices);
    c.model = ModelKind::transformer;
    c.layers = 2;
    c.width = 32;
    c.heads = 4;
    c.seq_len = 8;
    c.batch = 8;
    c.steps = 4;
    return c;
}

// Calls of collective `op` device 0 made in step 1, by label.
int calls(const RunResult& r, const std::string& op, const std::string& label_part = {}) {
    int n = 0;
    for (const auto& c : r.trace.collectives)
        n += c.device == 0 && c.step == 1 && c.op == op &&
             c.label.find(label_part) != std::string::npos;
    return n;
}

}  // namespace

class TestTransformer : public QObject {
    Q_OBJECT
  private slots:
    void loss_falls() {
        RunConfig c = transformer_config(StrategyKind::single, 1);
        c.steps = 8;
        const RunResult r = run_config(c);
        QVERIFY2(r.status == RunStatus::ok, r.error.c_str());
        const double first = r.trace.steps.front().loss, last = r.trace.steps.back().loss;
        // Step 0 is ln(classes) (the head starts at zero); eight AdamW steps take off a third.
        QVERIFY(std::abs(first - std::log(10.0)) < 1e-6);
        QVERIFY2(last < 0.7 * first, qPrintable(QString("loss %1 -> %2").arg(first).arg(last)));
    }

    void every_strategy_equals_the_single_device_data() {
        QTest::addColumn<StrategyKind>("strategy");
        QTest::addColumn<int>("devices");
        QTest::addColumn<Mesh>("mesh");
        QTest::addColumn<QString>("schedule");
        QTest::addColumn<bool>("sp");
        const Mesh none;
        QTest::addRow("dp x2") << StrategyKind::dp << 2 << none << "" << false;
        QTest::addRow("ps x3") << StrategyKind::ps << 3 << none << "" << false;
        QTest::addRow("zero1 x2") << StrategyKind::zero1 << 2 << none << "" << false;
        QTest::addRow("zero2 x2") << StrategyKind::zero2 << 2 << none << "" << false;
        QTest::addRow("zero3 x4") << StrategyKind::zero3 << 4 << none << "" << false;
        QTest::addRow("pipeline gpipe x2")
            << StrategyKind::pipeline << 2 << none << "gpipe" << false;
        QTest::addRow("pipeline 1f1b x4") << StrategyKind::pipeline << 4 << none << "1f1b" << false;
        QTest::addRow("pipeline interleaved x2")
            << StrategyKind::pipeline << 2 << none << "interleaved" << false;
        QTest::addRow("tp x2") << StrategyKind::tp << 2 << none << "" << false;
        QTest::addRow("tp x4") << StrategyKind::tp << 4 << none << "" << false;
        QTest::addRow("tp x2 sp") << StrategyKind::tp << 2 << none << "" << true;
        QTest::addRow("tp x4 sp") << StrategyKind::tp << 4 << none << "" << true;
        QTest::addRow("dp2 x tp2") << StrategyKind::hybrid << 4 << Mesh{2, 1, 2} << "" << false;
        QTest::addRow("dp2 x pp2 x tp2 sp")
            << StrategyKind::hybrid << 8 << Mesh{2, 2, 2} << "1f1b" << true;
    }
    void every_strategy_equals_the_single_device() {
        QFETCH(StrategyKind, strategy);
        QFETCH(int, devices);
        QFETCH(Mesh, mesh);
        QFETCH(QString, schedule);
        QFETCH(bool, sp);
        const RunResult expected = run_config(transformer_config(StrategyKind::single, 1));
        QVERIFY2(expected.status == RunStatus::ok, expected.error.c_str());
        RunConfig c = transformer_config(strategy, devices);
        c.mesh = mesh;
        c.sequence_parallel = sp;
        if (!schedule.isEmpty()) c.schedule = *schedule_from_name(schedule.toStdString());
        if (strategy == StrategyKind::pipeline && devices == 4) c.layers = 4;  // a block a stage
        if (c.schedule == PipelineSchedule::interleaved) {
            c.layers = 4;  // 2 stages x 2 chunks
            c.chunks = 2;
            c.microbatches = 4;
        }
        const RunResult base = c.layers == 2 ? RunResult{} : [&] {
            RunConfig s = transformer_config(StrategyKind::single, 1);
            s.layers = c.layers;
            return run_config(s);
        }();
        const RunResult& reference = c.layers == 2 ? expected : base;
        const RunResult got = run_config(c);
        QVERIFY2(got.status == RunStatus::ok, got.error.c_str());
        QCOMPARE(got.steps_completed, c.steps);
        // fp32 sums over other groupings (shards, micro-batches, ring order): 1e-4 is the
        // issue's bound, the runs reach a few 1e-7.
        const double err = relative_error(got.final_parameters, reference.final_parameters);
        QVERIFY2(err < 1e-5, qPrintable(QString("parameters differ by %1").arg(err)));
        for (std::size_t s = 0; s < got.trace.steps.size(); ++s)
            QVERIFY(std::abs(got.trace.steps[s].loss - reference.trace.steps[s].loss) <
                    1e-5 * reference.trace.steps[s].loss);
    }

    void context_parallel_equals_the_single_device_data() {
        QTest::addColumn<int>("devices");
        QTest::addColumn<bool>("balanced");
        QTest::addColumn<int>("dp");
        QTest::addColumn<bool>("ulysses");
        for (bool ulysses : {false, true}) {
            const char* how = ulysses ? "ulysses" : "ring";
            for (int n : {2, 4})
                for (bool balanced : {false, true})
                    QTest::addRow("%s cp x%d%s", how, n, balanced ? " balanced" : "")
                        << n << balanced << 1 << ulysses;
            QTest::addRow("%s dp2 x cp2 balanced", how) << 4 << true << 2 << ulysses;
            QTest::addRow("%s dp2 x cp4", how) << 8 << false << 2 << ulysses;
        }
    }
    void context_parallel_equals_the_single_device() {
        QFETCH(int, devices);
        QFETCH(bool, balanced);
        QFETCH(int, dp);
        QFETCH(bool, ulysses);
        const RunResult expected = run_config(transformer_config(StrategyKind::single, 1));
        RunConfig c = transformer_config(StrategyKind::cp, devices);
        c.cp_load_balance = balanced;
        c.cp_ulysses = ulysses;
        c.mesh.dp = dp;
        const int ring = devices / dp;
        const RunResult got = run_config(c);
        QVERIFY2(got.status == RunStatus::ok, got.error.c_str());
        const double err = relative_error(got.final_parameters, expected.final_parameters);
        QVERIFY2(err < 1e-5, qPrintable(QString("parameters differ by %1").arg(err)));
        QCOMPARE(calls(got, "all_reduce"), 1);
        if (ulysses) {
            // Per attention unit, forward: q, k, v to head groups, the output back to tokens;
            // backward: the output's gradient to head groups, q, k, v's gradients back. The
            // first and last carry three tensors, the other two one; none is a ring message.
            QCOMPARE(calls(got, "all_to_all"), 4 * c.layers);
            QCOMPARE(calls(got, "all_to_all", "q, k, v to head groups"), c.layers);
            QCOMPARE(calls(got, "all_to_all", "q, k, v gradients to tokens"), c.layers);
            // Each device's buffer: its tokens of its ring's samples, all h columns.
            const std::size_t tensor =
                static_cast<std::size_t>(c.batch / dp) * (c.seq_len / ring) * c.width * 4;
            for (const auto& rec : got.trace.collectives) {
                if (rec.op != "all_to_all") continue;
                const bool three = rec.label.find("q, k, v") != std::string::npos;
                QCOMPARE(rec.bytes, (three ? 3 : 1) * tensor);
            }
            for (const auto& e : got.trace.events)
                QVERIFY(e.kind != EventKind::send || !e.label.starts_with("k, v"));
            return;
        }
        // Ring attention: per attention unit, n - 1 key/value blocks sent in forward and n
        // blocks with their gradients in backward (the last brings a block home); one
        // all-reduce of the gradients a step.
        int forward = 0, backward = 0;
        for (const auto& e : got.trace.events) {
            if (e.device != 0 || e.step != 1 || e.kind != EventKind::send) continue;
            forward += e.label.starts_with("k, v block");
            backward += e.label.starts_with("k, v, dk, dv block");
        }
        QCOMPARE(forward, (ring - 1) * c.layers);
        QCOMPARE(backward, ring * c.layers);
    }

    // Causal attention's work is the (query, key) pairs with the key in the query's past. In
    // contiguous parts the last device has far more than the first; two mirrored chunks
    // give every device the same.
    void load_balancing_evens_the_causal_work() {
        const int s = 64, n = 4;
        for (bool balanced : {false, true}) {
            std::vector<long> pairs;
            std::vector<int> all;
            for (int r = 0; r < n; ++r) {
                const auto pos = ContextParallel::token_positions(s, n, r, balanced);
                QCOMPARE(static_cast<int>(pos.size()), s / n);
                QVERIFY(std::is_sorted(pos.begin(), pos.end()));
                all.insert(all.end(), pos.begin(), pos.end());
                long p = 0;
                for (int q : pos) p += q + 1;  // keys 0..q
                pairs.push_back(p);
            }
            std::sort(all.begin(), all.end());
            for (int t = 0; t < s; ++t) QCOMPARE(all[static_cast<std::size_t>(t)], t);
            if (balanced) {
                for (long p : pairs) QCOMPARE(p, pairs.front());
            } else {
                QVERIFY(std::is_sorted(pairs.begin(), pairs.end()));
                QVERIFY(pairs.back() > 5 * pairs.front());
            }
        }
    }

    // Megatron: two all-reduces per block forward (after the attention's and the MLP's
    // row-parallel projection) and two in backward (of their LayerNorm outputs' gradients).
    // Sequence parallelism turns each into a reduce-scatter and puts an all-gather before
    // each block part (and in backward a second one, of the kept LayerNorm shard), plus one
    // all-reduce of the gradients each device applied to its own tokens.
    void collectives_are_megatrons_kinds_and_counts() {
        RunConfig c = transformer_config(StrategyKind::tp, 2);
        const int L = c.layers;
        const RunResult tp = run_config(c);
        QVERIFY2(tp.status == RunStatus::ok, tp.error.c_str());
        QCOMPARE(calls(tp, "all_reduce"), 4 * L);
        QCOMPARE(calls(tp, "all_reduce", "tp forward attention"), L);
        QCOMPARE(calls(tp, "all_reduce", "tp forward MLP"), L);
        QCOMPARE(calls(tp, "all_reduce", "tp backward attention"), L);
        QCOMPARE(calls(tp, "reduce_scatter"), 0);
        QCOMPARE(calls(tp, "all_gather"), 0);

        c.sequence_parallel = true;
        const RunResult sp = run_config(c);
        QVERIFY2(sp.status == RunStatus::ok, sp.error.c_str());
        QCOMPARE(calls(sp, "reduce_scatter"), 4 * L);
        QCOMPARE(calls(sp, "all_gather"), 6 * L);
        QCOMPARE(calls(sp, "all_gather", "sp forward"), 2 * L);
        QCOMPARE(calls(sp, "all_reduce"), 1);
        // Each moves the micro-batch's whole [tokens, h] tensor (fp32).
        const std::size_t full = static_cast<std::size_t>(c.batch) * c.seq_len * c.width * 4;
        for (const auto& rec : sp.trace.collectives)
            if (rec.op != "all_reduce") QCOMPARE(rec.bytes, full);
    }

    void activation_memory_follows_korthikanti_data() {
        QTest::addColumn<StrategyKind>("strategy");
        QTest::addColumn<int>("devices");
        QTest::addColumn<bool>("sp");
        QTest::addRow("single") << StrategyKind::single << 1 << false;
        QTest::addRow("dp x2") << StrategyKind::dp << 2 << false;
        QTest::addRow("tp x2") << StrategyKind::tp << 2 << false;
        QTest::addRow("tp x4") << StrategyKind::tp << 4 << false;
        QTest::addRow("tp x2 sp") << StrategyKind::tp << 2 << true;
        QTest::addRow("tp x4 sp") << StrategyKind::tp << 4 << true;
    }
    void activation_memory_follows_korthikanti() {
        QFETCH(StrategyKind, strategy);
        QFETCH(int, devices);
        QFETCH(bool, sp);
        RunConfig c = transformer_config(strategy, devices);
        c.steps = 2;
        c.sequence_parallel = sp;
        const RunResult r = run_config(c);
        QVERIFY2(r.status == RunStatus::ok, r.error.c_str());
        const RunMetrics m = compute_metrics(r.trace, c);
        QCOMPARE(static_cast<int>(m.stage_activations.size()), devices);
        for (const auto& a : m.stage_activations) {
            QVERIFY(a.analytic_activation_bytes > 0);
            const double ratio =
                static_cast<double>(a.peak_activation_bytes) / a.analytic_activation_bytes;
            QVERIFY2(std::abs(ratio - 1.0) < 0.10,
                     qPrintable(QString("device %1: measured %2, analytic %3")
                                    .arg(a.device)
                                    .arg(a.peak_activation_bytes)
                                    .arg(a.analytic_activation_bytes)));
        }
    }

    // With sequence parallelism every activation is 1/tp of the single device's (the
    // LayerNorm and residual regions included); without it those regions stay whole.
    void sequence_parallelism_divides_every_activation_by_tp() {
        RunConfig c = transformer_config(StrategyKind::single, 1);
        c.steps = 2;
        const double single =
            static_cast<double>(peak_bytes(run_config(c), 0, MemoryCategory::activations));
        RunConfig t = transformer_config(StrategyKind::tp, 4);
        t.steps = 2;
        const double tp =
            static_cast<double>(peak_bytes(run_config(t), 0, MemoryCategory::activations));
        t.sequence_parallel = true;
        const double sp =
            static_cast<double>(peak_bytes(run_config(t), 0, MemoryCategory::activations));
        QVERIFY2(std::abs(sp * 4 / single - 1.0) < 0.02,
                 qPrintable(QString("single %1, tp+sp %2").arg(single).arg(sp)));
        QVERIFY2(tp > 1.5 * sp, qPrintable(QString("tp %1, tp+sp %2").arg(tp).arg(sp)));
    }

    void bad_settings_are_named_data() {
        QTest::addColumn<QString>("what");
        QTest::addColumn<QString>("key");
        QTest::addRow("heads do not divide the width") << "heads"
                                                       << "--heads";
        QTest::addRow("heads do not divide over tp") << "heads-tp"
                                                     << "--heads";
        QTest::addRow("sp on the MLP model") << "sp-mlp"
                                             << "--sequence-parallel";
        QTest::addRow("sp tokens do not split") << "sp-tokens"
                                                << "--sequence-parallel";
        QTest::addRow("bf16") << "bf16"
                              << "--precision";
        QTest::addRow("cuda") << "cuda"
                              << "--model";
        QTest::addRow("zero bubble") << "zb"
                                     << "--schedule";
        QTest::addRow("seq_len 0") << "seq0"
                                   << "--seq-len";
        QTest::addRow("ulysses heads do not divide") << "ulysses-heads"
                                                     << "--cp-algorithm";
    }
    void bad_settings_are_named() {
        QFETCH(QString, what);
        QFETCH(QString, key);
        RunConfig c = transformer_config(StrategyKind::single, 1);
        ConfigSources sources;
        if (what == "heads") {
            c.heads = 5;
        } else if (what == "heads-tp") {
            c = transformer_config(StrategyKind::tp, 8);
        } else if (what == "sp-mlp") {
            c = small_config(StrategyKind::tp, 2);
            c.sequence_parallel = true;
            sources["sequence_parallel"] = "--sequence-parallel";
        } else if (what == "sp-tokens") {
            c = transformer_config(StrategyKind::tp, 2);
            c.batch = 1;
            c.seq_len = 7;
            c.sequence_parallel = true;
        } else if (what == "bf16") {
            c.precision = Precision::bf16_mixed;
        } else if (what == "cuda") {
            c.backend = BackendKind::cuda;
            c.clock = ClockMode::wall;
        } else if (what == "zb") {
            c = transformer_config(StrategyKind::pipeline, 2);
            c.schedule = PipelineSchedule::zb_h1;
        } else if (what == "seq0") {
            c.seq_len = 0;
        } else if (what == "cp-mlp") {
            c = small_config(StrategyKind::cp, 2);
        } else if (what == "cp-seq") {
            c = transformer_config(StrategyKind::cp, 4);
            c.cp_load_balance = true;  // 8 chunks: 12 tokens do not split
            c.seq_len = 12;
        } else if (what == "ulysses-heads") {
            c = transformer_config(StrategyKind::cp, 8);  // 4 heads over a ring of 8
            c.cp_ulysses = true;
        }
        try {
            validate(c, sources);
            QFAIL("accepted");
        } catch (const BadInput& e) {
            QVERIFY2(std::string(e.what()).find(key.toStdString()) != std::string::npos, e.what());
        }
    }

    // The dump says what the replay needs: the model kind, heads, sequence length, and
    // batches of [batch, seq_len, input_dim] with a label per token.
    void dump_describes_the_transformer() {
        const RunConfig c = transformer_config(StrategyKind::single, 1);
        const auto dir =
            std::filesystem::temp_directory_path() /
            ("pd-transformer-dump-" + std::to_string(QCoreApplication::applicationPid()));
        dump_run_inputs(c, dir.string());
        std::ifstream in(dir / "manifest.json");
        const std::string text((std::istreambuf_iterator<char>(in)), {});
        QVERIFY(text.find("\"kind\": \"transformer\"") != std::string::npos);
        QVERIFY(text.find("\"heads\": 4") != std::string::npos);
        QVERIFY(text.find("\"seq_len\": 8") != std::string::npos);
        QVERIFY(text.find("block1.wq") != std::string::npos);
        std::ifstream x(dir / "step0000_x.npy", std::ios::binary);
        const std::string header((std::istreambuf_iterator<char>(x)), {});
        QVERIFY2(header.find("(8, 8, 32)") != std::string::npos, header.substr(0, 120).c_str());
        std::filesystem::remove_all(dir);
    }
};

QTEST_GUILESS_MAIN(TestTransformer)
#include "test_transformer.moc"
