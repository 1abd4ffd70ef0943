// Memory per device as stacked bars by category (Qt Charts), with each device's capacity as
// a line and a failed allocation hatched in red on top: the peak over the run, or what is
// live at the playback cursor.
#pragma once

#include <optional>

#include <QChartView>
#include <QList>
#include <memory>
#include <vector>

#include "pd/metrics.h"
#include "pd/run.h"
#include "visualizer/memory_snapshot.h"
#include "visualizer/timeline_palette.h"

class QBarSet;
class QBarCategoryAxis;
class QLineSeries;
class QStackedBarSeries;
class QValueAxis;

namespace pd::vis {

class MemoryBarsView : public QChartView {
    Q_OBJECT

  public:
    enum class Mode { peak, at_cursor };

    explicit MemoryBarsView(QWidget* parent = nullptr);

    void setRun(std::shared_ptr<const pd::RunResult> result, const pd::RunMetrics& metrics);
    void setMode(Mode mode);
    Mode mode() const { return mode_; }
    // Trace time of the playback cursor (used in at_cursor mode).
    void setCursorTime(std::int64_t t_ns);
    void setTheme(ThemeChoice theme);
    // Put before the chart title ("A: ") in compare mode.
    void setTitlePrefix(const QString& prefix);
    const MemorySnapshot& snapshot() const { return shown_; }
    // The y-axis top this run needs (bytes), and a floor set by the panel so that two
    // compared runs are drawn on one scale (0: the run's own).
    double naturalTopBytes() const;
    void setSharedTopBytes(double bytes);
    double axisTopBytes() const;  // the top of the axis as drawn
    // The chart alone, for exports: same colours and data as on screen. Its legend is laid
    // out by legendLayout() below the plot, every label whole (Qt Charts' own legend cuts
    // labels that do not fit their share of one row, "para…" in a narrow picture).
    void renderChart(QPainter& painter, const QRectF& target, const TimelinePalette& palette);
    // One legend entry of the chart: its label, swatch colour, whether it is a line (the
    // capacity) or a bar set, and where it goes in a legend `width` wide (x, row).
    struct LegendEntry {
        QString text;
        QColor color;
        bool line = false;
        bool hatched = false;  // the failed request
        QRectF rect;           // swatch and label, relative to the legend's top left
    };
    // The chart's visible legend entries wrapped into rows `width` wide in `font`: no entry
    // is cut; an entry wider than a row gets a row of its own.
    std::vector<LegendEntry> legendLayout(double width, const QFont& font,
                                          const TimelinePalette& palette) const;
    static QFont legendFont();
    // Marks a claim's evidence: device `device`'s bar of `category` (every category when
    // none) drawn in the selection colour; device < 0 clears the mark.
    void highlight(std::optional<pd::MemoryCategory> category, int device);
    QSize sizeHint() const override { return {420, 260}; }

  protected:
    void changeEvent(QEvent* event) override;
    void resizeEvent(QResizeEvent* event) override;

  private:
    void rebuild();
    double maxTotal() const;     // the tallest bar, a failed request included (bytes)
    bool capacityOnScale(int row) const;  // whether row's budget is drawn
    double maxCapacity() const;           // the largest budget drawn (bytes)
    bool capacityOnChart() const;
    void show(const MemorySnapshot& s);
    void applyPalette(const TimelinePalette& palette);

    void applyHighlight();

    std::shared_ptr<const pd::RunResult> result_;
    std::optional<pd::MemoryCategory> highlight_category_;
    int highlight_device_ = -1;
    MemorySnapshot peak_;
    MemoryTimeline timeline_;
    MemorySnapshot shown_;
    Mode mode_ = Mode::peak;
    std::int64_t cursor_ns_ = 0;
    ThemeChoice theme_ = ThemeChoice::follow_palette;
    double scale_ = 1.0;  // bytes per axis unit
    double shared_top_ = 0;
    QString unit_;
    QString prefix_;
    QString capacity_note_;
    QStackedBarSeries* series_ = nullptr;
    QList<QBarSet*> sets_;  // one per category, then the failed request
    QLineSeries* capacity_line_ = nullptr;
    QBarCategoryAxis* axis_x_ = nullptr;
    QValueAxis* axis_y_ = nullptr;
};

}  // namespace pd::vis
