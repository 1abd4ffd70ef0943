// Opening a learner's traces in the app: the loader off the GUI thread (progress, failure
// with the file and byte, cancel), and the trace window on the imported run.
#include <QApplication>
#include <QFileDialog>
#include <QImage>
#include <QLabel>
#include <QMenuBar>
#include <QMessageBox>
#include <QPainter>
#include <QSignalSpy>
#include <QTemporaryDir>
#include <QtTest>
#include <cmath>
#include <limits>

#include "trace_loader.h"
#include "trace_window.h"
#include "visualizer/device_name.h"
#include "visualizer/loss_chart.h"
#include "visualizer/memory_bars.h"
#include "visualizer/metrics_models.h"
#include "visualizer/metrics_panel.h"
#include "visualizer/timeline_view.h"
#include "visualizer/visualizer_panel.h"

using pd::app::TraceLoader;

namespace {

QStringList ddpFourRanks() {
    QStringList files;
    for (int r = 0; r < 4; ++r)
        files << QStringLiteral(PD_TRACE_FIXTURES_DIR "/ddp-gloo-4rank/rank%1.json.gz").arg(r);
    return files;
}

QStringList ddpTwoRanks() {
    return {QStringLiteral(PD_TRACE_FIXTURES_DIR "/ddp-gloo-2rank/rank0.json"),
            QStringLiteral(PD_TRACE_FIXTURES_DIR "/ddp-gloo-2rank/rank1.json")};
}

// The trace window on `files`, once the loader has read them.
std::unique_ptr<pd::ui::TraceWindow> openedWindow(const QStringList& files) {
    TraceLoader loader;
    QSignalSpy loaded(&loader, &TraceLoader::loaded);
    loader.load(files);
    if (!QTest::qWaitFor([&] { return loaded.count() == 1; }, 60000)) return nullptr;
    auto window = std::make_unique<pd::ui::TraceWindow>();
    window->showImported(loaded.front().at(0).toStringList(),
                         loaded.front().at(1).value<std::shared_ptr<const pd::RunResult>>());
    return window;
}

// The action of `window`'s menus with `shortcut`, or null.
QAction* menuActionWithShortcut(QMainWindow& window, const QKeySequence& shortcut) {
    for (QAction* menu : window.menuBar()->actions())
        if (menu->menu())
            for (QAction* a : menu->menu()->actions())
                if (!a->isSeparator() && a->shortcut() == shortcut) return a;
    return nullptr;
}

// A Kineto trace of one GPU whose kernels are 1 µs long every 10 µs (10% busy) for 50 ms,
// in one profiler step: at any zoom that fits the step, many kernels share a pixel.
QString writeSparseKernelTrace(const QString& path) {
    QFile f(path);
    if (!f.open(QIODevice::WriteOnly)) return {};
    QByteArray json =
        "{\"distributedInfo\": {\"backend\": \"nccl\", \"rank\": 0, \"world_size\": 1},\n"
        "\"traceEvents\": [\n"
        "{\"ph\": \"X\", \"cat\": \"user_annotation\", \"name\": \"ProfilerStep#1\", "
        "\"pid\": 7, \"tid\": 8, \"ts\": 0, \"dur\": 50000}";
    for (int i = 0; i < 5000; ++i) {
        json += QStringLiteral(
                    ",\n{\"ph\": \"X\", \"cat\": \"cuda_runtime\", \"name\": "
                    "\"cudaLaunchKernel\", \"pid\": 7, \"tid\": 8, \"ts\": %1, \"dur\": 1, "
                    "\"args\": {\"correlation\": %2}}"
                    ",\n{\"ph\": \"X\", \"cat\": \"kernel\", \"name\": \"gemm\", \"pid\": 0, "
                    "\"tid\": 7, \"ts\": %3, \"dur\": 1, \"args\": {\"correlation\": %2}}")
                    .arg(i * 10)
                    .arg(i + 1)
                    .arg(i * 10 + 5)
                    .toUtf8();
    }
    json += "\n]}\n";
    f.write(json);
    return path;
}

// The colour blend `t` in [0, 1] that takes `from` to `to` nearest to `c`.
double blendOf(const QColor& c, const QColor& from, const QColor& to) {
    const double dr = to.redF() - from.redF(), dg = to.greenF() - from.greenF(),
                 db = to.blueF() - from.blueF();
    const double len2 = dr * dr + dg * dg + db * db;
    if (len2 <= 0) return 0;
    const double t = ((c.redF() - from.redF()) * dr + (c.greenF() - from.greenF()) * dg +
                      (c.blueF() - from.blueF()) * db) /
                     len2;
    return std::clamp(t, 0.0, 1.0);
}

}  // namespace

class TestTraceWindow : public QObject {
    Q_OBJECT
  private slots:
    void loaderDeliversTheImportedRun() {
        TraceLoader loader;
        QSignalSpy loaded(&loader, &TraceLoader::loaded);
        QSignalSpy progress(&loader, &TraceLoader::progress);
        loader.load(ddpFourRanks());
        QVERIFY(loader.isLoading());
        QTRY_COMPARE_WITH_TIMEOUT(loaded.count(), 1, 60000);
        QVERIFY(!loader.isLoading());
        const auto result = loaded.front().at(1).value<std::shared_ptr<const pd::RunResult>>();
        QVERIFY(result);
        QCOMPARE(result->trace.devices, 4);
        QVERIFY(result->trace.origin.imported);
        QCOMPARE(result->steps_completed, 3);
        QVERIFY(progress.count() >= 1);
        QCOMPARE(progress.back().at(0).toLongLong(), progress.back().at(1).toLongLong());
    }

    void loaderNamesTheFileAndByteOfBadJson() {
        QTemporaryDir dir;
        const QString bad = dir.filePath(QStringLiteral("bad.json"));
        QFile f(bad);
        QVERIFY(f.open(QIODevice::WriteOnly));
        f.write("{\"traceEvents\": [{\"ph\": \"X\",, }]}");
        f.close();
        TraceLoader loader;
        QSignalSpy failed(&loader, &TraceLoader::failed);
        loader.load({bad});
        QTRY_COMPARE_WITH_TIMEOUT(failed.count(), 1, 60000);
        const QString message = failed.front().at(0).toString();
        QVERIFY2(message.contains(bad) && message.contains(QStringLiteral("byte 28")),
                 qPrintable(message));
    }

    void loaderCancelsALargeFile() {
        // 20 MB of events: the cancel lands long before the last read buffer.
        QTemporaryDir dir;
        const QString big = dir.filePath(QStringLiteral("big.json"));
        QFile f(big);
        QVERIFY(f.open(QIODevice::WriteOnly));
        f.write("{\"traceEvents\": [");
        const QByteArray event =
            "{\"ph\": \"X\", \"name\": \"aten::mm\", \"ts\": 1, \"dur\": 2, \"tid\": 1, "
            "\"pid\": 1, \"args\": {}},";
        for (int i = 0; i < 20'000'000 / event.size(); ++i) f.write(event);
        f.write("{\"ph\": \"X\", \"name\": \"aten::mm\", \"ts\": 1, \"dur\": 2}]}");
        f.close();
        TraceLoader loader;
        QSignalSpy cancelled(&loader, &TraceLoader::cancelled);
        QSignalSpy loaded(&loader, &TraceLoader::loaded);
        loader.load({big});
        loader.cancel();
        QTRY_COMPARE_WITH_TIMEOUT(cancelled.count(), 1, 60000);
        QCOMPARE(loaded.count(), 0);
        QVERIFY(!loader.isLoading());
    }

    void windowShowsTheRanksAndWhatIsUnknown() {
        TraceLoader loader;
        QSignalSpy loaded(&loader, &TraceLoader::loaded);
        loader.load(ddpFourRanks());
        QTRY_COMPARE_WITH_TIMEOUT(loaded.count(), 1, 60000);
        pd::ui::TraceWindow window;
        window.showImported(loaded.front().at(0).toStringList(),
                            loaded.front().at(1).value<std::shared_ptr<const pd::RunResult>>());
        window.show();
        QVERIFY(window.windowTitle().contains(QStringLiteral("rank0.json.gz")));
        pd::vis::VisualizerPanel* v = window.visualizer();
        QCOMPARE(v->timeline()->data().devices(), 4);
        QVERIFY(v->note().contains(QStringLiteral("first collective")));
        QVERIFY(v->note().contains(QStringLiteral("shown as unknown")));
        // The metrics say what is unknown instead of printing zeros.
        QStringList texts;
        for (QLabel* l : v->metricsPanel()->findChildren<QLabel*>()) texts << l->text();
        const QString all = texts.join(QLatin1Char('\n'));
        // Three all-reduces a step, counted over the figure steps the lines name (2–3).
        QVERIFY(all.contains(QStringLiteral("figures over steps 2–3")));
        QVERIFY2(all.contains(QStringLiteral("6 × size unknown")), qPrintable(all));
        QVERIFY(all.contains(QStringLiteral("Throughput")));
        QVERIFY(v->exportTraceAction()->isEnabled());
        // Step times are drawn; the loss is said to be missing, not to have diverged.
        const QString chart = v->lossChart()->chart()->title();
        QVERIFY2(chart.contains(QStringLiteral("records no loss")), qPrintable(chart));
        // The same exports as a Show me run.
        QTemporaryDir dir;
        QString error;
        QVERIFY2(v->exportPicture(dir.filePath(QStringLiteral("t.png")), &error),
                 qPrintable(error));
        QVERIFY2(v->exportTrace(dir.filePath(QStringLiteral("t.json")), &error), qPrintable(error));
        QVERIFY(v->suggestedExportName(QStringLiteral("timeline"), QStringLiteral("png"))
                    .contains(QStringLiteral("imported-4rank")));
        // These traces share no clock: aligned on the first collective; the other choice
        // reads them again on their own clocks.
        QVERIFY(window.firstCollectiveAction()->isChecked());
        QSignalSpy again(window.loader(), &TraceLoader::loaded);
        window.ownClockAction()->trigger();
        QTRY_COMPARE_WITH_TIMEOUT(again.count(), 1, 60000);
        QVERIFY(window.ownClockAction()->isChecked());
        QVERIFY2(v->note().contains(QStringLiteral("share no clock")), qPrintable(v->note()));
    }

    // Issue 40: the trace window had no Open; Ctrl+O there did nothing.
    void openInTheTraceWindowReplacesTheTrace() {
        auto window = openedWindow(ddpFourRanks());
        QVERIFY(window);
        window->show();
        QVERIFY(QTest::qWaitForWindowExposed(window.get()));
        QAction* open = menuActionWithShortcut(*window, QKeySequence(QKeySequence::Open));
        QVERIFY2(open, "no File menu action on Ctrl+O");
        QVERIFY(open->text().contains(QStringLiteral("Open")));
        open->trigger();
        QFileDialog* dialog = nullptr;
        QTRY_VERIFY((dialog = window->findChild<QFileDialog*>()) && dialog->isVisible());
        QCOMPARE(dialog->fileMode(), QFileDialog::ExistingFiles);  // one file per rank
        // Two files chosen: the window shows their two ranks instead of the four.
        emit dialog->filesSelected(ddpTwoRanks());
        dialog->close();
        pd::vis::VisualizerPanel* v = window->visualizer();
        QTRY_COMPARE_WITH_TIMEOUT(v->timeline()->data().devices(), 2, 60000);
        QVERIFY(window->windowTitle().contains(QStringLiteral("rank1.json")));
        QVERIFY(!window->windowTitle().contains(QStringLiteral("rank3")));
    }

    void openOfABadFileNamesItAndKeepsTheTraceShown() {
        auto window = openedWindow(ddpFourRanks());
        QVERIFY(window);
        window->show();
        const QString title = window->windowTitle();
        QTemporaryDir dir;
        const QString bad = dir.filePath(QStringLiteral("config.json"));
        QFile f(bad);
        QVERIFY(f.open(QIODevice::WriteOnly));
        f.write("{\"layers\": 3}");
        f.close();
        QSignalSpy failed(window.get(), &pd::ui::TraceWindow::loadFailed);
        window->openTraces({bad});
        QTRY_COMPARE_WITH_TIMEOUT(failed.count(), 1, 60000);
        QString message = failed.front().at(0).toString();
        QVERIFY2(message.contains(bad) && message.contains(QStringLiteral("not a Chrome trace")),
                 qPrintable(message));
        // The box says it too, without blocking the window.
        QMessageBox* box = nullptr;
        QTRY_VERIFY((box = window->findChild<QMessageBox*>()) && box->isVisible());
        QVERIFY2(box->text().contains(bad), qPrintable(box->text()));
        box->close();
        // A file that is not there: named too. The run shown stays the four ranks.
        const QString missing = dir.filePath(QStringLiteral("rank9.json"));
        window->openTraces({ddpTwoRanks().front(), missing});
        QTRY_COMPARE_WITH_TIMEOUT(failed.count(), 2, 60000);
        message = failed.back().at(0).toString();
        QVERIFY2(message.contains(missing), qPrintable(message));
        QCOMPARE(window->visualizer()->timeline()->data().devices(), 4);
        QCOMPARE(window->windowTitle(), title);
        QCOMPARE(window->files(), ddpFourRanks());
    }

    // Issue 40: Fit step left 40% of the axis empty on a real Kineto trace: the window opens
    // on its step fitted to the width the timeline had before the window was shown. The
    // step's events must fill the plot, its first event at the left edge and its last at the
    // right: as the window opens, after it is resized, and after Fit step.
    void fitStepFitsTheStepsEvents_data() {
        QTest::addColumn<QStringList>("files");
        QTest::newRow("kineto 2-rank NCCL job, rank 0")
            << QStringList{QStringLiteral(PD_SHARED_TRACES_DIR "/kineto-2rank-nccl_rank0.json.gz")};
        QTest::newRow("kineto 128-rank job, ranks 0 and 1") << QStringList{
            QStringLiteral(PD_SHARED_TRACES_DIR "/kineto-128rank-job_rank0.json.gz"),
            QStringLiteral(PD_SHARED_TRACES_DIR "/kineto-128rank-job_rank1.json.gz")};
        QTest::newRow("ddp gloo 4 ranks") << ddpFourRanks();
    }

    void fitStepFitsTheStepsEvents() {
        QFETCH(QStringList, files);
        if (!QFileInfo::exists(files.front()))
            QSKIP("the shared Kineto traces are not beside this checkout");
        auto window = openedWindow(files);
        QVERIFY(window);
        window->resize(1400, 900);
        window->show();
        QVERIFY(QTest::qWaitForWindowExposed(window.get()));
        pd::vis::VisualizerPanel* v = window->visualizer();
        pd::vis::TimelineView* t = v->timeline();
        auto check = [t](const char* when) {
            QVERIFY2(t->focusStep(), when);
            const int step = *t->focusStep();
            std::int64_t first = std::numeric_limits<std::int64_t>::max(), last = 0;
            for (const auto& e : t->data().trace().events)
                if (e.step == step && e.kind != pd::EventKind::wait) {
                    first = std::min(first, e.start_ns);
                    last = std::max(last, e.end_ns);
                }
            QVERIFY2(last > first, when);
            const auto& m = t->mapping();
            const double left = m.left_px, width = t->width() - left - 14.0;
            const double x0 = m.x_of(double(first - t->origin()));
            const double x1 = m.x_of(double(last - t->origin()));
            const QString where = QStringLiteral("%1, step %2: events at x %3..%4 of a plot %5..%6")
                                      .arg(QLatin1String(when))
                                      .arg(step)
                                      .arg(x0)
                                      .arg(x1)
                                      .arg(left)
                                      .arg(left + width);
            QVERIFY2(std::abs(x0 - left) <= 2, qPrintable(where));
            // A little air on the right (1%), no more.
            QVERIFY2(x1 >= left + 0.97 * width && x1 <= left + width + 1, qPrintable(where));
        };
        check("as the window opens");
        if (QTest::currentTestFailed()) return;
        window->resize(1000, 800);
        QTRY_COMPARE(window->width(), 1000);
        check("resized");
        if (QTest::currentTestFailed()) return;
        v->fitStepAction()->trigger();
        check("after Fit step");
    }

    // Issue 40: the table said "device 0" where the timeline said "rank 0".
    void tableAndTimelineNameTheRanksAlike() {
        auto window = openedWindow(ddpFourRanks());
        QVERIFY(window);
        const pd::Trace& trace = window->visualizer()->timeline()->data().trace();
        const pd::vis::DeviceMetricsModel* model =
            window->visualizer()->metricsPanel()->deviceModel();
        QCOMPARE(model->rowCount(), 4);
        QCOMPARE(
            model->headerData(pd::vis::DeviceMetricsModel::Device, Qt::Horizontal, Qt::DisplayRole)
                .toString(),
            QStringLiteral("Rank"));
        for (int d = 0; d < 4; ++d) {
            const QString name =
                model->data(model->index(d, pd::vis::DeviceMetricsModel::Device)).toString();
            // The timeline's row name (the painter's, from the same helper).
            QCOMPARE(name, pd::vis::device_name(trace.origin, d));
            QCOMPARE(name, QStringLiteral("rank %1").arg(trace.origin.ranks[std::size_t(d)]));
        }
    }

    // Issue 40: at the default zoom the GPU lane looked solid although the GPU was busy a
    // tenth of the time: sub-pixel kernels merged into one box painted the gaps as busy.
    void mergedKernelsAreShadedByTheirBusyFraction() {
        QTemporaryDir dir;
        const QString path =
            writeSparseKernelTrace(dir.filePath(QStringLiteral("sparse_rank0.json")));
        QVERIFY(!path.isEmpty());
        auto window = openedWindow({path});
        QVERIFY(window);
        window->resize(1400, 900);
        window->show();
        QVERIFY(QTest::qWaitForWindowExposed(window.get()));
        pd::vis::VisualizerPanel* v = window->visualizer();
        v->fitStepAction()->trigger();
        pd::vis::TimelineView* t = v->timeline();
        const auto view = t->currentView();
        QVERIFY(view.mapping.ns_per_px > 10'000);  // ten or more kernels a pixel apart: merged
        QImage image(view.size.toSize(), QImage::Format_RGB32);
        image.fill(Qt::white);
        {
            QPainter p(&image);
            t->paint(p, view);
        }
        const QRectF lane = t->laneRect(0, pd::StreamKind::compute, view.size);
        const auto& events = t->data().trace().events;
        std::int64_t first = events.front().start_ns, last = events.front().end_ns;
        for (const auto& e : events) {
            first = std::min(first, e.start_ns);
            last = std::max(last, e.end_ns);
        }
        const double x0 = view.mapping.x_of(double(first - view.origin_ns)) + 2;
        const double x1 = view.mapping.x_of(double(last - view.origin_ns)) - 2;
        QVERIFY(x1 - x0 > 500);
        const int y = int(lane.center().y());
        double ink = 0;
        int n = 0;
        for (int x = int(std::ceil(x0)); x < int(x1); ++x, ++n)
            ink += blendOf(image.pixelColor(x, y), view.palette.idle, view.palette.kernel);
        ink /= n;
        // 10% busy reads as about 10% ink, not as a solid bar.
        QVERIFY2(ink > 0.04 && ink < 0.25, qPrintable(QString::number(ink)));
    }

    // Issue 40: the memory panel stayed white in the dark theme: for a trace without memory
    // its chart returned before taking the theme's colours.
    void memoryPanelFollowsTheDarkTheme() {
        const QPalette saved = QApplication::palette();
        QPalette dark(QColor(0x2d, 0x32, 0x3a), QColor(0x1d, 0x20, 0x25));
        dark.setColor(QPalette::Base, QColor(0x25, 0x29, 0x30));
        dark.setColor(QPalette::WindowText, QColor(0xe6, 0xe8, 0xeb));
        dark.setColor(QPalette::Text, QColor(0xe6, 0xe8, 0xeb));
        QApplication::setPalette(dark);
        auto window = openedWindow(ddpFourRanks());
        QVERIFY(window);
        window->show();
        pd::vis::MemoryBarsView* memory = window->visualizer()->memoryBars();
        QVERIFY(memory->chart()->title().contains(QStringLiteral("not recorded")));
        const QColor background = memory->chart()->backgroundBrush().color();
        const QColor title = memory->chart()->titleBrush().color();
        QApplication::setPalette(saved);
        QVERIFY2(background.lightness() < 80, qPrintable(background.name()));
        QVERIFY2(title.lightness() > 160, qPrintable(title.name()));
    }
};

QTEST_MAIN(TestTraceWindow)
#include "test_trace_window.moc"
