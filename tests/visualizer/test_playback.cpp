// Playback: the clock's arithmetic driven without timers, the scrub slider, speeds labelled by
// what they play, the play icon in both themes, memory live at the cursor, the ring diagram's
// moves during an all-reduce step, and the panel wiring the cursor into the timeline (the view
// follows a scrub back; Fit step keeps the cursor; an out-of-memory run fits its own range).
#include <QAction>
#include <QComboBox>
#include <QFontMetricsF>
#include <QPainter>
#include <QSignalSpy>
#include <QSlider>
#include <QToolButton>
#include <QtTest>
#include <algorithm>
#include <cmath>
#include <limits>
#include <set>

#include "pd/metrics.h"
#include "visualizer/format.h"
#include "visualizer/memory_bars.h"
#include "visualizer/memory_snapshot.h"
#include "visualizer/metrics_text.h"
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

    // A new range (a new run) while playing: every signal the clock sends finds the new
    // range with the cursor at its end, never the last run's cursor.
    void newRangeWhilePlayingTellsOnlyTheNewCursor() {
        PlaybackClock clock;
        PlaybackBar bar(&clock);
        clock.setRange(0, 1000000, 400000);
        clock.play();
        clock.advance(2000);
        QVERIFY(clock.isPlaying());
        QVERIFY(clock.cursor() > 0 && clock.cursor() < 1000000);
        std::vector<std::int64_t> seen;
        auto look = [&] { seen.push_back(clock.cursor()); };
        connect(&clock, &PlaybackClock::playingChanged, this, look);
        connect(&clock, &PlaybackClock::cursorChanged, this, look);
        connect(&clock, &PlaybackClock::rangeChanged, this, look);
        clock.setRange(5000000, 6000000, 400000);
        QVERIFY(!clock.isPlaying());
        QVERIFY(!seen.empty());
        for (std::int64_t c : seen) QCOMPARE(c, std::int64_t{6000000});
        QCOMPARE(bar.slider()->value(), bar.slider()->maximum());
        disconnect(&clock, nullptr, this, nullptr);
    }

    // The panel given a new run while the last one plays: the new run's view is its fitted
    // step, with no playhead, and the slider at the end; nothing of the last run's position.
    void newRunWhilePlayingStartsOver() {
        pd::RunConfig c = dp_config_;
        c.steps = 3;
        const auto three = test::run_engine(c);
        VisualizerPanel fresh;
        fresh.resize(1200, 800);
        fresh.show();
        QVERIFY(QTest::qWaitForWindowExposed(&fresh));
        fresh.setRun(c, three);
        const TimeMapping fitted = fresh.timeline()->mapping();

        VisualizerPanel panel;
        panel.resize(1200, 800);
        panel.show();
        QVERIFY(QTest::qWaitForWindowExposed(&panel));
        panel.setRun(c, three);
        PlaybackClock* clock = panel.playback();
        clock->play();
        // Play into the last step, past what Fit step shows.
        clock->setCursor(clock->end() - (clock->end() - clock->begin()) / 20);
        QVERIFY(clock->isPlaying());
        panel.setRun(c, three);
        QVERIFY(!clock->isPlaying());
        QCOMPARE(clock->cursor(), clock->end());
        QCOMPARE(panel.timeline()->playbackCursor(), std::optional<std::int64_t>{});
        QCOMPARE(panel.timeline()->mapping(), fitted);
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

    // The card wmp-dp-replicates-memory: data parallelism on 4 devices until the optimizer
    // state does not fit. Every replica overflows at the same allocation; the timeline's
    // marks, the memory chart's failed requests and the run's error name the same devices,
    // the same ones every run.
    void everyViewNamesTheSameDevicesOutOfMemory() {
        pd::RunConfig c = test::small_dp();
        c.devices = 4;
        c.layers = 8;
        c.width = 256;
        c.batch = 32;
        c.steps = 2;
        c.bucket_bytes = pd::RunConfig{}.bucket_bytes;
        c.capacity_bytes = 40 * 1024 * 1024;
        for (int attempt = 0; attempt < 3; ++attempt) {
            const auto r = test::run_engine(c);
            QCOMPARE(r->status, pd::RunStatus::out_of_memory);
            QVERIFY(r->oom.has_value());
            std::set<int> named;
            for (const auto& o : r->ooms) named.insert(o.device);
            QCOMPARE(named, (std::set<int>{0, 1, 2, 3}));
            QCOMPARE(r->oom->device, *named.begin());
            QVERIFY(r->error.find("device 0") != std::string::npos);
            VisualizerPanel panel;
            panel.resize(1200, 800);
            panel.setRun(c, r);
            std::set<int> marked;
            const auto& events = panel.timeline()->data().trace().events;
            for (int i : panel.timeline()->data().oom_events())
                marked.insert(events[static_cast<std::size_t>(i)].device);
            QCOMPARE(marked, named);
            // The status line names them all, the first in full.
            const auto lines = summary_lines(c, *r, pd::compute_metrics(r->trace, c));
            QVERIFY2(lines.front().value.contains(
                         QStringLiteral("devices 0, 1, 2 and 3 all ran out of memory; the lowest, "
                                        "device 0 out of memory")),
                     qPrintable(lines.front().value));
            const MemorySnapshot peak = panel.memoryBars()->snapshot();
            std::set<int> charted;
            for (const auto& o : peak.ooms) charted.insert(o.device);
            QCOMPARE(charted, named);
            for (int d : named) QVERIFY(peak.over_capacity(d));
            // Live at the end of the run, too.
            MemoryTimeline live(*r);
            const MemorySnapshot end = live.at(std::numeric_limits<std::int64_t>::max());
            for (int d : named) QVERIFY(end.over_capacity(d));
        }
    }

    // The ring diagram keeps everything inside its rectangle at any size it is given: the
    // caption's wrapped lines whole, the nodes apart from each other, each chunk label clear
    // of the nodes (it sat on top of them with eight devices, and a short tab cut the ring).
    void ringDiagramFitsItsRect_data() {
        QTest::addColumn<int>("devices");
        QTest::addColumn<QSize>("size");
        for (int devices : {2, 4, 8})
            for (QSize size : {QSize(200, 220), QSize(230, 250), QSize(420, 260), QSize(600, 220),
                               QSize(1000, 320), QSize(200, 400)})
                QTest::addRow("%d devices, %dx%d", devices, size.width(), size.height())
                    << devices << size;
    }
    void ringDiagramFitsItsRect() {
        QFETCH(int, devices);
        QFETCH(QSize, size);
        pd::RunConfig c = test::small_dp();
        c.devices = devices;
        c.batch = 48;
        const auto r = test::run_engine(c);
        RingDiagram ring;
        ring.setRun(r);
        // The moment the most devices are in a ring step at once.
        std::size_t most = 0;
        std::int64_t when = 0;
        for (const auto& e : r->trace.events)
            if (e.kind == pd::EventKind::reduce_scatter_step && e.duration_ns() > 2) {
                const std::int64_t t = (e.start_ns + e.end_ns) / 2;
                const std::size_t n = ring.movesAt(t).size();
                if (n > most) {
                    most = n;
                    when = t;
                }
            }
        QVERIFY(most > 0);
        ring.setCursorTime(when);
        const QRectF rect(QPointF(0, 0), QSizeF(size));
        const RingDiagram::Layout l = ring.layout(rect);
        auto inside = [&](const QRectF& box) { return rect.contains(box); };
        QVERIFY(inside(l.title_rect));
        QVERIFY(inside(l.caption_rect));
        QVERIFY(QFontMetricsF(l.title_font).horizontalAdvance(l.title) <= l.title_rect.width());
        const QRectF wrapped = QFontMetricsF(l.caption_font)
                                   .boundingRect(QRectF(0, 0, l.caption_rect.width(), 1e6),
                                                 Qt::TextWordWrap, l.caption);
        QVERIFY(wrapped.height() <= l.caption_rect.height() + 0.5);
        QCOMPARE(static_cast<int>(l.nodes.size()), devices);
        for (std::size_t i = 0; i < l.nodes.size(); ++i) {
            const QRectF node(l.nodes[i] - QPointF(l.node_r, l.node_r),
                              QSizeF(2 * l.node_r, 2 * l.node_r));
            QVERIFY(inside(node));
            QVERIFY(node.top() >= l.title_rect.bottom() && node.bottom() <= l.caption_rect.top());
            // "d7" fits its node.
            const QString name = QStringLiteral("d%1").arg(i);
            QVERIFY(QFontMetricsF(l.node_font).horizontalAdvance(name) <= 2 * l.node_r);
            for (std::size_t j = i + 1; j < l.nodes.size(); ++j) {
                const QPointF d = l.nodes[i] - l.nodes[j];
                QVERIFY(std::hypot(d.x(), d.y()) > 2 * l.node_r);
            }
        }
        QVERIFY(!l.chunk_labels.empty());
        for (const QRectF& box : l.chunk_labels) {
            QVERIFY(inside(box));
            for (const QPointF& n : l.nodes) {
                // Nearest point of the label to the node's centre, outside the node.
                const QPointF near(std::clamp(n.x(), box.left(), box.right()),
                                   std::clamp(n.y(), box.top(), box.bottom()));
                QVERIFY2(std::hypot(near.x() - n.x(), near.y() - n.y()) >= l.node_r,
                         "a chunk label covers a device");
            }
        }
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

    // Speeds say what they play: the run's time per real second, not a factor ("1×" played
    // 3.7 ms of a run in a second, nothing like real time).
    void speedsSayHowMuchOfTheRunASecondPlays() {
        PlaybackClock clock;
        PlaybackBar bar(&clock);
        clock.setRange(0, 1000000, 400000);  // a 400 µs step plays in 4 s at the middle speed
        QComboBox* box = bar.speedBox();
        QCOMPARE(box->count(), 6);
        QCOMPARE(box->itemText(0), QStringLiteral("25.0 µs per second"));
        QCOMPARE(box->itemText(2), QStringLiteral("100.0 µs per second"));
        QCOMPARE(box->itemText(5), QStringLiteral("800.0 µs per second"));
        clock.setRange(0, 40000000, 14.8e6);  // a 14.8 ms step
        QCOMPARE(box->itemText(2), QStringLiteral("3.70 ms per second"));
        // Choosing an item plays at the rate it names.
        box->setCurrentIndex(4);
        QCOMPARE(PlaybackBar::rateText(clock.traceNsPerSecond()), box->itemText(4));
    }

    // The play icon is drawn in the button's text colour: light on a dark theme, dark on a
    // light one, so it never sinks into the background.
    void playIconReadsInBothThemes_data() {
        QTest::addColumn<QColor>("window");
        QTest::addColumn<QColor>("text");
        QTest::newRow("dark") << QColor(0x2b, 0x2d, 0x31) << QColor(0xe6, 0xe8, 0xeb);
        QTest::newRow("light") << QColor(0xf0, 0xf0, 0xf0) << QColor(0x1f, 0x23, 0x28);
    }
    void playIconReadsInBothThemes() {
        QFETCH(QColor, window);
        QFETCH(QColor, text);
        PlaybackClock clock;
        PlaybackBar bar(&clock);
        QPalette pal = bar.palette();
        for (auto role : {QPalette::Window, QPalette::Button, QPalette::Base})
            pal.setColor(role, window);
        for (auto role : {QPalette::ButtonText, QPalette::WindowText, QPalette::Text})
            pal.setColor(role, text);
        bar.setPalette(pal);
        for (bool playing : {false, true}) {
            if (playing) {
                clock.setRange(0, 1000, 1000);
                clock.play();
            }
            const QImage icon = bar.playButton()->icon().pixmap(QSize(16, 16)).toImage();
            // Inside the triangle, and inside the left pause bar.
            const QColor c = icon.pixelColor(playing ? QPoint(5, 8) : QPoint(6, 8));
            QVERIFY2(c.alpha() > 200, qPrintable(c.name(QColor::HexArgb)));
            QVERIFY2(qAbs(c.lightness() - window.lightness()) > 120, qPrintable(c.name()));
        }
        clock.pause();
    }

    // Scrubbing back to a moment left of the fitted step brings the view to it: a playhead,
    // and the lanes drawn, not blank. Fit step afterwards keeps the cursor on that moment's
    // side of the step instead of sending it to the end.
    void scrubbingBackKeepsThePlayheadInSight() {
        VisualizerPanel panel;
        panel.resize(1200, 800);
        panel.show();
        QVERIFY(QTest::qWaitForWindowExposed(&panel));
        panel.setRun(dp_config_, dp_);
        TimelineView* t = panel.timeline();
        PlaybackClock* clock = panel.playback();
        QCOMPARE(t->focusStep(), std::optional<int>(1));
        auto drawn = [&] {
            TimelineView::View v = t->currentView();
            QImage image(v.size.toSize(), QImage::Format_ARGB32_Premultiplied);
            QPainter painter(&image);
            return t->paint(painter, v);
        };
        // The slider dragged back to near the start of the run (step 1 of 2 is in view).
        QSlider* slider = panel.findChild<PlaybackBar*>()->slider();
        slider->setValue(slider->maximum() / 50);
        QVERIFY(t->playbackCursor().has_value());
        QVERIFY(drawn().playhead);
        QVERIFY(drawn().boxes > 0);
        const std::int64_t moment = clock->cursor() + t->origin();
        // Fit step: the step is shown again, and the cursor stays at its start, not the end.
        panel.fitStepAction()->trigger();
        QCOMPARE(t->focusStep(), std::optional<int>(1));
        QVERIFY(clock->cursor() < clock->end());
        QVERIFY(t->playbackCursor().has_value());
        QVERIFY(drawn().playhead);
        QVERIFY(clock->cursor() + t->origin() >= moment);
        // A moment inside the view keeps its place exactly through Fit all.
        const auto step1 = *t->data().step_range(1);
        const std::int64_t inside = (step1.first + step1.second) / 2;
        clock->setCursor(inside - t->origin());
        panel.fitAllAction()->trigger();
        QCOMPARE(clock->cursor() + t->origin(), inside);
        QVERIFY(drawn().playhead);
        QVERIFY(drawn().boxes > 0);
    }

    // A run that ran out of memory before finishing a step: Fit step, Fit all and playback
    // all tell the run's own range, not one starting at zero.
    void outOfMemoryRunFitsAndPlaysItsRange() {
        pd::RunConfig c = test::small_dp();
        c.capacity_bytes = 64 * 1024;
        auto r = test::run_engine(c);
        QVERIFY(r->oom.has_value());
        VisualizerPanel panel;
        panel.resize(1200, 800);
        panel.show();
        QVERIFY(QTest::qWaitForWindowExposed(&panel));
        panel.setRun(c, r);
        TimelineView* t = panel.timeline();
        QCOMPARE(t->data().step_count(), 0);
        PlaybackClock* clock = panel.playback();
        panel.fitStepAction()->trigger();
        const TimeMapping stepped = t->mapping();
        const std::int64_t stepped_origin = t->origin();
        const auto [begin, end] = std::pair{clock->begin(), clock->end()};
        panel.fitAllAction()->trigger();
        QCOMPARE(t->mapping(), stepped);
        QCOMPARE(t->origin(), stepped_origin);
        QCOMPARE(clock->begin(), begin);
        QCOMPARE(clock->end(), end);
        QCOMPARE(clock->begin() + t->origin(), t->runRange().first);
        QCOMPARE(clock->end() + t->origin(), t->runRange().second);
        // With no step to pace it, the middle speed plays the whole run as one step.
        QCOMPARE(clock->traceNsPerSecond() * PlaybackClock::kSecondsPerStepAt1x,
                 static_cast<double>(end - begin));
        // The plot spans the run with a little air, not from zero.
        const double span = static_cast<double>(end - begin);
        const double plot_w = t->width() - TimelineView::kLeftMargin - TimelineView::kRightMargin;
        QVERIFY(stepped.start_ns <= static_cast<double>(begin));
        QVERIFY(stepped.start_ns >= static_cast<double>(begin) - 0.05 * span);
        QVERIFY(stepped.end_ns(plot_w) >= static_cast<double>(end));
        QVERIFY(stepped.end_ns(plot_w) <= static_cast<double>(end) + 0.05 * span);
    }

    // The ruler and the playback slider count from the same moment (the run's start), so
    // neither reads below zero: Fit step 2 no longer puts the ruler's zero at the step's start
    // while the slider counts from the run's, and a run that died before its first step does
    // not read thousands of milliseconds on the ruler while the slider reads a few.
    void rulerAndSliderCountFromOneZero_data() {
        QTest::addColumn<bool>("outOfMemory");
        QTest::newRow("fit step 2 of a data-parallel run") << false;
        QTest::newRow("a run out of memory before its first step") << true;
    }
    void rulerAndSliderCountFromOneZero() {
        QFETCH(bool, outOfMemory);
        pd::RunConfig c = test::small_dp();
        c.steps = 3;
        if (outOfMemory) c.capacity_bytes = 64 * 1024;
        const auto r = outOfMemory ? test::run_engine(c) : dp_;
        if (!outOfMemory) c = dp_config_;
        VisualizerPanel panel;
        panel.resize(1200, 800);
        panel.show();
        QVERIFY(QTest::qWaitForWindowExposed(&panel));
        panel.setRun(c, r);
        TimelineView* t = panel.timeline();
        PlaybackClock* clock = panel.playback();
        for (QAction* fit : {panel.fitStepAction(), panel.fitAllAction()}) {
            fit->trigger();
            // One zero: the ruler reads display time minus timeZero(), the slider the cursor
            // minus the clock's begin.
            QCOMPARE(t->timeZero(), clock->begin());
            const double plot_right = t->width() - TimelineView::kRightMargin;
            const auto ticks = ruler_ticks(t->mapping(), static_cast<double>(t->timeZero()),
                                           TimelineView::kLeftMargin, plot_right);
            QVERIFY(!ticks.empty());
            for (const auto& tick : ticks) QVERIFY(tick.reads_ns >= 0);
            // An event's details tell its time as the ruler under it reads it.
            const auto& events = t->data().trace().events;
            const auto first = std::min_element(
                events.begin(), events.end(), [](const pd::TraceEvent& a, const pd::TraceEvent& b) {
                    return a.start_ns < b.start_ns;
                });
            const std::int64_t reads = first->start_ns - t->origin() - clock->begin();
            QCOMPARE(reads, std::int64_t{0});
            const int index = static_cast<int>(first - events.begin());
            QVERIFY2(
                t->tooltipFor(index).contains(QStringLiteral("from %1 to").arg(duration_text(0.0))),
                qPrintable(t->tooltipFor(index)));
            // What the slider's label says at the cursor is what the ruler reads there.
            clock->setCursor((clock->begin() + clock->end()) / 2);
            const double x = t->mapping().x_of(static_cast<double>(clock->cursor()));
            QCOMPARE(std::llround(t->mapping().t_of(x) - static_cast<double>(t->timeZero())),
                     static_cast<long long>(clock->cursor() - clock->begin()));
        }
    }

    // Fit step and Fit all have keys (shown in their tooltips and menus).
    void fitShortcuts() {
        VisualizerPanel panel;
        QCOMPARE(panel.fitStepAction()->shortcut(), QKeySequence(Qt::Key_F));
        QCOMPARE(panel.fitAllAction()->shortcut(), QKeySequence(Qt::Key_0));
        QVERIFY(panel.fitStepAction()->toolTip().contains(QStringLiteral("(F)")));
        QVERIFY(panel.fitAllAction()->toolTip().contains(QStringLiteral("(0)")));
        panel.resize(1200, 800);
        panel.setRun(dp_config_, dp_);
        panel.show();
        panel.activateWindow();
        if (!QTest::qWaitForWindowActive(&panel)) QSKIP("no active window on this platform");
        panel.timeline()->setFocus();
        QSignalSpy all(panel.fitAllAction(), &QAction::triggered);
        QSignalSpy step(panel.fitStepAction(), &QAction::triggered);
        QTest::keyClick(panel.timeline(), Qt::Key_0);
        QCOMPARE(all.count(), 1);
        QVERIFY(!panel.timeline()->focusStep());
        QTest::keyClick(panel.timeline(), Qt::Key_F);
        QCOMPARE(step.count(), 1);
        QCOMPARE(panel.timeline()->focusStep(), std::optional<int>(1));
    }
};

QTEST_MAIN(TestPlayback)
#include "test_playback.moc"
