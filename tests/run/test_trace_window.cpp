// Opening a learner's traces in the app: the loader off the GUI thread (progress, failure
// with the file and byte, cancel), and the trace window on the imported run.
#include <QLabel>
#include <QSignalSpy>
#include <QTemporaryDir>
#include <QtTest>

#include "trace_loader.h"
#include "trace_window.h"
#include "visualizer/loss_chart.h"
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
        QVERIFY2(all.contains(QStringLiteral("9 × size unknown")), qPrintable(all));
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
};

QTEST_MAIN(TestTraceWindow)
#include "test_trace_window.moc"
