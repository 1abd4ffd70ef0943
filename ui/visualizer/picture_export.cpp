#include "visualizer/picture_export.h"

#include <QFile>
#include <QFileInfo>
#include <QFontMetricsF>
#include <QGuiApplication>
#include <QPageSize>
#include <QPainter>
#include <QPdfWriter>
#include <QSaveFile>
#include <QSvgGenerator>
#include <algorithm>
#include <cmath>

#include "pd/metrics.h"
#include "visualizer/memory_bars.h"
#include "visualizer/metrics_text.h"
#include "visualizer/timeline_view.h"

namespace pd::vis {

namespace {

constexpr double kNoteHeight = 24.0;
constexpr double kBandMinHeight = 270.0;
constexpr double kLineHeight = 17.0;
constexpr double kGap = 10.0;

// Everything one run contributes to a picture, built once per export.
struct Prepared {
    const PictureRun* run = nullptr;
    pd::RunMetrics metrics;
    std::unique_ptr<TimelineView> timeline;
    std::vector<MetricLine> lines;
    QString prefix;  // "A: ", "B: " when runs are compared
};

std::vector<Prepared> prepare(const std::vector<PictureRun>& runs) {
    std::vector<Prepared> out;
    const QString letters = QStringLiteral("ABCDEFGH");
    for (const auto& r : runs) {
        if (!r.result) continue;
        Prepared p;
        p.run = &r;
        if (runs.size() > 1 && out.size() < static_cast<std::size_t>(letters.size()))
            p.prefix = QStringLiteral("%1: ").arg(letters.at(static_cast<qsizetype>(out.size())));
        p.metrics = pd::compute_metrics(r.result->trace, r.config);
        p.timeline = std::make_unique<TimelineView>();
        p.timeline->setRun(r.result, p.metrics.bubble,
                           p.prefix + run_title(r.config, r.result->trace),
                           p.metrics.stage_boundaries);
        p.lines = summary_lines(r.config, *r.result, p.metrics);
        out.push_back(std::move(p));
    }
    return out;
}

QFont metrics_font() {
    QFont f;
    f.setPixelSize(12);
    return f;
}

// Where the metrics column goes beside (or without) the memory chart.
double memory_width(const PictureOptions& o) {
    return o.metrics ? std::min(620.0, o.width * 0.42) : o.width - 16;
}
QRectF metrics_rect(const PictureOptions& o, double y, double h) {
    const double x = o.memory ? 8 + memory_width(o) + 16 : 8;
    return QRectF(x, y + 4, o.width - x - 8, h - 4);
}

// The metrics lines laid out in a column `width` wide: labels in one column, each value
// wrapped onto as many lines as it needs (an elided value would hide a figure).
struct MetricsLayout {
    double label_w = 0;
    std::vector<double> heights;  // per line
    double height = 0;            // title and lines
};
MetricsLayout metrics_layout(const Prepared& prep, double width) {
    MetricsLayout m;
    const QFontMetricsF fm(metrics_font());
    for (const auto& l : prep.lines) m.label_w = std::max(m.label_w, fm.horizontalAdvance(l.label));
    const double value_w = std::max(40.0, width - m.label_w - 14);
    m.height = 26;
    for (const auto& l : prep.lines) {
        const QRectF r =
            fm.boundingRect(QRectF(0, 0, value_w, 1e6), Qt::TextWordWrap | Qt::AlignLeft, l.value);
        const double h = std::max(kLineHeight, std::ceil(r.height()) + 2);
        m.heights.push_back(h);
        m.height += h;
    }
    return m;
}

double band_height(const Prepared& p, const PictureOptions& o) {
    double h = 26 + kLineHeight * static_cast<double>(p.lines.size()) + 8;
    if (o.metrics) h = metrics_layout(p, metrics_rect(o, 0, kBandMinHeight).width()).height + 12;
    return std::max(kBandMinHeight, h);
}

QFont note_font() {
    QFont f;
    f.setPixelSize(13);
    f.setItalic(true);
    return f;
}

// The note wraps onto as many lines as it needs: a cut-off note would hide what to look at.
double note_height(const PictureOptions& o) {
    if (o.note.isEmpty()) return 0.0;
    const QRectF r = QFontMetricsF(note_font())
                         .boundingRect(QRectF(0, 0, o.width - 16, 1e6), Qt::TextWordWrap, o.note);
    return std::max(kNoteHeight, std::ceil(r.height()) + 8);
}

QSizeF size_of(const std::vector<Prepared>& prepared, const PictureOptions& o) {
    double h = note_height(o);
    for (std::size_t i = 0; i < prepared.size(); ++i)
        h += prepared[i].timeline->preferredHeight(true, i == 0, o.width) + kGap;
    if (o.memory || o.metrics)
        for (const auto& p : prepared) h += band_height(p, o) + kGap;
    return {o.width, std::max(h, 100.0)};
}

// The shared axis: the options' mapping, or one step of the first run with every run's
// origin at the start of that step.
void shared_axis(const std::vector<Prepared>& prepared, const PictureOptions& o,
                 TimeMapping& mapping, std::vector<std::int64_t>& origins) {
    origins.assign(prepared.size(), 0);
    if (o.mapping) {
        mapping = *o.mapping;
        for (std::size_t i = 0; i < prepared.size() && i < o.origins.size(); ++i)
            origins[i] = o.origins[i];
        return;
    }
    // As the panel's Fit step: a run that finished no step shows its whole run.
    std::int64_t first = 0, last = 0;
    bool steps = false;
    for (std::size_t i = 0; i < prepared.size(); ++i) {
        TimelineView& t = *prepared[i].timeline;
        const int step = t.defaultStep();
        const TimelineView::StepFit fit = t.stepFit(step);
        origins[i] = fit.origin_ns;
        first = i == 0 ? fit.begin_ns : std::min(first, fit.begin_ns);
        last = i == 0 ? fit.end_ns : std::max(last, fit.end_ns);
        steps = steps || fit.is_step;
        t.setFocusStep(step);
    }
    mapping = TimelineView::fittedMapping(static_cast<double>(first),
                                          static_cast<double>(std::max(last, first + 1000)),
                                          o.width, /*left_air=*/!steps);
}

void paint_metrics(QPainter& p, const Prepared& prep, const QRectF& r, const TimelinePalette& pal) {
    QFont f = metrics_font();
    f.setPixelSize(13);
    f.setBold(true);
    p.setFont(f);
    p.setPen(pal.text);
    p.drawText(QRectF(r.left(), r.top(), r.width(), 20), Qt::AlignLeft | Qt::AlignVCenter,
               QStringLiteral("Metrics — %1%2")
                   .arg(prep.prefix, run_title(prep.run->config, prep.run->result->trace)));
    p.setFont(metrics_font());
    const MetricsLayout m = metrics_layout(prep, r.width());
    double y = r.top() + 26;
    for (std::size_t i = 0; i < prep.lines.size(); ++i) {
        const auto& l = prep.lines[i];
        p.setPen(pal.muted);
        p.drawText(QRectF(r.left(), y, m.label_w + 4, kLineHeight),
                   Qt::AlignLeft | Qt::AlignVCenter | Qt::TextDontClip, l.label);
        p.setPen(pal.text);
        const double vx = r.left() + m.label_w + 14;
        p.drawText(QRectF(vx, y, r.right() - vx, m.heights[i]),
                   Qt::AlignLeft | Qt::AlignTop | Qt::TextWordWrap | Qt::TextDontClip, l.value);
        y += m.heights[i];
    }
}

}  // namespace

QSizeF picture_size(const std::vector<PictureRun>& runs, const PictureOptions& options) {
    return size_of(prepare(runs), options);
}

namespace {

void paint_prepared(QPainter& p, const std::vector<Prepared>& prepared, const PictureOptions& o) {
    const QSizeF size = size_of(prepared, o);
    const TimelinePalette pal = TimelinePalette::choose(o.theme, QPalette());
    p.fillRect(QRectF(QPointF(0, 0), size), pal.background);
    TimeMapping mapping;
    std::vector<std::int64_t> origins;
    shared_axis(prepared, o, mapping, origins);

    // The rulers count from the earliest run's start, as the panel's playback slider does.
    std::optional<std::int64_t> zero;
    for (std::size_t i = 0; i < prepared.size(); ++i) {
        const std::int64_t begin = prepared[i].timeline->runRange().first - origins[i];
        zero = zero ? std::min(*zero, begin) : begin;
    }

    double y = 0;
    if (!o.note.isEmpty()) {
        const double h = note_height(o);
        p.setFont(note_font());
        p.setPen(pal.text);
        p.drawText(QRectF(8, 2, o.width - 16, h - 4),
                   Qt::AlignLeft | Qt::AlignVCenter | Qt::TextWordWrap, o.note);
        y += h;
    }
    for (std::size_t i = 0; i < prepared.size(); ++i) {
        const TimelineView& t = *prepared[i].timeline;
        TimelineView::View v;
        // Runs after the first share its legend: same colours, less to read.
        v.legend = i == 0;
        v.size = QSizeF(o.width, t.preferredHeight(true, v.legend, o.width));
        v.mapping = mapping;
        v.origin_ns = origins[i];
        v.time_zero_ns = zero;
        v.cursor_ns = o.cursor_ns;
        v.palette = pal;
        v.focus_step = o.mapping ? o.focus_step : t.focusStep();
        p.save();
        p.translate(0, y);
        t.paint(p, v);
        p.restore();
        y += v.size.height() + kGap;
    }
    if (!o.memory && !o.metrics) return;
    // Compared runs' memory is drawn on one scale, as on screen.
    std::vector<std::unique_ptr<MemoryBarsView>> bars;
    double shared_top = 0;
    if (o.memory)
        for (const auto& prep : prepared) {
            bars.push_back(std::make_unique<MemoryBarsView>());
            bars.back()->setRun(prep.run->result, prep.metrics);
            bars.back()->setTitlePrefix(prep.prefix);
            shared_top = std::max(shared_top, bars.back()->naturalTopBytes());
        }
    for (std::size_t i = 0; i < prepared.size(); ++i) {
        const Prepared& prep = prepared[i];
        const double h = band_height(prep, o);
        if (o.memory) {
            if (prepared.size() > 1) bars[i]->setSharedTopBytes(shared_top);
            bars[i]->renderChart(p, QRectF(8, y, memory_width(o), std::min(h, 420.0)), pal);
        }
        if (o.metrics) paint_metrics(p, prep, metrics_rect(o, y, h), pal);
        y += h + kGap;
    }
}

QImage render_prepared(const std::vector<Prepared>& prepared, const PictureOptions& options,
                       double dpr) {
    const QSizeF size = size_of(prepared, options);
    QImage image((size * dpr).toSize(), QImage::Format_ARGB32_Premultiplied);
    image.setDevicePixelRatio(dpr);
    image.fill(Qt::transparent);
    QPainter p(&image);
    p.setRenderHint(QPainter::TextAntialiasing);
    paint_prepared(p, prepared, options);
    p.end();
    return image;
}

}  // namespace

void paint_picture(QPainter& p, const std::vector<PictureRun>& runs, const PictureOptions& o) {
    paint_prepared(p, prepare(runs), o);
}

QImage render_picture(const std::vector<PictureRun>& runs, const PictureOptions& options,
                      double dpr) {
    return render_prepared(prepare(runs), options, dpr);
}

bool export_picture(const QString& path, const std::vector<PictureRun>& runs,
                    const PictureOptions& options, QString* error) {
    auto fail = [&](const QString& message) {
        if (error) *error = message;
        return false;
    };
    if (runs.empty() || !runs.front().result)
        return fail(QStringLiteral("there is no run to export"));
    const QString suffix = QFileInfo(path).suffix().toLower();
    if (suffix != QStringLiteral("png") && suffix != QStringLiteral("svg") &&
        suffix != QStringLiteral("pdf"))
        return fail(
            QStringLiteral("unknown picture format '%1': use .png, .svg or .pdf").arg(suffix));
    const auto prepared = prepare(runs);
    const QSizeF size = size_of(prepared, options);
    // Written beside the target and renamed over it when complete (QSaveFile): a failed or
    // killed export leaves the old picture, never a cut one.
    QSaveFile file(path);
    if (!file.open(QIODevice::WriteOnly))
        return fail(QStringLiteral("cannot write %1: %2").arg(path, file.errorString()));
    if (suffix == QStringLiteral("png")) {
        const QImage image = render_prepared(prepared, options, 2.0);
        if (!image.save(&file, "PNG")) return fail(QStringLiteral("cannot write %1").arg(path));
    } else if (suffix == QStringLiteral("svg")) {
        QSvgGenerator svg;
        svg.setOutputDevice(&file);
        svg.setSize(size.toSize());
        svg.setViewBox(QRectF(QPointF(0, 0), size));
        svg.setTitle(QStringLiteral("ParallelDeck timeline"));
        QPainter p;
        if (!p.begin(&svg)) return fail(QStringLiteral("cannot write %1").arg(path));
        paint_prepared(p, prepared, options);
        p.end();
    } else {
        QPdfWriter pdf(&file);
        // 96 dpi makes one painter unit one logical pixel, as on screen.
        pdf.setResolution(96);
        pdf.setPageSize(QPageSize(size * 72.0 / 96.0, QPageSize::Point, QStringLiteral("timeline"),
                                  QPageSize::ExactMatch));
        pdf.setPageMargins(QMarginsF(0, 0, 0, 0));
        pdf.setTitle(QStringLiteral("ParallelDeck timeline"));
        QPainter p;
        if (!p.begin(&pdf)) return fail(QStringLiteral("cannot write %1").arg(path));
        paint_prepared(p, prepared, options);
        p.end();
    }
    if (!file.commit())
        return fail(QStringLiteral("cannot write %1: %2").arg(path, file.errorString()));
    return true;
}

bool export_picture(const QString& path, const pd::RunConfig& config,
                    std::shared_ptr<const pd::RunResult> result, QString* error,
                    const PictureOptions& options) {
    return export_picture(path, std::vector<PictureRun>{{config, std::move(result)}}, options,
                          error);
}

}  // namespace pd::vis
