// Playback: the clock's arithmetic driven without timers, the scrub slider, memory live at
// the cursor, the ring diagram's moves during an all-reduce step, and the panel wiring the
// cursor into the timeline.
#include <QSignalSpy>
#include <QSlider>
#include <QtTest>

#include "pd/metrics.h"
#include "visualizer/memory_bars.h"
#include "visualizer/memory_snapshot.h"
#include "visualizer/playback.h"
#include "visualizer/ring_diagram.h"
#include "visualizer/timeline_view.h"
#include "visualizer/visualizer_panel.h"
#include "visualizer_test_support.h"

using namespace pd::vis;

class TestPlayback : public QObject {
    Q_OBJECT

    pd::RunConfig dp_config_ = test::small_dp();
    std::shared_ptr<const pd::RunResult> dp_;

  private slots:
    void initTestCase() {
        dp_ = test::run_engine(dp_config_);
        QCOMPARE(dp_->status, pd::RunStatus::ok);
    }

    void clockAdvancesBySpeed_data() {
        QTest::addColumn<double>("speed");
        QTest::addColumn<double>("realMs");
        QTest::addColumn<qint64>("expectedCursor");
        // Step of 400 us plays in 4 s at 1x: 100 us of trace per real second.
        QTest::newRow("1x for one second") << 1.0 << 1000.0 << qint64(100000);
        QTest::newRow("0.25x for one second") << 0.25 << 1000.0 << qint64(25000);
        QTest::newRow("8x for half a second") << 8.0 << 500.0 << qint64(400000);
        QTest::newRow("speeds above 8x are clamped") << 100.0 << 500.0 << qint64(400000);
        QTest::newRow("past the end stops at the end") << 8.0 << 60000.0 << qint64(1000000);
    }
    void clockAdvancesBySpeed() {
        QFETCH(double, speed);
        QFETCH(double, realMs);
        QFETCH(qint64, expectedCursor);
        PlaybackClock clock;
        clock.setRange(0, 1000000, 400000);
        QCOMPARE(clock.cursor(), qint64(1000000));  // a fresh run shows everything
        clock.setSpeed(speed);
        QSignalSpy playing(&clock, &PlaybackClock::playingChanged);
        clock.play();  // from the end: replays from the start
        QCOMPARE(clock.cursor(), qint64(0));
        QVERIFY(clock.isPlaying());
        clock.advance(realMs);
        QCOMPARE(clock.cursor(), expectedCursor);
        QCOMPARE(clock.isPlaying(), expectedCursor < 1000000);
        clock.pause();
        QVERIFY(!clock.isPlaying());
        QVERIFY(playing.count() >= 2);
    }

    void sliderScrubs() {
        PlaybackClock clock;
        PlaybackBar bar(&clock);
        clock.setRange(1000, 11000, 5000);
        bar.slider()->setValue(bar.slider()->maximum() / 2);
        QCOMPARE(clock.cursor(), qint64(6000));
        clock.setCursor(3500);
        QCOMPARE(bar.slider()->value(), bar.slider()->maximum() / 4);
        clock.setCursor(-5);  // clamped to the range
        QCOMPARE(clock.cursor(), qint64(1000));
    }

    void memoryLiveAtTheCursor() {
        MemoryTimeline timeline(*dp_);
        const MemorySnapshot before = timeline.at(std::numeric_limits<std::int64_t>::min());
        for (int d = 0; d < dp_config_.devices; ++d) QCOMPARE(before.total(d), 0.0);
        const auto& last = dp_->trace.memory.back();
        const MemorySnapshot end = timeline.at(last.t_ns);
        QCOMPARE(end.bytes[static_cast<std::size_t>(last.device)]
                          [static_cast<std::size_t>(last.category)],
                 static_cast<double>(last.bytes));
        // Peak mode shows each category's peak, never less than what is live at the end.
        const auto metrics = pd::compute_metrics(dp_->trace, dp_config_);
        MemoryBarsView bars;
        bars.setRun(dp_, metrics);
        for (int d = 0; d < dp_config_.devices; ++d)
            QVERIFY(bars.snapshot().total(d) >= end.total(d));
        bars.setMode(MemoryBarsView::Mode::at_cursor);
        bars.setCursorTime(last.t_ns);
        QCOMPARE(bars.snapshot().total(last.device), end.total(last.device));
        QVERIFY(!bars.snapshot().over_capacity(0));
    }

    void failedRequestIsPastCapacity() {
        pd::RunConfig c = test::small_dp();
        c.capacity_bytes = 64 * 1024;
        auto r = test::run_engine(c);
        QVERIFY(r->oom.has_value());
        const auto m = pd::compute_metrics(r->trace, c);
        const MemorySnapshot peak = peak_memory(*r, m);
        QVERIFY(peak.over_capacity(r->oom->device));
    }

    void ringDiagramShowsTheChunkInFlight() {
        RingDiagram ring;
        ring.setRun(dp_);
        QVERIFY(ring.hasRingSteps());
        const pd::TraceEvent* step = nullptr;
        for (const auto& e : dp_->trace.events)
            if (e.kind == pd::EventKind::reduce_scatter_step && e.duration_ns() > 2) {
                step = &e;
                break;
            }
        QVERIFY(step);
        ring.setCursorTime((step->start_ns + step->end_ns) / 2);
        bool found = false;
        for (const auto& m : ring.moves())
            if (m.device == step->device) {
                found = true;
                QCOMPARE(m.peer, step->peer);
                QCOMPARE(m.chunk, step->chunk);
                QCOMPARE(m.phase, pd::CollectivePhase::reduce_scatter);
                QVERIFY(m.active);
            }
        QVERIFY(found);
        ring.setCursorTime(std::numeric_limits<std::int64_t>::min());
        QVERIFY(ring.moves().empty());
        QImage image(240, 240, QImage::Format_ARGB32_Premultiplied);
        QPainter p(&image);
        ring.paint(p, QRectF(0, 0, 240, 240), TimelinePalette::dark_theme());
    }

    void panelCursorHidesTheFuture() {
        VisualizerPanel panel;
        panel.resize(1200, 800);
        panel.setRun(dp_config_, dp_);
        PlaybackClock* clock = panel.playback();
        // Before play the whole run is shown: no cursor.
        QVERIFY(!panel.timeline()->playbackCursor().has_value());
        const std::int64_t mid = (clock->begin() + clock->end()) / 2;
        clock->setCursor(mid);
        QCOMPARE(panel.timeline()->playbackCursor(), std::optional<std::int64_t>(mid));
        clock->play();
        QVERIFY(panel.memoryBars()->mode() == MemoryBarsView::Mode::at_cursor);
        clock->advance(1e9);  // to the end: stops, and everything is shown again
        QVERIFY(!clock->isPlaying());
        QVERIFY(!panel.timeline()->playbackCursor().has_value());
    }
};

QTEST_MAIN(TestPlayback)
#include "test_playback.moc"
