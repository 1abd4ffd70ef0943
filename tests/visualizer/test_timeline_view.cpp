// The timeline drawn from a real run: colours where events are, grey in the bubble, merged
// sub-pixel boxes, the playback cursor hiding the future (and the view following it), a header
// and legend laid out whole at any width, hover/click/wheel and the keyboard.
#include <QPainter>
#include <QSignalSpy>
#include <QtTest>
#include <cmath>
#include <limits>
#include <optional>

#include "synthetic_trace.h"
#include "visualizer/event_text.h"
#include "visualizer/format.h"
#include "visualizer/timeline_view.h"
#include "visualizer_test_support.h"

using pd::vis::duration_text;
using pd::vis::TimelineHeaderLayout;
using pd::vis::TimelinePalette;
using pd::vis::TimelineScene;
using pd::vis::TimelineView;

namespace {

// Colours compared with a little tolerance for antialiasing at box edges.
bool near(QColor a, QColor b) {
    return qAbs(a.red() - b.red()) <= 6 && qAbs(a.green() - b.green()) <= 6 &&
           qAbs(a.blue() - b.blue()) <= 6;
}

const pd::TraceEvent* first_event(const pd::Trace& t, int device, pd::EventKind kind, int step) {
    for (const auto& e : t.events)
        if (e.device == device && e.kind == kind && e.step == step) return &e;
    return nullptr;
}

// The widest drawn box of a kind in a step on a device's compute lane: the real run's
// timings vary with machine load, and a wide box keeps the sample clear of borders.
const pd::vis::TimelineBox* widest_box(const TimelineView& t, int device, pd::EventKind kind,
                                       int step) {
    const pd::vis::TimelineBox* best = nullptr;
    const auto& events = t.data().trace().events;
    for (const auto& b : t.data().lane(device, pd::StreamKind::compute).boxes)
        if (b.kind == kind && events[static_cast<std::size_t>(b.first_event)].step == step &&
            (!best || b.end_ns - b.start_ns > best->end_ns - best->start_ns))
            best = &b;
    return best;
}

double mid(const pd::vis::TimelineBox& b) {
    return 0.5 * static_cast<double>(b.start_ns + b.end_ns);
}

}  // namespace

class TestTimelineView : public QObject {
    Q_OBJECT

    std::shared_ptr<const pd::RunResult> gpipe_;
    pd::RunMetrics metrics_;

    struct Picture {
        QImage image;
        TimelineView::View view;
        TimelineView::PaintStats stats;
    };
    Picture render(const TimelineView& t, std::optional<std::int64_t> cursor = std::nullopt) {
        Picture p;
        p.view = t.currentView(QSizeF(1200, t.preferredHeight()));
        p.view.palette = TimelinePalette::light_theme();
        p.view.cursor_ns = cursor;
        p.image = QImage(p.view.size.toSize(), QImage::Format_ARGB32_Premultiplied);
        QPainter painter(&p.image);
        p.stats = t.paint(painter, p.view);
        return p;
    }
    // A pixel inside device's compute lane at trace time t, `dy` below the lane's top (clear
    // of the micro-batch label in the middle).
    QPoint at(const TimelineView& t, const Picture& p, double trace_ns, int device, double dy) {
        const double x = p.view.mapping.x_of(trace_ns - static_cast<double>(p.view.origin_ns));
        const QRectF lane = t.laneRect(device, pd::StreamKind::compute, p.view.size);
        return {static_cast<int>(x), static_cast<int>(lane.top() + dy)};
    }

  private slots:
    void initTestCase() {
        const pd::RunConfig config = pd::vis::test::small_pipeline();
        gpipe_ = pd::vis::test::run_engine(config);
        QCOMPARE(gpipe_->status, pd::RunStatus::ok);
        metrics_ = pd::compute_metrics(gpipe_->trace, config);
        QVERIFY(metrics_.bubble.has_value());
    }

    void lanesAreSortedAndSearchable() {
        TimelineView t;
        t.setRun(gpipe_, metrics_.bubble);
        const auto& data = t.data();
        QCOMPARE(data.devices(), 2);
        QVERIFY(data.step_count() >= 2);
        QVERIFY(!data.flows().empty());
        for (const auto& lane : data.lanes()) {
            for (std::size_t k = 1; k < lane.boxes.size(); ++k)
                QVERIFY(lane.boxes[k - 1].start_ns <= lane.boxes[k].start_ns);
            // The binary search returns exactly the boxes a linear scan finds.
            const double t0 =
                static_cast<double>(data.begin_ns() + (data.end_ns() - data.begin_ns()) / 3);
            const double t1 = t0 + static_cast<double>(data.end_ns() - data.begin_ns()) / 5;
            const auto [b, e] = data.visible_boxes(lane, t0, t1);
            for (std::size_t k = 0; k < lane.boxes.size(); ++k) {
                const bool overlaps = static_cast<double>(lane.boxes[k].end_ns) >= t0 &&
                                      static_cast<double>(lane.boxes[k].start_ns) <= t1;
                if (overlaps)
                    QVERIFY2(k >= b && k < e, "a visible box is outside the searched range");
            }
        }
    }

    void forwardColourAtAForwardEventAndGreyInTheBubble() {
        TimelineView t;
        t.setRun(gpipe_, metrics_.bubble);
        t.fitStep(1);
        Picture p = render(t);
        const pd::Trace& trace = gpipe_->trace;
        const pd::TraceEvent* f0 = first_event(trace, 0, pd::EventKind::forward, 1);
        const pd::vis::TimelineBox* box = widest_box(t, 0, pd::EventKind::forward, 1);
        QVERIFY(f0 && box);
        const QPoint fwd = at(t, p, mid(*box), 0, 3);
        QVERIFY2(near(p.image.pixelColor(fwd), p.view.palette.forward),
                 qPrintable(QStringLiteral("expected forward colour at %1,%2, got %3")
                                .arg(fwd.x())
                                .arg(fwd.y())
                                .arg(p.image.pixelColor(fwd).name())));
        // Stage 1 has nothing to do until the first activations arrive: that is the bubble.
        const pd::TraceEvent* f1 = first_event(trace, 1, pd::EventKind::forward, 1);
        QVERIFY(f1);
        // The idle gap before it: from the last of stage 1's work that ended earlier.
        std::int64_t gap_begin = f0->start_ns;
        for (const auto& b : t.data().lane(1, pd::StreamKind::compute).boxes)
            if (b.end_ns <= f1->start_ns) gap_begin = std::max(gap_begin, b.end_ns);
        QVERIFY2(p.view.mapping.x_of(static_cast<double>(f1->start_ns - gap_begin)) -
                         p.view.mapping.x_of(0) >
                     6,
                 "the bubble is too narrow to sample at this size");
        // Sampled at five places across the gap: a send -> recv arrow may cross any one of
        // them (where depends on the run's measured times), never most.
        int idle = 0;
        QStringList seen;
        const double gap = static_cast<double>(f1->start_ns - gap_begin);
        for (double f : {0.2, 0.35, 0.5, 0.65, 0.8}) {
            const QPoint pt = at(t, p, static_cast<double>(gap_begin) + f * gap, 1, 3);
            const QColor c = p.image.pixelColor(pt);
            idle += near(c, p.view.palette.idle);
            seen << QStringLiteral("%1,%2 %3").arg(pt.x()).arg(pt.y()).arg(c.name());
        }
        QVERIFY2(idle >= 3, qPrintable(QStringLiteral("expected idle grey in the bubble, got ") +
                                       seen.join(QStringLiteral("; "))));
        QVERIFY(p.stats.labels > 0);  // micro-batch numbers fit at this zoom
    }

    void interleavedChunksAreToldApart() {
        pd::RunConfig c = pd::vis::test::small_pipeline(pd::PipelineSchedule::interleaved);
        c.chunks = 2;
        c.layers = 4;
        const auto r = pd::vis::test::run_engine(c);
        QCOMPARE(r->status, pd::RunStatus::ok);
        const auto m = pd::compute_metrics(r->trace, c);
        TimelineView t;
        t.setRun(r, m.bubble, {}, m.stage_boundaries);
        QVERIFY(t.data().interleaved());
        QCOMPARE(t.data().chunks_of(0), (std::vector<int>{0, 2}));
        int second = 0;
        for (const auto& b : t.data().lane(0, pd::StreamKind::compute).boxes)
            second += b.round == 1;
        QVERIFY(second > 0);
        // Without boundaries nothing is guessed.
        t.setRun(r, m.bubble);
        QVERIFY(!t.data().interleaved());
    }

    void tooltipSaysWhatAndWhere() {
        pd::TraceEvent e;
        e.device = 1;
        e.stream = pd::StreamKind::comm;
        e.kind = pd::EventKind::send;
        e.label = "activations";
        e.microbatch = 3;
        e.peer = 2;
        e.bytes = 2048;
        e.start_ns = 1500;
        e.end_ns = 4000;
        const QString text = pd::vis::describe_event(e, 1000);
        for (const char* wanted : {"send", "activations", "device 1", "comm stream",
                                   "micro-batch 3", "duration 2.50 µs", "2.0 KiB", "to device 2"})
            QVERIFY2(text.contains(QString::fromUtf8(wanted)), wanted);
        e.kind = pd::EventKind::recv;
        QVERIFY(pd::vis::describe_event(e, 0).contains(QStringLiteral("from device 2")));
    }

    void darkThemeUsesItsOwnColours() {
        TimelineView t;
        t.setRun(gpipe_, metrics_.bubble);
        t.setTheme(pd::vis::ThemeChoice::dark);
        QVERIFY(t.palette().dark);
        QVERIFY(t.palette().forward != TimelinePalette::light_theme().forward);
        QVERIFY(t.palette().background.lightness() < 80);
    }

    void cursorHidesEventsAfterIt() {
        TimelineView t;
        t.setRun(gpipe_, metrics_.bubble);
        t.fitStep(1);
        const pd::vis::TimelineBox* fwd_box = widest_box(t, 0, pd::EventKind::forward, 1);
        const pd::vis::TimelineBox* bwd_box = widest_box(t, 0, pd::EventKind::backward, 1);
        QVERIFY(fwd_box && bwd_box);
        // GPipe: stage 0 runs every forward, then every backward. Cursor in between.
        std::int64_t last_forward_end = 0, first_backward_start = bwd_box->start_ns;
        for (const auto& b : t.data().lane(0, pd::StreamKind::compute).boxes) {
            const int step = gpipe_->trace.events[static_cast<std::size_t>(b.first_event)].step;
            if (step != 1) continue;
            if (b.kind == pd::EventKind::forward)
                last_forward_end = std::max(last_forward_end, b.end_ns);
            if (b.kind == pd::EventKind::backward)
                first_backward_start = std::min(first_backward_start, b.start_ns);
        }
        QVERIFY(last_forward_end <= first_backward_start);
        const std::int64_t cursor = (last_forward_end + first_backward_start) / 2 - t.origin();
        Picture p = render(t, cursor);
        const QPoint fwd = at(t, p, mid(*fwd_box), 0, 3);
        const QPoint bwd = at(t, p, mid(*bwd_box), 0, 3);
        QVERIFY(near(p.image.pixelColor(fwd), p.view.palette.forward));
        QVERIFY2(near(p.image.pixelColor(bwd), p.view.palette.background),
                 qPrintable(p.image.pixelColor(bwd).name()));
        // Without a cursor the backward box is there.
        Picture all = render(t);
        QVERIFY(near(all.image.pixelColor(bwd), all.view.palette.backward));
        QVERIFY(all.stats.boxes > p.stats.boxes);
    }

    void subPixelBoxesAreMerged() {
        TimelineView t;
        t.setRun(pd::vis::test::synthetic_result(40000, 4));
        QCOMPARE(t.data().event_count(), std::size_t{40000});
        t.fitAll();
        TimelineView::View v = t.currentView(QSizeF(800, 400));
        v.mapping = TimelineView::fittedMapping(static_cast<double>(t.data().begin_ns()),
                                                static_cast<double>(t.data().end_ns()), 800);
        v.origin_ns = 0;
        QImage image(800, 400, QImage::Format_ARGB32_Premultiplied);
        QPainter painter(&image);
        const auto stats = t.paint(painter, v);
        const double plot_width = 800 - TimelineView::kLeftMargin - TimelineView::kRightMargin;
        const int lanes = 4 * 2;  // four devices, compute and comm lanes each
        QVERIFY(stats.boxes > 0);
        QVERIFY2(stats.boxes <= lanes * plot_width,
                 qPrintable(
                     QStringLiteral("%1 boxes painted for %2 lanes").arg(stats.boxes).arg(lanes)));
        QVERIFY(stats.boxes < 40000 / 4);
        // Zoomed in, boxes are drawn one by one with their labels.
        v.mapping = TimelineView::fittedMapping(0, 200000, 800);
        image.fill(Qt::white);
        const auto zoomed = t.paint(painter, v);
        QVERIFY(zoomed.labels > 0);
    }

    // Zoomed out, a run of boxes each under two pixels is drawn as one rectangle: hovering it
    // tells what it merges (how many events, their span, their summed duration), not the one
    // event nearest the pointer.
    void mergedBoxSaysWhatItMerges() {
        TimelineView t;
        t.setRun(pd::vis::test::synthetic_result(40000, 4));
        t.resize(800, static_cast<int>(t.preferredHeight()));
        t.show();
        QVERIFY(QTest::qWaitForWindowExposed(&t));
        t.fitAll();
        const TimelineView::View v = t.currentView();
        const auto& lane = t.data().lane(0, pd::StreamKind::compute);
        std::optional<pd::vis::MergedBoxes> merged;
        double x = TimelineView::kLeftMargin;
        for (; x < v.size.width() - TimelineView::kRightMargin && !merged; x += 1)
            merged = pd::vis::merged_boxes_at(t.data(), lane, v, x);
        QVERIFY(merged);
        QVERIFY(merged->boxes >= 2);
        QVERIFY(merged->events >= merged->boxes);
        // The events it stands for, counted from the trace: those of the lane's boxes that
        // start inside the merged span.
        int events = 0;
        std::int64_t busy = 0;
        for (const auto& b : lane.boxes)
            if (b.start_ns >= merged->start_ns && b.end_ns <= merged->end_ns) {
                events += b.event_count;
                busy += b.end_ns - b.start_ns;
            }
        QCOMPARE(merged->events, events);
        QCOMPARE(merged->busy_ns, busy);
        const QRectF rect = t.laneRect(0, pd::StreamKind::compute, v.size);
        const QPoint pos(static_cast<int>(std::floor(x - 1)), static_cast<int>(rect.top() + 5));
        QMouseEvent move(QEvent::MouseMove, QPointF(pos), QPointF(t.mapToGlobal(pos)), Qt::NoButton,
                         Qt::NoButton, Qt::NoModifier);
        QApplication::sendEvent(&t, &move);
        const QString text = t.hoverText();
        const double zero = static_cast<double>(t.labelOrigin());
        for (const QString& wanted :
             {QStringLiteral("%1 events merged").arg(events),
              QStringLiteral("from %1 to %2")
                  .arg(duration_text(static_cast<double>(merged->start_ns) - zero),
                       duration_text(static_cast<double>(merged->end_ns) - zero)),
              QStringLiteral("span %1").arg(
                  duration_text(static_cast<double>(merged->end_ns - merged->start_ns))),
              QStringLiteral("busy %1 in total").arg(duration_text(static_cast<double>(busy)))})
            QVERIFY2(text.contains(wanted), qPrintable(text + QStringLiteral(" lacks ") + wanted));
        QVERIFY2(!text.contains(QStringLiteral("duration")), qPrintable(text));
    }

    // A box drawn for consecutive events of one micro-batch (a forward's layers) says what it
    // holds before the event under the pointer.
    void oneBoxOfManyEventsSaysSo() {
        auto r = std::make_shared<pd::RunResult>();
        r->trace.devices = 1;
        r->trace.capacity_bytes = {std::size_t{1} << 30};
        for (int layer = 0; layer < 4; ++layer) {
            pd::TraceEvent e;
            e.kind = pd::EventKind::forward;
            e.microbatch = 2;
            e.step = 0;
            e.layer = layer;
            e.start_ns = 1000 + layer * 1500000;
            e.end_ns = e.start_ns + 1500000;
            r->trace.events.push_back(e);
        }
        TimelineView t;
        t.setRun(r);
        t.resize(1000, static_cast<int>(t.preferredHeight()));
        t.show();
        QVERIFY(QTest::qWaitForWindowExposed(&t));
        t.fitAll();
        const auto& lane = t.data().lane(0, pd::StreamKind::compute);
        QCOMPARE(lane.boxes.size(), std::size_t{1});
        QCOMPARE(lane.boxes[0].event_count, 4);
        const TimelineView::View v = t.currentView();
        const double x = v.mapping.x_of(1000 + 2.5 * 1500000 - static_cast<double>(v.origin_ns));
        const QRectF rect = t.laneRect(0, pd::StreamKind::compute, v.size);
        const QString text = t.tooltipAt(QPointF(x, rect.top() + 5));
        for (const char* wanted : {"One box: 4 forward events of micro-batch 2, layers 0–3",
                                   "span 6.00 ms", "busy 6.00 ms in total", "layer 2"})
            QVERIFY2(text.contains(QString::fromUtf8(wanted)), qPrintable(text));
    }

    // An out-of-memory banner says its whole message: beside its mark when it fits, else
    // wrapped across the plot (it ran past the plot's right edge, "… of 40.0 MiB capa").
    void outOfMemoryBannerIsWhole_data() {
        QTest::addColumn<double>("plotRight");
        QTest::addColumn<double>("markX");
        QTest::newRow("wide plot, mark at the left") << 1600.0 << 200.0;
        QTest::newRow("wide plot, mark at the right") << 1600.0 << 1590.0;
        QTest::newRow("plot narrower than the message, mark at the right") << 900.0 << 890.0;
        QTest::newRow("narrow plot, mark in the middle") << 500.0 << 300.0;
    }
    void outOfMemoryBannerIsWhole() {
        QFETCH(double, plotRight);
        QFETCH(double, markX);
        const QString text = QStringLiteral(
            "OUT OF MEMORY — device 0 out of memory: allocating 48.2 MiB of optimizer_state with "
            "16.1 MiB live of 40.0 MiB capacity");
        QFont font;
        font.setPixelSize(12);
        font.setBold(true);
        const QFontMetricsF fm(font);
        const double left = TimelineView::kLeftMargin;
        const QRectF box = pd::vis::oom_banner_rect(text, fm, markX, 50, 28, left, plotRight);
        QVERIFY(box.left() >= left);
        QVERIFY2(box.right() <= plotRight + 0.5, qPrintable(QString::number(box.right())));
        // The text, as drawn (5 px in from each side, wrapped at words), fits the box.
        const QRectF inner = box.adjusted(5, 0, -5, 0);
        const QRectF need =
            fm.boundingRect(QRectF(0, 0, inner.width(), 1e6), Qt::TextWordWrap, text);
        QVERIFY(need.width() <= inner.width() + 0.5);
        QVERIFY(need.height() <= inner.height() + 0.5);
    }

    // A new run: what the pointer showed of the last one is gone at once, not at the next
    // move of the mouse.
    void newRunClearsTheHover() {
        TimelineView t;
        t.resize(1200, static_cast<int>(t.preferredHeight()) + 20);
        t.setRun(gpipe_, metrics_.bubble);
        t.show();
        QVERIFY(QTest::qWaitForWindowExposed(&t));
        t.fitStep(1);
        Picture here;
        here.view = t.currentView();
        const pd::vis::TimelineBox* box = widest_box(t, 0, pd::EventKind::forward, 1);
        QVERIFY(box);
        const QPoint pos = at(t, here, mid(*box), 0, 5);
        QSignalSpy hovered(&t, &TimelineView::eventHovered);
        QSignalSpy texts(&t, &TimelineView::hoverTextChanged);
        QMouseEvent move(QEvent::MouseMove, QPointF(pos), QPointF(t.mapToGlobal(pos)), Qt::NoButton,
                         Qt::NoButton, Qt::NoModifier);
        QApplication::sendEvent(&t, &move);
        QCOMPARE(hovered.count(), 1);
        QVERIFY(hovered.last().first().toInt() >= 0);
        QVERIFY(!t.hoverText().isEmpty());
        t.setRun(pd::vis::test::synthetic_result(400, 2));
        QCOMPARE(hovered.count(), 2);
        QCOMPARE(hovered.last().first().toInt(), -1);
        QVERIFY(t.hoverText().isEmpty());
        QVERIFY(texts.last().first().toString().isEmpty());
    }

    // With many buckets, zoomed out: one box per bucket's all-reduce, its reduce-scatter half
    // then its all-gather half; zoomed in far enough: the ring steps with their index.
    void collectiveCallsAreOneBoxZoomedOut() {
        const pd::RunConfig config = pd::vis::test::small_dp();
        const auto r = pd::vis::test::run_engine(config);
        QCOMPARE(r->status, pd::RunStatus::ok);
        TimelineView t;
        t.setRun(r);
        const int n = config.devices;
        const auto& lane = t.data().lane(0, pd::StreamKind::comm);
        int calls = 0;
        for (const auto& rec : r->trace.collectives)
            if (rec.device == 0 && rec.op == "all_reduce") ++calls;
        QVERIFY2(calls >= 2 * config.steps, "the test needs several buckets per step");
        // Grouped by the trace's records: one call per all-reduce, n-1 steps of each phase.
        QCOMPARE(static_cast<int>(lane.collectives.size()), calls);
        for (const auto& c : lane.collectives) {
            QVERIFY(c.record >= 0);
            QCOMPARE(
                QString::fromStdString(r->trace.collectives[static_cast<std::size_t>(c.record)].op),
                QStringLiteral("all_reduce"));
            QCOMPARE(c.reduce_scatter_steps, n - 1);
            QCOMPARE(c.all_gather_steps, n - 1);
            QVERIFY(c.start_ns < c.split_ns && c.split_ns < c.end_ns);
            for (int k = c.first_box; k < c.first_box + c.box_count; ++k) {
                const auto& e = r->trace.events[static_cast<std::size_t>(
                    lane.boxes[static_cast<std::size_t>(k)].first_event)];
                QCOMPARE(e.step, c.step);
                QCOMPARE(e.step_index, (k - c.first_box) % (n - 1));
            }
        }
        QCOMPARE(lane.collective_boxes.size(), lane.boxes.size() -
                                                   static_cast<std::size_t>(calls * 2 * (n - 1)) +
                                                   static_cast<std::size_t>(2 * calls));
        QVERIFY(lane.median_ring_step_ns > 0);

        // Look at the second call of step 1, with a ring step 4 px wide (zoomed out) and
        // then 40 px wide (zoomed in).
        const pd::vis::TimelineCollective* call = nullptr;
        int seen = 0;
        for (const auto& c : lane.collectives)
            if (c.step == 1 && seen++ == 1) call = &c;
        QVERIFY(call);
        auto picture = [&](double step_px) {
            Picture p;
            p.view = t.currentView(QSizeF(1200, t.preferredHeight()));
            p.view.palette = TimelinePalette::light_theme();
            p.view.focus_step.reset();
            p.view.origin_ns = 0;
            p.view.mapping.left_px = TimelineView::kLeftMargin;
            p.view.mapping.ns_per_px = static_cast<double>(lane.median_ring_step_ns) / step_px;
            // The call's start a little right of the plot's left edge.
            p.view.mapping.start_ns =
                static_cast<double>(call->start_ns) - 20 * p.view.mapping.ns_per_px;
            p.image = QImage(p.view.size.toSize(), QImage::Format_ARGB32_Premultiplied);
            QPainter painter(&p.image);
            p.stats = t.paint(painter, p.view);
            return p;
        };
        const QRectF comm = t.laneRect(0, pd::StreamKind::comm, QSizeF(1200, t.preferredHeight()));
        auto colour_at = [&](const Picture& p, double trace_ns) {
            return p.image.pixelColor(static_cast<int>(p.view.mapping.x_of(trace_ns)),
                                      static_cast<int>(comm.top() + 3));
        };
        const Picture out = picture(4.0);
        QVERIFY(TimelineView::collectivesCollapsed(lane, out.view.mapping.ns_per_px));
        QVERIFY(out.stats.collective_calls > 0);
        QCOMPARE(out.stats.ring_steps, 0);
        // The halves in their phase colours, the split where the reduce-scatter ended.
        const double rs_mid = 0.5 * static_cast<double>(call->start_ns + call->split_ns);
        const double ag_mid = 0.5 * static_cast<double>(call->split_ns + call->end_ns);
        QVERIFY2(near(colour_at(out, rs_mid), out.view.palette.reduce_scatter),
                 qPrintable(colour_at(out, rs_mid).name()));
        QVERIFY2(near(colour_at(out, ag_mid), out.view.palette.all_gather),
                 qPrintable(colour_at(out, ag_mid).name()));

        const Picture in = picture(40.0);
        QVERIFY(!TimelineView::collectivesCollapsed(lane, in.view.mapping.ns_per_px));
        QCOMPARE(in.stats.collective_calls, 0);
        QVERIFY(in.stats.ring_steps >= 2 * (n - 1));
        QVERIFY(in.stats.labels >= 2 * (n - 1));  // each step says its index

        // Hovering a zoomed-out call describes the call; zoomed in, just the ring step.
        const int first_step = lane.boxes[static_cast<std::size_t>(call->first_box)].first_event;
        QCOMPARE(t.data().collective_of(lane, first_step),
                 static_cast<int>(call - lane.collectives.data()));
        t.setMapping(out.view.mapping, 0);
        const QString zoomed_out = t.tooltipFor(first_step);
        QVERIFY2(zoomed_out.contains(QStringLiteral("all-reduce")), qPrintable(zoomed_out));
        QVERIFY2(
            zoomed_out.contains(QStringLiteral("%1 reduce-scatter + %1 all-gather").arg(n - 1)),
            qPrintable(zoomed_out));
        t.setMapping(in.view.mapping, 0);
        QVERIFY(!t.tooltipFor(first_step).contains(QStringLiteral("zoom in")));
    }

    // ZeRO-2 reduce-scatters gradients and later all-gathers parameters: two calls, never one
    // all-reduce, even where the second follows the first directly.
    void separateCallsAreNotJoined() {
        pd::RunConfig config = pd::vis::test::small_dp();
        config.strategy = pd::StrategyKind::zero2;
        const auto r = pd::vis::test::run_engine(config);
        QCOMPARE(r->status, pd::RunStatus::ok);
        TimelineView t;
        t.setRun(r);
        const auto& lane = t.data().lane(1, pd::StreamKind::comm);
        int rs = 0, ag = 0;
        for (const auto& c : lane.collectives) {
            QVERIFY(c.record >= 0);
            const std::string& op = r->trace.collectives[static_cast<std::size_t>(c.record)].op;
            if (op == "reduce_scatter") {
                ++rs;
                QCOMPARE(c.all_gather_steps, 0);
                QCOMPARE(c.reduce_scatter_steps, config.devices - 1);
            } else {
                QCOMPARE(QString::fromStdString(op), QStringLiteral("all_gather"));
                ++ag;
                QCOMPARE(c.reduce_scatter_steps, 0);
                QCOMPARE(c.all_gather_steps, config.devices - 1);
            }
        }
        QVERIFY(rs > 0 && ag > 0);
    }

    // A trace without collective records (hand-made): calls are told apart by the ring
    // steps' own order, 0..n-2 of reduce-scatter then 0..n-2 of all-gather, within a step.
    void ringOrderGroupsWithoutRecords() {
        TimelineView t;
        t.setRun(pd::vis::test::synthetic_result(4000, 2));
        const auto& lane = t.data().lane(0, pd::StreamKind::comm);
        QVERIFY(!lane.collectives.empty());
        int full = 0;
        for (const auto& c : lane.collectives) {
            QCOMPARE(c.record, -1);
            QVERIFY(c.reduce_scatter_steps <= 3 && c.all_gather_steps <= 3);
            full += c.reduce_scatter_steps == 3 && c.all_gather_steps == 3;
        }
        QVERIFY(full > static_cast<int>(lane.collectives.size()) / 2);
    }

    // "Fit step 1" starts at step 1's first event, and a device still finishing step 0's
    // optimizer inside step 1's range is drawn faded, not as step 1's optimizer.
    void fitStepShowsOnlyThatStep() {
        auto r = std::make_shared<pd::RunResult>();
        pd::Trace& tr = r->trace;
        tr.clock = pd::ClockMode::device;
        tr.devices = 2;
        auto add = [&](int device, pd::EventKind kind, int step, std::int64_t s, std::int64_t e) {
            pd::TraceEvent ev;
            ev.device = device;
            ev.kind = kind;
            ev.step = step;
            ev.start_ns = s;
            ev.end_ns = e;
            tr.events.push_back(ev);
        };
        // Device 1 is slower: its step-0 optimizer runs while device 0 starts step 1.
        add(0, pd::EventKind::forward, 0, 0, 100000);
        add(0, pd::EventKind::optimizer, 0, 100000, 150000);
        add(0, pd::EventKind::forward, 1, 150000, 300000);
        add(0, pd::EventKind::optimizer, 1, 300000, 350000);
        add(1, pd::EventKind::forward, 0, 0, 120000);
        add(1, pd::EventKind::optimizer, 0, 120000, 220000);
        add(1, pd::EventKind::forward, 1, 220000, 330000);
        add(1, pd::EventKind::optimizer, 1, 330000, 360000);
        TimelineView t;
        t.setRun(r);
        t.resize(1200, static_cast<int>(t.preferredHeight()));
        t.fitStep(1);
        QCOMPARE(t.focusStep(), std::optional<int>(1));
        QCOMPARE(t.origin(), std::int64_t{150000});  // device 0's step-1 forward
        Picture p = render(t);
        // The plot's left edge is the step's first event: nothing earlier is in view.
        QVERIFY(std::abs(p.view.mapping.t_of(TimelineView::kLeftMargin)) < 1.0);
        const QPoint slow_opt = at(t, p, 185000, 1, 3);
        const QColor c = p.image.pixelColor(slow_opt);
        QVERIFY2(!near(c, p.view.palette.optimizer), qPrintable(c.name()));
        QVERIFY2(c.lightness() > p.view.palette.optimizer.lightness(), qPrintable(c.name()));
        QCOMPARE(p.stats.faded, 1);
        // Step 1's own optimizer keeps its colour.
        QVERIFY(near(p.image.pixelColor(at(t, p, 325000, 0, 3)), p.view.palette.optimizer));
        // The whole run shows every step alike.
        t.fitAll();
        QVERIFY(!t.focusStep());
        Picture all = render(t);
        QVERIFY(near(all.image.pixelColor(at(t, all, 185000, 1, 3)), all.view.palette.optimizer));
        QCOMPARE(all.stats.faded, 0);
    }

    // On a real data-parallel run the step range is exactly its events' extent.
    void stepRangeIsItsEvents() {
        pd::RunConfig config = pd::vis::test::small_dp();
        config.steps = 3;
        const auto r = pd::vis::test::run_engine(config);
        TimelineView t;
        t.setRun(r);
        for (int step = 0; step < config.steps; ++step) {
            std::int64_t first = std::numeric_limits<std::int64_t>::max(), last = 0;
            for (const auto& e : r->trace.events)
                if (e.step == step && e.kind != pd::EventKind::wait) {
                    first = std::min(first, e.start_ns);
                    last = std::max(last, e.end_ns);
                }
            const auto range = t.data().step_range(step);
            QVERIFY(range);
            QCOMPARE(range->first, first);
            QCOMPARE(range->second, last);
        }
        t.fitStep(1);
        QCOMPARE(t.origin(), t.data().step_range(1)->first);
        QCOMPARE(t.currentView().focus_step, std::optional<int>(1));
    }

    void hoverClickAndWheel() {
        TimelineView t;
        t.resize(1200, static_cast<int>(t.preferredHeight()) + 20);
        t.setRun(gpipe_, metrics_.bubble);
        t.show();
        QVERIFY(QTest::qWaitForWindowExposed(&t));
        t.fitStep(1);
        QImage shot = t.grab().toImage();
        Picture here;
        here.image = shot.convertToFormat(QImage::Format_ARGB32);
        here.view = t.currentView();
        const pd::vis::TimelineBox* box = widest_box(t, 0, pd::EventKind::forward, 1);
        QVERIFY(box);
        const QPoint pos = at(t, here, mid(*box), 0, 5);
        QSignalSpy clicked(&t, &TimelineView::eventClicked);
        QTest::mouseClick(&t, Qt::LeftButton, {}, pos);
        QCOMPARE(clicked.count(), 1);
        const auto e = clicked.first().first().value<pd::TraceEvent>();
        QCOMPARE(e.kind, pd::EventKind::forward);
        QCOMPARE(e.device, 0);
        QCOMPARE(t.selectedEvent() >= 0, true);

        // One wheel notch zooms in by 1.25x and keeps the time under the pointer.
        QSignalSpy mapped(&t, &TimelineView::mappingChanged);
        const double before_t = t.mapping().t_of(pos.x());
        const double before_scale = t.mapping().ns_per_px;
        QWheelEvent wheel(QPointF(pos), QPointF(t.mapToGlobal(pos)), QPoint(), QPoint(0, 120),
                          Qt::NoButton, Qt::NoModifier, Qt::NoScrollPhase, false);
        QApplication::sendEvent(&t, &wheel);
        QCOMPARE(mapped.count(), 1);
        QVERIFY(qAbs(t.mapping().ns_per_px - before_scale / 1.25) < 1e-6 * before_scale);
        QVERIFY(qAbs(t.mapping().t_of(pos.x()) - before_t) < 1.0);

        // Dragging pans by the distance moved.
        const double start = t.mapping().start_ns;
        QTest::mousePress(&t, Qt::LeftButton, {}, pos);
        QMouseEvent move(QEvent::MouseMove, QPointF(pos + QPoint(100, 0)),
                         QPointF(t.mapToGlobal(pos + QPoint(100, 0))), Qt::NoButton, Qt::LeftButton,
                         Qt::NoModifier);
        QApplication::sendEvent(&t, &move);
        QTest::mouseRelease(&t, Qt::LeftButton, {}, pos + QPoint(100, 0));
        QVERIFY(qAbs(t.mapping().start_ns - (start - 100 * t.mapping().ns_per_px)) < 1.0);
    }

    // The painting steps together draw what the one paint() drew: a playhead when the cursor
    // is in view, and the header's lines as laid out.
    void paintStepsReportWhatTheyDrew() {
        TimelineView t;
        t.setRun(gpipe_, metrics_.bubble, QStringLiteral("GPipe, 2 stages"));
        t.fitStep(1);
        const Picture all = render(t);
        QVERIFY(all.stats.boxes > 0);
        QVERIFY(!all.stats.playhead);  // no cursor: the whole run, no line
        // Title and clock, legend, bubble line.
        QCOMPARE(all.stats.header_lines, 3);
        const std::int64_t mid_step =
            (t.data().step_range(1)->second - t.data().step_range(1)->first) / 2;
        const Picture half = render(t, mid_step);
        QVERIFY(half.stats.playhead);
        QVERIFY(half.stats.boxes < all.stats.boxes);
    }

    // Every legend entry is drawn whole: a narrow picture wraps the legend onto more rows
    // instead of dropping entries, and no entry runs past the right edge.
    void legendWrapsInsteadOfCutting_data() {
        QTest::addColumn<double>("width");
        QTest::addColumn<bool>("oneRow");
        QTest::newRow("1600 wide: one row") << 1600.0 << true;
        QTest::newRow("700 wide: wraps") << 700.0 << false;
        QTest::newRow("420 wide: wraps more") << 420.0 << false;
    }
    void legendWrapsInsteadOfCutting() {
        QFETCH(double, width);
        QFETCH(bool, oneRow);
        pd::RunConfig config = pd::vis::test::small_dp();
        const auto r = pd::vis::test::run_engine(config);
        TimelineView t;
        t.setRun(r);
        const QString title;
        const std::optional<pd::BubbleMetrics> none;
        const TimelineScene scene{t.data(), none, title};
        const TimelineHeaderLayout wide = pd::vis::timeline_header_layout(
            scene, TimelinePalette::light_theme(), 5000, true, true);
        const TimelineHeaderLayout h = pd::vis::timeline_header_layout(
            scene, TimelinePalette::light_theme(), width, true, true);
        QCOMPARE(h.legend.size(), wide.legend.size());
        QVERIFY(h.legend.size() >= 5);  // forward, backward, optimizer, RS, AG, idle ...
        QCOMPARE(h.legend_rows == 1, oneRow);
        const QFontMetricsF fm([] {
            QFont f;
            f.setPixelSize(11);
            return f;
        }());
        for (const auto& e : h.legend)
            QVERIFY2(e.at.x() + 16 + fm.horizontalAdvance(e.text) <= width - 8 || e.at.x() <= 8,
                     qPrintable(e.text));
        // The painted picture draws every entry and gives the extra rows their height.
        TimelineView::View v = t.currentView(QSizeF(width, t.preferredHeight(true, true, width)));
        QImage image(v.size.toSize(), QImage::Format_ARGB32_Premultiplied);
        QPainter painter(&image);
        const auto stats = t.paint(painter, v);
        QCOMPARE(stats.legend_entries, static_cast<int>(h.legend.size()));
        // The painter words the ring-step hint by whether this view shows the steps (which
        // depends on the run's measured times), so its rows follow one of the two layouts.
        const TimelineHeaderLayout shown = pd::vis::timeline_header_layout(
            scene, TimelinePalette::light_theme(), width, true, false);
        QVERIFY2(stats.legend_rows == h.legend_rows || stats.legend_rows == shown.legend_rows,
                 qPrintable(QStringLiteral("%1 rows painted, layouts %2 / %3")
                                .arg(stats.legend_rows)
                                .arg(h.legend_rows)
                                .arg(shown.legend_rows)));
        QVERIFY(t.preferredHeight(true, true, width) >=
                t.preferredHeight(true, true, 5000) + 18.0 * (h.legend_rows - 1));
    }

    // The run's title never runs into the clock and link-model line: beside it when both fit,
    // on a line of its own when not.
    void titleAndClockDoNotOverlap() {
        TimelineView t;
        const QString title =
            QStringLiteral("Pipeline parallelism (GPipe), 2 stages × 4 micro-batches");
        t.setRun(gpipe_, metrics_.bubble, title);
        const TimelineScene scene{t.data(), metrics_.bubble, title};
        const auto pal = TimelinePalette::light_theme();
        const TimelineHeaderLayout wide =
            pd::vis::timeline_header_layout(scene, pal, 1600, true, false);
        QCOMPARE(wide.title_beside, title);
        QVERIFY(wide.title_lines.isEmpty());
        const TimelineHeaderLayout narrow =
            pd::vis::timeline_header_layout(scene, pal, 760, true, false);
        QVERIFY(narrow.title_beside.isEmpty());
        QCOMPARE(narrow.title_lines, QStringList{title});
        QVERIFY(narrow.height > wide.height);
        // The long bubble line wraps at its separators rather than being cut.
        const TimelineHeaderLayout tiny =
            pd::vis::timeline_header_layout(scene, pal, 420, true, false);
        QVERIFY(tiny.bubble_lines.size() > wide.bubble_lines.size());
        QVERIFY(tiny.bubble_lines.join(QString()).contains(QStringLiteral("theoretical")));
    }

    // Scrubbing back to a moment left of the view brings the view to it: the playhead is in
    // sight and the lanes before it are drawn, not blank.
    void viewFollowsTheCursorBackAndForth() {
        TimelineView t;
        t.resize(1200, static_cast<int>(t.preferredHeight()));
        t.setRun(gpipe_, metrics_.bubble);
        t.resize(1200, static_cast<int>(t.preferredHeight()));
        t.fitStep(1);
        QSignalSpy mapped(&t, &TimelineView::mappingChanged);
        const double plot_w = 1200 - TimelineView::kLeftMargin - TimelineView::kRightMargin;
        auto in_view = [&](std::int64_t c) {
            const double x = t.mapping().x_of(static_cast<double>(c));
            return x >= TimelineView::kLeftMargin && x <= TimelineView::kLeftMargin + plot_w;
        };
        // Inside the view: nothing moves.
        const std::int64_t inside = (t.data().step_range(1)->second - t.origin()) / 2;
        t.setPlaybackCursor(inside);
        QCOMPARE(mapped.count(), 0);
        // Back into step 0, which lies left of the fitted step 1.
        const auto step0 = *t.data().step_range(0);
        const std::int64_t back = (step0.first + step0.second) / 2 - t.origin();
        QVERIFY(!in_view(back));
        t.setPlaybackCursor(back);
        QCOMPARE(mapped.count(), 1);
        QVERIFY(in_view(back));
        const Picture p = render(t, back);
        QVERIFY(p.stats.playhead);
        QVERIFY(p.stats.boxes > 0);
        // Forward past the right edge pages on.
        const std::int64_t later = t.data().end_ns() - t.origin() - 1;
        const bool was_in_view = in_view(later);
        t.setPlaybackCursor(later);
        QVERIFY(in_view(later));
        QCOMPARE(mapped.count(), was_in_view ? 1 : 2);
    }

    // A run that finished no step (out of memory first) fits its whole run for "Fit step" on
    // the same origin as "Fit all".
    void stepLessRunFitsItsRealRange() {
        pd::RunConfig c = pd::vis::test::small_dp();
        c.capacity_bytes = 64 * 1024;
        const auto r = pd::vis::test::run_engine(c);
        QVERIFY(r->oom.has_value());
        TimelineView t;
        t.resize(1200, 300);
        t.setRun(r);
        QCOMPARE(t.data().step_count(), 0);
        const auto fit = t.stepFit(t.defaultStep());
        QCOMPARE(fit.origin_ns, std::int64_t{0});
        QCOMPARE(fit.begin_ns, t.runRange().first);
        QCOMPARE(fit.end_ns, t.runRange().second);
        QVERIFY(!fit.is_step);
        t.fitStep(t.defaultStep());
        const auto stepped = t.mapping();
        t.fitAll();
        QCOMPARE(t.mapping(), stepped);
        QCOMPARE(t.origin(), std::int64_t{0});
    }

    // Perfetto's keys: W/S and +/- zoom (around the pointer when it is over the plot), A/D
    // and the arrows pan by an eighth of the plot.
    void keyboardZoomAndPan_data() {
        QTest::addColumn<int>("key");
        QTest::addColumn<double>("zoom");  // factor on pixels per ns
        QTest::addColumn<double>("pan");   // plot widths the view moves later
        QTest::newRow("W zooms in") << int(Qt::Key_W) << TimelineView::kKeyZoomFactor << 0.0;
        QTest::newRow("+ zooms in") << int(Qt::Key_Plus) << TimelineView::kKeyZoomFactor << 0.0;
        QTest::newRow("S zooms out") << int(Qt::Key_S) << 1 / TimelineView::kKeyZoomFactor << 0.0;
        QTest::newRow("- zooms out")
            << int(Qt::Key_Minus) << 1 / TimelineView::kKeyZoomFactor << 0.0;
        QTest::newRow("A pans earlier") << int(Qt::Key_A) << 1.0 << -TimelineView::kKeyPanFraction;
        QTest::newRow("Left pans earlier")
            << int(Qt::Key_Left) << 1.0 << -TimelineView::kKeyPanFraction;
        QTest::newRow("D pans later") << int(Qt::Key_D) << 1.0 << TimelineView::kKeyPanFraction;
        QTest::newRow("Right pans later")
            << int(Qt::Key_Right) << 1.0 << TimelineView::kKeyPanFraction;
    }
    void keyboardZoomAndPan() {
        QFETCH(int, key);
        QFETCH(double, zoom);
        QFETCH(double, pan);
        TimelineView t;
        t.resize(1200, 400);
        t.setRun(gpipe_, metrics_.bubble);
        t.fitStep(1);
        QCursor::setPos(t.mapToGlobal(QPoint(-50, -50)));  // pointer away: the centre anchors
        const double plot_w = 1200 - TimelineView::kLeftMargin - TimelineView::kRightMargin;
        const double centre_x = TimelineView::kLeftMargin + plot_w / 2;
        const auto before = t.mapping();
        QSignalSpy mapped(&t, &TimelineView::mappingChanged);
        QTest::keyClick(&t, static_cast<Qt::Key>(key));
        QCOMPARE(mapped.count(), 1);
        const auto after = t.mapping();
        QVERIFY(qAbs(before.ns_per_px / after.ns_per_px - zoom) < 1e-9);
        if (pan == 0.0)
            QVERIFY(qAbs(after.t_of(centre_x) - before.t_of(centre_x)) < 1.0);
        else
            QVERIFY(qAbs(after.start_ns - (before.start_ns + pan * plot_w * before.ns_per_px)) <
                    1.0);
    }
    void keyboardZoomAnchorsAtThePointer() {
        TimelineView t;
        t.resize(1200, 400);
        t.setRun(gpipe_, metrics_.bubble);
        t.show();
        QVERIFY(QTest::qWaitForWindowExposed(&t));
        t.fitStep(1);
        const QPoint pointer(300, 200);
        QCursor::setPos(t.mapToGlobal(pointer));
        if (t.mapFromGlobal(QCursor::pos()) != pointer)
            QSKIP("this platform cannot place the pointer");
        const double centre_x = TimelineView::kLeftMargin +
                                (1200 - TimelineView::kLeftMargin - TimelineView::kRightMargin) / 2;
        const double under = t.mapping().t_of(pointer.x());
        const double at_centre = t.mapping().t_of(centre_x);
        QTest::keyClick(&t, Qt::Key_W);
        QVERIFY(qAbs(t.mapping().t_of(pointer.x()) - under) < 1.0);
        QVERIFY(qAbs(t.mapping().t_of(centre_x) - at_centre) > 1.0);  // not the centre kept
    }
};

QTEST_MAIN(TestTimelineView)
#include "test_timeline_view.moc"
