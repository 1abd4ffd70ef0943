#include "visualizer/ring_diagram.h"

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

void RingDiagram::paint(QPainter& p, const QRectF& rect, const TimelinePalette& pal) const {
    p.save();
    p.fillRect(rect, pal.background);
    p.setRenderHint(QPainter::Antialiasing, true);
    QFont f;
    f.setPixelSize(12);
    f.setBold(true);
    p.setFont(f);
    p.setPen(pal.text);
    QString title = QStringLiteral("Ring all-reduce");
    const Move* lead = nullptr;
    for (const auto& m : moves_)
        if (m.active && (!lead || m.step_index > lead->step_index)) lead = &m;
    if (!lead && !moves_.empty()) lead = &moves_.front();
    if (lead)
        title = QStringLiteral("%1 step #%2")
                    .arg(lead->phase == pd::CollectivePhase::all_gather
                             ? QStringLiteral("All-gather")
                             : QStringLiteral("Reduce-scatter"))
                    .arg(lead->step_index);
    p.drawText(QRectF(rect.left() + 6, rect.top() + 4, rect.width() - 12, 18),
               Qt::AlignLeft | Qt::AlignVCenter, title);
    f.setBold(false);
    f.setPixelSize(11);
    p.setFont(f);
    p.setPen(pal.muted);
    QString caption;
    if (per_device_.empty())
        caption = QStringLiteral("This run has no ring collectives.");
    else if (moves_.empty())
        caption = QStringLiteral("No ring step under the playback cursor.");
    else if (lead && lead->phase == pd::CollectivePhase::all_gather)
        caption =
            QStringLiteral("Each device passes on a reduced chunk until all hold every chunk.");
    else
        caption = QStringLiteral("Each device adds its chunk and passes it on to its neighbour.");
    p.drawText(QRectF(rect.left() + 6, rect.bottom() - 34, rect.width() - 12, 32),
               Qt::AlignLeft | Qt::AlignVCenter | Qt::TextWordWrap, caption);

    const int n = std::max(devices_, 1);
    const QRectF area = rect.adjusted(10, 26, -10, -38);
    const QPointF centre = area.center();
    const double radius = std::max(10.0, std::min(area.width(), area.height()) / 2 - 16);
    const double node_r = std::clamp(radius * 0.22, 9.0, 16.0);
    auto pos = [&](int d) {
        const double a = -std::numbers::pi / 2 + 2 * std::numbers::pi * d / n;
        return centre + QPointF(std::cos(a) * radius, std::sin(a) * radius);
    };
    p.setPen(QPen(pal.grid, 1, Qt::DashLine));
    p.setBrush(Qt::NoBrush);
    p.drawEllipse(centre, radius, radius);

    for (const auto& m : moves_) {
        if (m.device < 0 || m.peer < 0 || m.device >= n || m.peer >= n || m.device == m.peer)
            continue;
        QColor c = m.phase == pd::CollectivePhase::all_gather ? pal.all_gather : pal.reduce_scatter;
        if (!m.active) c.setAlpha(90);
        const QPointF a = pos(m.device), b = pos(m.peer);
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
        p.setBrush(c);
        p.drawPolygon(
            QPolygonF({to, to - QPointF(std::cos(ang - 0.45) * 8, std::sin(ang - 0.45) * 8),
                       to - QPointF(std::cos(ang + 0.45) * 8, std::sin(ang + 0.45) * 8)}));
        p.setBrush(Qt::NoBrush);
        if (m.chunk >= 0) {
            const QPointF mid = path.pointAtPercent(0.5) + normal * 9;
            const QString label = QStringLiteral("c%1").arg(m.chunk);
            const QRectF box(mid.x() - 11, mid.y() - 8, 22, 16);
            p.setPen(Qt::NoPen);
            p.setBrush(c);
            p.drawRoundedRect(box, 4, 4);
            p.setBrush(Qt::NoBrush);
            p.setPen(pal.text_on(c));
            p.drawText(box, Qt::AlignCenter, label);
        }
    }
    f.setBold(true);
    p.setFont(f);
    for (int d = 0; d < n; ++d) {
        const QPointF c = pos(d);
        p.setPen(QPen(pal.text, 1.2));
        p.setBrush(pal.comm_lane);
        p.drawEllipse(c, node_r, node_r);
        p.setPen(pal.text);
        p.drawText(QRectF(c.x() - node_r, c.y() - node_r, 2 * node_r, 2 * node_r), Qt::AlignCenter,
                   QStringLiteral("d%1").arg(d));
    }
    p.restore();
}

}  // namespace pd::vis
