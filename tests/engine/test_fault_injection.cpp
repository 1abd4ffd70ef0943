// Reliability under injected faults (FaultPlan), for every strategy: an allocation that fails
// at each point a run allocates, a device that dies inside each collective at each ring step,
// and a cancel at seeded random moments. Each run must end on its own with a clear status and
// message (ctest's timeout would catch a hang; ASan in CI catches a leak), keep the trace it
// recorded, and still produce a summary.
#include <QtTest>
#include <chrono>
#include <nlohmann/json.hpp>
#include <random>
#include <thread>

#include "engine_test_support.h"
#include "pd/exports.h"
#include "pd/metrics.h"
#include "pd/run.h"

using namespace pd;
using namespace pd::test;

namespace {

struct Case {
    const char* name;
    RunConfig config;
};

RunConfig tiny(StrategyKind strategy, int devices) {
    RunConfig c = small_config(strategy, devices);
    c.layers = 2;
    c.width = 16;
    c.batch = 8;
    c.steps = 2;
    c.collective_timeout_s = 20.0;
    if (strategy == StrategyKind::ep) {  // a mixture of experts, one expert per device
        c.model = ModelKind::transformer;
        c.layers = 1;
        c.heads = 2;
        c.seq_len = 4;
        c.experts = devices;
    }
    return c;
}

std::vector<Case> every_strategy() {
    std::vector<Case> cases{
        {"single", tiny(StrategyKind::single, 1)}, {"dp", tiny(StrategyKind::dp, 2)},
        {"ps", tiny(StrategyKind::ps, 3)},         {"tp", tiny(StrategyKind::tp, 2)},
        {"zero1", tiny(StrategyKind::zero1, 2)},   {"zero2", tiny(StrategyKind::zero2, 2)},
        {"zero3", tiny(StrategyKind::zero3, 2)},   {"ep", tiny(StrategyKind::ep, 2)}};
    for (PipelineSchedule s : {PipelineSchedule::gpipe, PipelineSchedule::one_f_one_b}) {
        RunConfig c = tiny(StrategyKind::pipeline, 2);
        c.schedule = s;
        c.microbatches = 2;
        cases.push_back({s == PipelineSchedule::gpipe ? "pipeline gpipe" : "pipeline 1f1b", c});
    }
    RunConfig h = tiny(StrategyKind::hybrid, 4);
    h.mesh = {2, 2, 1};
    h.microbatches = 2;
    cases.push_back({"hybrid 2x2x1", h});
    return cases;
}

// The summary of a stopped run still writes and says why it stopped.
std::string summary_status(const RunConfig& c, const RunResult& r) {
    const auto j = nlohmann::json::parse(summary_json(c, r, compute_metrics(r.trace, c)));
    return j.at("status").get<std::string>();
}

}  // namespace

class TestFaultInjection : public QObject {
    Q_OBJECT
  private slots:
    void out_of_memory_at_every_allocation() {
        std::size_t swept = 0;
        for (const Case& k : every_strategy()) {
            Run clean(k.config);
            QCOMPARE(clean.execute().status, RunStatus::ok);
            const std::size_t total = clean.allocations_made();
            QVERIFY2(total > 10, k.name);
            for (std::size_t at = 1; at <= total; ++at) {
                Run run(k.config);
                FaultPlan plan;
                plan.fail_allocation = at;
                run.inject_faults(plan);
                const RunResult r = run.execute();
                const QString where = QStringLiteral("%1, allocation %2 of %3")
                                          .arg(QLatin1String(k.name))
                                          .arg(at)
                                          .arg(total);
                QVERIFY2(
                    r.status == RunStatus::out_of_memory,
                    qPrintable(where + QStringLiteral(": ") + QString::fromStdString(r.error)));
                QVERIFY2(r.oom && r.oom->injected, qPrintable(where));
                QVERIFY(r.oom->device >= 0 && r.oom->device < k.config.devices);
                QVERIFY2(r.error.find("injected fault") != std::string::npos, qPrintable(where));
                QVERIFY(r.final_parameters.empty());
                QCOMPARE(QString::fromStdString(summary_status(k.config, r)),
                         QStringLiteral("out_of_memory"));
                ++swept;
            }
        }
        qInfo("allocation points swept: %zu", swept);
    }

    void dead_peer_in_every_collective_at_every_step_data() {
        QTest::addColumn<int>("strategy");
        QTest::addColumn<int>("devices");
        QTest::addColumn<int>("device");
        QTest::addColumn<QString>("collective");
        QTest::addColumn<int>("ring_step");
        const int n = 3;
        auto add = [](const QString& name, StrategyKind s, int devices, int device, const char* op,
                      int step) {
            QTest::newRow(qPrintable(name))
                << static_cast<int>(s) << devices << device << QString::fromLatin1(op) << step;
        };
        for (int d = 0; d < n; ++d) {
            for (int s = 0; s < 2 * (n - 1); ++s)  // reduce-scatter steps, then all-gather steps
                add(QStringLiteral("all_reduce d%1 s%2").arg(d).arg(s), StrategyKind::dp, n, d,
                    "all_reduce", s);
            for (int s = 0; s < n - 1; ++s) {
                add(QStringLiteral("reduce_scatter d%1 s%2").arg(d).arg(s), StrategyKind::zero2, n,
                    d, "reduce_scatter", s);
                add(QStringLiteral("all_gather d%1 s%2").arg(d).arg(s), StrategyKind::zero3, n, d,
                    "all_gather", s);
            }
            // dp's broadcast of the initial weights from device 0: device d is hop d.
            add(QStringLiteral("broadcast d%1").arg(d), StrategyKind::dp, n, d, "broadcast", d);
        }
        // Expert parallelism's dispatch and combine: n - 1 pairwise exchanges each.
        for (int d = 0; d < n; ++d)
            for (int s = 0; s < n - 1; ++s)
                add(QStringLiteral("all_to_all d%1 s%2").arg(d).arg(s), StrategyKind::ep, n, d,
                    "all_to_all", s);
        for (int d = 0; d < 2; ++d)
            for (const char* op : {"send", "recv"})
                add(QStringLiteral("%1 d%2").arg(QLatin1String(op)).arg(d), StrategyKind::pipeline,
                    2, d, op, 0);
    }

    void dead_peer_in_every_collective_at_every_step() {
        QFETCH(int, strategy);
        QFETCH(int, devices);
        QFETCH(int, device);
        QFETCH(QString, collective);
        QFETCH(int, ring_step);
        RunConfig c = tiny(static_cast<StrategyKind>(strategy), devices);
        if (c.strategy == StrategyKind::pipeline) c.microbatches = 2;
        c.batch = 12;
        Run run(c);
        FaultPlan plan;
        plan.dead_peer = FaultPlan::DeadPeer{device, collective.toStdString(), ring_step, 0};
        run.inject_faults(plan);
        const RunResult r = run.execute();
        QCOMPARE(r.status, RunStatus::failed);
        // The error names the device, the collective and the step, not a peer's timeout.
        const QString error = QString::fromStdString(r.error);
        QVERIFY2(error.contains(
                     QStringLiteral("device %1 failed inside %2").arg(device).arg(collective)),
                 qPrintable(error));
        QVERIFY2(error.contains(QStringLiteral("ring step %1").arg(ring_step)), qPrintable(error));
        QVERIFY2(!error.contains(QStringLiteral("timed out")), qPrintable(error));
        // The partial trace is kept: the run's devices and what they did before the failure.
        QCOMPARE(r.trace.devices, devices);
        if (collective != QLatin1String("broadcast")) QVERIFY(!r.trace.events.empty());
        QCOMPARE(QString::fromStdString(summary_status(c, r)), QStringLiteral("failed"));
    }

    void cancel_at_random_moments() {
        std::mt19937 gen(20261202);
        int cancelled = 0, finished = 0;
        for (const Case& k : every_strategy()) {
            RunConfig c = k.config;
            c.steps = 6;
            const auto t0 = std::chrono::steady_clock::now();
            {
                Run clean(c);
                QCOMPARE(clean.execute().status, RunStatus::ok);
            }
            const auto length = std::chrono::steady_clock::now() - t0;
            for (int i = 0; i < 6; ++i) {
                // A moment from before set-up to just past the end, drawn from the seed.
                std::uniform_real_distribution<double> at(0.0, 1.1);
                const auto delay =
                    std::chrono::duration_cast<std::chrono::microseconds>(length * at(gen));
                Run run(c);
                std::thread canceller([&run, delay] {
                    std::this_thread::sleep_for(delay);
                    run.cancel();
                });
                const RunResult r = run.execute();
                canceller.join();
                QVERIFY2(r.status == RunStatus::cancelled || r.status == RunStatus::ok,
                         qPrintable(QString::fromStdString(r.error)));
                if (r.status == RunStatus::cancelled) {
                    ++cancelled;
                    QVERIFY(r.error.find("cancelled") != std::string::npos);
                    QVERIFY(r.steps_completed < c.steps || r.final_parameters.empty());
                    QCOMPARE(QString::fromStdString(summary_status(c, r)),
                             QStringLiteral("cancelled"));
                } else {
                    ++finished;
                    QCOMPARE(r.steps_completed, c.steps);
                }
            }
        }
        qInfo("cancelled %d runs, %d finished before the cancel came", cancelled, finished);
        QVERIFY(cancelled > 0);
    }
};

QTEST_GUILESS_MAIN(TestFaultInjection)
#include "test_fault_injection.moc"
