// The Data tab: which examples of the run's dataset each device read in each step, coloured by
// the file they came from, with the shard policy and batch arithmetic above the grid. Examples
// that another device read in the same step are outlined (sharding off duplicates data); the
// devices whose pipeline ran out are marked where they left the training loop.
#pragma once

#include <QColor>
#include <QRectF>
#include <QString>
#include <QWidget>
#include <memory>
#include <vector>

#include "pd/run.h"
#include "visualizer/timeline_palette.h"

namespace pd::vis {

class DataView : public QWidget {
    Q_OBJECT

  public:
    explicit DataView(QWidget* parent = nullptr);
    void setRun(std::shared_ptr<const pd::RunResult> result);
    void setTheme(ThemeChoice theme);
    // "A: " or "B: " before the caption when two runs are compared.
    void setTitlePrefix(const QString& prefix) {
        prefix_ = prefix;
        update();
    }
    bool hasData() const { return result_ && result_->trace.data.present; }
    // The words above the grid: pipelines, policy, batches, epoch (what a learner reads first).
    QString caption() const;
    // One cell's text: "0–15", "3, 7, … 63 (every 4th)", "left the loop".
    QString cellText(int step, int device) const;
    // Steps shown, in order (the first that fit the width).
    std::vector<int> steps() const { return steps_; }
    void paint(QPainter& painter, const QRectF& rect, const TimelinePalette& palette) const;
    QSize sizeHint() const override { return {640, 260}; }
    // The height paint() needs at `width` for every device's row.
    int heightForWidth(int width) const override;
    bool hasHeightForWidth() const override { return true; }

  protected:
    void paintEvent(QPaintEvent* event) override;
    void resizeEvent(QResizeEvent* event) override;

  private:
    const pd::Trace::DataReads::Slice* slice(int step, int device) const;
    bool duplicated(int step, int id) const;
    // The legend's entries (colour, pattern, outline, words), in paint order.
    struct LegendEntry {
        QColor fill;
        Qt::BrushStyle style;
        QColor outline;
        QString text;
    };
    std::vector<LegendEntry> legend(const TimelinePalette& palette) const;
    static QColor file_color(const TimelinePalette& palette, int file);

    std::shared_ptr<const pd::RunResult> result_;
    std::vector<int> steps_;
    std::vector<int> file_first_;
    ThemeChoice theme_ = ThemeChoice::follow_palette;
    QString prefix_;
};

}  // namespace pd::vis
