// "Show me" end to end, offscreen: the run starts, progress arrives, the result is shown;
// cancel works and leaves the window usable; a pinned run is compared; an OOM is explained.
#include <QApplication>
#include <QFormLayout>
#include <QImageReader>
#include <QLabel>
#include <QProgressBar>
#include <QPushButton>
#include <QSignalSpy>
#include <QSpinBox>
#include <QTemporaryDir>
#include <QtTest>

#include "run_controller.h"
#include "show_me_window.h"
#include "visualizer/picture_export.h"
#include "visualizer/timeline_data.h"
#include "visualizer/timeline_view.h"
#include "visualizer/visualizer_panel.h"
#include "what_if_panel.h"

using pd::ui::ShowMeWindow;

namespace {
pd::RunConfig pipeline_scenario(int steps) {
    pd::RunConfig c;
    c.strategy = pd::StrategyKind::pipeline;
    c.devices = 2;
    c.layers = 2;
    c.width = 32;
    c.batch = 16;
    c.microbatches = 4;
    c.steps = steps;
    c.clock = pd::ClockMode::device;
    return c;
}
// The what-if knob a form row names ("&Micro-batches").
QSpinBox* knob(ShowMeWindow& window, const QString& label) {
    for (QLabel* l : window.whatIf()->findChildren<QLabel*>())
        if (l->text() == label) return qobject_cast<QSpinBox*>(l->buddy());
    return nullptr;
}
}  // namespace

class TestShowMeWindow : public QObject {
    Q_OBJECT
  private slots:
    void runs_the_scenario_and_shows_it() {
        ShowMeWindow window;
        QSignalSpy progress(window.controller(), &pd::app::RunController::progress);
        QSignalSpy shown(&window, &ShowMeWindow::runShown);
        window.showScenario(QStringLiteral("GPipe bubbles"), QStringLiteral("Look at the grey."),
                            pipeline_scenario(3));
        QVERIFY(window.windowTitle().contains(QStringLiteral("GPipe bubbles")));
        QTRY_COMPARE_WITH_TIMEOUT(shown.count(), 1, 60000);
        QVERIFY(progress.count() >= 3);
        QVERIFY2(window.status().contains(QStringLiteral("3 steps measured")),
                 qPrintable(window.status()));
        QVERIFY(window.findChild<QProgressBar*>()->isHidden());
    }

    void cancel_leaves_the_window_usable() {
        ShowMeWindow window;
        QSignalSpy progress(window.controller(), &pd::app::RunController::progress);
        QSignalSpy cancelled(window.controller(), &pd::app::RunController::cancelled);
        window.showScenario(QStringLiteral("long"), QString(), pipeline_scenario(100000));
        QTRY_VERIFY_WITH_TIMEOUT(progress.count() >= 3, 60000);
        QPushButton* cancel = nullptr;
        for (auto* b : window.findChildren<QPushButton*>())
            if (b->text() == QStringLiteral("Cancel")) cancel = b;
        QVERIFY(cancel && cancel->isVisible() == !window.isHidden());
        QTest::mouseClick(cancel, Qt::LeftButton);
        QTRY_COMPARE_WITH_TIMEOUT(cancelled.count(), 1, 60000);
        QVERIFY(window.status().contains(QStringLiteral("cancelled")));
        // Still responsive: a new run goes through.
        QSignalSpy shown(&window, &ShowMeWindow::runShown);
        window.run(pipeline_scenario(2));
        QTRY_COMPARE_WITH_TIMEOUT(shown.count(), 1, 60000);
    }

    void pinned_run_is_compared() {
        ShowMeWindow window;
        QSignalSpy shown(&window, &ShowMeWindow::runShown);
        window.showScenario(QStringLiteral("compare"), QString(), pipeline_scenario(2));
        QTRY_COMPARE_WITH_TIMEOUT(shown.count(), 1, 60000);
        window.pinCurrentRun();
        QVERIFY(window.hasPinnedRun());
        pd::RunConfig one_f = pipeline_scenario(2);
        one_f.schedule = pd::PipelineSchedule::one_f_one_b;
        window.run(one_f);
        QTRY_COMPARE_WITH_TIMEOUT(shown.count(), 2, 60000);
        QVERIFY(window.visualizer()->hasComparison());
        window.clearPinnedRun();
        QVERIFY(!window.visualizer()->hasComparison());
    }

    void out_of_memory_is_explained() {
        ShowMeWindow window;
        QSignalSpy shown(&window, &ShowMeWindow::runShown);
        pd::RunConfig c = pipeline_scenario(2);
        c.capacity_bytes = 2048;
        window.showScenario(QStringLiteral("oom"), QString(), c);
        QTRY_COMPARE_WITH_TIMEOUT(shown.count(), 1, 60000);
        QVERIFY2(window.status().contains(QStringLiteral("Out of memory")),
                 qPrintable(window.status()));
    }

    // After a what-if change the card's note no longer describes the run on screen: it is
    // marked, exports leave it out, and "Reset to card" brings the card's run back.
    void note_belongs_to_its_run() {
        ShowMeWindow window;
        QSignalSpy shown(&window, &ShowMeWindow::runShown);
        QSignalSpy finished(window.controller(), &pd::app::RunController::finished);
        const QString note = QStringLiteral("With four micro-batches the bubble is 20%.");
        window.showScenario(QStringLiteral("note"), note, pipeline_scenario(2));
        QTRY_COMPARE_WITH_TIMEOUT(shown.count(), 1, 60000);
        pd::vis::VisualizerPanel* vis = window.visualizer();
        QVERIFY(window.showsCardRun());
        QVERIFY(vis->noteDescribesRun());
        QVERIFY(!window.whatIf()->differsFromCard());
        QCOMPARE(vis->pictureOptions().note, note);
        QVERIFY(!vis->resetToCardButton()->isVisibleTo(vis));

        QSpinBox* microbatches = knob(window, QStringLiteral("&Micro-batches"));
        QVERIFY(microbatches);
        microbatches->setValue(8);
        QVERIFY(window.whatIf()->differsFromCard());
        QTRY_COMPARE_WITH_TIMEOUT(shown.count(), 2, 60000);
        QCOMPARE(shown.last().at(0).value<pd::RunConfig>().microbatches, 8);
        QVERIFY(!window.showsCardRun());
        QVERIFY(!vis->noteDescribesRun());
        QCOMPARE(vis->note(), note);  // still readable, marked as the card's
        QVERIFY(vis->resetToCardButton()->isVisibleTo(vis));
        QVERIFY(vis->pictureOptions().note.isEmpty());

        // The exported picture has no note line: its height is that of the picture without.
        QTemporaryDir dir;
        const QString path = dir.filePath(QStringLiteral("changed.png"));
        QString error;
        QVERIFY2(vis->exportPicture(path, &error), qPrintable(error));
        pd::vis::PictureOptions without = vis->pictureOptions();
        pd::vis::PictureOptions with = without;
        with.note = note;
        const std::vector<pd::vis::PictureRun> runs{
            {finished.last().at(0).value<pd::RunConfig>(),
             finished.last().at(1).value<std::shared_ptr<const pd::RunResult>>()}};
        const QSize png = QImageReader(path).size();
        QVERIFY(png.isValid());
        QCOMPARE(png.height(), qRound(2 * pd::vis::picture_size(runs, without).height()));
        QVERIFY(png.height() < qRound(2 * pd::vis::picture_size(runs, with).height()));

        vis->resetToCardButton()->click();
        QCOMPARE(microbatches->value(), 4);
        QVERIFY(!window.whatIf()->differsFromCard());
        QTRY_COMPARE_WITH_TIMEOUT(shown.count(), 3, 60000);
        QCOMPARE(shown.last().at(0).value<pd::RunConfig>().microbatches, 4);
        QVERIFY(window.showsCardRun());
        QVERIFY(vis->noteDescribesRun());
        QVERIFY(!vis->resetToCardButton()->isVisibleTo(vis));
        QCOMPARE(vis->pictureOptions().note, note);

        // Turning a knob back by hand is the card's run again too.
        microbatches->setValue(8);
        QTRY_COMPARE_WITH_TIMEOUT(shown.count(), 4, 60000);
        QVERIFY(!vis->noteDescribesRun());
        microbatches->setValue(4);
        QTRY_COMPARE_WITH_TIMEOUT(shown.count(), 5, 60000);
        QVERIFY(vis->noteDescribesRun());
    }

    // Issue 20 item 2: the window, its charts and knobs fit a 1280x720 screen (title bar and
    // a panel of about 40 px aside), for one run, a comparison and an OOM run alike; the
    // what-if panel can be hidden and brought back.
    void fits_a_1280_by_720_screen() {
        ShowMeWindow window;
        QSignalSpy shown(&window, &ShowMeWindow::runShown);
        pd::RunConfig c = pipeline_scenario(2);
        c.devices = 4;
        c.layers = 4;
        window.showScenario(QStringLiteral("fit"), QStringLiteral("A note of a few words."), c);
        QTRY_COMPARE_WITH_TIMEOUT(shown.count(), 1, 60000);
        const auto fits = [&window](const char* what) {
            const QSize min = window.minimumSizeHint().expandedTo(window.minimumSize());
            QVERIFY2(min.width() <= 1280 && min.height() <= 680,
                     qPrintable(QStringLiteral("%1: minimum %2x%3")
                                    .arg(QLatin1String(what))
                                    .arg(min.width())
                                    .arg(min.height())));
        };
        fits("one run");
        window.pinCurrentRun();
        c.schedule = pd::PipelineSchedule::one_f_one_b;
        window.run(c);
        QTRY_COMPARE_WITH_TIMEOUT(shown.count(), 2, 60000);
        QVERIFY(window.visualizer()->hasComparison());
        fits("comparison");
        window.clearPinnedRun();
        c.capacity_bytes = 2048;
        window.run(c);
        QTRY_COMPARE_WITH_TIMEOUT(shown.count(), 3, 60000);
        QVERIFY(window.status().contains(QStringLiteral("Out of memory")));
        fits("out of memory");

        auto* knobs = window.findChild<QWidget*>(QStringLiteral("whatIfScroll"));
        QVERIFY(knobs);
        window.show();
        // The offscreen screen is narrower than 1400 px: the knobs' drawer starts closed, and
        // Ctrl+K's action opens and closes it.
        QVERIFY(window.width() < 1400);
        QVERIFY(!knobs->isVisible());
        window.whatIfPanelAction()->trigger();
        QVERIFY(knobs->isVisible());
        window.whatIfPanelAction()->trigger();
        QVERIFY(!knobs->isVisible());
    }

    // Item 11: keys reach the timeline when the window opens; Esc cancels a run, then closes.
    void escape_cancels_then_closes() {
        ShowMeWindow window;
        QSignalSpy progress(window.controller(), &pd::app::RunController::progress);
        QSignalSpy cancelled(window.controller(), &pd::app::RunController::cancelled);
        window.show();
        QVERIFY(QTest::qWaitForWindowExposed(&window));
        window.showScenario(QStringLiteral("long"), QString(), pipeline_scenario(100000));
        QTRY_VERIFY_WITH_TIMEOUT(progress.count() >= 3, 60000);
        QCOMPARE(QApplication::focusWidget(), window.visualizer()->timeline());
        QTest::keyClick(&window, Qt::Key_Escape);
        QTRY_COMPARE_WITH_TIMEOUT(cancelled.count(), 1, 60000);
        QVERIFY(window.isVisible());
        QTest::keyClick(&window, Qt::Key_Escape);
        QVERIFY(!window.isVisible());
    }

    // Issue 18: closing the window mid-run cancels the run, and a window destroyed mid-run
    // stops its run and returns (no hang, no run left behind).
    void closing_mid_run_cancels_it() {
        ShowMeWindow window;
        QSignalSpy progress(window.controller(), &pd::app::RunController::progress);
        QSignalSpy cancelled(window.controller(), &pd::app::RunController::cancelled);
        window.show();
        QVERIFY(QTest::qWaitForWindowExposed(&window));
        window.showScenario(QStringLiteral("long"), QString(), pipeline_scenario(100000));
        QTRY_VERIFY_WITH_TIMEOUT(progress.count() >= 3, 60000);
        QVERIFY(window.controller()->isRunning());
        window.close();
        QTRY_COMPARE_WITH_TIMEOUT(cancelled.count(), 1, 60000);
        QVERIFY(!window.controller()->isRunning());

        auto* doomed = new ShowMeWindow;
        QSignalSpy doomed_progress(doomed->controller(), &pd::app::RunController::progress);
        doomed->showScenario(QStringLiteral("long"), QString(), pipeline_scenario(100000));
        QTRY_VERIFY_WITH_TIMEOUT(doomed_progress.count() >= 3, 60000);
        delete doomed;  // joins the cancelled run
    }

    // Item 17: a long first step is not "setting up"; the bar counts the seconds.
    void progress_says_training_once_set_up() {
        ShowMeWindow window;
        QSignalSpy progress(window.controller(), &pd::app::RunController::progress);
        QSignalSpy shown(&window, &ShowMeWindow::runShown);
        window.showScenario(QStringLiteral("steps"), QString(), pipeline_scenario(2));
        QTRY_COMPARE_WITH_TIMEOUT(shown.count(), 1, 60000);
        bool first_step_announced = false;
        for (const auto& p : progress)
            if (p.at(2).toString() == QStringLiteral("training") && p.at(0).toInt() == 0)
                first_step_announced = true;
        QVERIFY(first_step_announced);
        QSignalSpy again(window.controller(), &pd::app::RunController::progress);
        window.run(pipeline_scenario(100000));
        QTRY_VERIFY_WITH_TIMEOUT(again.count() >= 2, 60000);
        QTRY_VERIFY_WITH_TIMEOUT(window.progressText().startsWith(QStringLiteral("Step ")), 60000);
        window.cancel();
    }

    // Item 13: after Cancel the knobs show the run on screen again; M on the same card while
    // the window is open keeps the learner's changes; an invalid knob marks the old run.
    void knobs_follow_the_run_on_screen() {
        ShowMeWindow window;
        window.show();
        QSignalSpy shown(&window, &ShowMeWindow::runShown);
        QSignalSpy cancelled(window.controller(), &pd::app::RunController::cancelled);
        window.showScenario(QStringLiteral("knobs"), QStringLiteral("note"), pipeline_scenario(2));
        QTRY_COMPARE_WITH_TIMEOUT(shown.count(), 1, 60000);
        QSpinBox* microbatches = knob(window, QStringLiteral("&Micro-batches"));
        QSpinBox* steps = knob(window, QStringLiteral("S&teps"));
        QVERIFY(microbatches && steps);
        QCOMPARE(steps->value(), 2);
        steps->setValue(100);
        microbatches->setValue(8);
        QTRY_VERIFY_WITH_TIMEOUT(window.controller()->isRunning(), 60000);
        window.cancel();
        QTRY_COMPARE_WITH_TIMEOUT(cancelled.count(), 1, 60000);
        QCOMPARE(microbatches->value(), 4);  // the picture's run, not the cancelled one
        QCOMPARE(steps->value(), 2);
        QVERIFY(!window.whatIf()->differsFromCard());

        microbatches->setValue(8);
        QTRY_COMPARE_WITH_TIMEOUT(shown.count(), 2, 60000);
        window.showScenario(QStringLiteral("knobs"), QStringLiteral("note"), pipeline_scenario(2));
        QCOMPARE(microbatches->value(), 8);  // kept
        QVERIFY(window.whatIf()->differsFromCard());

        microbatches->setValue(5);  // 16 rows do not split into 5 micro-batches
        const QString problem = window.whatIf()->problem();
        QVERIFY(!problem.isEmpty());
        QWidget* marked = window.whatIf()->markedKnob();
        QVERIFY2(marked, qPrintable(problem));
        // The knob the message names is the one framed.
        QVERIFY2(marked == microbatches || marked == knob(window, QStringLiteral("B&atch")),
                 qPrintable(problem));
        QVERIFY2(window.status().contains(QStringLiteral("previous run")),
                 qPrintable(window.status()));
    }

    void refused_scenario_says_why() {
        ShowMeWindow window;
        pd::RunConfig c = pipeline_scenario(2);
        c.microbatches = 3;
        window.showScenario(QStringLiteral("bad"), QString(), c);
        QVERIFY2(window.status().contains(QStringLiteral("cannot run")),
                 qPrintable(window.status()));
    }

    // The first step is on screen while the others run: drawn, neither exported nor pinned
    // until the run ends, and the finished run then replaces it whole.
    void first_step_is_drawn_while_the_rest_runs() {
        ShowMeWindow window;
        QSignalSpy shown(&window, &ShowMeWindow::runShown);
        pd::vis::VisualizerPanel* vis = window.visualizer();
        int partials = 0;
        int first_drawn = -1;
        bool exports_off = false, pin_off = false, drawn_before_end = false;
        connect(&window, &ShowMeWindow::partialShown, this, [&](const pd::RunConfig&, int drawn) {
            if (partials++ == 0) first_drawn = drawn;
            exports_off = !vis->exportScreenshotAction()->isEnabled() &&
                          !vis->exportTraceAction()->isEnabled() &&
                          !vis->copyImageAction()->isEnabled();
            pin_off = !pinAction(window)->isEnabled();
            drawn_before_end = shown.isEmpty() && window.showsPartialRun() &&
                               vis->timeline()->data().step_count() == drawn;
        });
        window.showScenario(QStringLiteral("partial"), QString(), pipeline_scenario(20));
        QTRY_COMPARE_WITH_TIMEOUT(shown.count(), 1, 60000);
        QCOMPARE(first_drawn, 1);
        QVERIFY(drawn_before_end);
        QVERIFY(exports_off);
        QVERIFY(pin_off);
        QVERIFY(!window.showsPartialRun());
        QCOMPARE(vis->timeline()->data().step_count(), 20);
        QVERIFY(vis->exportScreenshotAction()->isEnabled());
        QVERIFY(pinAction(window)->isEnabled());
        QVERIFY2(window.status().contains(QStringLiteral("20 steps measured")),
                 qPrintable(window.status()));
    }

    // A run cancelled after its first steps were drawn gives the screen back to the last
    // finished run (or to nothing), never leaves a stopped run's beginning there.
    void cancel_after_the_first_steps_restores_the_finished_run() {
        ShowMeWindow window;
        QSignalSpy shown(&window, &ShowMeWindow::runShown);
        QSignalSpy partial(&window, &ShowMeWindow::partialShown);
        QSignalSpy cancelled(window.controller(), &pd::app::RunController::cancelled);
        pd::vis::VisualizerPanel* vis = window.visualizer();
        window.showScenario(QStringLiteral("cancel"), QString(), pipeline_scenario(100000));
        QTRY_VERIFY_WITH_TIMEOUT(partial.count() >= 1, 60000);
        QVERIFY(window.showsPartialRun());
        window.cancel();
        QTRY_COMPARE_WITH_TIMEOUT(cancelled.count(), 1, 60000);
        QVERIFY(!window.showsPartialRun());
        QCOMPARE(vis->timeline()->data().step_count(), 0);
        QVERIFY(!vis->exportScreenshotAction()->isEnabled());

        window.run(pipeline_scenario(3));
        QTRY_COMPARE_WITH_TIMEOUT(shown.count(), 1, 60000);
        window.run(pipeline_scenario(100000));
        QTRY_VERIFY_WITH_TIMEOUT(partial.count() >= 2 && window.showsPartialRun(), 60000);
        window.cancel();
        QTRY_COMPARE_WITH_TIMEOUT(cancelled.count(), 2, 60000);
        QVERIFY(!window.showsPartialRun());
        QCOMPARE(vis->timeline()->data().step_count(), 3);
        QVERIFY(vis->exportScreenshotAction()->isEnabled());
        QVERIFY2(window.status().contains(QStringLiteral("previous run")),
                 qPrintable(window.status()));
    }

  private:
    static QAction* pinAction(ShowMeWindow& window) {
        for (QAction* a : window.findChildren<QAction*>())
            if (a->text().startsWith(QStringLiteral("&Pin"))) return a;
        return nullptr;
    }
};

QTEST_MAIN(TestShowMeWindow)
#include "test_show_me_window.moc"
