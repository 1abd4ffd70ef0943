#include "visualizer/timeline_view.h"

#include <QEvent>
#include <QFontMetricsF>
#include <QKeyEvent>
#include <QMouseEvent>
#include <QPainter>
#include <QPainterPath>
#include <QStringList>
#include <QToolTip>
#include <QWheelEvent>
#include <algorithm>
#include <array>
#include <cmath>

#include "visualizer/event_text.h"
#include "visualizer/format.h"

namespace pd::vis {

namespace {

// "Pipeline bubble (idle share of steps 2–5): measured 31% · predicted from this run's stage
// times 30% · theoretical 27% = (p−1)/(m+p−1) ...": the three figures the metrics panel explains.
QString bubble_header_text(const pd::BubbleMetrics& b, const pd::StepRange& steps,
                           const QString& formula) {
    QString share = QStringLiteral("the step");
    if (steps.count() == 1)
        share = QStringLiteral("step %1").arg(steps.first + 1);
    else if (steps.count() > 1)
        share = QStringLiteral("steps %1–%2").arg(steps.first + 1).arg(steps.last + 1);
    QString text = QStringLiteral("Pipeline bubble (idle share of %1): measured %2")
                       .arg(share, percent_text(b.measured));
    if (b.predicted)
        text += QStringLiteral("  ·  predicted from this run's stage times %1")
                    .arg(percent_text(b.predicted->fraction));
    return text +
           QStringLiteral("  ·  theoretical %1 = %2").arg(percent_text(b.theoretical), formula);
}

constexpr double kHeaderLine = 18.0;

// "   ·   4 virtual devices share one GPU" when devices of a CUDA run share a GPU; the trace's
// device names say so ("..., virtual device 2 of 4 on this GPU").
QString virtual_gpu_note(const pd::Trace& trace) {
    int shared = 0;
    for (const std::string& name : trace.device_names)
        if (name.find("virtual device") != std::string::npos) ++shared;
    if (shared == 0) return QStringLiteral("   ·   Transfers: GPU copies, each device its own GPU");
    return QStringLiteral(
               "   ·   %1 virtual devices share the GPU (each its own streams and "
               "memory budget)")
        .arg(shared);
}
constexpr double kRulerHeight = 34.0;  // step names above, tick labels below
constexpr double kRowGap = 10.0;
constexpr double kBottomPad = 6.0;
constexpr double kMinBoxPx = 2.0;        // narrower boxes are merged per pixel (hotspot)
constexpr double kMinGapLabelPx = 56.0;  // idle gaps this wide are labelled
constexpr std::size_t kEventKinds = static_cast<std::size_t>(pd::EventKind::collective) + 1;

QFont pixel_font(int px, bool bold = false) {
    QFont f;
    f.setPixelSize(px);
    f.setBold(bold);
    return f;
}

QString box_label(const TimelineBox& b, bool wide) {
    using pd::EventKind;
    switch (b.kind) {
        case EventKind::forward:
        case EventKind::backward:
            if (b.microbatch >= 0) return QString::number(b.microbatch);
            return b.kind == EventKind::forward ? QStringLiteral("F") : QStringLiteral("B");
        case EventKind::optimizer:
            return wide ? QStringLiteral("optimizer") : QStringLiteral("opt");
        case EventKind::reduce_scatter_step:
            return wide ? QStringLiteral("RS %1").arg(b.step_index) : QString::number(b.step_index);
        case EventKind::all_gather_step:
            return wide ? QStringLiteral("AG %1").arg(b.step_index) : QString::number(b.step_index);
        case EventKind::send:
            return b.microbatch >= 0 && !wide ? QString::number(b.microbatch)
                                              : QStringLiteral("send");
        case EventKind::recv:
            return b.microbatch >= 0 && !wide ? QString::number(b.microbatch)
                                              : QStringLiteral("recv");
        case EventKind::broadcast:
            return QStringLiteral("bcast");
        case EventKind::collective:
            return wide ? QStringLiteral("NCCL") : QStringLiteral("C");
        case EventKind::copy:
            return QStringLiteral("copy");
        case EventKind::wait:
        case EventKind::oom:
            break;
    }
    return {};
}

// A zoomed-out half of a collective call, longest form first: "reduce-scatter · 3 steps",
// "RS ×3", "RS".
QStringList half_labels(const TimelineBox& b) {
    const bool rs = b.kind == pd::EventKind::reduce_scatter_step;
    const QString name = rs ? QStringLiteral("reduce-scatter") : QStringLiteral("all-gather");
    const QString abbrev = rs ? QStringLiteral("RS") : QStringLiteral("AG");
    return {QStringLiteral("%1 · %2 steps").arg(name).arg(b.event_count),
            QStringLiteral("%1 ×%2").arg(abbrev).arg(b.event_count), abbrev};
}

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

struct LegendItem {
    QColor color;
    QString text;
    bool hatched = false;
};

}  // namespace

struct TimelineView::Layout {
    double header_h = 0;
    double ruler_top = 0;
    double rows_top = 0;
    double compute_h = 26;
    double comm_h = 16;
    double row_h = 52;
    double compute_top(int device) const { return rows_top + device * row_h; }
    double comm_top(int device) const { return compute_top(device) + compute_h + 1; }
};

TimelineView::TimelineView(QWidget* parent) : QWidget(parent) {
    setMouseTracking(true);
    setFocusPolicy(Qt::StrongFocus);
    setAttribute(Qt::WA_OpaquePaintEvent);
    setSizePolicy(QSizePolicy::Expanding, QSizePolicy::Preferred);
}

void TimelineView::setRun(std::shared_ptr<const pd::RunResult> result,
                          std::optional<pd::BubbleMetrics> bubble, QString title,
                          const std::vector<pd::StageBoundary>& boundaries) {
    data_ = TimelineData(std::move(result), boundaries);
    bubble_ = bubble;
    title_ = std::move(title);
    hovered_ = selected_ = -1;
    cursor_ns_.reset();
    updateGeometry();
    fitStep(defaultStep());
}

void TimelineView::setTheme(ThemeChoice theme) {
    theme_ = theme;
    update();
}

TimelinePalette TimelineView::palette() const {
    return TimelinePalette::choose(theme_, QWidget::palette());
}

double TimelineView::headerHeight(bool header, bool legend) const {
    if (!header) return 0;
    return (1 + (legend ? 1 : 0) + (bubble_ ? 1 : 0)) * kHeaderLine + 8;
}

void TimelineView::setLegendVisible(bool visible) {
    legend_ = visible;
    updateGeometry();
    update();
}

TimelineView::Layout TimelineView::layoutFor(const QSizeF& size, bool header, bool legend) const {
    Layout l;
    l.header_h = headerHeight(header, legend);
    l.ruler_top = l.header_h;
    l.rows_top = l.header_h + kRulerHeight;
    const int n = std::max(1, data_.devices());
    const double per_device = (size.height() - l.rows_top - kBottomPad) / n;
    // Lanes grow with the space but keep their proportion: compute work is the story, the
    // comm lane beneath it is the supporting act.
    l.compute_h = std::clamp((per_device - kRowGap) * 0.62, 10.0, 34.0);
    l.comm_h = std::clamp((per_device - kRowGap) * 0.38, 7.0, 22.0);
    l.row_h = l.compute_h + 1 + l.comm_h + kRowGap;
    return l;
}

double TimelineView::preferredHeight(bool header, bool legend) const {
    return headerHeight(header, legend) + kRulerHeight +
           std::max(1, data_.devices()) * (26.0 + 1 + 16.0 + kRowGap) + kBottomPad;
}

QRectF TimelineView::laneRect(int device, pd::StreamKind stream, const QSizeF& size, bool header,
                              bool legend) const {
    const Layout l = layoutFor(size, header, legend);
    const bool compute = stream == pd::StreamKind::compute;
    return QRectF(kLeftMargin, compute ? l.compute_top(device) : l.comm_top(device),
                  std::max(1.0, size.width() - kLeftMargin - kRightMargin),
                  compute ? l.compute_h : l.comm_h);
}

QSize TimelineView::sizeHint() const {
    return {900, static_cast<int>(std::ceil(preferredHeight()))};
}

QSize TimelineView::minimumSizeHint() const {
    // Below 18 px a compute lane cannot hold a micro-batch number; keep rows readable.
    return {400,
            static_cast<int>(std::ceil(headerHeight(true, legend_) + kRulerHeight + kBottomPad)) +
                std::max(1, data_.devices()) * static_cast<int>(18 + 1 + 10 + kRowGap)};
}

double TimelineView::plotWidth() const {
    return std::max(1.0, width() - kLeftMargin - kRightMargin);
}

TimeMapping TimelineView::fittedMapping(double t0, double t1, double width, bool left_air) {
    TimeMapping m;
    m.left_px = kLeftMargin;
    const double span = std::max(t1 - t0, 1.0);
    // A little air so the last box does not touch the edge (and the first, unless the
    // left edge is a step's start).
    m.fit(left_air ? t0 - span * 0.01 : t0, t1 + span * 0.01,
          std::max(1.0, width - kLeftMargin - kRightMargin));
    return m;
}

bool TimelineView::collectivesCollapsed(const TimelineLane& lane, double ns_per_px) {
    return lane.median_ring_step_ns > 0 &&
           static_cast<double>(lane.median_ring_step_ns) / ns_per_px < kReadableRingStepPx;
}

std::pair<std::int64_t, std::int64_t> TimelineView::runRange() const {
    return {data_.begin_ns(), std::max(data_.end_ns(), data_.begin_ns() + 1000)};
}

std::pair<std::int64_t, std::int64_t> TimelineView::stepRange(int step) const {
    if (auto r = data_.step_range(step)) return *r;
    return runRange();
}

int TimelineView::defaultStep() const {
    return data_.step_count() >= 2 ? 1 : 0;
}

void TimelineView::fitAll() {
    const auto [t0, t1] = runRange();
    origin_ns_ = 0;
    focus_step_.reset();
    pending_fit_ = {{t0, t1}};
    applyPendingFit();
}

void TimelineView::fitStep(int step) {
    if (data_.step_count() == 0) return fitAll();
    const auto [t0, t1] = stepRange(step);
    // The ruler counts from the start of the step, so two runs compare step against step.
    origin_ns_ = t0;
    focus_step_ = data_.step_range(step) ? std::optional<int>(step) : std::nullopt;
    pending_fit_ = {{0, t1 - t0}};
    applyPendingFit();
}

void TimelineView::applyPendingFit() {
    if (!pending_fit_) return;
    const double w = width() > 0 ? width() : 1200.0;
    mapping_ = fittedMapping(static_cast<double>(pending_fit_->first),
                             static_cast<double>(pending_fit_->second), w, !focus_step_);
    if (width() > 0) pending_fit_.reset();
    emitMapping();
    update();
}

void TimelineView::setMapping(const TimeMapping& mapping, std::int64_t origin_ns) {
    pending_fit_.reset();
    mapping_ = mapping;
    origin_ns_ = origin_ns;
    update();
}

void TimelineView::setFocusStep(std::optional<int> step) {
    focus_step_ = step && data_.step_range(*step) ? step : std::nullopt;
    update();
}

void TimelineView::emitMapping() {
    emit mappingChanged(mapping_, origin_ns_);
}

void TimelineView::setPlaybackCursor(std::optional<std::int64_t> display_ns) {
    if (cursor_ns_ == display_ns) return;
    cursor_ns_ = display_ns;
    update();
}

void TimelineView::zoomBy(double factor) {
    mapping_.zoom(factor, kLeftMargin + plotWidth() / 2);
    emitMapping();
    update();
}

TimelineView::View TimelineView::currentView(std::optional<QSizeF> size) const {
    View v;
    v.size = size.value_or(QSizeF(this->size()));
    v.mapping = mapping_;
    v.origin_ns = origin_ns_;
    v.cursor_ns = cursor_ns_;
    v.palette = palette();
    v.highlighted_event = hovered_ >= 0 ? hovered_ : selected_;
    v.legend = legend_;
    v.focus_step = focus_step_;
    return v;
}

const QStaticText& TimelineView::staticLabel(const QString& text, const QFont& font) const {
    // Labels repeat (micro-batch numbers, ring step indices): lay each out once.
    if (font != label_cache_font_ || label_cache_.size() > 1024) {
        label_cache_.clear();
        label_cache_font_ = font;
    }
    auto it = label_cache_.find(text);
    if (it == label_cache_.end()) {
        QStaticText st(text);
        st.setTextFormat(Qt::PlainText);
        st.prepare(QTransform(), font);
        it = label_cache_.insert(text, st);
    }
    return *it;
}

TimelineView::PaintStats TimelineView::paint(QPainter& p, const View& view) const {
    PaintStats stats;
    const TimelinePalette& pal = view.palette;
    const QRectF all(QPointF(0, 0), view.size);
    p.save();
    p.setClipRect(all);
    p.fillRect(all, pal.background);
    const Layout l = layoutFor(view.size, view.header, view.legend);
    const TimeMapping& m = view.mapping;
    const double plot_left = m.left_px;
    const double plot_right = std::max(plot_left + 1, view.size.width() - kRightMargin);
    const double origin = static_cast<double>(view.origin_ns);
    // Visible range in trace time; the cursor hides what has not happened yet.
    const double t0 = m.t_of(plot_left) + origin;
    const double t1 = m.t_of(plot_right) + origin;
    const double cursor = view.cursor_ns ? static_cast<double>(*view.cursor_ns) + origin : t1;
    const double t_end = std::min(t1, cursor);
    auto x_of = [&](double t) { return m.x_of(t - origin); };
    const auto& events = data_.trace().events;
    // Inside the focused step's range, boxes of another step are faded (and say their step).
    const auto focus_range = view.focus_step ? data_.step_range(*view.focus_step) : std::nullopt;
    auto of_other_step = [&](const TimelineBox& b) {
        if (!focus_range) return false;
        if (events[static_cast<std::size_t>(b.first_event)].step == *view.focus_step) return false;
        return b.end_ns > focus_range->first && b.start_ns < focus_range->second;
    };
    auto faded = [&](const QColor& c) {
        const QColor& bg = pal.background;
        const double keep = 0.28;
        return QColor::fromRgbF(static_cast<float>(c.redF() * keep + bg.redF() * (1 - keep)),
                                static_cast<float>(c.greenF() * keep + bg.greenF() * (1 - keep)),
                                static_cast<float>(c.blueF() * keep + bg.blueF() * (1 - keep)));
    };

    const QFont small = pixel_font(11);
    const QFont label_font = pixel_font(12, true);
    const QFontMetricsF fm_small(small, p.device());

    // ---- header: clock and link model, legend, bubble --------------------------------
    if (view.header) {
        p.setFont(small);
        p.setPen(pal.text);
        const pd::Trace& tr = data_.trace();
        QString clock =
            tr.backend == pd::BackendKind::cuda
                ? QStringLiteral("Clock: wall — CUDA events on each GPU stream")
            : tr.clock == pd::ClockMode::device
                ? QStringLiteral("Clock: device — each device timed as if it had its own core")
                : QStringLiteral("Clock: wall — real timestamps of real concurrency");
        // The link model only shapes transfers under the device clock; under the wall clock
        // a transfer takes what the real copy took.
        if (tr.backend == pd::BackendKind::cuda)
            clock += virtual_gpu_note(tr);
        else if (tr.clock == pd::ClockMode::device)
            clock += QStringLiteral("   ·   Link model: %1 µs latency + %2")
                         .arg(tr.link.latency_us, 0, 'g', 3)
                         .arg(link_speed_text(tr.link.gbit_per_s()));
        else
            clock += QStringLiteral("   ·   Transfers: real in-memory copies (no link model)");
        if (data_.result() && data_.result()->status != pd::RunStatus::ok)
            clock += QStringLiteral("   ·   run stopped: %1")
                         .arg(qs(pd::name_of(data_.result()->status)));
        p.drawText(QRectF(8, 2, view.size.width() - 16, kHeaderLine),
                   Qt::AlignLeft | Qt::AlignVCenter, clock);
        if (!title_.isEmpty()) {
            p.setFont(label_font);
            p.drawText(QRectF(8, 2, view.size.width() - 16, kHeaderLine),
                       Qt::AlignRight | Qt::AlignVCenter, title_);
            p.setFont(small);
        }
        // Legend: only the kinds this run has, so a learner is not sent looking for them.
        const double legend_h = view.legend ? kHeaderLine : 0.0;
        auto has = [&](pd::EventKind k) { return data_.has_kind(k); };
        const bool rs = data_.has_phase(pd::CollectivePhase::reduce_scatter);
        const bool ag = data_.has_phase(pd::CollectivePhase::all_gather);
        const bool p2p =
            (has(pd::EventKind::send) || has(pd::EventKind::recv)) && !data_.flows().empty();
        std::vector<LegendItem> items;
        if (has(pd::EventKind::forward))
            items.push_back({pal.forward, QStringLiteral("forward (micro-batch no.)")});
        if (has(pd::EventKind::backward))
            items.push_back({pal.backward, QStringLiteral("backward")});
        if (data_.interleaved())
            items.push_back({pal.dark ? pal.forward.darker(150) : pal.forward.lighter(140),
                             QStringLiteral("other shade: the device's 2nd model chunk")});
        if (has(pd::EventKind::optimizer))
            items.push_back({pal.optimizer, QStringLiteral("optimizer")});
        // Zoomed out, a collective call is one box in two halves: say where the steps went.
        bool any_collapsed = false;
        for (const TimelineLane& lane : data_.lanes())
            any_collapsed = any_collapsed || collectivesCollapsed(lane, m.ns_per_px);
        const QString steps_hint = any_collapsed ? QStringLiteral(" (zoom in for ring steps)")
                                                 : QStringLiteral(" (ring step #)");
        if (rs || has(pd::EventKind::reduce_scatter_step))
            items.push_back({pal.reduce_scatter, QStringLiteral("reduce-scatter") + steps_hint});
        if (ag || has(pd::EventKind::all_gather_step))
            items.push_back({pal.all_gather, QStringLiteral("all-gather") + steps_hint});
        if (p2p) items.push_back({pal.p2p, QStringLiteral("send / recv")});
        if (has(pd::EventKind::broadcast))
            items.push_back({pal.broadcast, QStringLiteral("broadcast")});
        if (has(pd::EventKind::collective))
            items.push_back({pal.broadcast, QStringLiteral("NCCL collective")});
        if (has(pd::EventKind::copy)) items.push_back({pal.copy, QStringLiteral("copy")});
        items.push_back({pal.idle, QStringLiteral("idle / waiting")});
        double x = 8;
        const double y = 2 + kHeaderLine + 3;
        if (!view.legend) items.clear();
        for (const auto& it : items) {
            const double w = fm_small.horizontalAdvance(it.text);
            if (x + 16 + w > view.size.width() - 8) break;
            p.fillRect(QRectF(x, y + 3, 12, 11), it.color);
            p.setPen(QPen(pal.muted, 0.8));
            p.drawRect(QRectF(x, y + 3, 12, 11));
            p.setPen(pal.text);
            p.drawText(QRectF(x + 16, y, w + 2, kHeaderLine), Qt::AlignLeft | Qt::AlignVCenter,
                       it.text);
            x += 16 + w + 14;
        }
        if (view.legend && !data_.flows().empty() && x + 120 < view.size.width()) {
            p.setPen(QPen(pal.flow, 1.2));
            p.drawLine(QPointF(x, y + 9), QPointF(x + 14, y + 9));
            p.drawLine(QPointF(x + 14, y + 9), QPointF(x + 10, y + 6));
            p.drawLine(QPointF(x + 14, y + 9), QPointF(x + 10, y + 12));
            p.setPen(pal.text);
            p.drawText(QRectF(x + 18, y, 200, kHeaderLine), Qt::AlignLeft | Qt::AlignVCenter,
                       QStringLiteral("send → recv"));
        }
        if (bubble_) {
            const auto& b = *bubble_;
            const QString formula = b.chunks > 1
                                        ? QStringLiteral("(p−1)/(v·m+p−1) with p=%1, m=%2, v=%3")
                                              .arg(b.stages)
                                              .arg(b.microbatches)
                                              .arg(b.chunks)
                                        : QStringLiteral("(p−1)/(m+p−1) with p=%1, m=%2")
                                              .arg(b.stages)
                                              .arg(b.microbatches);
            p.setFont(label_font);
            p.drawText(
                QRectF(8, 2 + kHeaderLine + legend_h + 4, view.size.width() - 16, kHeaderLine),
                Qt::AlignLeft | Qt::AlignVCenter,
                bubble_header_text(
                    b, data_.result() ? pd::figure_steps(data_.result()->trace) : pd::StepRange{},
                    formula));
            p.setFont(small);
        }
    }

    // ---- ruler, ticks and step boundaries ------------------------------------------------
    const double rows_bottom = l.rows_top + std::max(1, data_.devices()) * l.row_h;
    p.setFont(small);
    p.setPen(pal.muted);
    p.drawText(
        QRectF(8, l.ruler_top + kRulerHeight / 2, kLeftMargin - 12, kRulerHeight / 2),
        Qt::AlignLeft | Qt::AlignVCenter,
        view.origin_ns != 0 ? QStringLiteral("time from step start") : QStringLiteral("time"));
    const double tick = ruler_tick_ns(m.ns_per_px, 90.0);
    const double first_tick = std::ceil(m.t_of(plot_left) / tick) * tick;
    for (double t = first_tick; m.x_of(t) <= plot_right; t += tick) {
        const double x = m.x_of(t);
        p.setPen(QPen(pal.grid, 1));
        p.drawLine(QPointF(x, l.ruler_top + kRulerHeight - 7),
                   QPointF(x, l.ruler_top + kRulerHeight));
        p.setPen(pal.muted);
        const QString text = ruler_text(t, tick);
        if (x + 3 + fm_small.horizontalAdvance(text) <= view.size.width() - 2)
            p.drawText(QPointF(x + 3, l.ruler_top + kRulerHeight - 7), text);
    }
    p.setPen(QPen(pal.grid, 1));
    p.drawLine(QPointF(plot_left, l.rows_top - 0.5), QPointF(plot_right, l.rows_top - 0.5));

    // ---- device rows ---------------------------------------------------------------------
    const double run_begin = static_cast<double>(data_.begin_ns());
    const double run_end = static_cast<double>(data_.end_ns());
    p.setClipRect(QRectF(0, l.rows_top, view.size.width(), view.size.height() - l.rows_top));
    for (int d = 0; d < data_.devices(); ++d) {
        const double cy = l.compute_top(d), my = l.comm_top(d);
        p.setPen(pal.text);
        p.setFont(label_font);
        p.drawText(QRectF(8, cy, kLeftMargin - 12, l.compute_h), Qt::AlignLeft | Qt::AlignVCenter,
                   QStringLiteral("device %1").arg(d));
        p.setFont(small);
        p.setPen(pal.muted);
        const int stage = data_.stage_of(d);
        if (stage >= 0 && bubble_) {
            QString text = QStringLiteral("stage %1").arg(stage);
            if (data_.interleaved()) {
                QStringList chunks;
                for (int c : data_.chunks_of(d)) chunks << QString::number(c);
                text = QStringLiteral("chunks %1").arg(chunks.join(QStringLiteral(",")));
            }
            // Under the device name, beside "comm": the name row has no room for both.
            if (l.comm_h >= 10)
                p.drawText(QRectF(8, my, kLeftMargin - 14, l.comm_h),
                           Qt::AlignLeft | Qt::AlignVCenter, text);
        }
        if (l.comm_h >= 10)
            p.drawText(QRectF(8, my, kLeftMargin - 14, l.comm_h), Qt::AlignRight | Qt::AlignVCenter,
                       QStringLiteral("comm"));
        p.setClipRect(
            QRectF(plot_left, l.rows_top, plot_right - plot_left, view.size.height() - l.rows_top));
        p.fillRect(QRectF(plot_left, my, plot_right - plot_left, l.comm_h), pal.comm_lane);
        // Idle is the compute lane's own colour over the span of the run; work covers it.
        const double idle_x0 = std::max(plot_left, x_of(run_begin));
        const double idle_x1 = std::min(plot_right, x_of(std::min(run_end, t_end)));
        if (idle_x1 > idle_x0)
            p.fillRect(QRectF(idle_x0, cy, idle_x1 - idle_x0, l.compute_h), pal.idle);

        for (pd::StreamKind s : {pd::StreamKind::compute, pd::StreamKind::comm}) {
            const TimelineLane& lane = data_.lane(d, s);
            const bool compute = s == pd::StreamKind::compute;
            const double top = compute ? cy : my;
            const double h = compute ? l.compute_h : l.comm_h;
            // Ring steps too narrow to read: each collective call is one box in two halves.
            const bool collapsed = collectivesCollapsed(lane, m.ns_per_px);
            const std::vector<TimelineBox>& boxes = collapsed ? lane.collective_boxes : lane.boxes;
            const auto [b0, b1] = data_.visible_boxes(lane, t0, t_end, collapsed);
            int counted_call = -1;
            // A run of sub-pixel boxes becomes one rectangle in the colour of the kind that
            // covers most of it (hotspot's TimeLineDelegate merges the same way); faded
            // boxes of another step weigh in slots of their own.
            double pend_x0 = 0, pend_x1 = -1e18;
            std::array<double, 2 * kEventKinds> pend_weight{};
            bool pending = false;
            auto flush = [&] {
                if (!pending) return;
                std::size_t best = 0;
                for (std::size_t k = 1; k < pend_weight.size(); ++k)
                    if (pend_weight[k] > pend_weight[best]) best = k;
                const auto kind = static_cast<pd::EventKind>(best % kEventKinds);
                QColor fill = pal.color_of(kind, pd::CollectivePhase::none);
                if (best >= kEventKinds) fill = faded(fill);
                const double x0 = std::floor(pend_x0);
                p.fillRect(QRectF(x0, top, std::max(1.0, pend_x1 - x0), h), fill);
                ++stats.boxes;
                pending = false;
                pend_weight.fill(0);
            };
            double prev_end_x = std::max(plot_left, x_of(run_begin));
            for (std::size_t k = b0; k < b1; ++k) {
                const TimelineBox& b = boxes[k];
                const double bs = static_cast<double>(b.start_ns);
                if (bs > t_end) break;
                const double be = std::min(static_cast<double>(b.end_ns), t_end);
                // Clamped to the plot by hand: SVG and PDF output cannot rely on clipping, and
                // a box that starts off-screen keeps its label in its visible part.
                const double x0 = std::max(x_of(bs), plot_left - 1);
                const double x1 = std::min(x_of(be), plot_right + 1);
                if (x1 < x0) continue;
                if (compute && x0 - prev_end_x >= kMinGapLabelPx && l.compute_h >= 12) {
                    // Wide idle gaps say what they are: the bubble of a pipeline, or idleness.
                    p.setPen(pal.muted);
                    p.drawText(QRectF(prev_end_x, top, std::min(x0, plot_right) - prev_end_x, h),
                               Qt::AlignCenter,
                               bubble_ ? QStringLiteral("bubble") : QStringLiteral("idle"));
                }
                if (compute) prev_end_x = std::max(prev_end_x, x1);
                const bool other_step = of_other_step(b);
                const bool half = collapsed && b.collective >= 0;
                if (half && b.collective != counted_call) {
                    counted_call = b.collective;
                    ++stats.collective_calls;
                }
                if (other_step) ++stats.faded;
                if (x1 - x0 < kMinBoxPx) {
                    if (pending && x0 <= pend_x1 + 1.0) {
                        pend_x1 = std::max(pend_x1, x1);
                    } else {
                        flush();
                        pending = true;
                        pend_x0 = x0;
                        pend_x1 = x1;
                    }
                    // Phase colours are kept by weighting the kind that carries them.
                    auto kind_slot = b.kind;
                    if (b.phase == pd::CollectivePhase::reduce_scatter)
                        kind_slot = pd::EventKind::reduce_scatter_step;
                    if (b.phase == pd::CollectivePhase::all_gather)
                        kind_slot = pd::EventKind::all_gather_step;
                    pend_weight[static_cast<std::size_t>(kind_slot) +
                                (other_step ? kEventKinds : 0)] += std::max(be - bs, 1.0);
                    // Boxes that start inside a pending rectangle at least a pixel wide add
                    // nothing visible: jump past them by binary search. The last of them may
                    // reach beyond, so it is still looked at.
                    if (pend_x1 - pend_x0 >= 1.0 && k + 2 < b1) {
                        const double edge = m.t_of(pend_x1) + origin;
                        // Galloping first: usually only a few boxes share a pixel.
                        std::size_t lo = k + 1, step = 1;
                        while (lo + step < b1 &&
                               static_cast<double>(boxes[lo + step].start_ns) <= edge) {
                            lo += step;
                            step *= 2;
                        }
                        const auto next = std::upper_bound(
                            boxes.begin() + static_cast<std::ptrdiff_t>(lo),
                            boxes.begin() + static_cast<std::ptrdiff_t>(std::min(lo + step, b1)),
                            edge, [](double t, const TimelineBox& box) {
                                return t < static_cast<double>(box.start_ns);
                            });
                        const auto k2 = static_cast<std::size_t>(next - boxes.begin());
                        if (k2 >= k + 3) k = k2 - 2;
                    }
                    continue;
                }
                flush();
                QColor fill = pal.color_of(b.kind, b.phase);
                // Later model chunks of an interleaved schedule: the same hue, lighter.
                if (b.round % 2 == 1) fill = pal.dark ? fill.darker(150) : fill.lighter(140);
                if (other_step) fill = faded(fill);
                const QRectF r(x0, top, x1 - x0, h);
                p.fillRect(r, fill);
                ++stats.boxes;
                if (!collapsed && (b.kind == pd::EventKind::reduce_scatter_step ||
                                   b.kind == pd::EventKind::all_gather_step))
                    ++stats.ring_steps;
                if (r.width() >= 5) {
                    p.setPen(QPen(fill.darker(pal.dark ? 170 : 135), 1));
                    p.drawRect(r.adjusted(0.5, 0.5, -0.5, -0.5));
                }
                if (r.width() >= 12 && h >= 10) {
                    // The longest form that fits (ring steps: just the index when narrow).
                    QStringList texts;
                    if (other_step)
                        texts << QStringLiteral("step %1").arg(
                            events[static_cast<std::size_t>(b.first_event)].step + 1);
                    else if (half)
                        texts << half_labels(b);
                    else if (r.width() > 70)
                        texts << box_label(b, true) << box_label(b, false);
                    else
                        texts << box_label(b, false);
                    for (const QString& text : texts) {
                        if (text.isEmpty()) break;
                        const QStaticText& st = staticLabel(text, small);
                        const QSizeF ts = st.size();
                        if (ts.width() + 4 <= r.width()) {
                            p.setPen(other_step ? pal.muted : pal.text_on(fill));
                            p.drawStaticText(QPointF(r.center().x() - ts.width() / 2,
                                                     r.center().y() - ts.height() / 2),
                                             st);
                            ++stats.labels;
                            break;
                        }
                    }
                }
                // The last half of a call: one outline round both, so they read as one box.
                if (half &&
                    (b.phase == pd::CollectivePhase::all_gather ||
                     lane.collectives[static_cast<std::size_t>(b.collective)].all_gather_steps ==
                         0)) {
                    const TimelineCollective& c =
                        lane.collectives[static_cast<std::size_t>(b.collective)];
                    const double cx0 =
                        std::max(x_of(static_cast<double>(c.start_ns)), plot_left - 1);
                    const double cx1 = std::min(
                        x_of(std::min(static_cast<double>(c.end_ns), t_end)), plot_right + 1);
                    if (cx1 - cx0 >= 5) {
                        p.setPen(QPen(other_step ? pal.muted : pal.text, 1));
                        p.drawRect(QRectF(cx0, top, cx1 - cx0, h).adjusted(0.5, 0.5, -0.5, -0.5));
                    }
                }
            }
            flush();
            if (compute) {
                const double lane_end = std::min(plot_right, x_of(std::min(run_end, t_end)));
                if (lane_end - prev_end_x >= kMinGapLabelPx && l.compute_h >= 12 && b1 > b0) {
                    p.setPen(pal.muted);
                    p.drawText(QRectF(prev_end_x, top, lane_end - prev_end_x, h), Qt::AlignCenter,
                               bubble_ ? QStringLiteral("bubble") : QStringLiteral("idle"));
                }
            }
        }
        p.setClipRect(QRectF(0, l.rows_top, view.size.width(), view.size.height() - l.rows_top));
    }
    p.setClipRect(
        QRectF(plot_left, l.ruler_top, plot_right - plot_left, view.size.height() - l.ruler_top));

    // Step boundaries: a thin line through every row and the step number on the ruler.
    for (int s = 0; s < data_.step_count(); ++s) {
        const auto r = data_.step_range(s);
        if (!r) continue;
        const double x = x_of(static_cast<double>(r->first));
        if (x < plot_left - 1 || x > plot_right) continue;
        p.setPen(QPen(pal.grid, 1, Qt::DashLine));
        p.drawLine(QPointF(x, l.ruler_top + 1), QPointF(x, rows_bottom));
        const double next_x = s + 1 < data_.step_count() && data_.step_range(s + 1)
                                  ? x_of(static_cast<double>(data_.step_range(s + 1)->first))
                                  : x_of(static_cast<double>(r->second));
        const QString step_text = QStringLiteral("step %1").arg(s + 1);  // steps count from 1
        if (next_x - x > 60 &&
            x + 4 + QFontMetricsF(label_font, p.device()).horizontalAdvance(step_text) <
                plot_right) {
            p.setPen(pal.text);
            p.setFont(label_font);
            p.drawText(QPointF(x + 4, l.ruler_top + 12), step_text);
            p.setFont(small);
        }
    }

    // ---- flow arrows: each send to its recv ---------------------------------------------
    std::vector<std::pair<QPointF, QPointF>> arrows;
    for (const auto& f : data_.flows()) {
        const auto& s = events[static_cast<std::size_t>(f.send_event)];
        const auto& r = events[static_cast<std::size_t>(f.recv_event)];
        if (static_cast<double>(r.end_ns) < t0 || static_cast<double>(s.start_ns) > t_end) continue;
        if (static_cast<double>(r.end_ns) > cursor) continue;  // not arrived yet in playback
        if (s.device == r.device) continue;
        QPointF a(x_of(static_cast<double>(s.start_ns)), l.comm_top(s.device) + l.comm_h / 2);
        QPointF b(x_of(static_cast<double>(r.end_ns)), l.comm_top(r.device) + l.comm_h / 2);
        if (!clip_to_x_range(a, b, plot_left, plot_right)) continue;
        arrows.push_back({a, b});
    }
    // Dozens of arrows per pixel column say nothing; they return as the learner zooms in.
    if (static_cast<double>(arrows.size()) > (plot_right - plot_left) / 9.0) {
        stats.flows_hidden = !arrows.empty();
    } else {
        p.setRenderHint(QPainter::Antialiasing, true);
        p.setPen(QPen(pal.flow, 1.1));
        p.setBrush(pal.flow);
        for (const auto& [a, b] : arrows) {
            p.drawLine(a, b);
            const double angle = std::atan2(b.y() - a.y(), b.x() - a.x());
            const QPointF h1 = b - QPointF(std::cos(angle - 0.45) * 6, std::sin(angle - 0.45) * 6);
            const QPointF h2 = b - QPointF(std::cos(angle + 0.45) * 6, std::sin(angle + 0.45) * 6);
            p.drawPolygon(QPolygonF({b, h1, h2}));
            ++stats.flows;
        }
        p.setBrush(Qt::NoBrush);
        p.setRenderHint(QPainter::Antialiasing, false);
    }

    // ---- hovered / selected event --------------------------------------------------------
    if (view.highlighted_event >= 0 && view.highlighted_event < static_cast<int>(events.size())) {
        const auto& e = events[static_cast<std::size_t>(view.highlighted_event)];
        if (static_cast<double>(e.start_ns) <= t_end) {
            const bool compute = e.stream == pd::StreamKind::compute;
            const double top = compute ? l.compute_top(e.device) : l.comm_top(e.device);
            const double x0 = x_of(static_cast<double>(e.start_ns));
            const double x1 =
                std::max(x0 + 2, x_of(std::min(static_cast<double>(e.end_ns), t_end)));
            p.setPen(QPen(pal.highlight, 2));
            p.drawRect(
                QRectF(x0 - 1, top - 1, x1 - x0 + 2, (compute ? l.compute_h : l.comm_h) + 2));
        }
    }

    // ---- out of memory: where it happened --------------------------------------------------
    struct OomMark {
        int device;
        double t;
        QString text;
    };
    std::vector<OomMark> ooms;
    for (int i : data_.oom_events()) {
        const auto& e = events[static_cast<std::size_t>(i)];
        ooms.push_back({e.device, static_cast<double>(e.start_ns), qs(e.label)});
    }
    const pd::RunResult* res = data_.result();
    if (ooms.empty() && res && res->oom && res->oom->device >= 0 &&
        res->oom->device < data_.devices()) {
        // Raised outside a stream (during set-up): mark it at that device's last activity.
        const auto& lane = data_.lane(res->oom->device, pd::StreamKind::compute);
        double t = run_end;
        if (!lane.events_max_end.empty()) t = static_cast<double>(lane.events_max_end.back());
        ooms.push_back({res->oom->device, t, qs(res->oom->describe())});
    }
    for (const auto& [device, t, what] : ooms) {
        if (t > cursor) continue;
        const double x = x_of(t);
        if (x < plot_left - 200 || x > plot_right + 1) continue;
        const double top = l.compute_top(device) - 3;
        const double bottom = l.comm_top(device) + l.comm_h + 3;
        p.setPen(QPen(pal.oom, 2.5));
        p.drawLine(QPointF(x, top), QPointF(x, bottom));
        const QString text = what.isEmpty() ? QStringLiteral("OUT OF MEMORY")
                                            : QStringLiteral("OUT OF MEMORY — %1").arg(what);
        p.setFont(label_font);
        const QFontMetricsF fm(label_font, p.device());
        const double w = fm.horizontalAdvance(text) + 10;
        double bx = x + 4;
        if (bx + w > plot_right) bx = std::max(plot_left, x - 4 - w);
        const QRectF box(bx, top, w, l.compute_h + 2);
        p.fillRect(box, pal.oom);
        p.setPen(QColor(Qt::white));
        p.drawText(box, Qt::AlignCenter, text);
        p.setFont(small);
    }

    // ---- playback cursor ---------------------------------------------------------------------
    if (view.cursor_ns) {
        const double x = x_of(cursor);
        if (x >= plot_left && x <= plot_right) {
            p.setPen(QPen(pal.cursor, 2));
            p.drawLine(QPointF(x, l.ruler_top), QPointF(x, rows_bottom));
            p.setBrush(pal.cursor);
            p.setRenderHint(QPainter::Antialiasing, true);
            p.drawPolygon(QPolygonF({QPointF(x - 5, l.ruler_top), QPointF(x + 5, l.ruler_top),
                                     QPointF(x, l.ruler_top + 7)}));
            p.setRenderHint(QPainter::Antialiasing, false);
            p.setBrush(Qt::NoBrush);
        }
    }
    if (stats.flows_hidden) {
        p.setClipping(false);
        p.setPen(pal.muted);
        p.drawText(QRectF(plot_left, rows_bottom - 2, plot_right - plot_left, kBottomPad + 12),
                   Qt::AlignRight | Qt::AlignTop,
                   QStringLiteral("zoom in to see send → recv arrows"));
    }
    p.restore();
    return stats;
}

void TimelineView::paintEvent(QPaintEvent*) {
    QPainter p(this);
    paint(p, currentView());
}

void TimelineView::resizeEvent(QResizeEvent* event) {
    QWidget::resizeEvent(event);
    applyPendingFit();
}

void TimelineView::wheelEvent(QWheelEvent* event) {
    const QPoint delta = event->angleDelta();
    if (std::abs(delta.x()) > std::abs(delta.y())) {
        mapping_.pan_px(delta.x() / 4.0);
    } else {
        // 120 units (one notch) zooms by 1.25x, anchored at the pointer.
        const double x = std::max(event->position().x(), kLeftMargin);
        mapping_.zoom(std::pow(1.25, delta.y() / 120.0), x);
    }
    pending_fit_.reset();
    emitMapping();
    update();
    event->accept();
}

void TimelineView::mousePressEvent(QMouseEvent* event) {
    if (event->button() == Qt::LeftButton) {
        dragging_ = true;
        press_pos_ = event->position();
        press_mapping_ = mapping_;
        setCursor(Qt::ClosedHandCursor);
    }
    event->accept();
}

void TimelineView::mouseMoveEvent(QMouseEvent* event) {
    if (dragging_ && (event->buttons() & Qt::LeftButton)) {
        mapping_ = press_mapping_;
        mapping_.pan_px(event->position().x() - press_pos_.x());
        pending_fit_.reset();
        emitMapping();
        update();
        return;
    }
    const int hit = eventAt(event->position());
    if (hit != hovered_) {
        hovered_ = hit;
        emit eventHovered(hit);
        update();
    }
    if (hit >= 0)
        QToolTip::showText(event->globalPosition().toPoint(), tooltipFor(hit), this);
    else
        QToolTip::hideText();
}

void TimelineView::mouseReleaseEvent(QMouseEvent* event) {
    if (event->button() != Qt::LeftButton) return;
    dragging_ = false;
    unsetCursor();
    // A press and release in (nearly) one place is a click, not a drag.
    if ((event->position() - press_pos_).manhattanLength() < 4) {
        const int hit = eventAt(event->position());
        selected_ = hit;
        update();
        if (hit >= 0) emit eventClicked(data_.trace().events[static_cast<std::size_t>(hit)]);
    }
}

void TimelineView::leaveEvent(QEvent* event) {
    if (hovered_ >= 0) {
        hovered_ = -1;
        emit eventHovered(-1);
        update();
    }
    QWidget::leaveEvent(event);
}

void TimelineView::keyPressEvent(QKeyEvent* event) {
    switch (event->key()) {
        case Qt::Key_Plus:
        case Qt::Key_Equal:
            zoomBy(1.5);
            break;
        case Qt::Key_Minus:
            zoomBy(1 / 1.5);
            break;
        case Qt::Key_Left:
            mapping_.pan_px(plotWidth() / 8);
            emitMapping();
            update();
            break;
        case Qt::Key_Right:
            mapping_.pan_px(-plotWidth() / 8);
            emitMapping();
            update();
            break;
        default:
            QWidget::keyPressEvent(event);
    }
}

void TimelineView::changeEvent(QEvent* event) {
    if (event->type() == QEvent::PaletteChange) update();
    QWidget::changeEvent(event);
}

QString TimelineView::tooltipFor(int event) const {
    const pd::Trace& trace = data_.trace();
    const pd::TraceEvent& e = trace.events[static_cast<std::size_t>(event)];
    QString text = describe_event(e, origin_ns_);
    const TimelineLane& lane = data_.lane(e.device, e.stream);
    const int call = data_.collective_of(lane, event);
    if (call < 0 || !collectivesCollapsed(lane, mapping_.ns_per_px)) return text;
    // Zoomed out the box is the whole call: say so before the ring step under the pointer.
    const TimelineCollective& c = lane.collectives[static_cast<std::size_t>(call)];
    QString what = QStringLiteral("collective");
    if (c.record >= 0) {
        const pd::CollectiveRecord& r = trace.collectives[static_cast<std::size_t>(c.record)];
        what = qs(r.op).replace(QLatin1Char('_'), QLatin1Char('-'));
        if (r.label != r.op) what += QStringLiteral(" (%1)").arg(qs(r.label));
        what += QStringLiteral(", %1 over %2 devices")
                    .arg(bytes_text(static_cast<double>(r.bytes)))
                    .arg(r.ranks);
    }
    return QStringLiteral(
               "<b>%1</b><br>%2 reduce-scatter + %3 all-gather ring steps in %4; zoom in to "
               "see each<hr>%5")
        .arg(what)
        .arg(c.reduce_scatter_steps)
        .arg(c.all_gather_steps)
        .arg(duration_text(static_cast<double>(c.end_ns - c.start_ns)))
        .arg(text);
}

int TimelineView::eventAt(const QPointF& pos) const {
    if (data_.empty() || pos.x() < kLeftMargin) return -1;
    const Layout l = layoutFor(QSizeF(size()), true, legend_);
    const double rel = pos.y() - l.rows_top;
    if (rel < 0) return -1;
    const int device = static_cast<int>(rel / l.row_h);
    if (device >= data_.devices()) return -1;
    const double in_row = rel - device * l.row_h;
    pd::StreamKind stream;
    if (in_row < l.compute_h)
        stream = pd::StreamKind::compute;
    else if (in_row >= l.compute_h + 1 && in_row < l.compute_h + 1 + l.comm_h)
        stream = pd::StreamKind::comm;
    else
        return -1;
    const double t = mapping_.t_of(pos.x()) + static_cast<double>(origin_ns_);
    if (cursor_ns_ && t > static_cast<double>(*cursor_ns_ + origin_ns_)) return -1;
    return data_.event_at(data_.lane(device, stream), t, 3 * mapping_.ns_per_px);
}

}  // namespace pd::vis
