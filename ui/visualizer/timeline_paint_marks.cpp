// What is drawn over the rows: the ruler, step boundaries, send -> recv arrows, the hovered
// event, out-of-memory marks and the playhead.
#include <QFontMetricsF>
#include <QPolygonF>
#include <algorithm>
#include <cmath>

#include "visualizer/format.h"
#include "visualizer/timeline_painter.h"

namespace pd::vis {

using namespace timeline_geometry;

namespace {

QString ruler_text(double t_ns, double tick_ns) {
    double unit = 1.0;
    QString name = QStringLiteral("ns");
    if (tick_ns * 5 >= 1e9) {
        unit = 1e9;
        name = QStringLiteral("s");
    } else if (tick_ns * 5 >= 1e6) {
        unit = 1e6;
        name = QStringLiteral("ms");
    } else if (tick_ns * 5 >= 1e3) {
        unit = 1e3;
        name = QStringLiteral("µs");
    }
    const int decimals =
        std::max(0, static_cast<int>(std::ceil(-std::log10(tick_ns / unit) - 1e-9)));
    return QStringLiteral("%1 %2").arg(t_ns / unit, 0, 'f', decimals).arg(name);
}

// Cuts segment a-b to x0 <= x <= x1; false when nothing is left.
// The direction a -> b is kept (the arrow head stays at b).
bool clip_to_x_range(QPointF& a, QPointF& b, double x0, double x1) {
    if (std::max(a.x(), b.x()) < x0 || std::min(a.x(), b.x()) > x1) return false;
    const QPointF a0 = a, b0 = b;
    const double dx = b0.x() - a0.x();
    auto at = [&](double x) {
        return dx == 0 ? a0.y() : a0.y() + (b0.y() - a0.y()) * (x - a0.x()) / dx;
    };
    for (QPointF* p : {&a, &b}) {
        if (p->x() < x0) *p = QPointF(x0, at(x0));
        if (p->x() > x1) *p = QPointF(x1, at(x1));
    }
    return true;
}

// The plot area from the ruler down: marks cross every row.
QRectF marks_clip(const TimelineFrame& f) {
    return QRectF(f.plot_left, f.layout.ruler_top, f.plot_right - f.plot_left,
                  f.view.size.height() - f.layout.ruler_top);
}

}  // namespace

double ruler_tick_spacing_ns(const TimeMapping& m) {
    return ruler_tick_ns(m.ns_per_px, 90.0);
}

std::vector<RulerTick> ruler_ticks(const TimeMapping& m, double zero_ns, double plot_left,
                                   double plot_right) {
    std::vector<RulerTick> out;
    const double tick = ruler_tick_spacing_ns(m);
    // Ticks at round readings; nothing is left of the zero but the air before the run.
    const double first = std::max(0.0, std::ceil((m.t_of(plot_left) - zero_ns) / tick) * tick);
    for (double reads = first; m.x_of(reads + zero_ns) <= plot_right; reads += tick)
        out.push_back({m.x_of(reads + zero_ns), reads});
    return out;
}

QRectF oom_banner_rect(const QString& text, const QFontMetricsF& fm, double x, double top,
                       double line_h, double plot_left, double plot_right) {
    const double w = std::ceil(fm.horizontalAdvance(text)) + 10;
    const double plot_w = std::max(1.0, plot_right - plot_left);
    if (w <= plot_w) {
        double bx = x + 4;
        if (bx + w > plot_right) bx = std::max(plot_left, x - 4 - w);
        return {bx, top, w, line_h};
    }
    // Too long for one line of this plot: the plot's width, the text wrapped.
    const QRectF wrapped =
        fm.boundingRect(QRectF(0, 0, plot_w - 10, 1e6), Qt::AlignCenter | Qt::TextWordWrap, text);
    return {plot_left, top, plot_w, std::max(line_h, std::ceil(wrapped.height()) + 4)};
}

namespace timeline_paint {

TimelinePaintStats paint_ruler(const TimelineFrame& f) {
    QPainter& p = f.p;
    const TimelineLayout& l = f.layout;
    const TimeMapping& m = f.view.mapping;
    const QFontMetricsF fm(f.small, p.device());
    p.save();
    p.setFont(f.small);
    p.setPen(f.pal.muted);
    // The ruler counts from the run's start (View::time_zero_ns), as the playback slider
    // does: one clock on the screen, never below zero.
    p.drawText(QRectF(8, l.ruler_top + kRulerHeight / 2, kLeftMargin - 12, kRulerHeight / 2),
               Qt::AlignLeft | Qt::AlignVCenter, QStringLiteral("time from start"));
    const double tick = ruler_tick_spacing_ns(m);
    for (const RulerTick& t : ruler_ticks(m, f.zero, f.plot_left, f.plot_right)) {
        p.setPen(QPen(f.pal.grid, 1));
        p.drawLine(QPointF(t.x, l.ruler_top + kRulerHeight - 7),
                   QPointF(t.x, l.ruler_top + kRulerHeight));
        p.setPen(f.pal.muted);
        const QString text = ruler_text(t.reads_ns, tick);
        if (t.x + 3 + fm.horizontalAdvance(text) <= f.view.size.width() - 2)
            p.drawText(QPointF(t.x + 3, l.ruler_top + kRulerHeight - 7), text);
    }
    p.setPen(QPen(f.pal.grid, 1));
    p.drawLine(QPointF(f.plot_left, l.rows_top - 0.5), QPointF(f.plot_right, l.rows_top - 0.5));
    p.restore();
    return {};
}

namespace {

// Steps count from 1. After a restart the timeline's steps are numbered as they ran; each is
// labelled with the training step it ran, "again" when a restart ran it once more, and the
// step a failure struck says so.
QString step_label(const pd::Trace& trace, int s) {
    if (trace.restarts.empty() || s >= static_cast<int>(trace.trained_step.size()))
        return QStringLiteral("step %1").arg(s + 1);
    const int trained = trace.trained_step[static_cast<std::size_t>(s)];
    QString text = QStringLiteral("step %1").arg(trained + 1);
    for (const auto& r : trace.restarts)
        if (r.failed_at == s) return text + QStringLiteral(" (failed)");
    for (int i = 0; i < s; ++i)
        if (trace.trained_step[static_cast<std::size_t>(i)] == trained)
            return text + QStringLiteral(" (again)");
    return text;
}

}  // namespace

TimelinePaintStats paint_step_marks(const TimelineFrame& f) {
    // A thin line through every row at each step's start, and the step number on the ruler.
    QPainter& p = f.p;
    const TimelineData& data = f.scene.data;
    const QFontMetricsF fm(f.label_font, p.device());
    p.save();
    p.setClipRect(marks_clip(f));
    p.setFont(f.label_font);
    for (int s = 0; s < data.step_count(); ++s) {
        const auto r = data.step_range(s);
        if (!r) continue;
        const double x = f.x_of(static_cast<double>(r->first));
        if (x < f.plot_left - 1 || x > f.plot_right) continue;
        p.setPen(QPen(f.pal.grid, 1, Qt::DashLine));
        p.drawLine(QPointF(x, f.layout.ruler_top + 1), QPointF(x, f.rows_bottom));
        const double next_x = s + 1 < data.step_count() && data.step_range(s + 1)
                                  ? f.x_of(static_cast<double>(data.step_range(s + 1)->first))
                                  : f.x_of(static_cast<double>(r->second));
        const QString step_text = step_label(data.trace(), s);
        const double text_w = fm.horizontalAdvance(step_text);
        if (next_x - x > std::max(60.0, text_w + 8) && x + 4 + text_w < f.plot_right) {
            p.setPen(f.pal.text);
            p.drawText(QPointF(x + 4, f.layout.ruler_top + 12), step_text);
        }
    }
    // A restart: a line where the job started again, and what it resumed from.
    for (const auto& r : data.trace().restarts) {
        const double x = f.x_of(static_cast<double>(r.t_ns));
        if (x < f.plot_left - 1 || x > f.plot_right) continue;
        p.setPen(QPen(f.pal.oom, 2));
        p.drawLine(QPointF(x, f.layout.ruler_top + 1), QPointF(x, f.rows_bottom));
        const QString text =
            r.resumed_from >= 0
                ? QStringLiteral("restart: from step %1's checkpoint").arg(r.resumed_from)
                : QStringLiteral("restart: from scratch");
        if (x + 4 + fm.horizontalAdvance(text) < f.plot_right) {
            p.setPen(f.pal.oom);
            p.drawText(QPointF(x + 4, f.layout.ruler_top + 24), text);
        }
    }
    p.restore();
    return {};
}

TimelinePaintStats paint_flows(const TimelineFrame& f) {
    QPainter& p = f.p;
    const TimelineLayout& l = f.layout;
    const auto& events = f.scene.data.trace().events;
    TimelinePaintStats stats;
    std::vector<std::pair<QPointF, QPointF>> arrows;
    for (const auto& flow : f.scene.data.flows()) {
        const auto& s = events[static_cast<std::size_t>(flow.send_event)];
        const auto& r = events[static_cast<std::size_t>(flow.recv_event)];
        if (static_cast<double>(r.end_ns) < f.t0 || static_cast<double>(s.start_ns) > f.t_end)
            continue;
        if (static_cast<double>(r.end_ns) > f.cursor) continue;  // not arrived yet in playback
        if (s.device == r.device) continue;
        QPointF a(f.x_of(static_cast<double>(s.start_ns)), l.comm_top(s.device) + l.comm_h / 2);
        QPointF b(f.x_of(static_cast<double>(r.end_ns)), l.comm_top(r.device) + l.comm_h / 2);
        if (!clip_to_x_range(a, b, f.plot_left, f.plot_right)) continue;
        arrows.push_back({a, b});
    }
    p.save();
    // Dozens of arrows per pixel column say nothing; they return as the learner zooms in.
    if (static_cast<double>(arrows.size()) > (f.plot_right - f.plot_left) / 9.0) {
        stats.flows_hidden = !arrows.empty();
    } else {
        p.setClipRect(marks_clip(f));
        p.setRenderHint(QPainter::Antialiasing, true);
        p.setPen(QPen(f.pal.flow, 1.1));
        p.setBrush(f.pal.flow);
        for (const auto& [a, b] : arrows) {
            p.drawLine(a, b);
            const double angle = std::atan2(b.y() - a.y(), b.x() - a.x());
            const QPointF h1 = b - QPointF(std::cos(angle - 0.45) * 6, std::sin(angle - 0.45) * 6);
            const QPointF h2 = b - QPointF(std::cos(angle + 0.45) * 6, std::sin(angle + 0.45) * 6);
            p.drawPolygon(QPolygonF({b, h1, h2}));
            ++stats.flows;
        }
    }
    if (stats.flows_hidden) {
        p.setFont(f.small);
        p.setPen(f.pal.muted);
        p.drawText(
            QRectF(f.plot_left, f.rows_bottom - 2, f.plot_right - f.plot_left, kBottomPad + 12),
            Qt::AlignRight | Qt::AlignTop, QStringLiteral("zoom in to see send → recv arrows"));
    }
    p.restore();
    return stats;
}

TimelinePaintStats paint_highlight(const TimelineFrame& f) {
    const auto& events = f.scene.data.trace().events;
    const int i = f.view.highlighted_event;
    if (i < 0 || i >= static_cast<int>(events.size())) return {};
    const auto& e = events[static_cast<std::size_t>(i)];
    if (static_cast<double>(e.start_ns) > f.t_end) return {};
    const TimelineLayout& l = f.layout;
    const double top = l.top(e.device, e.stream);
    const double x0 = f.x_of(static_cast<double>(e.start_ns));
    const double x1 = std::max(x0 + 2, f.x_of(std::min(static_cast<double>(e.end_ns), f.t_end)));
    f.p.save();
    f.p.setClipRect(marks_clip(f));
    f.p.setPen(QPen(f.pal.highlight, 2));
    f.p.drawRect(QRectF(x0 - 1, top - 1, x1 - x0 + 2, l.height(e.stream) + 2));
    f.p.restore();
    return {};
}

TimelinePaintStats paint_oom_marks(const TimelineFrame& f) {
    const TimelineData& data = f.scene.data;
    const auto& events = data.trace().events;
    struct OomMark {
        int device;
        double t;
        QString text;
    };
    std::vector<OomMark> ooms;
    for (int i : data.oom_events()) {
        const auto& e = events[static_cast<std::size_t>(i)];
        ooms.push_back({e.device, static_cast<double>(e.start_ns), qs(e.label)});
    }
    const pd::RunResult* res = data.result();
    if (ooms.empty() && res && res->oom && res->oom->device >= 0 &&
        res->oom->device < data.devices()) {
        // Raised outside a stream (during set-up): mark it at that device's last activity.
        const auto& lane = data.lane(res->oom->device, pd::StreamKind::compute);
        double t = f.run_end;
        if (!lane.events_max_end.empty()) t = static_cast<double>(lane.events_max_end.back());
        ooms.push_back({res->oom->device, t, qs(res->oom->describe())});
    }
    if (ooms.empty()) return {};
    QPainter& p = f.p;
    const TimelineLayout& l = f.layout;
    p.save();
    p.setClipRect(marks_clip(f));
    p.setFont(f.label_font);
    const QFontMetricsF fm(f.label_font, p.device());
    for (const auto& [device, t, what] : ooms) {
        if (t > f.cursor) continue;
        const double x = f.x_of(t);
        if (x < f.plot_left - 200 || x > f.plot_right + 1) continue;
        const double top = l.compute_top(device) - 3;
        const double bottom = l.comm_top(device) + l.comm_h + 3;
        p.setPen(QPen(f.pal.oom, 2.5));
        p.drawLine(QPointF(x, top), QPointF(x, bottom));
        const QString text = what.isEmpty() ? QStringLiteral("OUT OF MEMORY")
                                            : QStringLiteral("OUT OF MEMORY — %1").arg(what);
        const QRectF box =
            oom_banner_rect(text, fm, x, top, l.compute_h + 2, f.plot_left, f.plot_right);
        p.fillRect(box, f.pal.oom);
        p.setPen(QColor(Qt::white));
        p.drawText(box.adjusted(5, 0, -5, 0), Qt::AlignCenter | Qt::TextWordWrap, text);
    }
    p.restore();
    return {};
}

TimelinePaintStats paint_playhead(const TimelineFrame& f) {
    if (!f.view.cursor_ns) return {};
    const double x = f.x_of(f.cursor);
    if (x < f.plot_left || x > f.plot_right) return {};
    QPainter& p = f.p;
    const double top = f.layout.ruler_top;
    p.save();
    p.setPen(QPen(f.pal.cursor, 2));
    p.drawLine(QPointF(x, top), QPointF(x, f.rows_bottom));
    p.setBrush(f.pal.cursor);
    p.setRenderHint(QPainter::Antialiasing, true);
    p.drawPolygon(QPolygonF({QPointF(x - 5, top), QPointF(x + 5, top), QPointF(x, top + 7)}));
    p.restore();
    TimelinePaintStats stats;
    stats.playhead = true;
    return stats;
}

}  // namespace timeline_paint

}  // namespace pd::vis
