// The composite panel: one run, a comparison on a shared time axis, actions and their
// shortcuts, and exports through the same path as the headless export.
#include <QAction>
#include <QClipboard>
#include <QFile>
#include <QGuiApplication>
#include <QImageReader>
#include <QJsonDocument>
#include <QJsonObject>
#include <QSignalSpy>
#include <QTabWidget>
#include <QTemporaryDir>
#include <QtTest>

#include "visualizer/data_view.h"
#include "visualizer/memory_bars.h"
#include "visualizer/playback.h"
#include "visualizer/timeline_view.h"
#include "visualizer/visualizer_panel.h"
#include "visualizer_test_support.h"

using namespace pd::vis;

class TestVisualizerPanel : public QObject {
    Q_OBJECT

    pd::RunConfig gpipe_config_ = test::small_pipeline(pd::PipelineSchedule::gpipe);
    pd::RunConfig f1b_config_ = test::small_pipeline(pd::PipelineSchedule::one_f_one_b);
    std::shared_ptr<const pd::RunResult> gpipe_, f1b_;
    QTemporaryDir dir_;

  private slots:
    void initTestCase() {
        gpipe_ = test::run_engine(gpipe_config_);
        f1b_ = test::run_engine(f1b_config_);
        QVERIFY(dir_.isValid());
    }

    void actionsAndShortcuts() {
        VisualizerPanel panel;
        QVERIFY(!panel.exportScreenshotAction()->isEnabled());  // nothing to export yet
        QCOMPARE(panel.exportScreenshotAction()->shortcut(),
                 QKeySequence(QStringLiteral("Ctrl+Shift+S")));
        panel.setRun(gpipe_config_, gpipe_);
        QVERIFY(panel.exportScreenshotAction()->isEnabled());
        QVERIFY(panel.exportTraceAction()->isEnabled());
        QVERIFY(panel.copyImageAction()->isEnabled());
        QVERIFY(!panel.hasComparison());
        panel.setRun(gpipe_config_, nullptr);
        QVERIFY(!panel.exportScreenshotAction()->isEnabled());
    }

    // Compared runs' rulers count from the slider's zero (each counted from its own start);
    // a cleared panel leaves no slider of the run before.
    void comparedRulersAndTheSliderShareOneZero() {
        VisualizerPanel panel;
        panel.resize(1300, 900);
        panel.show();
        QVERIFY(QTest::qWaitForWindowExposed(&panel));
        panel.setRun(gpipe_config_, gpipe_);
        panel.setComparison(f1b_config_, f1b_);
        panel.fitAll();
        const std::int64_t zero = panel.playback()->begin();
        QCOMPARE(panel.timeline()->timeZero(), zero);
        QCOMPARE(panel.comparisonTimeline()->timeZero(), zero);
        panel.setRun(gpipe_config_, nullptr);
        QCOMPARE(panel.playback()->begin(), std::int64_t{0});
        QCOMPARE(panel.playback()->end(), std::int64_t{0});
    }

    // A fit made before the layout gave the timeline its width is made again at the width it
    // gets (it showed three quarters of the run at 1280 px); a view the learner zoomed stays.
    void aFitFollowsTheTimelinesWidthUntilTheLearnerZooms() {
        VisualizerPanel panel;
        panel.setRun(gpipe_config_, gpipe_);
        panel.fitAll();
        panel.resize(800, 700);
        panel.show();
        QVERIFY(QTest::qWaitForWindowExposed(&panel));
        TimelineView* t = panel.timeline();
        const double plot = t->width() - TimelineView::kLeftMargin - TimelineView::kRightMargin;
        QVERIFY2(t->mapping().end_ns(plot) >= static_cast<double>(t->runRange().second),
                 "the run's end is off the right edge");
        t->zoomBy(2.0);
        const double zoomed = t->mapping().ns_per_px;
        panel.resize(1100, 700);
        QTRY_VERIFY(t->width() > 900);
        QCOMPARE(t->mapping().ns_per_px, zoomed);
    }

    void comparisonSharesTheTimeAxis() {
        VisualizerPanel panel;
        panel.resize(1300, 900);
        panel.show();
        QVERIFY(QTest::qWaitForWindowExposed(&panel));
        panel.setRun(gpipe_config_, gpipe_);
        panel.setComparison(f1b_config_, f1b_);
        QVERIFY(panel.hasComparison());
        QVERIFY(panel.comparisonTimeline()->isVisible());
        TimelineView* a = panel.timeline();
        TimelineView* b = panel.comparisonTimeline();
        QCOMPARE(a->mapping(), b->mapping());
        // Each ruler counts from the start of its own step 1.
        QCOMPARE(a->origin(), a->stepRange(1).first);
        QCOMPARE(b->origin(), b->stepRange(1).first);
        // Zooming one zooms the other.
        a->zoomBy(2.0);
        QCOMPARE(a->mapping(), b->mapping());
        b->zoomBy(0.5);
        QCOMPARE(a->mapping(), b->mapping());
        panel.fitAll();
        QCOMPARE(a->origin(), std::int64_t{0});
        QCOMPARE(a->mapping(), b->mapping());
        panel.clearComparison();
        QVERIFY(!panel.hasComparison());
        QVERIFY(!panel.comparisonTimeline()->isVisible());
    }

    // The Data tab is there only for a run that reads a dataset, and shows what it read.
    void dataTabShowsEachDevicesExamples() {
        VisualizerPanel panel;
        panel.resize(1300, 900);
        panel.show();
        QVERIFY(QTest::qWaitForWindowExposed(&panel));
        panel.setRun(gpipe_config_, gpipe_);
        QTabWidget* tabs = panel.lowerTabs();
        const int data_tab = tabs->count() - 1;
        QCOMPARE(tabs->tabText(data_tab), QStringLiteral("&Data"));
        QVERIFY(!tabs->isTabVisible(data_tab));
        pd::RunConfig c = test::small_pipeline(pd::PipelineSchedule::gpipe);
        c.strategy = pd::StrategyKind::dp;
        c.devices = 4;
        c.cluster.nodes = 4;
        c.dataset.file_examples = {64, 64, 64, 48};
        c.dataset.batch = 64;
        c.dataset.shard = pd::ShardPolicy::file;
        c.dataset.repeat = false;
        c.batch = 64;
        c.steps = 5;
        c.collective_timeout_s = 0.5;
        const auto run = test::run_engine(c);
        QVERIFY(run->timed_out);
        panel.setRun(c, run);
        QVERIFY(tabs->isTabVisible(data_tab));
        DataView* view = panel.dataView();
        QVERIFY(view->caption().contains(QStringLiteral("Sharded by FILE")));
        QVERIFY(view->caption().contains(QStringLiteral("16 per replica")));
        QCOMPARE(view->cellText(0, 1), QStringLiteral("64–79"));
        QCOMPARE(view->cellText(3, 3), QStringLiteral("no batch: left the loop"));
        QCOMPARE(view->cellText(3, 0), QStringLiteral("48–63"));
        // Painted at a readable height: every device's row fits in the tab.
        QVERIFY(view->heightForWidth(600) > 4 * view->fontMetrics().height());
    }

    // Issue 20 item 4: the details line describes nothing of an earlier run.
    void detailsAreClearedOnEveryRun() {
        VisualizerPanel panel;
        panel.setRun(gpipe_config_, gpipe_);
        const QString hint = panel.detailsText();
        pd::TraceEvent e;
        for (const auto& ev : gpipe_->trace.events)
            if (ev.kind == pd::EventKind::backward) e = ev;
        emit panel.timeline()->eventClicked(e);
        QVERIFY(panel.detailsText() != hint);
        // Leaving the boxes brings back the clicked one's details, not the hint.
        emit panel.timeline()->eventHovered(-1);
        QVERIFY(panel.detailsText() != hint);
        panel.setRun(f1b_config_, f1b_);
        QCOMPARE(panel.detailsText(), hint);
        emit panel.timeline()->eventHovered(-1);
        QCOMPARE(panel.detailsText(), hint);
        emit panel.timeline()->eventClicked(e);
        panel.setComparison(gpipe_config_, gpipe_);
        QCOMPARE(panel.detailsText(), hint);
    }

    // Item 5: compared runs' memory bars share one y-axis, whichever needs the larger.
    void comparedMemorySharesTheScale() {
        pd::RunConfig big = gpipe_config_;
        big.width = 256;
        const auto big_run = test::run_engine(big);
        VisualizerPanel panel;
        panel.setRun(gpipe_config_, gpipe_);
        const double alone = panel.memoryBars()->axisTopBytes();
        panel.setComparison(big, big_run);
        const double a = panel.memoryBars()->axisTopBytes();
        const double b = panel.comparisonMemoryBars()->axisTopBytes();
        QCOMPARE(a, b);
        QVERIFY2(a > alone, qPrintable(QStringLiteral("%1 vs %2").arg(a).arg(alone)));
        panel.clearComparison();
        QCOMPARE(panel.memoryBars()->axisTopBytes(), alone);
    }

    // Item 18: exports are named after the card and what ran.
    void exportNamesSayWhatRan() {
        VisualizerPanel panel;
        panel.setExportBaseName(QStringLiteral("pp-gpipe-bubble"));
        panel.setRun(gpipe_config_, gpipe_);
        QCOMPARE(panel.suggestedExportName(QStringLiteral("timeline"), QStringLiteral("png")),
                 QStringLiteral("pp-gpipe-bubble_pipeline-gpipe-2dev_timeline.png"));
        panel.setComparison(f1b_config_, f1b_);
        QCOMPARE(panel.suggestedExportName(QStringLiteral("trace"), QStringLiteral("json")),
                 QStringLiteral("pp-gpipe-bubble_pipeline-gpipe-2dev_compared_trace.json"));
    }

    void clickShowsDetails() {
        VisualizerPanel panel;
        panel.setRun(gpipe_config_, gpipe_);
        QSignalSpy selected(&panel, &VisualizerPanel::eventSelected);
        pd::TraceEvent e;
        for (const auto& ev : gpipe_->trace.events)
            if (ev.kind == pd::EventKind::backward) e = ev;
        emit panel.timeline()->eventClicked(e);
        QCOMPARE(selected.count(), 1);
    }

    void cancelledRunWithAnEmptyTrace() {
        auto cancelled = std::make_shared<pd::RunResult>();
        cancelled->status = pd::RunStatus::cancelled;
        cancelled->error = "run cancelled";
        VisualizerPanel panel;
        panel.resize(900, 600);
        panel.setRun(gpipe_config_, cancelled);
        panel.fitAll();
        panel.playback()->play();
        panel.playback()->advance(1000);
        QString error;
        QVERIFY2(panel.exportPicture(dir_.filePath(QStringLiteral("cancelled.png")), &error),
                 qPrintable(error));
        QVERIFY(!panel.renderImage().isNull());
    }

    void exportsThroughThePanel() {
        VisualizerPanel panel;
        panel.resize(1200, 800);
        panel.setNote(QStringLiteral("Look at the bubble."));
        panel.setRun(gpipe_config_, gpipe_);
        panel.setComparison(f1b_config_, f1b_);
        QString error;
        const QString png = dir_.filePath(QStringLiteral("panel.png"));
        QVERIFY2(panel.exportPicture(png, &error), qPrintable(error));
        QImageReader reader(png);
        QCOMPARE(reader.size().width(), static_cast<int>(panel.pictureOptions().width * 2));
        for (const char* ext : {"svg", "pdf"}) {
            const QString path = dir_.filePath(QStringLiteral("panel.%1").arg(QLatin1String(ext)));
            QVERIFY2(panel.exportPicture(path, &error), qPrintable(error));
            QVERIFY(QFileInfo(path).size() > 1000);
        }
        const QImage image = panel.renderImage();
        QCOMPARE(image.devicePixelRatio(), 2.0);
        QVERIFY(!image.isNull());

        panel.copyImageAction()->trigger();
        QCOMPARE(QGuiApplication::clipboard()->image().size(), image.size());

        const QString trace = dir_.filePath(QStringLiteral("trace.json"));
        QVERIFY2(panel.exportTrace(trace, &error), qPrintable(error));
        QFile f(trace);
        QVERIFY(f.open(QIODevice::ReadOnly));
        const QJsonDocument doc = QJsonDocument::fromJson(f.readAll());
        QVERIFY(doc.isObject());
        QVERIFY(doc.object().value(QStringLiteral("traceEvents")).isArray());
        QVERIFY(!panel.exportTrace(dir_.filePath(QStringLiteral("no/dir/trace.json")), &error));
    }
};

QTEST_MAIN(TestVisualizerPanel)
#include "test_visualizer_panel.moc"
