#include "visualizer/loss_chart.h"

#include <QEvent>
#include <QGraphicsLayout>
#include <QLegendMarker>
#include <QLineSeries>
#include <QLogValueAxis>
#include <QScatterSeries>
#include <QValueAxis>
#include <algorithm>
#include <cmath>
#include <limits>

#include "visualizer/chart_style.h"

namespace pd::vis {

namespace {

// An axis range with a little air, never empty (one step, or a flat loss, still shows).
std::pair<double, double> padded(double lo, double hi, bool from_zero) {
    if (from_zero) lo = std::min(lo, 0.0);
    double span = hi - lo;
    if (!(span > 0)) span = std::max(std::abs(hi), 1.0) * 0.1;
    return {from_zero ? lo : lo - span * 0.08, hi + span * 0.08};
}

// Labels with as many decimals as the tick interval needs (2.3010 2.3015 ..., not "2.3" four
// times on a loss that hardly moves), and no more.
void label_by_interval(QValueAxis& axis) {
    const int ticks = axis.tickCount();
    if (ticks < 2) return;
    const double interval = (axis.max() - axis.min()) / (ticks - 1);
    int decimals = 0;
    for (double scaled = interval; decimals < 6; ++decimals, scaled *= 10)
        if (std::abs(scaled - std::round(scaled)) < 1e-6 * std::max(1.0, scaled)) break;
    axis.setLabelFormat(QStringLiteral("%.") + QString::number(decimals) + QStringLiteral("f"));
}

}  // namespace

LossChart::LossChart(QWidget* parent) : QChartView(parent) {
    setRenderHint(QPainter::Antialiasing);
    // The view's own chart: setChart() with a new one would orphan this one.
    QChart* c = chart();
    c->legend()->setAlignment(Qt::AlignBottom);
    c->setMargins(QMargins(4, 4, 4, 4));
    c->layout()->setContentsMargins(0, 0, 0, 0);
    c->setBackgroundRoundness(0);
    setMinimumSize(260, 200);
    rebuild();
}

void LossChart::setRun(std::shared_ptr<const pd::RunResult> result, const pd::RunMetrics& metrics) {
    result_ = std::move(result);
    steps_.clear();
    records_.clear();
    if (result_) {
        records_ = result_->trace.steps;
        // The losses as the run recorded them; the step time of the same step beside each.
        for (const pd::StepRecord& s : result_->trace.steps) {
            pd::StepMetrics m;
            m.step = s.step;
            m.loss = s.loss;
            for (const pd::StepMetrics& sm : metrics.steps)
                if (sm.step == s.step) m.time_s = sm.time_s;
            steps_.push_back(m);
        }
    }
    rebuild();
}

LossChart::Extents LossChart::Extents::united(const Extents& o) const {
    if (empty) return o;
    if (o.empty) return *this;
    Extents u;
    u.empty = false;
    u.loss_lo = std::min(loss_lo, o.loss_lo);
    u.loss_hi = std::max(loss_hi, o.loss_hi);
    u.time_hi_ms = std::max(time_hi_ms, o.time_hi_ms);
    u.first_step = std::min(first_step, o.first_step);
    u.last_step = std::max(last_step, o.last_step);
    return u;
}

LossChart::Extents LossChart::naturalExtents() const {
    Extents e;
    e.loss_lo = std::numeric_limits<double>::max();
    e.loss_hi = -e.loss_lo;
    for (std::size_t i = 0; i < steps_.size(); ++i) {
        const pd::StepMetrics& s = steps_[i];
        const int n = s.step + 1;  // steps count from 1, as on the timeline
        if (i == 0) e.first_step = e.last_step = n;
        e.first_step = std::min(e.first_step, n);
        e.last_step = std::max(e.last_step, n);
        if (std::isfinite(s.loss)) {
            e.loss_lo = std::min(e.loss_lo, s.loss);
            e.loss_hi = std::max(e.loss_hi, s.loss);
        }
        e.time_hi_ms = std::max(e.time_hi_ms, s.time_s * 1e3);
    }
    e.empty = steps_.empty();
    return e;
}

void LossChart::setSharedExtents(std::optional<Extents> extents) {
    shared_ = extents;
    rebuild();
}

void LossChart::setTheme(ThemeChoice theme) {
    theme_ = theme;
    applyPalette(TimelinePalette::choose(theme_, palette()));
}

void LossChart::setTitlePrefix(const QString& prefix) {
    prefix_ = prefix;
    rebuild();
}

void LossChart::changeEvent(QEvent* event) {
    if (event->type() == QEvent::PaletteChange && theme_ == ThemeChoice::follow_palette)
        applyPalette(TimelinePalette::choose(theme_, palette()));
    QChartView::changeEvent(event);
}

void LossChart::rebuild() {
    QChart* c = chart();
    c->removeAllSeries();
    for (QAbstractAxis* a : c->axes()) {
        c->removeAxis(a);
        delete a;
    }
    loss_ = new QLineSeries();
    loss_->setName(tr("loss"));
    loss_->setPointsVisible(true);
    // fp16's loss scale takes the right axis when the run has one (and the step time none:
    // every series made here is the chart's, deleted by the next removeAllSeries).
    const bool scaled = !records_.empty() && records_.front().loss_scale > 0;
    time_ = nullptr;
    if (!scaled) {
        time_ = new QLineSeries();
        time_->setName(tr("step time (ms)"));
        time_->setPointsVisible(true);
    }
    scale_ = nullptr;
    skipped_ = nullptr;
    axis_scale_ = nullptr;
    int skipped_count = 0;
    if (scaled) {
        scale_ = new QLineSeries();
        scale_->setName(tr("loss scale"));
        scale_->setPointsVisible(true);
        skipped_ = new QScatterSeries();
        skipped_->setName(tr("skipped step (inf/NaN)"));
        skipped_->setMarkerShape(QScatterSeries::MarkerShapeRotatedRectangle);
        skipped_->setMarkerSize(11);
    }
    for (const pd::StepMetrics& s : steps_) {
        const int n = s.step + 1;  // steps count from 1, as on the timeline
        // A diverged run's inf or NaN cannot be plotted: the title says so below.
        if (std::isfinite(s.loss)) loss_->append(n, s.loss);
        if (!scaled) time_->append(n, s.time_s * 1e3);
    }
    if (scaled)
        for (const pd::StepRecord& r : records_) {
            // log2 of the scale: it moves by factors of 2, and "2^16" is short on a narrow chart.
            if (r.loss_scale > 0) scale_->append(r.step + 1, std::log2(r.loss_scale));
            skipped_count += r.skipped ? 1 : 0;
        }
    // A compared run's extents join this one's: both charts on the same scales.
    const Extents e = shared_ ? naturalExtents().united(*shared_) : naturalExtents();
    const double loss_lo = e.loss_lo, loss_hi = e.loss_hi, time_hi = e.time_hi_ms;
    const int first = e.first_step, last = e.last_step;
    c->addSeries(loss_);
    if (scaled) {
        c->addSeries(scale_);
        c->addSeries(skipped_);
    } else {
        c->addSeries(time_);
    }

    axis_step_ = new QValueAxis();
    axis_step_->setTitleText(tr("step"));
    axis_step_->setLabelFormat(QStringLiteral("%d"));
    axis_step_->setTickType(QValueAxis::TicksDynamic);
    axis_step_->setTickAnchor(1);
    axis_step_->setTickInterval(std::max(1, (last - first + 1) / 8));
    axis_step_->setRange(first - 0.25, std::max(first + 1, last) + 0.25);
    axis_loss_ = new QValueAxis();
    axis_loss_->setTitleText(tr("loss"));
    axis_loss_->setLabelFormat(QStringLiteral("%.3g"));
    axis_time_ = new QValueAxis();
    // Short: the legend names the line, and a long title is elided on a short chart.
    axis_time_->setTitleText(tr("ms"));
    axis_time_->setLabelFormat(QStringLiteral("%.3g"));
    // Round tick values (2.2, 2.4, ...) read at a glance.
    if (loss_->count() > 0 && loss_lo <= loss_hi) {
        const auto [lo, hi] = padded(loss_lo, loss_hi, false);
        axis_loss_->setRange(lo, hi);
        axis_loss_->applyNiceNumbers();
        label_by_interval(*axis_loss_);
    }
    // Skipped steps sit on the loss line; where the loss is not finite, at the axis' bottom.
    if (scaled)
        for (const pd::StepRecord& r : records_)
            if (r.skipped)
                skipped_->append(r.step + 1, std::isfinite(r.loss) ? r.loss : axis_loss_->min());
    {
        const auto [lo, hi] = padded(0, time_hi, true);
        axis_time_->setRange(lo, hi);
        axis_time_->applyNiceNumbers();
    }
    c->addAxis(axis_step_, Qt::AlignBottom);
    c->addAxis(axis_loss_, Qt::AlignLeft);
    loss_->attachAxis(axis_step_);
    loss_->attachAxis(axis_loss_);
    if (scaled) {
        delete axis_time_;  // the scale has the right axis
        axis_time_ = nullptr;
        axis_scale_ = new QValueAxis();
        axis_scale_->setTitleText(tr("loss scale"));
        axis_scale_->setLabelFormat(QStringLiteral("2^%.0f"));
        double lo = scale_->at(0).y(), hi = lo;
        for (const QPointF& p : scale_->points()) {
            lo = std::min(lo, p.y());
            hi = std::max(hi, p.y());
        }
        // Whole powers of two at every tick: a span that divides into at most 6 steps.
        const double step = std::max(1.0, std::ceil((std::ceil(hi) - std::floor(lo) + 2) / 6));
        lo = std::floor(lo) - 1;
        hi = lo + step * std::ceil((std::ceil(hi) + 1 - lo) / step);
        axis_scale_->setTickCount(static_cast<int>(std::lround((hi - lo) / step)) + 1);
        axis_scale_->setRange(lo, hi);
        c->addAxis(axis_scale_, Qt::AlignRight);
        scale_->attachAxis(axis_step_);
        scale_->attachAxis(axis_scale_);
        skipped_->attachAxis(axis_step_);
        skipped_->attachAxis(axis_loss_);
    } else {
        c->addAxis(axis_time_, Qt::AlignRight);
        time_->attachAxis(axis_step_);
        time_->attachAxis(axis_time_);
    }

    // Two lines, as the memory chart's: a narrow (compared) chart keeps both whole.
    QString detail;
    if (steps_.empty())
        detail = tr("no step completed");
    else if (result_ && result_->trace.origin.imported && loss_->count() == 0)
        detail = tr("step times of the profiler's steps; a trace records no loss");
    else if (scaled && skipped_count > 0)
        detail =
            tr("%n of %1 steps skipped (inf/NaN gradients); scale %2 → %3", nullptr, skipped_count)
                .arg(records_.size())
                .arg(records_.front().loss_scale, 0, 'g', 6)
                .arg(records_.back().loss_scale, 0, 'g', 6);
    else if (loss_->count() < static_cast<int>(steps_.size()))
        detail = tr("the loss diverged (not finite)");
    else if (steps_.size() >= 2)
        detail = tr("loss %1 → %2 over %3 steps")
                     .arg(steps_.front().loss, 0, 'f', 3)
                     .arg(steps_.back().loss, 0, 'f', 3)
                     .arg(steps_.size());
    else
        detail = tr("one step: loss %1").arg(steps_.front().loss, 0, 'f', 3);
    c->setTitle(prefix_ + (scaled ? tr("Loss and loss scale") : tr("Loss and step time")) +
                QStringLiteral("<br><span style=\"font-weight:normal\">%1</span>").arg(detail));
    applyPalette(TimelinePalette::choose(theme_, palette()));
}

void LossChart::applyPalette(const TimelinePalette& pal) {
    apply_chart_style(*chart(), pal);
    // The time axis has only a grid of its own when nothing else does: one grid reads better.
    if (axis_time_) axis_time_->setGridLineVisible(false);
    // Loss: the run's story, solid blue; step time: the cost, dashed orange (Okabe-Ito).
    if (loss_) {
        QPen pen(pal.all_gather, 2.2);
        loss_->setPen(pen);
        loss_->setColor(pal.all_gather);
    }
    if (time_) {
        QPen pen(pal.optimizer, 1.6, Qt::DashLine);
        time_->setPen(pen);
        time_->setColor(pal.optimizer);
    }
    if (axis_loss_) axis_loss_->setLabelsBrush(pal.all_gather);
    if (axis_time_) axis_time_->setLabelsBrush(pal.optimizer);
    // The scale: the step time's place and colour; skipped steps in the out-of-memory red.
    if (scale_) {
        scale_->setPen(QPen(pal.optimizer, 1.6, Qt::DashLine));
        scale_->setColor(pal.optimizer);
    }
    if (axis_scale_) {
        axis_scale_->setLabelsBrush(pal.optimizer);
        axis_scale_->setGridLineVisible(false);
    }
    if (skipped_) {
        skipped_->setColor(pal.oom);
        skipped_->setBorderColor(pal.text);
    }
}

void LossChart::renderChart(QPainter& painter, const QRectF& target,
                            const TimelinePalette& palette) {
    applyPalette(palette);
    QChart* c = chart();
    const QSizeF saved_size = c->size();
    c->resize(target.size());
    // Lay the chart out now: an export has no event loop turn between resize and render.
    if (c->layout()) c->layout()->activate();
    scene()->setSceneRect(QRectF(QPointF(0, 0), target.size()));
    c->setPos(0, 0);
    scene()->render(&painter, target, QRectF(QPointF(0, 0), target.size()));
    c->resize(saved_size);
    applyPalette(TimelinePalette::choose(theme_, this->palette()));
}

}  // namespace pd::vis
