// The header: the run's title, how it was clocked, the legend and the bubble figures. Laid out
// for the width it is given, so no line runs into another and no legend entry is cut.
#include <QFontMetricsF>

#include "pd/topology.h"
#include "visualizer/format.h"
#include "visualizer/timeline_painter.h"

namespace pd::vis {

using namespace timeline_geometry;

namespace {

constexpr double kSide = 8.0;  // left and right padding of every header line
const QString kClockSeparator = QStringLiteral("   ·   ");
const QString kBubbleSeparator = QStringLiteral("  ·  ");

QFont header_font(bool bold) {
    QFont f;
    f.setPixelSize(bold ? 12 : 11);
    f.setBold(bold);
    return f;
}

// Joins `pieces` with `separator` into as few lines as fit `width`; a piece is never split.
QStringList wrap_pieces(const QStringList& pieces, const QString& separator,
                        const QFontMetricsF& fm, double width) {
    QStringList lines;
    for (const QString& piece : pieces) {
        if (!lines.isEmpty() && fm.horizontalAdvance(lines.back() + separator + piece) <= width)
            lines.back() += separator + piece;
        else
            lines << piece;
    }
    return lines;
}

// "Clock: device — ...", then how transfers were timed, then why the run stopped.
QStringList clock_pieces(const TimelineData& data) {
    const pd::Trace& tr = data.trace();
    QStringList pieces;
    if (tr.origin.imported) {
        // The learner's own run: its profiler's timestamps, nothing modelled.
        pieces << QStringLiteral("Clock: the traces' own timestamps")
               << QStringLiteral("rows: ranks, in rank order");
        return pieces;
    }
    pieces << (tr.backend == pd::BackendKind::cuda
                   ? QStringLiteral("Clock: wall — CUDA events on each GPU stream")
               : tr.clock == pd::ClockMode::device
                   ? QStringLiteral("Clock: device — each device timed as if it had its own core")
                   : QStringLiteral("Clock: wall — real timestamps of real concurrency"));
    if (tr.backend == pd::BackendKind::cuda) {
        // Devices of a CUDA run that share a GPU say so in their names.
        int shared = 0;
        for (const std::string& name : tr.device_names)
            if (name.find("virtual device") != std::string::npos) ++shared;
        pieces << (shared == 0 ? QStringLiteral("Transfers: GPU copies, each device its own GPU")
                               : QStringLiteral("%1 virtual devices share the GPU (each its own "
                                                "streams and memory budget)")
                                     .arg(shared));
    } else if (tr.clock == pd::ClockMode::device) {
        // The link model only shapes transfers under the device clock; under the wall clock
        // a transfer takes what the real copy took.
        const int nodes = tr.cluster.node_count(tr.devices);
        if (nodes > 1) {
            // Two tiers: the link inside a node, the NICs between nodes.
            const pd::Topology topology(tr.cluster, tr.link, tr.devices);
            const pd::LinkModel& inter = tr.cluster.inter_link();
            pieces
                << QStringLiteral(
                       "%1 nodes: inside %2 %3 µs + %4 · between %5 %6 µs + %7 "
                       "per NIC")
                       .arg(nodes)
                       .arg(QString::fromLatin1(topology.transport_name(pd::LinkTier::intra_node)))
                       .arg(tr.link.latency_us, 0, 'g', 3)
                       .arg(link_speed_text(tr.link.gbit_per_s()))
                       .arg(QString::fromLatin1(topology.transport_name(pd::LinkTier::inter_node)))
                       .arg(inter.latency_us, 0, 'g', 3)
                       .arg(link_speed_text(inter.gbit_per_s()));
        } else {
            pieces << QStringLiteral("Link model: %1 µs latency + %2")
                          .arg(tr.link.latency_us, 0, 'g', 3)
                          .arg(link_speed_text(tr.link.gbit_per_s()));
        }
    } else {
        pieces << QStringLiteral("Transfers: real in-memory copies (no link model)");
    }
    if (data.result() && data.result()->status != pd::RunStatus::ok)
        pieces << QStringLiteral("run stopped: %1").arg(qs(pd::name_of(data.result()->status)));
    return pieces;
}

// "Pipeline bubble (idle share of steps 2–5): measured 31%", "predicted from this run's stage
// times 30%", "theoretical 27% = (p−1)/(m+p−1) ...": the three figures the metrics panel explains.
QStringList bubble_pieces(const pd::BubbleMetrics& b, const pd::StepRange& steps) {
    const QString formula =
        b.schedule == pd::PipelineSchedule::zb_h1
            ? QStringLiteral("(p−1)/(3m+p−1), ZB-H1 with equal F, B, W, p=%1, m=%2")
                  .arg(b.stages)
                  .arg(b.microbatches)
        : b.schedule == pd::PipelineSchedule::zb_v
            ? QStringLiteral("ZB-V's order with equal F, B, W, p=%1, m=%2")
                  .arg(b.stages)
                  .arg(b.microbatches)
        : b.chunks > 1
            ? QStringLiteral("(p−1)/(v·m+p−1) with p=%1, m=%2, v=%3")
                  .arg(b.stages)
                  .arg(b.microbatches)
                  .arg(b.chunks)
            : QStringLiteral("(p−1)/(m+p−1) with p=%1, m=%2").arg(b.stages).arg(b.microbatches);
    QString share = QStringLiteral("the step");
    if (steps.count() == 1)
        share = QStringLiteral("step %1").arg(steps.first + 1);
    else if (steps.count() > 1)
        share = QStringLiteral("steps %1–%2").arg(steps.first + 1).arg(steps.last + 1);
    QStringList pieces;
    // The median with its range over the steps: the noise beside the figure.
    QString measured = percent_text(b.measured);
    if (b.measured_by_step.size() >= 2) {
        std::vector<double> per_step;
        for (const auto& [step, fraction] : b.measured_by_step) per_step.push_back(fraction);
        const pd::Spread spread = pd::spread_of(per_step);
        measured = QStringLiteral("%1 median (%2–%3)")
                       .arg(measured, percent_text(spread.min), percent_text(spread.max));
    }
    pieces
        << QStringLiteral("Pipeline bubble (idle share of %1): measured %2").arg(share, measured);
    if (b.predicted)
        pieces << QStringLiteral("predicted from this run's stage times %1")
                      .arg(percent_text(b.predicted->fraction));
    pieces << QStringLiteral("theoretical %1 = %2").arg(percent_text(b.theoretical), formula);
    return pieces;
}

// Only the kinds this run has, so a learner is not sent looking for them.
std::vector<TimelineLegendEntry> legend_entries(const TimelineData& data,
                                                const TimelinePalette& pal, bool zoomed_out) {
    auto has = [&](pd::EventKind k) { return data.has_kind(k); };
    const bool p2p =
        (has(pd::EventKind::send) || has(pd::EventKind::recv)) && !data.flows().empty();
    std::vector<TimelineLegendEntry> items;
    auto add = [&](const QColor& color, const QString& text, bool arrow = false) {
        TimelineLegendEntry e;
        e.color = color;
        e.text = text;
        e.arrow = arrow;
        items.push_back(e);
    };
    if (has(pd::EventKind::forward))
        add(pal.forward, data.trace().origin.imported
                             ? QStringLiteral("forward")
                             : QStringLiteral("forward (micro-batch no.)"));
    if (has(pd::EventKind::backward))
        add(pal.backward, has(pd::EventKind::backward_weight) ? QStringLiteral("B: input gradient")
                                                              : QStringLiteral("backward"));
    if (has(pd::EventKind::backward_weight))
        add(pal.backward_weight, QStringLiteral("W: weight gradient"));
    if (has(pd::EventKind::recompute))
        add(pal.recompute, QStringLiteral("recompute (forward re-run)"));
    if (data.interleaved())
        add(pal.dark ? pal.forward.darker(150) : pal.forward.lighter(140),
            QStringLiteral("other shade: the device's 2nd model chunk"));
    if (has(pd::EventKind::optimizer)) add(pal.optimizer, QStringLiteral("optimizer"));
    // Zoomed out, a collective call is one box in two halves: say where the steps went.
    const QString steps_hint =
        zoomed_out ? QStringLiteral(" (zoom in for ring steps)") : QStringLiteral(" (ring step #)");
    if (data.has_phase(pd::CollectivePhase::reduce_scatter) ||
        has(pd::EventKind::reduce_scatter_step))
        add(pal.reduce_scatter, QStringLiteral("reduce-scatter") + steps_hint);
    if (data.has_phase(pd::CollectivePhase::all_gather) || has(pd::EventKind::all_gather_step))
        add(pal.all_gather, QStringLiteral("all-gather") + steps_hint);
    if (p2p) add(pal.p2p, QStringLiteral("send / recv"));
    if (has(pd::EventKind::broadcast)) add(pal.broadcast, QStringLiteral("broadcast"));
    if (has(pd::EventKind::all_to_all_step))
        add(pal.all_to_all, QStringLiteral("all-to-all (pairwise exchange #)"));
    if (has(pd::EventKind::collective))
        add(pal.broadcast, data.trace().origin.imported
                               ? QStringLiteral("collective (one NCCL/gloo call)")
                               : QStringLiteral("NCCL collective"));
    if (has(pd::EventKind::kernel)) add(pal.kernel, QStringLiteral("kernel (phase not recorded)"));
    if (has(pd::EventKind::copy)) add(pal.copy, QStringLiteral("copy"));
    add(pal.idle, QStringLiteral("idle / waiting"));
    if (!data.flows().empty()) add(pal.flow, QStringLiteral("send → recv"), true);
    return items;
}

}  // namespace

TimelineHeaderLayout timeline_header_layout(const TimelineScene& scene, const TimelinePalette& pal,
                                            double width, bool legend, bool zoomed_out) {
    TimelineHeaderLayout h;
    const double avail = std::max(1.0, width - 2 * kSide);
    const QFontMetricsF fm_small(header_font(false));
    const QFontMetricsF fm_bold(header_font(true));
    h.clock_lines = wrap_pieces(clock_pieces(scene.data), kClockSeparator, fm_small, avail);
    if (!scene.title.isEmpty()) {
        // Beside the clock when both fit with air between them, else on a line of its own.
        const double title_w = fm_bold.horizontalAdvance(scene.title);
        if (h.clock_lines.size() == 1 &&
            fm_small.horizontalAdvance(h.clock_lines.front()) + 24 + title_w <= avail)
            h.title_beside = scene.title;
        else
            h.title_lines << fm_bold.elidedText(scene.title, Qt::ElideRight, avail);
    }
    double y = 2 + kHeaderLine * static_cast<double>(h.title_lines.size() + h.clock_lines.size());
    if (legend) {
        y += 3;
        h.legend = legend_entries(scene.data, pal, zoomed_out);
        double x = kSide;
        h.legend_rows = h.legend.empty() ? 0 : 1;
        for (TimelineLegendEntry& e : h.legend) {
            const double w = (e.arrow ? 18 : 16) + fm_small.horizontalAdvance(e.text);
            if (x > kSide && x + w > width - kSide) {
                x = kSide;
                ++h.legend_rows;
            }
            e.at = QPointF(x, y + kHeaderLine * (h.legend_rows - 1));
            x += w + 14;
        }
        y += kHeaderLine * h.legend_rows + 1;
    }
    if (scene.bubble) {
        const pd::StepRange steps =
            scene.data.result() ? pd::figure_steps(scene.data.result()->trace) : pd::StepRange{};
        h.bubble_lines =
            wrap_pieces(bubble_pieces(*scene.bubble, steps), kBubbleSeparator, fm_bold, avail);
    }
    h.height = h.lines() * kHeaderLine + 8;
    return h;
}

namespace timeline_paint {

TimelinePaintStats paint_header(const TimelineFrame& f) {
    QPainter& p = f.p;
    const TimelinePalette& pal = f.pal;
    const double w = f.view.size.width();
    const TimelineHeaderLayout& h = *f.header;
    TimelinePaintStats stats;
    stats.header_lines = h.lines();
    stats.legend_rows = h.legend_rows;
    // Text is drawn from its left edge with no clipping rectangle: a font that measures a
    // little wider on another device (SVG, PDF) still shows every letter.
    auto line = [&](const QString& text, double y, const QFont& font) {
        p.setFont(font);
        const QFontMetricsF fm(font, p.device());
        p.drawText(QPointF(kSide, y + (kHeaderLine + fm.ascent() - fm.descent()) / 2), text);
    };
    p.save();
    p.setPen(pal.text);
    double y = 2;
    for (const QString& t : h.title_lines) {
        line(t, y, f.label_font);
        y += kHeaderLine;
    }
    for (int i = 0; i < h.clock_lines.size(); ++i) {
        line(h.clock_lines[i], y, f.small);
        if (i == 0 && !h.title_beside.isEmpty()) {
            p.setFont(f.label_font);
            p.drawText(QRectF(kSide, y, w - 2 * kSide, kHeaderLine),
                       Qt::AlignRight | Qt::AlignVCenter | Qt::TextDontClip, h.title_beside);
        }
        y += kHeaderLine;
    }
    p.setFont(f.small);
    const QFontMetricsF fm(f.small, p.device());
    const double text_dy = (kHeaderLine + fm.ascent() - fm.descent()) / 2;
    for (const TimelineLegendEntry& e : h.legend) {
        const double x = e.at.x(), ey = e.at.y();
        if (e.arrow) {
            p.setPen(QPen(pal.flow, 1.2));
            p.drawLine(QPointF(x, ey + 9), QPointF(x + 14, ey + 9));
            p.drawLine(QPointF(x + 14, ey + 9), QPointF(x + 10, ey + 6));
            p.drawLine(QPointF(x + 14, ey + 9), QPointF(x + 10, ey + 12));
        } else {
            p.fillRect(QRectF(x, ey + 3, 12, 11), e.color);
            p.setPen(QPen(pal.muted, 0.8));
            p.drawRect(QRectF(x, ey + 3, 12, 11));
        }
        p.setPen(pal.text);
        p.drawText(QPointF(x + (e.arrow ? 18 : 16), ey + text_dy), e.text);
        ++stats.legend_entries;
    }
    if (f.view.legend) y += 3 + kHeaderLine * h.legend_rows + 1;
    p.setPen(pal.text);
    for (const QString& t : h.bubble_lines) {
        line(t, y, f.label_font);
        y += kHeaderLine;
    }
    p.restore();
    return stats;
}

}  // namespace timeline_paint

}  // namespace pd::vis
