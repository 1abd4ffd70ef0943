#include "visualizer/timeline_view.h"

#include <QEvent>
#include <QKeyEvent>
#include <QMouseEvent>
#include <QPainter>
#include <QStringList>
#include <QToolTip>
#include <QWheelEvent>
#include <algorithm>
#include <cmath>

#include "visualizer/event_text.h"
#include "visualizer/format.h"

namespace pd::vis {

using namespace timeline_geometry;

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
    paint_cache_.clear();
    // What the pointer showed described the last run: gone at once, not at the next move.
    const bool was_hovering = hovered_ >= 0;
    hovered_ = selected_ = -1;
    if (was_hovering) emit eventHovered(-1);
    setHoverText({});
    if (QToolTip::isVisible() && underMouse()) QToolTip::hideText();
    cursor_ns_.reset();
    time_zero_ns_.reset();
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

void TimelineView::setLegendVisible(bool visible) {
    legend_ = visible;
    updateGeometry();
    update();
}

double TimelineView::layoutWidth() const {
    // Before it is shown a widget has no width of its own yet: lay out as a wide
    // window.
    return isVisible() || testAttribute(Qt::WA_Resized) ? std::max(1, width()) : 1200.0;
}

double TimelineView::preferredHeight(bool header, bool legend, std::optional<double> width) const {
    return timeline_header_height(scene(), width.value_or(layoutWidth()), header, legend) +
           kRulerHeight +
           std::max(1, data_.devices()) *
               (26.0 + 1 + 16.0 + (data_.has_host_lane() ? 1 + 16.0 : 0.0) + kRowGap) +
           kBottomPad;
}

QRectF TimelineView::laneRect(int device, pd::StreamKind stream, const QSizeF& size, bool header,
                              bool legend) const {
    const TimelineLayout l = timeline_layout(scene(), size, header, legend);
    return QRectF(kLeftMargin, l.top(device, stream),
                  std::max(1.0, size.width() - kLeftMargin - kRightMargin), l.height(stream));
}

QSize TimelineView::sizeHint() const {
    return {900, static_cast<int>(std::ceil(preferredHeight()))};
}

QSize TimelineView::minimumSizeHint() const {
    // Below 18 px a compute lane cannot hold a micro-batch number; keep rows
    // readable.
    const double header = timeline_header_height(scene(), layoutWidth(), true, legend_);
    return {400, static_cast<int>(std::ceil(header + kRulerHeight + kBottomPad)) +
                     std::max(1, data_.devices()) * static_cast<int>(18 + 1 + 10 + kRowGap)};
}

double TimelineView::plotWidth() const {
    return std::max(1.0, width() - kLeftMargin - kRightMargin);
}

TimeMapping TimelineView::fittedMapping(double t0, double t1, double width, bool left_air) {
    TimeMapping m;
    m.left_px = kLeftMargin;
    const double span = std::max(t1 - t0, 1.0);
    // A little air so the last box does not touch the edge (and the first, unless
    // the left edge is a step's start).
    m.fit(left_air ? t0 - span * 0.01 : t0, t1 + span * 0.01,
          std::max(1.0, width - kLeftMargin - kRightMargin));
    return m;
}

std::pair<std::int64_t, std::int64_t> TimelineView::runRange() const {
    return {data_.begin_ns(), std::max(data_.end_ns(), data_.begin_ns() + 1000)};
}

std::pair<std::int64_t, std::int64_t> TimelineView::stepRange(int step) const {
    if (auto r = data_.step_range(step)) return *r;
    return runRange();
}

TimelineView::StepFit TimelineView::stepFit(int step) const {
    if (data_.step_count() == 0) {
        const auto [t0, t1] = runRange();
        return {0, t0, t1, false};
    }
    // Display time counts from the start of the step, so two runs compare step
    // against step (the ruler reads from timeZero(), the run's start).
    const auto [t0, t1] = stepRange(step);
    return {t0, 0, t1 - t0, true};
}

int TimelineView::defaultStep() const {
    // The run's second step (its first is a cold start), else its only one; a resumed run's
    // steps begin past 0.
    int first = -1;
    for (int s = 0; s < data_.step_count(); ++s) {
        if (!data_.step_range(s)) continue;
        if (first >= 0) return s;
        first = s;
    }
    return std::max(first, 0);
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
    const StepFit fit = stepFit(step);
    origin_ns_ = fit.origin_ns;
    focus_step_ = data_.step_range(step) ? std::optional<int>(step) : std::nullopt;
    pending_fit_ = {{fit.begin_ns, fit.end_ns}};
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

void TimelineView::setTimeZero(std::optional<std::int64_t> display_ns) {
    if (time_zero_ns_ == display_ns) return;
    time_zero_ns_ = display_ns;
    update();
}

std::int64_t TimelineView::timeZero() const {
    return time_zero_ns_ ? *time_zero_ns_ : runRange().first - origin_ns_;
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
    followCursor();
    update();
}

void TimelineView::followCursor() {
    if (!cursor_ns_ || width() <= 0 || pending_fit_ || data_.empty()) return;
    const double span = plotWidth() * mapping_.ns_per_px;
    const double t = static_cast<double>(*cursor_ns_);
    const double begin = static_cast<double>(runRange().first - origin_ns_);
    const double end = static_cast<double>(runRange().second - origin_ns_);
    double start = mapping_.start_ns;
    // The playhead lands between a tenth and nine tenths of the plot, with as
    // much of the run beside it as fits: paging forward shows what comes,
    // scrubbing back what led there.
    if (t > mapping_.end_ns(plotWidth()))
        start = std::max(t - 0.9 * span, std::min(t - 0.1 * span, end + 0.01 * span - span));
    else if (t < mapping_.start_ns)
        start = std::min(t - 0.1 * span, std::max(t - 0.9 * span, begin - 0.01 * span));
    else
        return;
    mapping_.start_ns = start;
    emitMapping();
}

void TimelineView::zoomBy(double factor, std::optional<double> anchor_x) {
    mapping_.zoom(factor, anchor_x.value_or(kLeftMargin + plotWidth() / 2));
    pending_fit_.reset();
    emitMapping();
    update();
}

void TimelineView::panBy(double fraction) {
    mapping_.pan_px(-fraction * plotWidth());
    pending_fit_.reset();
    emitMapping();
    update();
}

TimelineView::View TimelineView::currentView(std::optional<QSizeF> size) const {
    View v;
    v.size = size.value_or(QSizeF(this->size()));
    v.mapping = mapping_;
    v.origin_ns = origin_ns_;
    v.time_zero_ns = timeZero();
    v.cursor_ns = cursor_ns_;
    v.palette = palette();
    v.highlighted_event = hovered_ >= 0 ? hovered_ : selected_;
    v.legend = legend_;
    v.focus_step = focus_step_;
    return v;
}

TimelineView::PaintStats TimelineView::paint(QPainter& p, const View& view) const {
    return paint_timeline(p, scene(), view, paint_cache_);
}

void TimelineView::paintEvent(QPaintEvent*) {
    QPainter p(this);
    paint(p, currentView());
    if (highlight_ && data_.devices() > 0) {
        const int last = std::min(highlight_->second, data_.devices() - 1);
        const QRectF lanes =
            laneRect(highlight_->first, pd::StreamKind::compute, size(), true, legend_)
                .united(laneRect(last, pd::StreamKind::comm, size(), true, legend_));
        QPen pen(QWidget::palette().color(QPalette::Highlight), 2.0);
        p.setPen(pen);
        p.setBrush(Qt::NoBrush);
        p.drawRoundedRect(lanes.adjusted(-kLeftMargin + 4, -3, 3, 3), 4, 4);
    }
}

void TimelineView::setHighlightedDevices(std::optional<std::pair<int, int>> devices) {
    highlight_ = devices;
    update();
}

void TimelineView::resizeEvent(QResizeEvent* event) {
    QWidget::resizeEvent(event);
    // The header wraps with the width: a new height is a new size hint.
    const double header = timeline_header_height(scene(), width(), true, legend_);
    if (header != header_h_) {
        header_h_ = header;
        updateGeometry();
    }
    applyPendingFit();
}

void TimelineView::wheelEvent(QWheelEvent* event) {
    const QPoint delta = event->angleDelta();
    if (std::abs(delta.x()) > std::abs(delta.y())) {
        mapping_.pan_px(delta.x() / 4.0);
        pending_fit_.reset();
        emitMapping();
        update();
    } else {
        // 120 units (one notch) zooms by 1.25x, anchored at the pointer.
        zoomBy(std::pow(1.25, delta.y() / 120.0), std::max(event->position().x(), kLeftMargin));
    }
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
    setHoverText(tooltipAt(event->position()));
    if (!hover_text_.isEmpty())
        QToolTip::showText(event->globalPosition().toPoint(), hover_text_, this);
    else
        QToolTip::hideText();
}

void TimelineView::setHoverText(const QString& text) {
    if (text == hover_text_) return;
    hover_text_ = text;
    emit hoverTextChanged(hover_text_);
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
    setHoverText({});
    QWidget::leaveEvent(event);
}

std::optional<double> TimelineView::keyZoomAnchor() const {
    const QPoint at = mapFromGlobal(QCursor::pos());
    if (rect().contains(at) && at.x() >= kLeftMargin && at.x() <= width() - kRightMargin)
        return at.x();
    return std::nullopt;
}

void TimelineView::keyPressEvent(QKeyEvent* event) {
    // Perfetto's keys: W/S (and +/-) zoom, A/D (and the arrows) pan.
    switch (event->key()) {
        case Qt::Key_Plus:
        case Qt::Key_Equal:
        case Qt::Key_W:
            zoomBy(kKeyZoomFactor, keyZoomAnchor());
            break;
        case Qt::Key_Minus:
        case Qt::Key_S:
            zoomBy(1 / kKeyZoomFactor, keyZoomAnchor());
            break;
        case Qt::Key_Left:
        case Qt::Key_A:
            panBy(-kKeyPanFraction);
            break;
        case Qt::Key_Right:
        case Qt::Key_D:
            panBy(kKeyPanFraction);
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
    QString text = describe_event(e, labelOrigin());
    const TimelineLane& lane = data_.lane(e.device, e.stream);
    const int call = data_.collective_of(lane, event);
    if (call < 0 || !collectivesCollapsed(lane, mapping_.ns_per_px)) return text;
    // Zoomed out the box is the whole call: say so before the ring step under the
    // pointer.
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
               "<b>%1</b><br>%2 reduce-scatter + %3 all-gather ring "
               "steps in %4; zoom in to "
               "see each<hr>%5")
        .arg(what)
        .arg(c.reduce_scatter_steps)
        .arg(c.all_gather_steps)
        .arg(duration_text(static_cast<double>(c.end_ns - c.start_ns)))
        .arg(text);
}

const TimelineLane* TimelineView::laneAt(const QPointF& pos) const {
    if (data_.empty() || pos.x() < kLeftMargin) return nullptr;
    const TimelineLayout l = timeline_layout(scene(), QSizeF(size()), true, legend_);
    const double rel = pos.y() - l.rows_top;
    if (rel < 0) return nullptr;
    const int device = static_cast<int>(rel / l.row_h);
    if (device >= data_.devices()) return nullptr;
    const double in_row = rel - device * l.row_h;
    if (in_row < l.compute_h) return &data_.lane(device, pd::StreamKind::compute);
    if (in_row >= l.compute_h + 1 && in_row < l.compute_h + 1 + l.comm_h)
        return &data_.lane(device, pd::StreamKind::comm);
    const double host_from = l.compute_h + 1 + l.comm_h + 1;
    if (l.host_h > 0 && in_row >= host_from && in_row < host_from + l.host_h)
        return &data_.lane(device, pd::StreamKind::host);
    return nullptr;
}

int TimelineView::eventAt(const QPointF& pos) const {
    const TimelineLane* lane = laneAt(pos);
    if (!lane) return -1;
    const double t = mapping_.t_of(pos.x()) + static_cast<double>(origin_ns_);
    if (cursor_ns_ && t > static_cast<double>(*cursor_ns_ + origin_ns_)) return -1;
    return data_.event_at(*lane, t, 3 * mapping_.ns_per_px);
}

QString TimelineView::tooltipAt(const QPointF& pos) const {
    const TimelineLane* lane = laneAt(pos);
    if (!lane) return {};
    if (const auto merged = merged_boxes_at(data_, *lane, currentView(), pos.x())) {
        // One rectangle stands for many events: describe them all, not the one nearest.
        std::vector<std::pair<int, pd::EventKind>> kinds;
        for (std::size_t k = 0; k < merged->events_by_kind.size(); ++k)
            if (merged->events_by_kind[k] > 0)
                kinds.emplace_back(merged->events_by_kind[k], static_cast<pd::EventKind>(k));
        std::stable_sort(kinds.begin(), kinds.end(),
                         [](const auto& a, const auto& b) { return a.first > b.first; });
        QStringList parts;
        for (const auto& [count, kind] : kinds)
            parts << QStringLiteral("%1 %2").arg(count).arg(kind_text(kind).toHtmlEscaped());
        const double origin = static_cast<double>(labelOrigin());
        return QStringLiteral(
                   "<b>%1 events merged</b> (each too narrow to draw; zoom in to see them)<br>"
                   "from %2 to %3 (span %4)<br>busy %5 in total: %6")
            .arg(merged->events)
            .arg(duration_text(static_cast<double>(merged->start_ns) - origin),
                 duration_text(static_cast<double>(merged->end_ns) - origin),
                 duration_text(static_cast<double>(merged->end_ns - merged->start_ns)),
                 duration_text(static_cast<double>(merged->busy_ns)),
                 parts.join(QStringLiteral(", ")));
    }
    const int hit = eventAt(pos);
    if (hit < 0) return {};
    const QString text = tooltipFor(hit);
    // A box drawn for consecutive events of one micro-batch (the layers of its forward, say):
    // what the box stands for first, then the event under the pointer.
    const auto& boxes = lane->boxes;
    const auto& e = data_.trace().events[static_cast<std::size_t>(hit)];
    auto it = std::upper_bound(boxes.begin(), boxes.end(), e.start_ns,
                               [](std::int64_t t, const TimelineBox& b) { return t < b.start_ns; });
    const TimelineBox* box = nullptr;
    while (it != boxes.begin()) {
        --it;
        if (hit >= it->first_event && hit < it->first_event + it->event_count) {
            box = &*it;
            break;
        }
        if (it->end_ns < e.start_ns) break;
    }
    if (!box || box->event_count < 2) return text;
    const auto& events = data_.trace().events;
    std::int64_t busy = 0;
    int layer_lo = -1, layer_hi = -1;
    for (int i = box->first_event; i < box->first_event + box->event_count; ++i) {
        const auto& x = events[static_cast<std::size_t>(i)];
        busy += x.duration_ns();
        if (x.layer >= 0) {
            layer_lo = layer_lo < 0 ? x.layer : std::min(layer_lo, x.layer);
            layer_hi = std::max(layer_hi, x.layer);
        }
    }
    QString what = QStringLiteral("%1 %2 events").arg(box->event_count).arg(kind_text(box->kind));
    if (box->microbatch >= 0) what += QStringLiteral(" of micro-batch %1").arg(box->microbatch);
    if (layer_lo >= 0)
        what += layer_lo == layer_hi ? QStringLiteral(", layer %1").arg(layer_lo)
                                     : QStringLiteral(", layers %1–%2").arg(layer_lo).arg(layer_hi);
    const double origin = static_cast<double>(labelOrigin());
    return QStringLiteral(
               "<b>One box: %1</b><br>from %2 to %3 (span %4) · busy %5 in total"
               "<hr>%6")
        .arg(what.toHtmlEscaped(), duration_text(static_cast<double>(box->start_ns) - origin),
             duration_text(static_cast<double>(box->end_ns) - origin),
             duration_text(static_cast<double>(box->end_ns - box->start_ns)),
             duration_text(static_cast<double>(busy)), text);
}

}  // namespace pd::vis
