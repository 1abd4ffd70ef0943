// Statistics (Qt Charts): reviews per day, the 30-day due forecast, true vs desired retention,
// mastery per concept, and a calendar heatmap with the current streak.
#pragma once

#include <QMap>
#include <QWidget>

#include "app_context.h"
#include "study/statistics.h"

class QLabel;
class QGridLayout;

namespace pd::ui {

// A GitHub-style calendar: one square per day for the last `weeks` weeks, darker with more
// answers.
class CalendarHeatmap : public QWidget {
    Q_OBJECT
  public:
    explicit CalendarHeatmap(QWidget* parent = nullptr);
    void setData(const QMap<QDate, int>& counts, const QDate& today);
    QSize sizeHint() const override;
    // (column, month) for the month names above the weeks from `start` (a Monday).
    static QList<QPair<int, int>> monthLabels(const QDate& start, int weeks, const QDate& today);

  protected:
    void paintEvent(QPaintEvent* event) override;

  private:
    QMap<QDate, int> counts_;
    QDate today_;
    int weeks_ = 26;
};

// The calibration line under the charts: accuracy per confidence level, and hinted answers.
QString calibrationText(const study::StudyStatistics& stats);

class StatsPage : public QWidget {
    Q_OBJECT
  public:
    explicit StatsPage(AppContext& context, QWidget* parent = nullptr);
    void refresh();
    const study::StudyStatistics& statistics() const { return stats_; }

  private:
    AppContext& context_;
    study::StudyStatistics stats_;
    QGridLayout* grid_ = nullptr;
    QLabel* headline_ = nullptr;
    CalendarHeatmap* heatmap_ = nullptr;
    QLabel* streak_ = nullptr;
    QLabel* calibration_ = nullptr;
    QList<QWidget*> charts_;
};

}  // namespace pd::ui
