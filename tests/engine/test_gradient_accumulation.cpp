// Gradient accumulation: K micro-steps of batch / K samples per optimizer step train to the
// same numbers as one step over the whole batch, and DDP's no_sync decides how often the
// gradients are reduced (and, under ZeRO-3, how much gradient memory the rank holds).
#include <QtTest>

#include "engine_test_support.h"
#include "pd/metrics.h"

using namespace pd;
using namespace pd::test;

Q_DECLARE_METATYPE(pd::StrategyKind)

namespace {

int collective_calls(const RunResult& r, int device) {
    int calls = 0;
    for (const auto& c : r.trace.collectives) calls += c.device == device;
    return calls;
}

double bytes_per_step(const RunMetrics& m, const char* op) {
    const auto it = m.comm_bytes_per_step.find(op);
    return it == m.comm_bytes_per_step.end() ? 0.0 : it->second;
}

}  // namespace

class TestGradientAccumulation : public QObject {
    Q_OBJECT
  private slots:
    void equals_one_step_over_the_whole_batch_data() {
        QTest::addColumn<StrategyKind>("strategy");
        QTest::addColumn<int>("devices");
        QTest::addColumn<int>("accumulate");
        QTest::addColumn<bool>("every");
        QTest::addRow("single k4") << StrategyKind::single << 1 << 4 << false;
        for (auto s :
             {StrategyKind::dp, StrategyKind::zero1, StrategyKind::zero2, StrategyKind::zero3})
            for (bool every : {false, true}) {
                QTest::addRow("%s x2 k3%s", name_of(s).data(), every ? " every" : "")
                    << s << 2 << 3 << every;
                QTest::addRow("%s x3 k2%s", name_of(s).data(), every ? " every" : "")
                    << s << 3 << 2 << every;
            }
    }
    void equals_one_step_over_the_whole_batch() {
        QFETCH(StrategyKind, strategy);
        QFETCH(int, devices);
        QFETCH(int, accumulate);
        QFETCH(bool, every);
        const RunResult expected = run_config(small_config(StrategyKind::single, 1));
        QCOMPARE(expected.status, RunStatus::ok);
        RunConfig c = small_config(strategy, devices);
        c.accumulate = accumulate;
        c.reduce_every_microstep = every;
        const RunResult got = run_config(c);
        QVERIFY2(got.status == RunStatus::ok, got.error.c_str());
        QCOMPARE(got.steps_completed, c.steps);
        const double err = relative_error(got.final_parameters, expected.final_parameters);
        QVERIFY2(err <= 1e-4, qPrintable(QStringLiteral("relative error %1").arg(err)));
        QCOMPARE(got.trace.steps.size(), expected.trace.steps.size());
        for (std::size_t s = 0; s < got.trace.steps.size(); ++s)
            QVERIFY2(std::abs(got.trace.steps[s].loss - expected.trace.steps[s].loss) <=
                         1e-4 * std::abs(expected.trace.steps[s].loss),
                     qPrintable(QStringLiteral("step %1: loss %2 vs %3")
                                    .arg(s)
                                    .arg(got.trace.steps[s].loss)
                                    .arg(expected.trace.steps[s].loss)));
        // Each micro-step is traced as such: K forwards of the input unit per step.
        int input_forwards = 0;
        for (const auto& e : got.trace.events)
            input_forwards +=
                e.device == 0 && e.kind == EventKind::forward && e.layer == 0 && e.step == 0;
        QCOMPARE(input_forwards, accumulate);
    }

    // no_sync: the collectives of one step without accumulation, whatever K is; every
    // micro-step: K times as many, moving K times the bytes.
    void no_sync_reduces_once_per_step_data() {
        QTest::addColumn<StrategyKind>("strategy");
        for (auto s :
             {StrategyKind::dp, StrategyKind::zero1, StrategyKind::zero2, StrategyKind::zero3})
            QTest::addRow("%s", name_of(s).data()) << s;
    }
    void no_sync_reduces_once_per_step() {
        QFETCH(StrategyKind, strategy);
        RunConfig one = small_config(strategy, 2);
        RunConfig no_sync = one;
        no_sync.accumulate = 4;
        RunConfig every = no_sync;
        every.reduce_every_microstep = true;
        const RunResult a = run_config(one), b = run_config(no_sync), c = run_config(every);
        QVERIFY2(
            a.status == RunStatus::ok && b.status == RunStatus::ok && c.status == RunStatus::ok,
            (a.error + b.error + c.error).c_str());
        const RunMetrics ma = compute_metrics(a.trace, one);
        const RunMetrics mb = compute_metrics(b.trace, no_sync);
        const RunMetrics mc = compute_metrics(c.trace, every);
        const char* reduce = strategy == StrategyKind::dp || strategy == StrategyKind::zero1
                                 ? "all_reduce"
                                 : "reduce_scatter";
        const double bytes_one = bytes_per_step(ma, reduce);
        QVERIFY(bytes_one > 0);
        QCOMPARE(bytes_per_step(mb, reduce), bytes_one);
        QCOMPARE(bytes_per_step(mc, reduce), 4 * bytes_one);
        // ZeRO-3 gathers the parameters again in every micro-step, in both modes.
        const int gathers_factor = strategy == StrategyKind::zero3 ? 4 : 1;
        QCOMPARE(bytes_per_step(mb, "all_gather"),
                 gathers_factor * bytes_per_step(ma, "all_gather"));
        QVERIFY(collective_calls(c, 0) > collective_calls(b, 0));
    }

    // Activations scale with the micro-step's rows: the point of accumulating.
    void activation_peak_falls_with_the_micro_step() {
        RunConfig one = small_config(StrategyKind::single, 1);
        one.batch = 64;
        RunConfig four = one;
        four.accumulate = 4;
        const RunResult a = run_config(one), b = run_config(four);
        QVERIFY2(a.status == RunStatus::ok && b.status == RunStatus::ok,
                 (a.error + b.error).c_str());
        const std::size_t pa = peak_bytes(a, 0, MemoryCategory::activations);
        const std::size_t pb = peak_bytes(b, 0, MemoryCategory::activations);
        QVERIFY2(pb * 10 <= pa * 3, qPrintable(QStringLiteral("%1 vs %2").arg(pb).arg(pa)));
    }

    // FSDP's no_sync trade-off: ZeRO-3 keeps every unit's full gradient until the last
    // micro-step; reducing every micro-step it holds about one unit's at a time.
    void zero3_no_sync_holds_the_full_gradient() {
        RunConfig c = small_config(StrategyKind::zero3, 2);
        c.accumulate = 2;
        RunConfig every = c;
        every.reduce_every_microstep = true;
        const RunResult a = run_config(c), b = run_config(every);
        QVERIFY2(a.status == RunStatus::ok && b.status == RunStatus::ok,
                 (a.error + b.error).c_str());
        // Besides its own gradient shard (half the model on 2 ranks, within a float per unit).
        const std::size_t full = a.final_parameters.size() * sizeof(float);
        const std::size_t no_sync = peak_bytes(a, 0, MemoryCategory::gradients);
        const std::size_t every_step = peak_bytes(b, 0, MemoryCategory::gradients);
        QVERIFY2(no_sync + 64 >= full + full / 2,
                 qPrintable(QStringLiteral("no_sync %1, model %2").arg(no_sync).arg(full)));
        QVERIFY2(
            every_step + full / 4 <= no_sync,
            qPrintable(
                QStringLiteral("every micro-step %1, no_sync %2").arg(every_step).arg(no_sync)));
    }

    void bad_settings_are_named() {
        RunConfig c = small_config(StrategyKind::dp, 2);
        c.accumulate = 5;  // 12 rows per replica
        QVERIFY_THROWS_EXCEPTION(BadInput, validate(c));
        c.accumulate = 1;
        c.reduce_every_microstep = true;
        QVERIFY_THROWS_EXCEPTION(BadInput, validate(c));
        RunConfig p = small_config(StrategyKind::pipeline, 2);
        p.accumulate = 2;
        try {
            validate(p, {{"accumulate", "--accumulate"}});
            QFAIL("a pipeline run accepted --accumulate");
        } catch (const BadInput& e) {
            QVERIFY2(std::string(e.what()).find("--accumulate") != std::string::npos, e.what());
        }
    }
};

QTEST_APPLESS_MAIN(TestGradientAccumulation)
#include "test_gradient_accumulation.moc"
