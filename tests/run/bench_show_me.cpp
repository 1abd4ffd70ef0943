// How long from "Show me" to the first frame, for every bundled scenario of every bundled
// deck: the window runs the scenario off the GUI thread and paints the timeline, first with
// the run's first step (while the rest runs), then with the finished run. Prints each
// figure; asserts nothing about time. Run: QT_QPA_PLATFORM=offscreen
// ./build/tests/run/bench_show_me
#include <QDir>
#include <QElapsedTimer>
#include <QSignalSpy>
#include <QtTest>
#include <algorithm>

#include "scenario_config.h"
#include "show_me_window.h"
#include "study/deck.h"
#include "visualizer/visualizer_panel.h"

namespace {
void print_summary(const char* what, std::vector<double> ms) {
    std::sort(ms.begin(), ms.end());
    std::printf(
        "%s over %zu scenarios: median %.1f ms  90th %.1f ms  max %.1f ms  within 300 ms: %zu\n",
        what, ms.size(), ms[ms.size() / 2], ms[ms.size() * 9 / 10], ms.back(),
        static_cast<std::size_t>(
            std::count_if(ms.begin(), ms.end(), [](double v) { return v <= 300; })));
}
}  // namespace

class BenchShowMe : public QObject {
    Q_OBJECT
  private slots:
    void first_frame_per_bundled_scenario() {
        pd::ui::ShowMeWindow window;
        window.resize(1600, 900);
        window.show();
        QVERIFY(QTest::qWaitForWindowExposed(&window));
        std::vector<double> first_ms, complete_ms;
        std::printf("%-44s %12s %12s\n", "scenario", "first frame", "complete");
        const QDir dir(QStringLiteral(PD_DECK_DIR));
        for (const QString& file : dir.entryList({QStringLiteral("*.json")}, QDir::Files)) {
            const auto loaded = pd::study::loadDeckFile(dir.filePath(file));
            QVERIFY2(loaded.deck.has_value(), qPrintable(file));
            for (const auto& card : loaded.deck->cards) {
                if (!card.hasScenario()) continue;
                QString error;
                const auto config = pd::app::scenarioConfig(card.scenarioJson, card.id, &error);
                QVERIFY2(config, qPrintable(error));
                QSignalSpy shown(&window, &pd::ui::ShowMeWindow::runShown);
                QElapsedTimer clock;
                double first = -1.0;
                // The first picture, whichever comes first: the first step, or the whole run.
                auto painted = [&] {
                    if (first >= 0) return;
                    window.visualizer()->repaint();
                    first = clock.nsecsElapsed() / 1e6;
                };
                const auto partial_connection =
                    connect(&window, &pd::ui::ShowMeWindow::partialShown, this, painted);
                const auto shown_connection =
                    connect(&window, &pd::ui::ShowMeWindow::runShown, this, painted);
                clock.start();
                window.showScenario(card.id, card.scenarioNote, *config);
                QVERIFY(shown.wait(60000));
                disconnect(partial_connection);
                disconnect(shown_connection);
                window.visualizer()->repaint();
                const double complete = clock.nsecsElapsed() / 1e6;
                first_ms.push_back(first);
                complete_ms.push_back(complete);
                std::printf("%-44s %9.1f ms %9.1f ms\n", qPrintable(card.id), first, complete);
            }
        }
        print_summary("first frame", first_ms);
        print_summary("complete run", complete_ms);
    }
};

QTEST_MAIN(BenchShowMe)
#include "bench_show_me.moc"
