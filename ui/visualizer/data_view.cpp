#include "visualizer/data_view.h"

#include <QFontMetricsF>
#include <QPainter>
#include <algorithm>
#include <cmath>
#include <map>

namespace pd::vis {

namespace {

constexpr double kLabelWidth = 112;
constexpr double kMinColumn = 74;
constexpr double kRowMax = 30;

QString plural(int n, const QString& one, const QString& many) {
    return QString::number(n) + QLatin1Char(' ') + (n == 1 ? one : many);
}

QString ordinal(int n) {
    const int t = n % 100;
    const char* s = (t >= 11 && t <= 13) ? "th"
                    : n % 10 == 1        ? "st"
                    : n % 10 == 2        ? "nd"
                    : n % 10 == 3        ? "rd"
                                         : "th";
    return QString::number(n) + QLatin1String(s);
}

}  // namespace

DataView::DataView(QWidget* parent) : QWidget(parent) {
    setMinimumSize(320, 160);
}

void DataView::setRun(std::shared_ptr<const pd::RunResult> result) {
    result_ = std::move(result);
    steps_.clear();
    file_first_.clear();
    if (hasData()) {
        const auto& d = result_->trace.data;
        for (const auto& s : d.reads)
            if (steps_.empty() || steps_.back() != s.step) steps_.push_back(s.step);
        int first = 0;
        for (int n : d.file_examples) {
            file_first_.push_back(first);
            first += n;
        }
    }
    setMinimumHeight(heightForWidth(std::max(width(), 320)));
    update();
}

void DataView::setTheme(ThemeChoice theme) {
    theme_ = theme;
    update();
}

const pd::Trace::DataReads::Slice* DataView::slice(int step, int device) const {
    for (const auto& s : result_->trace.data.reads)
        if (s.step == step && s.device == device) return &s;
    return nullptr;
}

bool DataView::duplicated(int step, int id) const {
    int readers = 0;
    for (const auto& s : result_->trace.data.reads) {
        if (s.step != step) continue;
        for (const auto& r : s.runs)
            if (id >= r.first && (id - r.first) % r.stride == 0 &&
                (id - r.first) / r.stride < r.count)
                ++readers;
    }
    return readers > 1;
}

QString DataView::caption() const {
    if (!hasData()) return tr("This run reads no dataset: every step draws fresh samples.");
    const auto& d = result_->trace.data;
    int total = 0;
    QStringList sizes;
    for (int n : d.file_examples) {
        total += n;
        sizes << QString::number(n);
    }
    QString files = plural(static_cast<int>(d.file_examples.size()), tr("file"), tr("files"));
    if (d.file_examples.size() <= 6)
        files += QStringLiteral(" (") + sizes.join(QStringLiteral(" + ")) + QLatin1Char(')');
    QString text = tr("%1, %2 examples, read by %3 (one per host). ")
                       .arg(files)
                       .arg(total)
                       .arg(plural(d.pipelines, tr("input pipeline"), tr("input pipelines")));
    const int kept = d.shard_examples.empty() ? 0 : d.shard_examples.front();
    if (d.pipelines > 1) {
        if (d.policy == "data")
            text += tr("Sharded by DATA: each pipeline reads all %1 and keeps every %2 (%3). ")
                        .arg(total)
                        .arg(ordinal(d.pipelines))
                        .arg(kept);
        else if (d.policy == "file")
            text +=
                tr("Sharded by FILE: pipeline p opens files p, p + %1, … only. ").arg(d.pipelines);
        else
            text += tr("Sharding OFF: every pipeline reads all %1 examples. ").arg(total);
    }
    if (d.api == "from_function")
        text += tr("distribute_datasets_from_function: each batch of %1 goes whole to one replica, "
                   "so the global batch is %1 × %2 = %3. ")
                    .arg(d.dataset_batch)
                    .arg(d.pipelines * d.replicas_per_pipeline)
                    .arg(d.global_batch);
    else
        text += tr("dataset.batch(%1) is the global batch: %2 per replica. ")
                    .arg(d.dataset_batch)
                    .arg(d.per_replica_batch);
    int lo = *std::min_element(d.steps_per_epoch.begin(), d.steps_per_epoch.end());
    int hi = *std::max_element(d.steps_per_epoch.begin(), d.steps_per_epoch.end());
    text += lo == hi ? tr("%1 an epoch").arg(plural(lo, tr("step"), tr("steps")))
                     : tr("%1 to %2 steps an epoch, pipeline by pipeline").arg(lo).arg(hi);
    text += d.repeat ? tr(" (remainder dropped; the data repeats).")
                     : tr(" (remainder dropped; one pass, no repeat).");
    return text;
}

QString DataView::cellText(int step, int device) const {
    if (!hasData()) return {};
    const auto& d = result_->trace.data;
    const bool left =
        d.left_at_step >= 0 && step >= d.left_at_step &&
        std::find(d.left_devices.begin(), d.left_devices.end(), device) != d.left_devices.end();
    if (left) return tr("no batch: left the loop");
    const auto* s = slice(step, device);
    if (!s) return {};
    QStringList parts;
    for (const auto& r : s->runs) {
        const int last = r.first + (r.count - 1) * r.stride;
        if (r.count == 1)
            parts << QString::number(r.first);
        else if (r.stride == 1)
            parts << QStringLiteral("%1–%2").arg(r.first).arg(last);
        else
            parts << tr("%1, %2, … %3 (every %4)")
                         .arg(r.first)
                         .arg(r.first + r.stride)
                         .arg(last)
                         .arg(ordinal(r.stride));
    }
    return parts.join(QStringLiteral("; "));
}

void DataView::paintEvent(QPaintEvent*) {
    QPainter p(this);
    paint(p, QRectF(rect()), TimelinePalette::choose(theme_, palette()));
}

namespace {

QFont small_font(const QFont& base) {
    QFont f = base;
    f.setPixelSize(11);
    return f;
}

// Lays the legend's entries out in rows across `width` from x0; returns each entry's left edge
// and row (the caller adds the row height).
std::vector<std::pair<double, int>> legend_positions(const QFontMetricsF& fm,
                                                     const std::vector<QString>& texts, double x0,
                                                     double width) {
    std::vector<std::pair<double, int>> out;
    const double sw = fm.height() * 0.8;
    double x = x0;
    int row = 0;
    for (const auto& t : texts) {
        const double w = sw + 4 + fm.horizontalAdvance(t) + 12;
        if (x + w > x0 + width && x > x0) {
            x = x0;
            ++row;
        }
        out.emplace_back(x, row);
        x += w;
    }
    return out;
}

}  // namespace

std::vector<DataView::LegendEntry> DataView::legend(const TimelinePalette& pal) const {
    std::vector<LegendEntry> out;
    if (!hasData()) return out;
    const auto& d = result_->trace.data;
    const int files = static_cast<int>(d.file_examples.size());
    for (int f = 0; f < std::min(files, 8); ++f)
        out.push_back({file_color(pal, f), Qt::SolidPattern, QColor(), tr("file %1").arg(f)});
    if (files > 8)
        out.push_back({pal.idle, Qt::SolidPattern, QColor(), tr("(colours repeat every 8 files)")});
    out.push_back(
        {pal.idle, Qt::SolidPattern, pal.oom, tr("also read by another device this step")});
    if (d.left_at_step >= 0)
        out.push_back({pal.muted, Qt::BDiagPattern, QColor(), tr("left the training loop")});
    return out;
}

QColor DataView::file_color(const TimelinePalette& pal, int file) {
    const QColor colors[] = {pal.forward,   pal.all_gather, pal.optimizer, pal.backward,
                             pal.broadcast, pal.p2p,        pal.recompute, pal.kernel};
    return colors[file % 8];
}

int DataView::heightForWidth(int width) const {
    const QFontMetricsF fm(small_font(font()));
    const double w = width - 12;
    double h =
        8 + fm.boundingRect(QRectF(0, 0, w, 1e6), Qt::TextWordWrap, prefix_ + caption()).height() +
        4;
    if (!hasData()) return static_cast<int>(h);
    std::vector<QString> texts;
    for (const auto& e : legend(TimelinePalette::light_theme())) texts.push_back(e.text);
    const auto pos = legend_positions(fm, texts, 0, w);
    h += (pos.empty() ? 0 : pos.back().second + 1) * (fm.height() + 2) + 4;
    const auto& d = result_->trace.data;
    h += fm.height() + 2 + d.pipelines * d.replicas_per_pipeline * (fm.height() + 6) + fm.height() +
         4;
    return static_cast<int>(std::ceil(h));
}

void DataView::resizeEvent(QResizeEvent* event) {
    QWidget::resizeEvent(event);
    const int needed = heightForWidth(width());
    if (minimumHeight() != needed) setMinimumHeight(needed);
}

void DataView::paint(QPainter& p, const QRectF& rect, const TimelinePalette& pal) const {
    p.save();
    p.fillRect(rect, pal.background);
    p.setRenderHint(QPainter::Antialiasing, true);
    const QFont font = small_font(p.font());
    const QRectF area = rect.adjusted(6, 4, -6, -4);
    p.setFont(font);
    const QFontMetricsF fm(font);
    const QString words = prefix_ + caption();
    const QRectF caption_rect =
        fm.boundingRect(area, Qt::TextWordWrap | Qt::AlignLeft | Qt::AlignTop, words);
    p.setPen(pal.text);
    p.drawText(area, Qt::TextWordWrap | Qt::AlignLeft | Qt::AlignTop, words);
    if (!hasData()) {
        p.restore();
        return;
    }
    const auto& d = result_->trace.data;

    const auto entries = legend(pal);
    std::vector<QString> texts;
    for (const auto& e : entries) texts.push_back(e.text);
    const auto pos = legend_positions(fm, texts, area.left(), area.width());
    const double legend_top = caption_rect.bottom() + 4;
    const double sw = fm.height() * 0.8;
    for (std::size_t i = 0; i < entries.size(); ++i) {
        const auto& e = entries[i];
        const double x = pos[i].first, y = legend_top + pos[i].second * (fm.height() + 2);
        p.setPen(e.outline.isValid() ? QPen(e.outline, 2) : QPen(Qt::NoPen));
        p.setBrush(QBrush(e.fill, e.style));
        p.drawRect(QRectF(x, y + (fm.height() - sw) / 2, sw, sw));
        p.setPen(pal.text);
        p.drawText(QRectF(x + sw + 4, y, fm.horizontalAdvance(e.text) + 4, fm.height()),
                   Qt::AlignLeft | Qt::AlignVCenter, e.text);
    }
    double y = legend_top + (pos.empty() ? 0 : pos.back().second + 1) * (fm.height() + 2) + 4;

    // The grid: a row per device (grouped by host), a column per step that fits.
    const int devices = d.pipelines * d.replicas_per_pipeline;
    const double grid_top = y + fm.height() + 2;
    const double row_h =
        std::clamp((area.bottom() - grid_top) / std::max(devices, 1), fm.height() + 4, kRowMax);
    const int fit = std::max(1, static_cast<int>((area.width() - kLabelWidth) / kMinColumn));
    std::vector<int> shown = steps_;
    if (d.left_at_step >= 0 && std::find(shown.begin(), shown.end(), d.left_at_step) == shown.end())
        shown.push_back(d.left_at_step);
    const bool cut = static_cast<int>(shown.size()) > fit;
    if (cut) shown.resize(static_cast<std::size_t>(fit));
    auto file_color = [&](int f) { return DataView::file_color(pal, f); };
    const double col_w =
        std::max(kMinColumn, (area.width() - kLabelWidth) / std::max<std::size_t>(shown.size(), 1));
    p.setPen(pal.text);
    for (std::size_t c = 0; c < shown.size(); ++c) {
        const int step = shown[c];
        const QRectF head(area.left() + kLabelWidth + c * col_w, y, col_w, fm.height());
        QString label = tr("step %1").arg(step + 1);  // steps count from 1, as the timeline's
        // Epoch boundaries: a pipeline starts a new epoch at this step.
        for (const auto& s : d.reads)
            if (s.step == step && s.epoch > 0 &&
                step % d.steps_per_epoch[static_cast<std::size_t>(s.device /
                                                                  d.replicas_per_pipeline)] ==
                    0) {
                label += tr(" · epoch %1").arg(s.epoch + 1);
                p.setPen(QPen(pal.text, 2));
                p.drawLine(QPointF(head.left(), y),
                           QPointF(head.left(), grid_top + devices * row_h));
                break;
            }
        if (step == d.left_at_step) {
            label = tr("step %1: timed out").arg(step + 1);
            p.setPen(pal.oom);
        } else {
            p.setPen(pal.text);
        }
        p.drawText(head.adjusted(3, 0, -2, 0), Qt::AlignLeft | Qt::AlignVCenter,
                   fm.elidedText(label, Qt::ElideRight, col_w - 5));
    }
    for (int dev = 0; dev < devices; ++dev) {
        const double top = grid_top + dev * row_h;
        const int host = dev / d.replicas_per_pipeline;
        p.setPen(pal.text);
        p.drawText(QRectF(area.left(), top, kLabelWidth - 4, row_h),
                   Qt::AlignLeft | Qt::AlignVCenter, tr("host %1 · device %2").arg(host).arg(dev));
        if (dev > 0 && dev % d.replicas_per_pipeline == 0) {
            p.setPen(QPen(pal.muted, 1));
            p.drawLine(QPointF(area.left(), top),
                       QPointF(area.left() + kLabelWidth + shown.size() * col_w, top));
        }
        for (std::size_t c = 0; c < shown.size(); ++c) {
            const int step = shown[c];
            const QRectF cell(area.left() + kLabelWidth + c * col_w + 1, top + 1, col_w - 2,
                              row_h - 2);
            const QString text = cellText(step, dev);
            const auto* s = slice(step, dev);
            if (!s) {
                p.setPen(Qt::NoPen);
                p.setBrush(QBrush(pal.muted, Qt::BDiagPattern));
                p.drawRect(cell);
            } else {
                // Segments by file, in proportion to the examples from each; duplicated
                // examples outlined.
                std::map<int, int> per_file;
                int total = 0, dup = 0;
                for (const auto& r : s->runs)
                    for (int k = 0; k < r.count; ++k) {
                        const int id = r.first + k * r.stride;
                        const int f = static_cast<int>(std::upper_bound(file_first_.begin(),
                                                                        file_first_.end(), id) -
                                                       file_first_.begin()) -
                                      1;
                        ++per_file[f];
                        ++total;
                        if (duplicated(step, id)) ++dup;
                    }
                double sx = cell.left();
                QColor main = pal.idle;
                int most = 0;
                for (const auto& [f, n] : per_file) {
                    const double w = cell.width() * n / std::max(total, 1);
                    p.setPen(Qt::NoPen);
                    p.setBrush(file_color(f));
                    p.drawRect(QRectF(sx, cell.top(), w, cell.height()));
                    sx += w;
                    if (n > most) {
                        most = n;
                        main = file_color(f);
                    }
                }
                if (dup > 0) {
                    p.setBrush(Qt::NoBrush);
                    p.setPen(QPen(pal.oom, 2.5));
                    p.drawRect(cell.adjusted(1.25, 1.25, -1.25, -1.25));
                }
                p.setPen(pal.text_on(main));
            }
            if (!s) p.setPen(pal.text);
            p.drawText(cell.adjusted(4, 0, -3, 0), Qt::AlignLeft | Qt::AlignVCenter,
                       fm.elidedText(text, Qt::ElideRight, cell.width() - 7));
        }
    }
    if (cut) {
        p.setPen(pal.muted);
        p.drawText(QRectF(area.left(), grid_top + devices * row_h + 2, area.width(), fm.height()),
                   Qt::AlignLeft,
                   tr("Steps %1 to %2 shown of %3: widen the window for more.")
                       .arg(shown.front() + 1)
                       .arg(shown.back() + 1)
                       .arg(steps_.size()));
    }
    p.restore();
}

}  // namespace pd::vis
