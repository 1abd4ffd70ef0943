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

  protected:
    void paintEvent(QPaintEvent* event) override;

  private:
    QMap<QDate, int> counts_;
    QDate today_;
    int weeks_ = 26;
};

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
    QList<QWidget*> charts_;
};

}  // namespace pd::ui
