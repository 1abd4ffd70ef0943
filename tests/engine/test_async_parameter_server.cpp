// The asynchronous parameter server: workers compute step k on the server's version k - S.
// S = 0 is the synchronous server; S > 0 is deterministic for a seed and never staler than S.
#include <QtTest>

#include "engine_test_support.h"
#include "pd/metrics.h"

using namespace pd;
using namespace pd::test;

namespace {

RunConfig async_config(int staleness) {
    RunConfig c = small_config(StrategyKind::ps, 4);
    c.steps = 8;
    c.async_updates = true;
    c.max_staleness = staleness;
    return c;
}

}  // namespace

class TestAsyncParameterServer : public QObject {
    Q_OBJECT
  private slots:
    void staleness_zero_is_the_synchronous_server() {
        RunConfig sync = async_config(0);
        sync.async_updates = false;
        const RunResult a = run_config(sync), b = run_config(async_config(0));
        QVERIFY2(a.status == RunStatus::ok && b.status == RunStatus::ok,
                 (a.error + b.error).c_str());
        QCOMPARE(b.final_parameters, a.final_parameters);  // bit for bit
        for (const auto& u : b.trace.gradient_updates) QCOMPARE(u.staleness(), 0);
        QCOMPARE(int(b.trace.gradient_updates.size()), 3 * sync.steps);
    }

    void staleness_is_deterministic_and_bounded_data() {
        QTest::addColumn<int>("staleness");
        for (int s : {1, 2, 3}) QTest::addRow("S=%d", s) << s;
    }
    void staleness_is_deterministic_and_bounded() {
        QFETCH(int, staleness);
        const RunConfig c = async_config(staleness);
        const RunResult a = run_config(c), b = run_config(c);
        QVERIFY2(a.status == RunStatus::ok && b.status == RunStatus::ok,
                 (a.error + b.error).c_str());
        QCOMPARE(a.final_parameters, b.final_parameters);
        for (std::size_t s = 0; s < a.trace.steps.size(); ++s)
            QCOMPARE(a.trace.steps[s].loss, b.trace.steps[s].loss);
        // Never staler than S: step k's gradients lag by min(k, S) versions, each worker's.
        const RunMetrics m = compute_metrics(a.trace, c);
        std::map<int, int> expected;
        for (int k = 0; k < c.steps; ++k) expected[std::min(k, staleness)] += 3;
        QCOMPARE(m.staleness_histogram, expected);
        for (const auto& stage : m.stage_activations) QCOMPARE(stage.stage, 0);  // no pipeline
        for (const auto& u : a.trace.gradient_updates) {
            QVERIFY(u.staleness() >= 0 && u.staleness() <= staleness);
            QCOMPARE(u.applied_at_version, u.step);
        }
        // The workers really computed on those versions: each pull names the version it
        // fetched, at the step that computes on it.
        int pulls = 0;
        for (const auto& e : a.trace.events) {
            if (e.device == 0 || e.kind != EventKind::recv) continue;
            QCOMPARE(QString::fromStdString(e.label),
                     QStringLiteral("pull parameters v%1").arg(e.step - staleness));
            ++pulls;
        }
        QCOMPARE(pulls, 3 * (c.steps - staleness - 1));  // version 0 is never pulled
    }

    // Stale gradients are not the synchronous ones: the run differs and, at this learning
    // rate, still learns.
    void stale_updates_still_learn() {
        RunConfig sync = async_config(0);
        sync.async_updates = false;
        const RunResult a = run_config(sync), b = run_config(async_config(2));
        QVERIFY2(a.status == RunStatus::ok && b.status == RunStatus::ok,
                 (a.error + b.error).c_str());
        QVERIFY(relative_error(b.final_parameters, a.final_parameters) > 1e-3);
        QVERIFY(b.trace.steps.back().loss < b.trace.steps.front().loss);
        // Steps 1 and 2 compute on the initial parameters, as step 0 does.
        QCOMPARE(b.trace.steps[1].loss, b.trace.steps[0].loss);
        QVERIFY(b.trace.steps[3].loss < b.trace.steps[0].loss);
    }

    void bad_settings_are_named() {
        RunConfig c = async_config(2);
        c.clock = ClockMode::wall;
        QVERIFY_THROWS_EXCEPTION(BadInput, validate(c));
        QCOMPARE(resolve_clock(async_config(2), 1024), ClockMode::device);
        RunConfig not_async = async_config(2);
        not_async.async_updates = false;
        try {
            validate(not_async, {{"max_staleness", "--max-staleness"}});
            QFAIL("max_staleness without async was accepted");
        } catch (const BadInput& e) {
            QVERIFY2(std::string(e.what()).find("--max-staleness") != std::string::npos, e.what());
        }
        RunConfig dp = small_config(StrategyKind::dp, 2);
        dp.async_updates = true;
        QVERIFY_THROWS_EXCEPTION(BadInput, validate(dp, {{"async", "--async"}}));
        c = async_config(-1);
        QVERIFY_THROWS_EXCEPTION(BadInput, validate(c));
    }
};

QTEST_APPLESS_MAIN(TestAsyncParameterServer)
#include "test_async_parameter_server.moc"
