// The run controller as the GUI uses it: signals arrive on the GUI thread, cancel works, a
// refused config says why, and a new run replaces a stale one.
#include <QSignalSpy>
#include <QtTest>

#include "run_controller.h"

using pd::app::RunController;

namespace {
pd::RunConfig quick(int steps) {
    pd::RunConfig c;
    c.strategy = pd::StrategyKind::dp;
    c.devices = 2;
    c.layers = 2;
    c.width = 32;
    c.batch = 8;
    c.steps = steps;
    c.clock = pd::ClockMode::device;
    return c;
}
}  // namespace

class TestRunController : public QObject {
    Q_OBJECT
  private slots:
    void runs_and_reports_progress() {
        RunController controller;
        QSignalSpy started(&controller, &RunController::started);
        QSignalSpy progress(&controller, &RunController::progress);
        QSignalSpy finished(&controller, &RunController::finished);
        controller.start(quick(3));
        QCOMPARE(started.count(), 1);
        QTRY_COMPARE_WITH_TIMEOUT(finished.count(), 1, 60000);
        QVERIFY(progress.count() >= 3);
        QCOMPARE(progress.last().at(1).toInt(), 3);
        const auto result = finished.first().at(1).value<std::shared_ptr<const pd::RunResult>>();
        QVERIFY(result);
        QCOMPARE(result->status, pd::RunStatus::ok);
        QCOMPARE(result->steps_completed, 3);
        QVERIFY(!result->trace.events.empty());
        QVERIFY(!controller.isRunning());
    }

    void cancel_stops_a_long_run() {
        RunController controller;
        QSignalSpy progress(&controller, &RunController::progress);
        QSignalSpy cancelled(&controller, &RunController::cancelled);
        QSignalSpy finished(&controller, &RunController::finished);
        controller.start(quick(100000));
        QTRY_VERIFY_WITH_TIMEOUT(progress.count() >= 3, 60000);
        controller.cancel();
        QTRY_COMPARE_WITH_TIMEOUT(cancelled.count(), 1, 60000);
        QCOMPARE(finished.count(), 0);
        QVERIFY(!controller.isRunning());
    }

    void refused_config_names_the_setting() {
        RunController controller;
        QSignalSpy rejected(&controller, &RunController::rejected);
        QSignalSpy started(&controller, &RunController::started);
        pd::RunConfig bad = quick(2);
        bad.devices = 0;
        controller.start(bad);
        QCOMPARE(rejected.count(), 1);
        QCOMPARE(started.count(), 0);
        QVERIFY(rejected.first().first().toString().contains(QStringLiteral("devices")));
    }

    void out_of_memory_is_a_finished_run_with_its_trace() {
        RunController controller;
        QSignalSpy finished(&controller, &RunController::finished);
        pd::RunConfig c = quick(2);
        c.capacity_bytes = 4096;
        controller.start(c);
        QTRY_COMPARE_WITH_TIMEOUT(finished.count(), 1, 60000);
        const auto result = finished.first().at(1).value<std::shared_ptr<const pd::RunResult>>();
        QCOMPARE(result->status, pd::RunStatus::out_of_memory);
        QVERIFY(result->oom.has_value());
    }

    // Starting again while a run is going: the old one is cancelled and says nothing more.
    void new_run_replaces_a_stale_one() {
        RunController controller;
        QSignalSpy finished(&controller, &RunController::finished);
        QSignalSpy cancelled(&controller, &RunController::cancelled);
        controller.start(quick(100000));
        controller.start(quick(2));
        QTRY_COMPARE_WITH_TIMEOUT(finished.count(), 1, 60000);
        QCOMPARE(finished.first().at(0).value<pd::RunConfig>().steps, 2);
        QCoreApplication::processEvents();  // anything the stale run queued was queued before
        QCOMPARE(cancelled.count(), 0);
        QCOMPARE(finished.count(), 1);
    }
};

QTEST_GUILESS_MAIN(TestRunController)
#include "test_run_controller.moc"
