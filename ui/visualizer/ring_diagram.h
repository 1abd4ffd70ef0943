// A small ring: devices on a circle and, for the all-reduce step under the playback cursor,
// which chunk moves from which device to which (reduce-scatter or all-gather phase).
#pragma once

#include <QFont>
#include <QRectF>
#include <QString>
#include <QWidget>
#include <cstdint>
#include <memory>
#include <vector>

#include "pd/run.h"
#include "visualizer/timeline_palette.h"

namespace pd::vis {

class RingDiagram : public QWidget {
    Q_OBJECT

  public:
    // One chunk on the move: device -> peer during a ring step.
    struct Move {
        int device = 0;
        int peer = 0;
        int chunk = -1;
        int step_index = 0;
        pd::CollectivePhase phase = pd::CollectivePhase::none;
        bool active = true;  // under the cursor (else it just finished)
    };

    explicit RingDiagram(QWidget* parent = nullptr);
    void setRun(std::shared_ptr<const pd::RunResult> result);
    void setCursorTime(std::int64_t t_ns);  // trace time
    void setTheme(ThemeChoice theme);
    const std::vector<Move>& moves() const { return moves_; }
    // Ring steps of every device at time t (the latest per device, if still recent).
    std::vector<Move> movesAt(std::int64_t t_ns) const;
    void paint(QPainter& painter, const QRectF& rect, const TimelinePalette& palette) const;
    // Where paint() puts everything in `rect`: the title line, the caption wrapped to its
    // whole height, the ring and its device nodes (never overlapping one another), and each
    // move's chunk label (clear of the nodes). Everything lies inside `rect`.
    struct Layout {
        QString title, caption;
        QRectF title_rect, caption_rect;
        QPointF centre;
        double radius = 0, node_r = 0;
        std::vector<QPointF> nodes;
        std::vector<QRectF> chunk_labels;  // per move with a chunk, in moves() order
        QFont title_font, caption_font, node_font;
    };
    Layout layout(const QRectF& rect) const;
    QSize sizeHint() const override { return {230, 250}; }
    bool hasRingSteps() const { return !per_device_.empty(); }

  protected:
    void paintEvent(QPaintEvent* event) override;

  private:
    std::shared_ptr<const pd::RunResult> result_;
    int devices_ = 0;
    std::vector<std::vector<int>> per_device_;  // ring-step event indices sorted by start
    std::vector<Move> moves_;
    ThemeChoice theme_ = ThemeChoice::follow_palette;
};

}  // namespace pd::vis
