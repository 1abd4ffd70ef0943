// How long from "Show me" to the first frame, for every bundled scenario: the window runs the
// scenario off the GUI thread and paints the timeline. Prints each figure; asserts nothing
// about time. Run: QT_QPA_PLATFORM=offscreen ./build/tests/run/bench_show_me
#include <QElapsedTimer>
#include <QSignalSpy>
#include <QtTest>
#include <algorithm>

#include "scenario_config.h"
#include "show_me_window.h"
#include "study/deck.h"
#include "visualizer/visualizer_panel.h"

class BenchShowMe : public QObject {
    Q_OBJECT
  private slots:
    void first_frame_per_bundled_scenario() {
        const auto loaded =
            pd::study::loadDeckFile(QStringLiteral(PD_DECK_DIR "/ml-systems-parallelism.json"));
        QVERIFY(loaded.deck.has_value());
        pd::ui::ShowMeWindow window;
        window.resize(1600, 900);
        window.show();
        QVERIFY(QTest::qWaitForWindowExposed(&window));
        std::vector<double> ms;
        for (const auto& card : loaded.deck->cards) {
            if (!card.hasScenario()) continue;
            QString error;
            const auto config = pd::app::scenarioConfig(card.scenarioJson, card.id, &error);
            QVERIFY2(config, qPrintable(error));
            QSignalSpy shown(&window, &pd::ui::ShowMeWindow::runShown);
            QElapsedTimer clock;
            clock.start();
            window.showScenario(card.id, card.scenarioNote, *config);
            QVERIFY(shown.wait(60000));
            window.visualizer()->repaint();  // the first frame, painted now
            const double elapsed = clock.nsecsElapsed() / 1e6;
            ms.push_back(elapsed);
            std::printf("%-40s %8.1f ms\n", qPrintable(card.id), elapsed);
        }
        std::sort(ms.begin(), ms.end());
        std::printf("scenarios: %zu  median %.1f ms  90th %.1f ms  max %.1f ms  within 1 s: %zu\n",
                    ms.size(), ms[ms.size() / 2], ms[ms.size() * 9 / 10], ms.back(),
                    static_cast<std::size_t>(
                        std::count_if(ms.begin(), ms.end(), [](double v) { return v <= 1000; })));
    }
};

QTEST_MAIN(BenchShowMe)
#include "bench_show_me.moc"
