#include "visualizer/ring_diagram.h"

#include <QFontMetricsF>
#include <QPainter>
#include <QPainterPath>
#include <algorithm>
#include <cmath>
#include <numbers>

namespace pd::vis {

namespace {
bool is_ring_step(pd::EventKind k) {
    return k == pd::EventKind::reduce_scatter_step || k == pd::EventKind::all_gather_step;
}
}  // namespace

RingDiagram::RingDiagram(QWidget* parent) : QWidget(parent) {
    setMinimumSize(200, 220);
}

void RingDiagram::setRun(std::shared_ptr<const pd::RunResult> result) {
    result_ = std::move(result);
    per_device_.clear();
    moves_.clear();
    devices_ = result_ ? result_->trace.devices : 0;
    if (result_) {
        const auto& ev = result_->trace.events;
        for (int i = 0; i < static_cast<int>(ev.size()); ++i) {
            const auto& e = ev[static_cast<std::size_t>(i)];
            if (!is_ring_step(e.kind) || e.device < 0) continue;
            devices_ = std::max(devices_, std::max(e.device, e.peer) + 1);
            if (static_cast<int>(per_device_.size()) <= e.device)
                per_device_.resize(static_cast<std::size_t>(e.device) + 1);
            per_device_[static_cast<std::size_t>(e.device)].push_back(i);
        }
        for (auto& v : per_device_)
            std::stable_sort(v.begin(), v.end(), [&](int a, int b) {
                return ev[static_cast<std::size_t>(a)].start_ns <
                       ev[static_cast<std::size_t>(b)].start_ns;
            });
    }
    update();
}

std::vector<RingDiagram::Move> RingDiagram::movesAt(std::int64_t t) const {
    std::vector<Move> out;
    if (!result_) return out;
    const auto& ev = result_->trace.events;
    for (const auto& list : per_device_) {
        const auto it =
            std::upper_bound(list.begin(), list.end(), t, [&](std::int64_t time, int i) {
                return time < ev[static_cast<std::size_t>(i)].start_ns;
            });
        if (it == list.begin()) continue;
        const auto& e = ev[static_cast<std::size_t>(*std::prev(it))];
        // A step that ended a moment ago stays, faded, so short steps remain readable.
        const std::int64_t linger = std::max<std::int64_t>(2 * e.duration_ns(), 1);
        if (t >= e.end_ns + linger) continue;
        out.push_back({e.device, e.peer, e.chunk, e.step_index, e.phase, t < e.end_ns});
    }
    return out;
}

void RingDiagram::setCursorTime(std::int64_t t_ns) {
    auto moves = movesAt(t_ns);
    const bool same =
        moves.size() == moves_.size() &&
        std::equal(moves.begin(), moves.end(), moves_.begin(), [](const Move& a, const Move& b) {
            return a.device == b.device && a.peer == b.peer && a.chunk == b.chunk &&
                   a.step_index == b.step_index && a.active == b.active && a.phase == b.phase;
        });
    if (same) return;
    moves_ = std::move(moves);
    update();
}

void RingDiagram::setTheme(ThemeChoice theme) {
    theme_ = theme;
    update();
}

void RingDiagram::paintEvent(QPaintEvent*) {
    QPainter p(this);
    paint(p, QRectF(rect()), TimelinePalette::choose(theme_, palette()));
}

RingDiagram::Layout RingDiagram::layout(const QRectF& rect) const {
    Layout l;
    l.title_font.setPixelSize(12);
    l.title_font.setBold(true);
    l.caption_font.setPixelSize(11);
    l.title = QStringLiteral("Ring all-reduce");
    const Move* lead = nullptr;
    for (const auto& m : moves_)
        if (m.active && (!lead || m.step_index > lead->step_index)) lead = &m;
    if (!lead && !moves_.empty()) lead = &moves_.front();
    if (lead)
        l.title = QStringLiteral("%1 step #%2")
                      .arg(lead->phase == pd::CollectivePhase::all_gather
                               ? QStringLiteral("All-gather")
                               : QStringLiteral("Reduce-scatter"))
                      .arg(lead->step_index);
    if (per_device_.empty())
        l.caption = QStringLiteral("This run has no ring collectives.");
    else if (moves_.empty())
        l.caption = QStringLiteral("No ring step under the playback cursor.");
    else if (lead && lead->phase == pd::CollectivePhase::all_gather)
        l.caption =
            QStringLiteral("Each device passes on a reduced chunk until all hold every chunk.");
    else
        l.caption = QStringLiteral("Each device adds its chunk and passes it on to its neighbour.");
    const double text_w = std::max(1.0, rect.width() - 12);
    const QFontMetricsF title_fm(l.title_font), caption_fm(l.caption_font);
    l.title_rect = QRectF(rect.left() + 6, rect.top() + 4, text_w,
                          std::max(18.0, std::ceil(title_fm.height())));
    // The caption gets the height its wrapped lines need, not a fixed box that cuts them.
    const double caption_h = std::ceil(
        caption_fm.boundingRect(QRectF(0, 0, text_w, 1e6), Qt::TextWordWrap, l.caption).height());
    l.caption_rect = QRectF(rect.left() + 6, rect.bottom() - 4 - caption_h, text_w, caption_h);

    const int n = std::max(devices_, 1);
    // The ring between title and caption, with room round it for the nodes and the chunk
    // labels that sit outside the arrows.
    constexpr double kLabelW = 22, kLabelH = 16;
    const QRectF area(rect.left() + 6, l.title_rect.bottom() + 4, rect.width() - 12,
                      std::max(1.0, l.caption_rect.top() - 4 - (l.title_rect.bottom() + 4)));
    l.centre = area.center();
    const double half = std::min(area.width(), area.height()) / 2;
    l.node_r = std::clamp(half * 0.14, 6.0, 16.0);
    l.radius = std::max(4.0, half - std::max(l.node_r, kLabelH) - 4);
    // Neighbours never overlap: a node is at most half the chord to the next, less a gap.
    if (n > 1)
        l.node_r = std::max(3.0, std::min(l.node_r, l.radius * std::sin(std::numbers::pi / n) - 2));
    l.node_font.setPixelSize(static_cast<int>(std::clamp(l.node_r * 0.8, 7.0, 12.0)));
    l.node_font.setBold(true);
    for (int d = 0; d < n; ++d) {
        const double a = -std::numbers::pi / 2 + 2 * std::numbers::pi * d / n;
        l.nodes.push_back(l.centre + QPointF(std::cos(a) * l.radius, std::sin(a) * l.radius));
    }
    for (const auto& m : moves_) {
        if (m.chunk < 0 || m.device < 0 || m.peer < 0 || m.device >= n || m.peer >= n ||
            m.device == m.peer)
            continue;
        // Beside the middle of the arrow, on the outside of the ring, clear of both nodes.
        const QPointF a = l.nodes[static_cast<std::size_t>(m.device)];
        const QPointF b = l.nodes[static_cast<std::size_t>(m.peer)];
        QPointF out = (a + b) / 2 - l.centre;
        const double len = std::hypot(out.x(), out.y());
        out = len > 1e-9 ? out / len : QPointF(0, -1);
        QPointF at = (a + b) / 2 + out * (l.radius * 0.09 + kLabelH);
        QRectF box(at.x() - kLabelW / 2, at.y() - kLabelH / 2, kLabelW, kLabelH);
        // Inside the picture whatever its shape.
        box.moveLeft(std::clamp(box.left(), rect.left() + 1, rect.right() - 1 - kLabelW));
        box.moveTop(std::clamp(box.top(), l.title_rect.bottom(),
                               std::max(l.title_rect.bottom(), l.caption_rect.top() - kLabelH)));
        l.chunk_labels.push_back(box);
    }
    return l;
}

void RingDiagram::paint(QPainter& p, const QRectF& rect, const TimelinePalette& pal) const {
    const Layout l = layout(rect);
    p.save();
    p.fillRect(rect, pal.background);
    p.setRenderHint(QPainter::Antialiasing, true);
    p.setFont(l.title_font);
    p.setPen(pal.text);
    p.drawText(l.title_rect, Qt::AlignLeft | Qt::AlignVCenter | Qt::TextDontClip, l.title);
    p.setFont(l.caption_font);
    p.setPen(pal.muted);
    p.drawText(l.caption_rect, Qt::AlignLeft | Qt::AlignTop | Qt::TextWordWrap | Qt::TextDontClip,
               l.caption);

    const int n = std::max(devices_, 1);
    const double radius = l.radius, node_r = l.node_r;
    const QPointF centre = l.centre;
    p.setPen(QPen(pal.grid, 1, Qt::DashLine));
    p.setBrush(Qt::NoBrush);
    p.drawEllipse(centre, radius, radius);

    std::size_t label = 0;
    for (const auto& m : moves_) {
        if (m.device < 0 || m.peer < 0 || m.device >= n || m.peer >= n || m.device == m.peer)
            continue;
        QColor c = m.phase == pd::CollectivePhase::all_gather ? pal.all_gather : pal.reduce_scatter;
        if (!m.active) c.setAlpha(90);
        const QPointF a = l.nodes[static_cast<std::size_t>(m.device)];
        const QPointF b = l.nodes[static_cast<std::size_t>(m.peer)];
        const QPointF dir = (b - a) / std::hypot(b.x() - a.x(), b.y() - a.y());
        const QPointF from = a + dir * (node_r + 2), to = b - dir * (node_r + 3);
        // Bow the arrow outward so two-way traffic between a pair stays apart.
        const QPointF normal(dir.y(), -dir.x());
        const QPointF ctrl = (from + to) / 2 + normal * (radius * 0.18);
        QPainterPath path(from);
        path.quadTo(ctrl, to);
        p.setPen(QPen(c, m.active ? 2.6 : 1.6));
        p.drawPath(path);
        const QPointF tangent = to - ctrl;
        const double ang = std::atan2(tangent.y(), tangent.x());
        const double head = std::min(8.0, node_r);
        p.setBrush(c);
        p.drawPolygon(
            QPolygonF({to, to - QPointF(std::cos(ang - 0.45) * head, std::sin(ang - 0.45) * head),
                       to - QPointF(std::cos(ang + 0.45) * head, std::sin(ang + 0.45) * head)}));
        p.setBrush(Qt::NoBrush);
        if (m.chunk >= 0 && label < l.chunk_labels.size()) {
            const QRectF box = l.chunk_labels[label++];
            p.setPen(Qt::NoPen);
            p.setBrush(c);
            p.drawRoundedRect(box, 4, 4);
            p.setBrush(Qt::NoBrush);
            p.setPen(pal.text_on(c));
            p.setFont(l.caption_font);
            p.drawText(box, Qt::AlignCenter, QStringLiteral("c%1").arg(m.chunk));
        }
    }
    p.setFont(l.node_font);
    for (int d = 0; d < n; ++d) {
        const QPointF c = l.nodes[static_cast<std::size_t>(d)];
        p.setPen(QPen(pal.text, 1.2));
        p.setBrush(pal.comm_lane);
        p.drawEllipse(c, node_r, node_r);
        p.setPen(pal.text);
        p.drawText(QRectF(c.x() - node_r, c.y() - node_r, 2 * node_r, 2 * node_r),
                   Qt::AlignCenter | Qt::TextDontClip, QStringLiteral("d%1").arg(d));
    }
    p.restore();
}

}  // namespace pd::vis
