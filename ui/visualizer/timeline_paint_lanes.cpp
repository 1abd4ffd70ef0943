// The device rows: names, lane grounds, idle shading, the event boxes and their labels.
#include <QFontMetricsF>
#include <algorithm>
#include <array>
#include <cmath>

#include "visualizer/device_name.h"
#include "visualizer/timeline_painter.h"

namespace pd::vis {

using namespace timeline_geometry;

namespace {

constexpr double kMinBoxPx = 2.0;        // narrower boxes are merged per pixel (hotspot)
constexpr double kMinGapLabelPx = 56.0;  // idle gaps this wide are labelled
constexpr std::size_t kEventKinds = pd::kEventKindCount;

QString box_label(const TimelineBox& b, bool wide) {
    using pd::EventKind;
    switch (b.kind) {
        case EventKind::forward:
        case EventKind::backward:
        case EventKind::backward_weight:
        case EventKind::recompute:
            if (b.microbatch >= 0) return QString::number(b.microbatch);
            switch (b.kind) {
                case EventKind::forward:
                    return QStringLiteral("F");
                case EventKind::backward_weight:
                    return QStringLiteral("W");
                case EventKind::recompute:
                    return QStringLiteral("R");
                default:
                    return QStringLiteral("B");
            }
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
        case EventKind::all_to_all_step:
            return wide ? QStringLiteral("A2A %1").arg(b.step_index)
                        : QString::number(b.step_index);
        case EventKind::collective:
            return wide ? QStringLiteral("NCCL") : QStringLiteral("C");
        case EventKind::copy:
            return QStringLiteral("copy");
        case EventKind::kernel:
            return {};  // many small kernels: a letter in each says nothing
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

QColor faded(const QColor& c, const QColor& bg) {
    const double keep = 0.28;
    return QColor::fromRgbF(static_cast<float>(c.redF() * keep + bg.redF() * (1 - keep)),
                            static_cast<float>(c.greenF() * keep + bg.greenF() * (1 - keep)),
                            static_cast<float>(c.blueF() * keep + bg.blueF() * (1 - keep)));
}

// `ink` over `ground` with coverage `a` (0: ground, 1: ink).
QColor shaded(const QColor& ink, const QColor& ground, double a) {
    const auto mix = [a](double i, double g) { return static_cast<float>(i * a + g * (1 - a)); };
    return QColor::fromRgbF(mix(ink.redF(), ground.redF()), mix(ink.greenF(), ground.greenF()),
                            mix(ink.blueF(), ground.blueF()));
}

// The plot area of the rows: boxes, labels and shading stay inside it.
QRectF rows_clip(const TimelineFrame& f) {
    return QRectF(f.plot_left, f.layout.rows_top, f.plot_right - f.plot_left,
                  f.view.size.height() - f.layout.rows_top);
}

// "device 7" fits the left margin beside its lane; with many devices the rows are short and
// the name's font shrinks with them instead of being cut.
QFont device_font(const TimelineFrame& f) {
    QFont font = f.label_font;
    if (f.layout.compute_h < 15)
        font.setPixelSize(std::max(9, static_cast<int>(f.layout.compute_h)));
    return font;
}

}  // namespace

std::optional<MergedBoxes> merged_boxes_at(const TimelineData& data, const TimelineLane& lane,
                                           const TimelineViewState& view, double x) {
    // The same walk as paint_event_boxes: the boxes in view, each clamped to the plot, the
    // narrow ones chained while each starts within a pixel of the chain's end.
    const TimeMapping& m = view.mapping;
    const double origin = static_cast<double>(view.origin_ns);
    const double plot_left = m.left_px;
    const double plot_right = std::max(plot_left + 1, view.size.width() - kRightMargin);
    const double t0 = m.t_of(plot_left) + origin;
    const double t1 = m.t_of(plot_right) + origin;
    const double t_end =
        view.cursor_ns ? std::min(t1, static_cast<double>(*view.cursor_ns) + origin) : t1;
    auto x_of = [&](double t) { return m.x_of(t - origin); };
    const bool collapsed = collectives_collapsed(lane, m.ns_per_px);
    const std::vector<TimelineBox>& boxes = collapsed ? lane.collective_boxes : lane.boxes;
    const auto [b0, b1] = data.visible_boxes(lane, t0, t_end, collapsed);
    std::optional<MergedBoxes> chain;
    auto done = [&]() -> std::optional<MergedBoxes> {
        if (!chain || chain->boxes < 2) return std::nullopt;
        chain->x0 = std::floor(chain->x0);
        chain->x1 = chain->x0 + std::max(1.0, chain->x1 - chain->x0);
        if (x < chain->x0 || x > chain->x1) return std::nullopt;
        return chain;
    };
    for (std::size_t k = b0; k < b1; ++k) {
        const TimelineBox& b = boxes[k];
        const double bs = static_cast<double>(b.start_ns);
        if (bs > t_end) break;
        const double be = std::min(static_cast<double>(b.end_ns), t_end);
        const double x0 = std::max(x_of(bs), plot_left - 1);
        const double x1 = std::min(x_of(be), plot_right + 1);
        if (x1 < x0) continue;
        if (x1 - x0 >= kMinBoxPx) {  // drawn on its own: ends any chain
            if (auto found = done()) return found;
            chain.reset();
            if (x0 > x + 1) break;
            continue;
        }
        if (!chain || x0 > chain->x1 + 1.0) {
            if (auto found = done()) return found;
            if (x0 > x + 1) break;  // chains further right cannot reach x
            chain = MergedBoxes{};
            chain->x0 = x0;
            chain->x1 = x1;
            chain->start_ns = b.start_ns;
            chain->end_ns = b.end_ns;
        }
        chain->x1 = std::max(chain->x1, x1);
        chain->start_ns = std::min(chain->start_ns, b.start_ns);
        chain->end_ns = std::max(chain->end_ns, b.end_ns);
        chain->busy_ns += b.end_ns - b.start_ns;
        ++chain->boxes;
        chain->events += std::max(1, b.event_count);
        chain->events_by_kind[static_cast<std::size_t>(b.kind)] += std::max(1, b.event_count);
    }
    return done();
}

namespace timeline_paint {

TimelinePaintStats paint_lanes(const TimelineFrame& f) {
    QPainter& p = f.p;
    const TimelineLayout& l = f.layout;
    const TimelineData& data = f.scene.data;
    p.save();
    p.setClipRect(QRectF(0, l.rows_top, f.view.size.width(), f.view.size.height() - l.rows_top));
    const QFont name_font = device_font(f);
    for (int d = 0; d < data.devices(); ++d) {
        const double cy = l.compute_top(d), my = l.comm_top(d);
        p.setPen(f.pal.text);
        p.setFont(name_font);
        p.drawText(QRectF(8, cy, kLeftMargin - 12, l.compute_h),
                   Qt::AlignLeft | Qt::AlignVCenter | Qt::TextDontClip,
                   device_name(data.trace().origin, d));  // as the tables name it
        p.setFont(f.small);
        p.setPen(f.pal.muted);
        const int stage = data.stage_of(d);
        if (stage >= 0 && f.scene.bubble && l.comm_h >= 10) {
            // Under the device name, beside "comm": the name row has no room for both.
            QString text = QStringLiteral("stage %1").arg(stage);
            if (data.interleaved()) {
                QStringList chunks;
                for (int c : data.chunks_of(d)) chunks << QString::number(c);
                text = QStringLiteral("chunks %1").arg(chunks.join(QStringLiteral(",")));
            }
            p.drawText(QRectF(8, my, kLeftMargin - 14, l.comm_h), Qt::AlignLeft | Qt::AlignVCenter,
                       text);
        }
        if (l.comm_h >= 10)
            p.drawText(QRectF(8, my, kLeftMargin - 14, l.comm_h), Qt::AlignRight | Qt::AlignVCenter,
                       QStringLiteral("comm"));
        p.fillRect(QRectF(f.plot_left, my, f.plot_right - f.plot_left, l.comm_h), f.pal.comm_lane);
        if (l.host_h > 0) {
            const double hy = l.host_top(d);
            if (l.host_h >= 10)
                p.drawText(QRectF(8, hy, kLeftMargin - 14, l.host_h),
                           Qt::AlignRight | Qt::AlignVCenter, QStringLiteral("host"));
            p.fillRect(QRectF(f.plot_left, hy, f.plot_right - f.plot_left, l.host_h),
                       f.pal.comm_lane);
        }
    }
    p.restore();
    return {};
}

TimelinePaintStats paint_idle_shading(const TimelineFrame& f) {
    // Idle is the compute lane's own colour over the span of the run; work covers it, so what
    // stays grey is the bubble (or plain idleness).
    const double x0 = std::max(f.plot_left, f.x_of(f.run_begin));
    const double x1 = std::min(f.plot_right, f.x_of(std::min(f.run_end, f.t_end)));
    if (x1 <= x0) return {};
    for (int d = 0; d < f.scene.data.devices(); ++d)
        f.p.fillRect(QRectF(x0, f.layout.compute_top(d), x1 - x0, f.layout.compute_h), f.pal.idle);
    return {};
}

DrawnBoxes paint_event_boxes(const TimelineFrame& f) {
    QPainter& p = f.p;
    const TimelinePalette& pal = f.pal;
    const TimelineLayout& l = f.layout;
    const TimelineData& data = f.scene.data;
    const TimeMapping& m = f.view.mapping;
    const auto& events = data.trace().events;
    const double plot_left = f.plot_left, plot_right = f.plot_right, t_end = f.t_end;
    DrawnBoxes out;
    TimelinePaintStats& stats = out.stats;
    // Inside the focused step's range, boxes of another step are faded (and say their step).
    const auto focus_range = f.view.focus_step ? data.step_range(*f.view.focus_step) : std::nullopt;
    auto of_other_step = [&](const TimelineBox& b) {
        if (!focus_range) return false;
        if (events[static_cast<std::size_t>(b.first_event)].step == *f.view.focus_step)
            return false;
        return b.end_ns > focus_range->first && b.start_ns < focus_range->second;
    };
    p.save();
    p.setClipRect(rows_clip(f));
    for (int d = 0; d < data.devices(); ++d) {
        for (pd::StreamKind s :
             {pd::StreamKind::compute, pd::StreamKind::comm, pd::StreamKind::host}) {
            if (s == pd::StreamKind::host && l.host_h <= 0) continue;
            const TimelineLane& lane = data.lane(d, s);
            const bool compute = s == pd::StreamKind::compute;
            const double top = l.top(d, s);
            const double h = l.height(s);
            // Ring steps too narrow to read: each collective call is one box in two halves.
            const bool collapsed = collectives_collapsed(lane, m.ns_per_px);
            const std::vector<TimelineBox>& boxes = collapsed ? lane.collective_boxes : lane.boxes;
            const auto [b0, b1] = data.visible_boxes(lane, f.t0, t_end, collapsed);
            const bool labels_fit = h >= 10;
            const bool gaps_named = compute && l.compute_h >= 12;
            int counted_call = -1;
            // A run of sub-pixel boxes becomes one rectangle in the colour of the kind that
            // covers most of it (hotspot's TimeLineDelegate merges the same way); faded
            // boxes of another step weigh in slots of their own. The rectangle is shaded by
            // the share of it that is busy (boxes[pend_k0, pend_k1] cover busy_before's
            // difference), so kernels of a GPU busy a fifth of the time do not read as solid.
            double pend_x0 = 0, pend_x1 = -1e18;
            std::size_t pend_k0 = 0, pend_k1 = 0;
            const std::vector<std::int64_t>& busy_before =
                collapsed ? lane.collective_boxes_busy_before : lane.boxes_busy_before;
            std::array<double, 2 * kEventKinds> pend_weight{};
            bool pending = false;
            auto flush = [&] {
                if (!pending) return;
                std::size_t best = 0;
                for (std::size_t k = 1; k < pend_weight.size(); ++k)
                    if (pend_weight[k] > pend_weight[best]) best = k;
                const auto kind = static_cast<pd::EventKind>(best % kEventKinds);
                QColor fill = pal.color_of(kind, pd::CollectivePhase::none);
                if (best >= kEventKinds) fill = faded(fill, pal.background);
                const double x0 = std::floor(pend_x0);
                const double w = std::max(1.0, pend_x1 - x0);
                if (pend_k1 + 1 < busy_before.size()) {
                    const double busy_px =
                        static_cast<double>(busy_before[pend_k1 + 1] - busy_before[pend_k0]) /
                        m.ns_per_px;
                    // A lone sliver keeps some ink, so a short event stays findable.
                    const double ink = std::clamp(busy_px / w, w <= 2.0 ? 0.35 : 0.0, 1.0);
                    fill = shaded(fill, compute ? pal.idle : pal.comm_lane, ink);
                }
                p.fillRect(QRectF(x0, top, w, h), fill);
                ++stats.boxes;
                pending = false;
                pend_weight.fill(0);
            };
            double prev_end_x = std::max(plot_left, f.x_of(f.run_begin));
            for (std::size_t k = b0; k < b1; ++k) {
                const TimelineBox& b = boxes[k];
                const double bs = static_cast<double>(b.start_ns);
                if (bs > t_end) break;
                const double be = std::min(static_cast<double>(b.end_ns), t_end);
                // Clamped to the plot by hand: SVG and PDF output cannot rely on clipping, and
                // a box that starts off-screen keeps its label in its visible part.
                const double x0 = std::max(f.x_of(bs), plot_left - 1);
                const double x1 = std::min(f.x_of(be), plot_right + 1);
                if (x1 < x0) continue;
                // Wide idle gaps say what they are: the bubble of a pipeline, or idleness.
                if (gaps_named && x0 - prev_end_x >= kMinGapLabelPx)
                    out.gaps.emplace_back(prev_end_x, top, std::min(x0, plot_right) - prev_end_x,
                                          h);
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
                        pend_k0 = k;
                    }
                    pend_k1 = k;
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
                        const double edge = m.t_of(pend_x1) + f.origin;
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
                        if (k2 >= k + 3) k = pend_k1 = k2 - 2;  // skipped, still in the run
                    }
                    continue;
                }
                flush();
                QColor fill = pal.color_of(b.kind, b.phase);
                // Later model chunks of an interleaved schedule: the same hue, lighter.
                if (b.round % 2 == 1) fill = pal.dark ? fill.darker(150) : fill.lighter(140);
                if (other_step) fill = faded(fill, pal.background);
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
                if (r.width() >= 12 && labels_fit)
                    out.labels.push_back({r, fill, &b, other_step, half});
                // The last half of a call: one outline round both, so they read as one box.
                if (half &&
                    (b.phase == pd::CollectivePhase::all_gather ||
                     lane.collectives[static_cast<std::size_t>(b.collective)].all_gather_steps ==
                         0)) {
                    const TimelineCollective& c =
                        lane.collectives[static_cast<std::size_t>(b.collective)];
                    const double cx0 =
                        std::max(f.x_of(static_cast<double>(c.start_ns)), plot_left - 1);
                    const double cx1 = std::min(
                        f.x_of(std::min(static_cast<double>(c.end_ns), t_end)), plot_right + 1);
                    if (cx1 - cx0 >= 5) {
                        p.setPen(QPen(other_step ? pal.muted : pal.text, 1));
                        p.drawRect(QRectF(cx0, top, cx1 - cx0, h).adjusted(0.5, 0.5, -0.5, -0.5));
                    }
                }
            }
            flush();
            if (gaps_named && b1 > b0) {
                const double lane_end = std::min(plot_right, f.x_of(std::min(f.run_end, t_end)));
                if (lane_end - prev_end_x >= kMinGapLabelPx)
                    out.gaps.emplace_back(prev_end_x, top, lane_end - prev_end_x, h);
            }
        }
    }
    p.restore();
    return out;
}

TimelinePaintStats paint_labels(const TimelineFrame& f, const DrawnBoxes& drawn) {
    QPainter& p = f.p;
    const TimelinePalette& pal = f.pal;
    const auto& events = f.scene.data.trace().events;
    TimelinePaintStats stats;
    p.save();
    p.setClipRect(rows_clip(f));
    p.setFont(f.small);
    // Boxes of one lane may overlap (an imported trace's collectives from two gloo threads,
    // kernels of two streams): a label never writes over one drawn just before it.
    std::vector<QRectF> written;
    for (const LabelSpot& spot : drawn.labels) {
        const TimelineBox& b = *spot.box;
        const QRectF& r = spot.rect;
        // The longest form that fits (ring steps: just the index when narrow).
        QStringList texts;
        if (spot.other_step)
            texts << QStringLiteral("step %1").arg(
                events[static_cast<std::size_t>(b.first_event)].step + 1);
        else if (spot.half)
            texts << half_labels(b);
        else if (b.kind == pd::EventKind::collective && f.scene.data.trace().origin.imported)
            // An imported collective says which it was ("all_reduce"), where it fits.
            texts << QString::fromStdString(events[static_cast<std::size_t>(b.first_event)].label)
                  << box_label(b, false);
        else if (b.kind == pd::EventKind::optimizer && b.event_count == 1 && r.width() > 70)
            // Which update ran ("AdamW", "LAMB", "AdamW 8-bit", "AdamW skipped (inf/NaN
            // gradients)", GradScaler's check), where it fits.
            texts << QString::fromStdString(events[static_cast<std::size_t>(b.first_event)].label)
                  << box_label(b, true) << box_label(b, false);
        else if (r.width() > 70)
            texts << box_label(b, true) << box_label(b, false);
        else
            texts << box_label(b, false);
        for (const QString& text : texts) {
            if (text.isEmpty()) break;
            const QStaticText& st = f.cache.label(text, f.small);
            const QSizeF ts = st.size();
            if (ts.width() + 4 <= r.width()) {
                const QRectF at(r.center().x() - ts.width() / 2, r.center().y() - ts.height() / 2,
                                ts.width(), ts.height());
                const bool clash =
                    std::any_of(written.size() > 8 ? written.end() - 8 : written.begin(),
                                written.end(), [&](const QRectF& w) { return w.intersects(at); });
                if (clash) break;
                p.setPen(spot.other_step ? pal.muted : pal.text_on(spot.fill));
                p.drawStaticText(at.topLeft(), st);
                written.push_back(at);
                ++stats.labels;
                break;
            }
        }
    }
    p.setPen(pal.muted);
    const QString gap_text = f.scene.bubble ? QStringLiteral("bubble") : QStringLiteral("idle");
    for (const QRectF& gap : drawn.gaps) p.drawText(gap, Qt::AlignCenter, gap_text);
    p.restore();
    return stats;
}

}  // namespace timeline_paint

}  // namespace pd::vis
