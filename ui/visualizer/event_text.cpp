#include "visualizer/event_text.h"

#include <QStringList>

#include "visualizer/format.h"

namespace pd::vis {

QString kind_text(pd::EventKind kind) {
    using pd::EventKind;
    switch (kind) {
        case EventKind::forward:
            return QStringLiteral("forward");
        case EventKind::backward:
            return QStringLiteral("backward");
        case EventKind::backward_weight:
            return QStringLiteral("backward, weight gradient (W)");
        case EventKind::recompute:
            return QStringLiteral("recomputed forward");
        case EventKind::optimizer:
            return QStringLiteral("optimizer step");
        case EventKind::reduce_scatter_step:
            return QStringLiteral("ring reduce-scatter step");
        case EventKind::all_gather_step:
            return QStringLiteral("ring all-gather step");
        case EventKind::broadcast:
            return QStringLiteral("broadcast");
        case EventKind::send:
            return QStringLiteral("send");
        case EventKind::recv:
            return QStringLiteral("receive");
        case EventKind::wait:
            return QStringLiteral("waiting (idle)");
        case EventKind::oom:
            return QStringLiteral("out of memory");
        case EventKind::copy:
            return QStringLiteral("copy");
        case EventKind::collective:
            return QStringLiteral("collective (one NCCL call, phases not visible)");
        case EventKind::all_to_all_step:
            return QStringLiteral("all-to-all exchange");
        case EventKind::kernel:
            return QStringLiteral("kernel (the trace does not say forward, backward or optimizer)");
    }
    return QStringLiteral("event");
}

QString describe_event(const pd::TraceEvent& e, std::int64_t origin_ns) {
    QStringList lines;
    QString title = QStringLiteral("<b>%1</b>").arg(kind_text(e.kind).toHtmlEscaped());
    if (!e.label.empty()) title += QStringLiteral(" — %1").arg(qs(e.label).toHtmlEscaped());
    lines << title;
    QStringList where;
    where << QStringLiteral("device %1").arg(e.device)
          << QStringLiteral("%1 stream").arg(qs(pd::name_of(e.stream)));
    if (e.stage >= 0) where << QStringLiteral("stage %1").arg(e.stage);
    if (e.step >= 0) where << QStringLiteral("training step %1").arg(e.step + 1);
    lines << where.join(QStringLiteral(" · "));
    QStringList what;
    if (e.microbatch >= 0) what << QStringLiteral("micro-batch %1").arg(e.microbatch);
    if (e.layer >= 0) what << QStringLiteral("layer %1").arg(e.layer);
    if (e.step_index >= 0)
        what << (e.kind == pd::EventKind::all_to_all_step
                     ? QStringLiteral("exchange #%1").arg(e.step_index)
                 : e.label.rfind("tree", 0) == 0
                     ? QStringLiteral("tree level #%1").arg(e.step_index)
                 : e.tier == pd::LinkTier::nvls || e.tier == pd::LinkTier::sharp
                     ? QStringLiteral("switch step #%1").arg(e.step_index)
                     : QStringLiteral("ring step #%1").arg(e.step_index));
    if (e.chunk >= 0) what << QStringLiteral("chunk %1").arg(e.chunk);
    if (!what.isEmpty()) lines << what.join(QStringLiteral(" · "));
    lines << QStringLiteral("duration %1 (from %2 to %3)")
                 .arg(duration_text(static_cast<double>(e.duration_ns())),
                      duration_text(static_cast<double>(e.start_ns - origin_ns)),
                      duration_text(static_cast<double>(e.end_ns - origin_ns)));
    if (e.bytes > 0)
        lines << QStringLiteral("bytes %1").arg(bytes_text(static_cast<double>(e.bytes)));
    if (e.tier != pd::LinkTier::none) {
        static const char* const words[] = {"", "inside a node", "between nodes",
                                            "through the NVSwitch (NVLS)",
                                            "through the InfiniBand switches (SHARP)"};
        lines << QStringLiteral("link tier: %1")
                     .arg(QString::fromLatin1(words[static_cast<int>(e.tier)]));
    }
    if (e.peer >= 0) {
        const bool from = e.kind == pd::EventKind::recv;
        lines << QStringLiteral("peer: %1 device %2")
                     .arg(from ? QStringLiteral("from") : QStringLiteral("to"))
                     .arg(e.peer);
    }
    return lines.join(QStringLiteral("<br>"));
}

}  // namespace pd::vis
