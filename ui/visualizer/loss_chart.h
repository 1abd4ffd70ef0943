// Loss per step and step time per step of one run (Qt Charts), so a learner sees whether
// the run learns and what a step costs. Losses are the run's own (Trace::steps); step times
// are each step's extent in the trace (RunMetrics::steps), never typed in. An fp16 run with
// loss scaling shows its scale per step in place of the step time (on a log2 axis, labelled
// 2^n: the scale moves by factors of 2), and every step GradScaler skipped is marked on the
// loss line.
#pragma once

#include <optional>

#include <QChartView>
#include <memory>

#include "pd/metrics.h"
#include "pd/run.h"
#include "visualizer/timeline_palette.h"

class QLineSeries;
class QScatterSeries;
class QValueAxis;

namespace pd::vis {

class LossChart : public QChartView {
    Q_OBJECT

  public:
    explicit LossChart(QWidget* parent = nullptr);

    // A null result clears the chart.
    void setRun(std::shared_ptr<const pd::RunResult> result, const pd::RunMetrics& metrics);
    void setTheme(ThemeChoice theme);
    // Put before the chart title ("A: ") in compare mode.
    void setTitlePrefix(const QString& prefix);
    // (step, loss) and (step, step time in ms), one point per completed step; the step time
    // is null where the chart shows a loss scale instead.
    QLineSeries* lossSeries() const { return loss_; }
    QLineSeries* stepTimeSeries() const { return time_; }
    // fp16 with loss scaling: (step, log2 of the scale) and the skipped steps (step, loss, or
    // the loss axis' bottom where the loss is not finite); null for other runs.
    QLineSeries* lossScaleSeries() const { return scale_; }
    QScatterSeries* skippedSeries() const { return skipped_; }
    // The chart alone, for exports: same colours and data as on screen.
    void renderChart(QPainter& painter, const QRectF& target, const TimelinePalette& palette);
    QSize sizeHint() const override { return {380, 260}; }

    // The axes' extents: compared runs share them, so the taller line is the larger figure.
    struct Extents {
        double loss_lo = 0, loss_hi = 0;  // finite losses (lo > hi: none)
        double time_hi_ms = 0;
        int first_step = 0, last_step = 0;  // counted from 1
        bool empty = true;
        Extents united(const Extents& other) const;
    };
    Extents naturalExtents() const;
    // Nullopt: the chart's own extents.
    void setSharedExtents(std::optional<Extents> extents);
    QValueAxis* lossAxis() const { return axis_loss_; }
    QValueAxis* stepTimeAxis() const { return axis_time_; }

  protected:
    void changeEvent(QEvent* event) override;

  private:
    void rebuild();
    void applyPalette(const TimelinePalette& palette);

    std::shared_ptr<const pd::RunResult> result_;
    std::vector<pd::StepMetrics> steps_;
    std::vector<pd::StepRecord> records_;  // the run's own: loss scale, skipped
    ThemeChoice theme_ = ThemeChoice::follow_palette;
    QString prefix_;
    std::optional<Extents> shared_;
    QLineSeries* loss_ = nullptr;
    QLineSeries* time_ = nullptr;
    QValueAxis* axis_step_ = nullptr;
    QValueAxis* axis_loss_ = nullptr;
    QValueAxis* axis_time_ = nullptr;
    QLineSeries* scale_ = nullptr;
    QScatterSeries* skipped_ = nullptr;
    QValueAxis* axis_scale_ = nullptr;
};

}  // namespace pd::vis
