// The numbers of one run: headline lines (step time, throughput, busy, comm exposed vs
// overlapped, bubble, bandwidth, model state) and tables per device and per collective.
#pragma once

#include <QWidget>
#include <string>

#include "pd/metrics.h"
#include "pd/run.h"

class QGridLayout;
class QLabel;
class QTableView;

namespace pd::vis {

class DeviceMetricsModel;
class CollectiveMetricsModel;

class MetricsPanel : public QWidget {
    Q_OBJECT

  public:
    explicit MetricsPanel(QWidget* parent = nullptr);
    void setRun(const pd::RunConfig& config, const pd::RunResult& result,
                const pd::RunMetrics& metrics, const QString& heading);
    void clear();
    DeviceMetricsModel* deviceModel() const { return devices_; }
    CollectiveMetricsModel* collectiveModel() const { return collectives_; }

    // A claim's figure in the panel: per-device figures select the device's row, collective
    // counts and bytes the collectives table, anything else the summary lines. Returns the
    // part of the panel that holds it (this widget's coordinates); `device` < 0: run-wide.
    QRect highlight(const std::string& metric, int device);
    void clearHighlight();

  private:
    QLabel* heading_;
    QGridLayout* lines_;
    QWidget* lines_box_;
    DeviceMetricsModel* devices_;
    CollectiveMetricsModel* collectives_;
    QTableView* device_table_;
    QTableView* collective_table_;
};

}  // namespace pd::vis
