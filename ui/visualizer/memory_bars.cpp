#include "visualizer/memory_bars.h"

#include <QBarCategoryAxis>
#include <QBarSet>
#include <QEvent>
#include <QFontMetricsF>
#include <QGraphicsLayout>
#include <QLegend>
#include <QLegendMarker>
#include <QLineSeries>
#include <QStackedBarSeries>
#include <QValueAxis>
#include <algorithm>
#include <cmath>

#include "visualizer/chart_style.h"
#include "visualizer/format.h"

namespace pd::vis {

namespace {

QString category_text(std::size_t c) {
    switch (static_cast<pd::MemoryCategory>(c)) {
        case pd::MemoryCategory::parameters:
            return QStringLiteral("parameters");
        case pd::MemoryCategory::gradients:
            return QStringLiteral("gradients");
        case pd::MemoryCategory::optimizer_state:
            return QStringLiteral("optimizer state");
        case pd::MemoryCategory::gathered_parameters:
            return QStringLiteral("gathered parameters");
        case pd::MemoryCategory::activations:
            return QStringLiteral("activations");
        case pd::MemoryCategory::communication:
            return QStringLiteral("communication");
        case pd::MemoryCategory::workspace:
            return QStringLiteral("workspace");
    }
    return {};
}

}  // namespace

MemoryBarsView::MemoryBarsView(QWidget* parent) : QChartView(parent) {
    setRenderHint(QPainter::Antialiasing);
    // The view's own chart: setChart() with a new one would orphan this one (a leak).
    QChart* c = chart();
    c->legend()->setAlignment(Qt::AlignBottom);
    c->legend()->setShowToolTips(true);  // labels elided in a narrow chart stay readable
    c->setMargins(QMargins(4, 4, 4, 4));
    c->layout()->setContentsMargins(0, 0, 0, 0);
    c->setBackgroundRoundness(0);
    setMinimumSize(280, 200);
}

void MemoryBarsView::setRun(std::shared_ptr<const pd::RunResult> result,
                            const pd::RunMetrics& metrics) {
    highlight_device_ = -1;  // a claim's mark belongs to the run it was made on
    result_ = std::move(result);
    if (result_) {
        peak_ = peak_memory(*result_, metrics);
        timeline_ = MemoryTimeline(*result_);
    } else {
        peak_ = {};
        timeline_ = {};
    }
    rebuild();
}

double MemoryBarsView::maxTotal() const {
    double max_total = 1;
    for (int d = 0; d < static_cast<int>(peak_.bytes.size()); ++d) {
        double t = peak_.total(d);
        if (const pd::OomInfo* o = peak_.oom_on(d)) t += static_cast<double>(o->requested_bytes);
        max_total = std::max(max_total, t);
    }
    return max_total;
}

bool MemoryBarsView::capacityOnScale(int row) const {
    // A budget is drawn only when it is on the same scale as the bars; a 4 GiB budget above
    // 2 MiB of use would squash every bar to a sliver (so would a 1 TiB NVMe share).
    const auto r = static_cast<std::size_t>(row);
    return r < peak_.capacity.size() && peak_.capacity[r] > 0 &&
           peak_.capacity[r] <= 2.5 * maxTotal();
}

double MemoryBarsView::maxCapacity() const {
    double max_capacity = 0;
    for (int d = 0; d < static_cast<int>(peak_.capacity.size()); ++d)
        if (capacityOnScale(d))
            max_capacity = std::max(max_capacity, peak_.capacity[static_cast<std::size_t>(d)]);
    return max_capacity;
}

bool MemoryBarsView::capacityOnChart() const { return maxCapacity() > 0; }

double MemoryBarsView::naturalTopBytes() const {
    if (peak_.bytes.empty()) return 0;
    return std::max(maxTotal(), capacityOnChart() ? maxCapacity() : 0.0) * 1.12;
}

void MemoryBarsView::setSharedTopBytes(double bytes) {
    if (shared_top_ == bytes) return;
    shared_top_ = bytes;
    rebuild();
}

double MemoryBarsView::axisTopBytes() const {
    return axis_y_ ? axis_y_->max() * scale_ : 0.0;
}

void MemoryBarsView::setMode(Mode mode) {
    if (mode_ == mode) return;
    mode_ = mode;
    show(mode_ == Mode::peak ? peak_ : timeline_.at(cursor_ns_));
}

void MemoryBarsView::setCursorTime(std::int64_t t_ns) {
    cursor_ns_ = t_ns;
    if (mode_ == Mode::at_cursor) show(timeline_.at(t_ns));
}

void MemoryBarsView::setTheme(ThemeChoice theme) {
    theme_ = theme;
    applyPalette(TimelinePalette::choose(theme_, palette()));
    applyHighlight();
}

void MemoryBarsView::setTitlePrefix(const QString& prefix) {
    prefix_ = prefix;
    show(shown_);
}

void MemoryBarsView::resizeEvent(QResizeEvent* event) {
    // A wide chart lists categories in a row beneath; a narrow one in a column beside it,
    // where the names are not cut short; so does a short one, where a row beneath would not
    // fit and Qt Charts drops the legend.
    chart()->legend()->setAlignment(width() < 720 || height() < 300 ? Qt::AlignRight
                                                                    : Qt::AlignBottom);
    QChartView::resizeEvent(event);
}

void MemoryBarsView::changeEvent(QEvent* event) {
    if (event->type() == QEvent::PaletteChange && theme_ == ThemeChoice::follow_palette) {
        applyPalette(TimelinePalette::choose(theme_, palette()));
        applyHighlight();
    }
    QChartView::changeEvent(event);
}

void MemoryBarsView::rebuild() {
    QChart* c = chart();
    c->removeAllSeries();
    for (QAbstractAxis* a : c->axes()) {
        c->removeAxis(a);
        delete a;
    }
    series_ = nullptr;
    capacity_line_ = nullptr;
    sets_.clear();
    // The theme's colours first: a chart that returns early (no run, a trace without memory)
    // is not left in Qt Charts' white.
    applyPalette(TimelinePalette::choose(theme_, palette()));
    const int n = static_cast<int>(peak_.bytes.size());
    if (n == 0) return;
    if (result_ && result_->trace.origin.imported && result_->trace.memory.empty()) {
        // Bars of zeros would read as "no memory used": say what the traces lack instead.
        chart()->setTitle(prefix_ + QStringLiteral("Memory: not recorded in these traces"));
        return;
    }

    // One axis for peak and playback alike, so bars grow and shrink against a fixed scale;
    // compared runs share the larger of their two scales.
    const bool capacity_on_chart = capacityOnChart();
    const double top = std::max(naturalTopBytes(), shared_top_);
    scale_ = 1;
    unit_ = QStringLiteral("B");
    for (const auto& [s, name] : {std::pair{1024.0 * 1024 * 1024, "GiB"},
                                  std::pair{1024.0 * 1024, "MiB"}, std::pair{1024.0, "KiB"}}) {
        if (top >= s) {
            scale_ = s;
            unit_ = QLatin1String(name);
            break;
        }
    }

    series_ = new QStackedBarSeries();
    for (std::size_t cat = 0; cat < pd::kMemoryCategoryCount; ++cat) {
        auto* set = new QBarSet(category_text(cat));
        for (int d = 0; d < n; ++d) *set << 0.0;
        series_->append(set);
        sets_.append(set);
    }
    if (!peak_.ooms.empty()) {
        auto* failed = new QBarSet(QStringLiteral("failed request (over capacity)"));
        for (int d = 0; d < n; ++d) *failed << 0.0;
        series_->append(failed);
        sets_.append(failed);
    }
    series_->setBarWidth(0.6);
    c->addSeries(series_);

    axis_x_ = new QBarCategoryAxis();
    QStringList names;
    // Short category names keep bars readable when two charts share the width.
    // Host rows (ZeRO-Offload), then NVMe rows (ZeRO-Infinity), come after the devices'.
    const int devices = n - peak_.host_rows - peak_.nvme_rows;
    // Short names ("h0", "n0") fit under narrow bars; the axis title says what they are.
    for (int d = 0; d < n; ++d)
        names << (d < devices                     ? QString::number(d)
                  : d < devices + peak_.host_rows ? QStringLiteral("h%1").arg(d - devices)
                                                  : QStringLiteral("n%1").arg(
                                                        d - devices - peak_.host_rows));
    axis_x_->append(names);
    QString axis_title = QStringLiteral("device");
    if (peak_.host_rows > 0) axis_title += QStringLiteral(" · h: host");
    if (peak_.nvme_rows > 0) axis_title += QStringLiteral(" · n: NVMe");
    axis_x_->setTitleText(axis_title);
    c->addAxis(axis_x_, Qt::AlignBottom);
    series_->attachAxis(axis_x_);
    axis_y_ = new QValueAxis();
    axis_y_->setRange(0, top / scale_);
    axis_y_->setLabelFormat(QStringLiteral("%.1f"));
    axis_y_->setTitleText(unit_);
    axis_y_->setTickCount(5);
    axis_y_->applyNiceNumbers();
    c->addAxis(axis_y_, Qt::AlignLeft);
    series_->attachAxis(axis_y_);

    QString cap_text;
    if (capacity_on_chart) {
        capacity_line_ = new QLineSeries();
        capacity_line_->setName(QStringLiteral("capacity"));
        // Category axes place device d at x = d; the line spans every bar whose budget is on
        // the scale, stepping where host or NVMe shares have budgets of their own.
        for (int d = 0; d < n; ++d) {
            if (!capacityOnScale(d)) continue;
            const double cap = peak_.capacity[static_cast<std::size_t>(d)] / scale_;
            capacity_line_->append(d - 0.45, cap);
            capacity_line_->append(d + 0.45, cap);
        }
        c->addSeries(capacity_line_);
        capacity_line_->attachAxis(axis_x_);
        capacity_line_->attachAxis(axis_y_);
    }
    // Each kind of budget off the scale, named once (the devices', host's or NVMe's).
    QStringList off_scale;
    const auto note_group = [&](int first, int rows, const QString& what) {
        double cap = 0;
        for (int d = first; d < first + rows; ++d)
            if (!capacityOnScale(d) && static_cast<std::size_t>(d) < peak_.capacity.size())
                cap = std::max(cap, peak_.capacity[static_cast<std::size_t>(d)]);
        if (cap > 0) off_scale << what.arg(bytes_text(cap));
    };
    note_group(0, devices, QStringLiteral("capacity %1 per device"));
    note_group(devices, peak_.host_rows, QStringLiteral("host memory %1 per device"));
    note_group(devices + peak_.host_rows, peak_.nvme_rows, QStringLiteral("NVMe %1 per device"));
    if (!off_scale.isEmpty())
        cap_text = QStringLiteral("<br><span style=\"font-weight:normal\">%1 (off scale)</span>")
                       .arg(off_scale.join(QStringLiteral(" · ")));
    capacity_note_ = cap_text;
    applyPalette(TimelinePalette::choose(theme_, palette()));
    show(mode_ == Mode::peak ? peak_ : timeline_.at(cursor_ns_));
    applyHighlight();  // the bar sets are new
}

void MemoryBarsView::show(const MemorySnapshot& s) {
    shown_ = s;
    if (!series_) return;
    const int n = static_cast<int>(s.bytes.size());
    for (int d = 0; d < n && d < static_cast<int>(peak_.bytes.size()); ++d) {
        // The categories keep their colours whatever the total: what overflows is the failed
        // request stacked on top, hatched in red, against the capacity line.
        for (std::size_t cat = 0; cat < pd::kMemoryCategoryCount; ++cat) {
            QBarSet* set = sets_[static_cast<qsizetype>(cat)];
            const double v = s.bytes[static_cast<std::size_t>(d)][cat] / scale_;
            if (set->at(d) != v) set->replace(d, v);
        }
        if (sets_.size() > static_cast<qsizetype>(pd::kMemoryCategoryCount)) {
            QBarSet* failed = sets_.back();
            const pd::OomInfo* o = s.oom_on(d);
            const double v = o ? static_cast<double>(o->requested_bytes) / scale_ : 0.0;
            if (failed->at(d) != v) failed->replace(d, v);
        }
    }
    // A category no device ever used (gathered parameters outside ZeRO-3, communication on
    // one device) leaves the legend, so the ones that matter are not cut short.
    const QList<QLegendMarker*> markers = chart()->legend()->markers(series_);
    for (qsizetype i = 0;
         i < markers.size() && i < static_cast<qsizetype>(pd::kMemoryCategoryCount); ++i) {
        bool used = false;
        for (const auto& row : peak_.bytes) used = used || row[static_cast<std::size_t>(i)] > 0;
        markers[i]->setVisible(used);
    }
    chart()->setTitle(prefix_ +
                      (mode_ == Mode::peak ? QStringLiteral("Peak memory by category")
                                           : QStringLiteral("Memory live at the cursor")) +
                      capacity_note_);
}

void MemoryBarsView::highlight(std::optional<pd::MemoryCategory> category, int device) {
    highlight_category_ = category;
    highlight_device_ = device;
    applyHighlight();
}

void MemoryBarsView::applyHighlight() {
    // The claimed segment keeps its colour; every other one fades toward the background, so
    // one bright piece remains (a selection colour of its own would read as another category).
    const TimelinePalette pal = TimelinePalette::choose(theme_, palette());
    const auto faded = [&pal](QColor c) {
        c.setAlphaF(0.25f);
        return c;
    };
    for (qsizetype i = 0; i < sets_.size() && i < static_cast<qsizetype>(pd::kMemoryCategoryCount);
         ++i) {
        QBarSet* set = sets_[i];
        const QColor own = pal.memory_color(static_cast<pd::MemoryCategory>(i));
        set->deselectAllBars();
        const bool marking = highlight_device_ >= 0 && highlight_device_ < set->count();
        const bool claimed =
            !highlight_category_ || static_cast<qsizetype>(*highlight_category_) == i;
        set->setColor(marking && !claimed ? faded(own) : own);
        if (!marking || !claimed) continue;
        set->setSelectedColor(faded(own));
        for (int d = 0; d < set->count(); ++d)
            if (d != highlight_device_) set->selectBar(d);
    }
}

void MemoryBarsView::applyPalette(const TimelinePalette& pal) {
    apply_chart_style(*chart(), pal);
    for (qsizetype i = 0; i < sets_.size(); ++i) {
        QBarSet* set = sets_[i];
        if (i < static_cast<qsizetype>(pd::kMemoryCategoryCount)) {
            set->setColor(pal.memory_color(static_cast<pd::MemoryCategory>(i)));
            set->setBorderColor(pal.background);
        } else {
            set->setColor(Qt::transparent);
            set->setBorderColor(pal.oom);
            set->setBrush(QBrush(pal.oom, Qt::BDiagPattern));
        }
    }
    if (capacity_line_) {
        QPen pen(pal.text, 2, Qt::DashLine);
        capacity_line_->setPen(pen);
    }
}

QFont MemoryBarsView::legendFont() {
    QFont f;
    f.setPixelSize(11);
    return f;
}

std::vector<MemoryBarsView::LegendEntry> MemoryBarsView::legendLayout(
    double width, const QFont& font, const TimelinePalette& pal) const {
    constexpr double kSwatch = 12, kTextGap = 4, kEntryGap = 14, kRow = 17;
    const QFontMetricsF fm(font);
    // What the chart's legend lists: the categories some device used (show() hides the
    // others' markers), the failed request, the capacity line.
    std::vector<LegendEntry> out;
    if (series_) {
        for (std::size_t cat = 0; cat < pd::kMemoryCategoryCount; ++cat) {
            bool used = false;
            for (const auto& row : peak_.bytes) used = used || row[cat] > 0;
            if (used)
                out.push_back({category_text(cat),
                               pal.memory_color(static_cast<pd::MemoryCategory>(cat)),
                               false,
                               false,
                               {}});
        }
        if (sets_.size() > static_cast<qsizetype>(pd::kMemoryCategoryCount))
            out.push_back({sets_.back()->label(), pal.oom, false, true, {}});
        if (capacity_line_) out.push_back({capacity_line_->name(), pal.text, true, false, {}});
    }
    // Rows centred like Qt's own legend, each entry as wide as its whole label.
    double x = 0;
    int row = 0;
    std::vector<std::size_t> row_start{0};
    for (std::size_t i = 0; i < out.size(); ++i) {
        const double w = kSwatch + kTextGap + std::ceil(fm.horizontalAdvance(out[i].text)) + 1;
        if (x > 0 && x + w > width) {
            x = 0;
            ++row;
            row_start.push_back(i);
        }
        out[i].rect = QRectF(x, row * kRow, w, kRow);
        x += w + kEntryGap;
    }
    row_start.push_back(out.size());
    for (std::size_t r = 0; r + 1 < row_start.size(); ++r) {
        if (row_start[r] == row_start[r + 1]) continue;
        const double used = out[row_start[r + 1] - 1].rect.right();
        const double shift = std::max(0.0, (width - used) / 2);
        for (std::size_t i = row_start[r]; i < row_start[r + 1]; ++i)
            out[i].rect.translate(shift, 0);
    }
    return out;
}

void MemoryBarsView::renderChart(QPainter& painter, const QRectF& target,
                                 const TimelinePalette& palette) {
    const ThemeChoice saved = theme_;
    applyPalette(palette);
    for (QBarSet* set : sets_) set->deselectAllBars();  // no claim's mark in a picture
    QChart* c = chart();
    // The legend is drawn here, wrapped, below the chart: Qt's would elide in a narrow column.
    const QFont font = legendFont();
    const auto legend = legendLayout(target.width() - 16, font, palette);
    double legend_h = 0;
    for (const auto& e : legend) legend_h = std::max(legend_h, e.rect.bottom());
    if (legend_h > 0) legend_h += 6;
    const bool legend_shown = c->legend()->isVisible();
    c->legend()->setVisible(false);
    const QSizeF chart_size(target.width(), std::max(60.0, target.height() - legend_h));
    const QSizeF saved_size = c->size();
    c->resize(chart_size);
    // Lay the chart out now: an export has no event loop turn between resize and render.
    if (c->layout()) c->layout()->activate();
    scene()->setSceneRect(QRectF(QPointF(0, 0), chart_size));
    c->setPos(0, 0);
    scene()->render(&painter, QRectF(target.topLeft(), chart_size),
                    QRectF(QPointF(0, 0), chart_size));
    painter.save();
    painter.setFont(font);
    const QFontMetricsF fm(font, painter.device());
    const QPointF origin(target.left() + 8, target.top() + chart_size.height() + 2);
    for (const auto& e : legend) {
        const QRectF r = e.rect.translated(origin);
        const QRectF swatch(r.left(), r.center().y() - 5, 12, 10);
        if (e.line) {
            painter.setPen(QPen(e.color, 2, Qt::DashLine));
            painter.drawLine(QPointF(swatch.left(), swatch.center().y()),
                             QPointF(swatch.right(), swatch.center().y()));
        } else if (e.hatched) {
            painter.setPen(QPen(e.color, 1));
            painter.setBrush(QBrush(e.color, Qt::BDiagPattern));
            painter.drawRect(swatch);
            painter.setBrush(Qt::NoBrush);
        } else {
            painter.fillRect(swatch, e.color);
        }
        painter.setPen(palette.text);
        // From the left edge, unclipped: a font a little wider in SVG or PDF still shows all.
        painter.drawText(
            QPointF(swatch.right() + 4, r.center().y() + (fm.ascent() - fm.descent()) / 2), e.text);
    }
    painter.restore();
    c->legend()->setVisible(legend_shown);
    c->resize(saved_size);
    theme_ = saved;
    applyPalette(TimelinePalette::choose(theme_, this->palette()));
    applyHighlight();  // the picture leaves the claim's mark out; the screen keeps it
}

}  // namespace pd::vis
