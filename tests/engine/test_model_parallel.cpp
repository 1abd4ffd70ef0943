// Pipeline, tensor, ZeRO and hybrid parallelism: the same numbers as one device, schedules
// that do what they claim, memory that matches the analytic sizes, and precise bad input.
#include <QtTest>
#include <map>

#include "engine_test_support.h"
#include "pd/error.h"
#include "pd/metrics.h"
#include "strategies/pipeline_schedule.h"

using namespace pd;
using namespace pd::test;

Q_DECLARE_METATYPE(pd::RunConfig)

namespace {

#if defined(__SANITIZE_THREAD__) || defined(__SANITIZE_ADDRESS__)
constexpr bool kSanitized = true;
#else
constexpr bool kSanitized = false;
#endif

RunConfig parallel_config(StrategyKind strategy, int devices) {
    RunConfig c = small_config(strategy, devices);
    c.layers = 4;
    c.batch = 16;
    c.steps = 3;
    return c;
}

RunConfig pipeline(int p, int m, PipelineSchedule schedule, int v = 1) {
    RunConfig c = parallel_config(StrategyKind::pipeline, p);
    c.microbatches = m;
    c.schedule = schedule;
    c.chunks = v;
    if (p * c.effective_chunks() > c.layers) c.layers = p * c.effective_chunks();
    return c;
}

// A stage's order as text: F, B (input gradient, or a whole backward) or W, the micro-batch,
// and ' on the device's second chunk.
QString order_text(PipelineSchedule schedule, int stage, int p, int m, int v) {
    QStringList out;
    for (const auto& op : pipeline_ops(schedule, stage, p, m, v))
        out << QStringLiteral("%1%2%3")
                   .arg(op.pass == PipelinePass::forward       ? 'F'
                        : op.pass == PipelinePass::weight_grad ? 'W'
                                                               : 'B')
                   .arg(op.microbatch)
                   .arg(op.chunk ? QStringLiteral("'") : QString());
    return out.join(' ');
}

RunConfig hybrid(int dp, int pp, int tp) {
    RunConfig c = parallel_config(StrategyKind::hybrid, dp * pp * tp);
    c.mesh = Mesh{dp, pp, tp};
    c.microbatches = pp > 1 ? 2 : 1;
    return c;
}

}  // namespace

class TestModelParallel : public QObject {
    Q_OBJECT
  private slots:
    void matches_single_device_data() {
        QTest::addColumn<RunConfig>("config");
        for (int p : {2, 4})
            for (int m : {1, 4, 8})
                for (auto s : {PipelineSchedule::gpipe, PipelineSchedule::one_f_one_b})
                    QTest::addRow("pipeline p%d m%d %s", p, m, name_of(s).data())
                        << pipeline(p, m, s);
        QTest::addRow("interleaved p2 m4 v2") << pipeline(2, 4, PipelineSchedule::interleaved, 2);
        QTest::addRow("interleaved p4 m8 v2") << pipeline(4, 8, PipelineSchedule::interleaved, 2);
        for (auto s : {PipelineSchedule::zb_h1, PipelineSchedule::zb_v})
            for (int m : {2, 4, 8})
                QTest::addRow("%s p4 m%d", name_of(s).data(), m) << pipeline(4, m, s);
        QTest::addRow("zb-v p2 m4") << pipeline(2, 4, PipelineSchedule::zb_v);
        {
            RunConfig zb_tp = hybrid(1, 2, 2);
            zb_tp.schedule = PipelineSchedule::zb_h1;
            QTest::addRow("zb-h1 pp2 x tp2") << zb_tp;
        }
        for (auto r : {RecomputeMode::selective, RecomputeMode::full}) {
            RunConfig c = pipeline(4, 8, PipelineSchedule::zb_v);
            c.recompute = r;
            QTest::addRow("zb-v p4 m8 recompute %s", name_of(r).data()) << c;
        }
        QTest::addRow("tp2") << parallel_config(StrategyKind::tp, 2);
        QTest::addRow("tp4") << parallel_config(StrategyKind::tp, 4);
        for (auto z : {StrategyKind::zero1, StrategyKind::zero2, StrategyKind::zero3})
            for (int n : {2, 4})
                QTest::addRow("%s x%d", name_of(z).data(), n) << parallel_config(z, n);
        QTest::addRow("dp2 x pp2") << hybrid(2, 2, 1);
        QTest::addRow("dp2 x tp2") << hybrid(2, 1, 2);
        QTest::addRow("pp2 x tp2") << hybrid(1, 2, 2);
        QTest::addRow("dp2 x pp2 x tp2") << hybrid(2, 2, 2);
    }

    void matches_single_device() {
        QFETCH(RunConfig, config);
        RunConfig reference = config;
        reference.strategy = StrategyKind::single;
        reference.devices = 1;
        reference.microbatches = 0;
        const RunResult expected = run_config(reference);
        QCOMPARE(expected.status, RunStatus::ok);
        const RunResult got = run_config(config);
        QVERIFY2(got.status == RunStatus::ok, got.error.c_str());
        const double err = relative_error(got.final_parameters, expected.final_parameters);
        QVERIFY2(err <= 1e-4, qPrintable(QStringLiteral("relative error %1").arg(err)));
        for (std::size_t s = 0; s < expected.trace.steps.size(); ++s)
            QVERIFY(std::abs(got.trace.steps[s].loss - expected.trace.steps[s].loss) <=
                    1e-4 * std::abs(expected.trace.steps[s].loss));
    }

    // Pure schedule lists: every (chunk, micro-batch) runs forward once, then backward once.
    void schedule_lists_are_complete_data() {
        QTest::addColumn<int>("schedule");
        QTest::addColumn<int>("p");
        QTest::addColumn<int>("m");
        QTest::addColumn<int>("v");
        QTest::addRow("gpipe 4x8") << int(PipelineSchedule::gpipe) << 4 << 8 << 1;
        QTest::addRow("1f1b 4x8") << int(PipelineSchedule::one_f_one_b) << 4 << 8 << 1;
        QTest::addRow("1f1b 4x2") << int(PipelineSchedule::one_f_one_b) << 4 << 2 << 1;
        QTest::addRow("interleaved 4x8x2") << int(PipelineSchedule::interleaved) << 4 << 8 << 2;
        QTest::addRow("interleaved 2x4x3") << int(PipelineSchedule::interleaved) << 2 << 4 << 3;
    }

    void schedule_lists_are_complete() {
        QFETCH(int, schedule);
        QFETCH(int, p);
        QFETCH(int, m);
        QFETCH(int, v);
        for (int stage = 0; stage < p; ++stage) {
            const auto ops = pipeline_ops(static_cast<PipelineSchedule>(schedule), stage, p, m, v);
            QCOMPARE(int(ops.size()), 2 * m * v);
            std::map<std::pair<int, int>, int> state;  // 0 none, 1 forward done, 2 backward done
            for (const auto& op : ops) {
                int& s = state[{op.chunk, op.microbatch}];
                QCOMPARE(s, op.forward() ? 0 : 1);
                s = op.forward() ? 1 : 2;
            }
            QCOMPARE(int(state.size()), m * v);
        }
    }

    // Zero-bubble lists: every (chunk, micro-batch) runs F, then B, then W, once each.
    void zero_bubble_lists_are_complete_data() {
        QTest::addColumn<int>("schedule");
        QTest::addColumn<int>("p");
        QTest::addColumn<int>("m");
        for (int p : {2, 4, 8})
            for (int m : {1, 3, 8, 16}) {
                QTest::addRow("zb-h1 %dx%d", p, m) << int(PipelineSchedule::zb_h1) << p << m;
                QTest::addRow("zb-v %dx%d", p, m) << int(PipelineSchedule::zb_v) << p << m;
            }
    }
    void zero_bubble_lists_are_complete() {
        QFETCH(int, schedule);
        QFETCH(int, p);
        QFETCH(int, m);
        const auto s = static_cast<PipelineSchedule>(schedule);
        const int v = s == PipelineSchedule::zb_v ? 2 : 1;
        for (int stage = 0; stage < p; ++stage) {
            const auto ops = pipeline_ops(s, stage, p, m, v);
            QCOMPARE(int(ops.size()), 3 * m * v);
            std::map<std::pair<int, int>, int> state;
            int in_flight = 0, peak = 0;
            for (const auto& op : ops) {
                int& st = state[{op.chunk, op.microbatch}];
                const int want = op.pass == PipelinePass::forward      ? 0
                                 : op.pass == PipelinePass::input_grad ? 1
                                                                       : 2;
                QCOMPARE(int(op.pass == PipelinePass::backward), 0);
                QCOMPARE(st, want);
                st = want + 1;
                in_flight += op.pass == PipelinePass::forward       ? 1
                             : op.pass == PipelinePass::weight_grad ? -1
                                                                    : 0;
                peak = std::max(peak, in_flight);
            }
            QCOMPARE(int(state.size()), m * v);
            // ZB-H1 holds at most p micro-batches (1F1B's first stage); ZB-V at most 2p
            // half-size chunks, the same bytes.
            QVERIFY2(peak <= v * p,
                     qPrintable(QStringLiteral("stage %1 holds %2").arg(stage).arg(peak)));
        }
    }

    // The golden order for p = 4, m = 8: stage i defers its W by i micro-batches.
    void zb_h1_golden_order() {
        auto text = [](int stage) { return order_text(PipelineSchedule::zb_h1, stage, 4, 8, 1); };
        QCOMPARE(text(0), QStringLiteral("F0 F1 F2 F3 B0 W0 F4 B1 W1 F5 B2 W2 F6 B3 W3 F7 B4 W4 "
                                         "B5 W5 B6 W6 B7 W7"));
        QCOMPARE(text(3), QStringLiteral("F0 B0 F1 B1 F2 B2 F3 B3 W0 F4 B4 W1 F5 B5 W2 F6 B6 W3 "
                                         "F7 B7 W4 W5 W6 W7"));
    }

    // The golden order for p = 4, m = 8, from the list scheduler (F/B/W and micro-batch; '
    // marks the device's second chunk, the way back up the V).
    void zb_v_golden_order() {
        auto text = [](int stage) { return order_text(PipelineSchedule::zb_v, stage, 4, 8, 2); };
        QCOMPARE(text(0),
                 QStringLiteral("F0 F1 F2 F3 F4 F5 F6 F0' B0' W0' F1' B1' W1' F2' B2' B0 W2' "
                                "F3' B3' B1 W0 B2 W3' F4' B4' B3 W1 F7 W2 F5' B5' B4 W4' W3 W5' "
                                "F6' B6' B5 W4 W6' W5 F7' B7' B6 W7' W6 B7 W7"));
        QCOMPARE(text(3),
                 QStringLiteral("F0 F0' F1 F1' F2 F2' F3 F3' B0' B0 W0' W0 B1' B1 B2' B2 F4 F4' "
                                "B3' B3 W1' W1 F5 F5' B4' B4 W2' W2 F6 F6' B5' B5 W3' W3 F7 F7' "
                                "B6' B6 W4' W4 W5' W5 B7' B7 W6' W6 W7' W7"));
    }

    // A stage runs its ops in order, so the micro-batches it holds at once follow from the
    // order alone: GPipe holds all m, 1F1B p - s, ZB-H1 p on every stage (stage i defers W by
    // i), ZB-V 2p - 1 - s; and a real run's trace shows exactly those.
    void order_fixes_the_microbatches_alive() {
        using V = std::vector<int>;
        QCOMPARE(order_max_microbatches_alive(PipelineSchedule::gpipe, 4, 8, 1), V({8, 8, 8, 8}));
        QCOMPARE(order_max_microbatches_alive(PipelineSchedule::one_f_one_b, 4, 8, 1),
                 V({4, 3, 2, 1}));
        QCOMPARE(order_max_microbatches_alive(PipelineSchedule::zb_h1, 4, 8, 1), V({4, 4, 4, 4}));
        QCOMPARE(order_max_microbatches_alive(PipelineSchedule::zb_v, 4, 8, 2), V({7, 6, 5, 4}));
        for (auto [schedule, v] :
             {std::pair{PipelineSchedule::gpipe, 1}, std::pair{PipelineSchedule::one_f_one_b, 1},
              std::pair{PipelineSchedule::interleaved, 2}, std::pair{PipelineSchedule::zb_h1, 1},
              std::pair{PipelineSchedule::zb_v, 2}}) {
            RunConfig c = pipeline(4, 8, schedule, v);
            c.clock = ClockMode::device;
            c.steps = 2;
            const RunResult r = run_config(c);
            QVERIFY2(r.status == RunStatus::ok, r.error.c_str());
            const RunMetrics m = compute_metrics(r.trace, c);
            QCOMPARE(int(m.stage_activations.size()), 4);
            for (const auto& a : m.stage_activations)
                QCOMPARE(a.max_microbatches_alive, a.textbook_max_microbatches_alive);
        }
    }

    // Replayed with equal unit times, each schedule shows its textbook bubble.
    void unit_time_bubbles_are_textbook() {
        for (int p : {2, 4, 8})
            for (int m : {p, 2 * p, 4 * p}) {
                const double expected_1f1b = double(p - 1) / (m + p - 1);
                QVERIFY(std::abs(unit_time_bubble(PipelineSchedule::one_f_one_b, p, m, 1) -
                                 expected_1f1b) < 1e-12);
                QVERIFY(std::abs(unit_time_bubble(PipelineSchedule::gpipe, p, m, 1) -
                                 expected_1f1b) < 1e-12);
                // ZB-H1: (p-1)(F+B-W) idle per stage = p-1 units beside 3m of work.
                QVERIFY2(std::abs(unit_time_bubble(PipelineSchedule::zb_h1, p, m, 1) -
                                  double(p - 1) / (3 * m + p - 1)) < 1e-12,
                         qPrintable(QStringLiteral("p %1 m %2").arg(p).arg(m)));
                // ZB-V (list scheduled): below ZB-H1's.
                QVERIFY(unit_time_bubble(PipelineSchedule::zb_v, p, m, 2) <
                        unit_time_bubble(PipelineSchedule::zb_h1, p, m, 1));
            }
    }

    // Recomputation re-runs the same kernels on the same inputs: bit for bit the same numbers,
    // with a lower activation peak.
    void recompute_is_identical_and_saves_activations_data() {
        QTest::addColumn<RunConfig>("config");
        QTest::addRow("single") << parallel_config(StrategyKind::single, 1);
        QTest::addRow("dp2") << parallel_config(StrategyKind::dp, 2);
        QTest::addRow("zero3 x2") << parallel_config(StrategyKind::zero3, 2);
        QTest::addRow("1f1b p2 m4") << pipeline(2, 4, PipelineSchedule::one_f_one_b);
        QTest::addRow("zb-h1 p2 m4") << pipeline(2, 4, PipelineSchedule::zb_h1);
        QTest::addRow("tp2") << parallel_config(StrategyKind::tp, 2);
    }
    void recompute_is_identical_and_saves_activations() {
        QFETCH(RunConfig, config);
        config.clock = ClockMode::device;
        auto peak_activations = [](const RunResult& r) {
            return peak_bytes(r, 0, MemoryCategory::activations);
        };
        const RunResult none = run_config(config);
        QVERIFY2(none.status == RunStatus::ok, none.error.c_str());
        std::size_t previous_peak = peak_activations(none);
        for (auto mode : {RecomputeMode::selective, RecomputeMode::full}) {
            RunConfig c = config;
            c.recompute = mode;
            const RunResult r = run_config(c);
            QVERIFY2(r.status == RunStatus::ok, r.error.c_str());
            QCOMPARE(r.final_parameters, none.final_parameters);  // bit for bit
            const std::size_t peak = peak_activations(r);
            QVERIFY2(peak < previous_peak,
                     qPrintable(QStringLiteral("%1: %2 >= %3")
                                    .arg(QString::fromUtf8(name_of(mode).data()))
                                    .arg(peak)
                                    .arg(previous_peak)));
            previous_peak = peak;
            int recomputes = 0;
            for (const auto& e : r.trace.events) recomputes += e.kind == EventKind::recompute;
            QVERIFY(recomputes > 0);
        }
    }

    void balanced_partition_splits_blocks_evenly() {
        // Input and head are small; blocks are equal: each stage gets whole blocks.
        const std::vector<std::size_t> w{10, 100, 100, 100, 100, 5};
        const auto cuts = balanced_partition(w, 4);
        QCOMPARE(cuts, (std::vector<int>{0, 2, 3, 4, 6}));
    }

    void schedules_hold_what_they_claim() {
        for (int p : {2, 4}) {
            const int m = 8;
            RunConfig gpipe = pipeline(p, m, PipelineSchedule::gpipe);
            RunConfig one_f = pipeline(p, m, PipelineSchedule::one_f_one_b);
            const RunResult g = run_config(gpipe), o = run_config(one_f);
            QCOMPARE(g.status, RunStatus::ok);
            QCOMPARE(o.status, RunStatus::ok);
            // GPipe: on each stage, every forward of a step comes before any backward.
            std::map<std::pair<int, int>, std::int64_t> last_forward, first_backward;
            for (const auto& e : g.trace.events) {
                if (e.stream != StreamKind::compute || e.step < 0) continue;
                const auto key = std::make_pair(e.device, e.step);
                if (e.kind == EventKind::forward)
                    last_forward[key] = std::max(last_forward[key], e.end_ns);
                if (e.kind == EventKind::backward && !first_backward.count(key))
                    first_backward[key] = e.start_ns;
            }
            for (const auto& [key, t] : first_backward) QVERIFY(last_forward[key] <= t);
            const RunMetrics gm = compute_metrics(g.trace, gpipe),
                             om = compute_metrics(o.trace, one_f);
            QCOMPARE(gm.stage_activations[0].max_microbatches_alive, m);
            for (int stage = 0; stage < p; ++stage) {
                QVERIFY(om.stage_activations[stage].max_microbatches_alive <= p - stage);
                QCOMPARE(om.stage_activations[stage].max_microbatches_alive, p - stage);
            }
            // Fewer live micro-batches is less activation memory on the first stage.
            QVERIFY(om.stage_activations[0].peak_activation_bytes <
                    gm.stage_activations[0].peak_activation_bytes);
        }
    }

    void bubble_matches_its_prediction_on_device_clock() {
        if (kSanitized)
            QSKIP("sanitizer instrumentation changes the relative cost of compute and copies");
        auto config = [](PipelineSchedule s, int v) {
            RunConfig c = pipeline(4, 8, s, v);
            c.layers = 8;
            c.width = 256;
            c.batch = 256;  // 32 rows per micro-batch: compute dominates per-op overheads
            c.steps = 6;    // the measured bubble is the median over steps
            c.optimizer = OptimizerKind::sgd;
            c.clock = ClockMode::device;
            return c;
        };
        std::map<PipelineSchedule, BubbleMetrics> bubble;
        for (auto [s, v] :
             {std::pair{PipelineSchedule::gpipe, 1}, std::pair{PipelineSchedule::one_f_one_b, 1},
              std::pair{PipelineSchedule::interleaved, 2}}) {
            const RunConfig c = config(s, v);
            const RunResult r = run_config(c);
            QCOMPARE(r.status, RunStatus::ok);
            const RunMetrics m = compute_metrics(r.trace, c);
            QVERIFY(m.bubble.has_value());
            bubble[s] = *m.bubble;
            qInfo("%s: bubble measured %.3f, predicted %.3f, theoretical %.3f", name_of(s).data(),
                  m.bubble->measured, m.bubble->predicted ? m.bubble->predicted->fraction : -1.0,
                  m.bubble->theoretical);
        }
        QCOMPARE(bubble[PipelineSchedule::gpipe].theoretical, 3.0 / 11.0);
        QCOMPARE(bubble[PipelineSchedule::interleaved].theoretical, 3.0 / 19.0);
        // The measured bubble is the one this run's own stage times predict (the textbook figure
        // assumes equal stages, no transfers and no optimizer: the causes name each difference,
        // and they add up to it). Compared with the run's prediction, not with the formula, so
        // a loaded machine moves both sides alike.
        for (auto s : {PipelineSchedule::gpipe, PipelineSchedule::one_f_one_b,
                       PipelineSchedule::interleaved}) {
            const BubbleMetrics& b = bubble[s];
            QVERIFY(b.predicted.has_value());
            const double rel = std::abs(b.measured - b.predicted->fraction) / b.predicted->fraction;
            QVERIFY2(rel <= 0.10, qPrintable(QStringLiteral("%1: measured %2 predicted %3")
                                                 .arg(QString::fromLatin1(name_of(s).data()))
                                                 .arg(b.measured)
                                                 .arg(b.predicted->fraction)));
            QVERIFY(std::abs(b.theoretical + b.predicted->causes.sum() - b.predicted->fraction) <
                    1e-9);
        }
        QVERIFY(bubble[PipelineSchedule::interleaved].measured <
                bubble[PipelineSchedule::one_f_one_b].measured);
    }

    void zero_memory_matches_analytic_data() {
        QTest::addColumn<int>("strategy");
        QTest::addColumn<int>("devices");
        QTest::addColumn<int>("optimizer");
        for (auto z :
             {StrategyKind::dp, StrategyKind::zero1, StrategyKind::zero2, StrategyKind::zero3})
            for (int n : {2, 4})
                for (auto o : {OptimizerKind::adamw, OptimizerKind::sgd})
                    QTest::addRow("%s x%d %s", name_of(z).data(), n, name_of(o).data())
                        << int(z) << n << int(o);
    }

    void zero_memory_matches_analytic() {
        QFETCH(int, strategy);
        QFETCH(int, devices);
        QFETCH(int, optimizer);
        RunConfig c = parallel_config(static_cast<StrategyKind>(strategy), devices);
        c.optimizer = static_cast<OptimizerKind>(optimizer);
        const RunResult r = run_config(c);
        QVERIFY2(r.status == RunStatus::ok, r.error.c_str());
        const RunMetrics m = compute_metrics(r.trace, c);
        QCOMPARE(int(m.model_state.size()), devices);
        // Shards follow each bucket's chunking, so each may differ by under one float per bucket.
        const double slack = 4.0 * 64;
        for (const auto& s : m.model_state) {
            QVERIFY2(std::abs(double(s.parameters) - s.analytic_parameters) <= slack,
                     qPrintable(QStringLiteral("parameters %1 vs %2")
                                    .arg(s.parameters)
                                    .arg(s.analytic_parameters)));
            QVERIFY(std::abs(double(s.gradients) - s.analytic_gradients) <= slack);
            QVERIFY(std::abs(double(s.optimizer_state) - s.analytic_optimizer_state) <= 2 * slack);
        }
        const double P = double(m.parameter_count), N = devices;  // bytes per parameter below
        const double k = c.optimizer == OptimizerKind::sgd ? 1 : 2;
        const double expected_total = strategy == int(StrategyKind::dp)      ? (8 + 4 * k) * P
                                      : strategy == int(StrategyKind::zero1) ? 8 * P + 4 * k * P / N
                                      : strategy == int(StrategyKind::zero2)
                                          ? 4 * P + (4 + 4 * k) * P / N
                                          : (8 + 4 * k) * P / N;
        const auto& s0 = m.model_state[0];
        QVERIFY(std::abs(double(s0.parameters + s0.gradients + s0.optimizer_state) -
                         expected_total) <= 4 * slack);
    }

    void tensor_parallel_all_reduces_once_per_block_each_way() {
        for (int t : {2, 4}) {
            RunConfig c = parallel_config(StrategyKind::tp, t);
            const RunResult r = run_config(c);
            QCOMPARE(r.status, RunStatus::ok);
            for (int d = 0; d < t; ++d) {
                std::map<std::string, int> calls;
                for (const auto& col : r.trace.collectives)
                    if (col.device == d && col.op == "all_reduce") ++calls[col.label];
                for (int b = 0; b < c.layers; ++b) {
                    // One micro-batch per step: exactly one call per step each way.
                    QCOMPARE(calls["tp forward block " + std::to_string(b)], c.steps);
                    QCOMPARE(calls["tp backward block " + std::to_string(b)], c.steps);
                }
                QCOMPARE(int(calls.size()), 2 * c.layers);
            }
        }
    }

    void bad_model_parallel_input_data() {
        QTest::addColumn<RunConfig>("config");
        QTest::addColumn<QString>("expected");
        RunConfig interleaved = pipeline(4, 6, PipelineSchedule::interleaved, 2);
        interleaved.batch = 24;
        QTest::addRow("interleaved m not multiple of p")
            << interleaved << "multiple of the 4 pipeline stages";
        RunConfig mesh = hybrid(2, 2, 1);
        mesh.devices = 6;
        QTest::addRow("mesh product") << mesh << "does not match the device count 6";
        RunConfig shallow = pipeline(4, 4, PipelineSchedule::one_f_one_b);
        shallow.layers = 2;
        QTest::addRow("too few blocks") << shallow << "need at least 4 blocks";
        RunConfig tp = parallel_config(StrategyKind::tp, 3);
        tp.width = 32;
        QTest::addRow("tp width") << tp << "4 x width";
        RunConfig mb = pipeline(2, 3, PipelineSchedule::gpipe);
        QTest::addRow("micro-batches") << mb << "equal micro-batches";
    }

    void bad_model_parallel_input() {
        QFETCH(RunConfig, config);
        QFETCH(QString, expected);
        try {
            validate(config);
            QFAIL("accepted an invalid config");
        } catch (const BadInput& e) {
            QVERIFY2(QString::fromStdString(e.what()).contains(expected), e.what());
        }
    }
};

QTEST_APPLESS_MAIN(TestModelParallel)
#include "test_model_parallel.moc"
