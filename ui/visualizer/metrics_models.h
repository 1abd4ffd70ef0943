// Item models over RunMetrics for the metrics panel's tables: one row per device, and one
// row per collective. Read-only; rebuilt when a run is set.
#pragma once

#include <QAbstractTableModel>

#include "pd/metrics.h"
#include "pd/trace.h"

namespace pd::vis {

class DeviceMetricsModel : public QAbstractTableModel {
    Q_OBJECT

  public:
    enum Column {
        Device,
        Busy,
        Idle,
        CommExposed,
        CommOverlapped,
        PeakMemory,
        Reserved,
        ModelState,
        ColumnCount
    };
    using QAbstractTableModel::QAbstractTableModel;

    // `origin` names the rows as the timeline does: ranks for an imported trace.
    void setMetrics(const pd::RunMetrics& metrics, const pd::TraceOrigin& origin = {});
    int rowCount(const QModelIndex& parent = {}) const override;
    int columnCount(const QModelIndex& parent = {}) const override;
    QVariant data(const QModelIndex& index, int role = Qt::DisplayRole) const override;
    QVariant headerData(int section, Qt::Orientation orientation, int role) const override;

  private:
    pd::RunMetrics metrics_;
    pd::TraceOrigin origin_;
};

class CollectiveMetricsModel : public QAbstractTableModel {
    Q_OBJECT

  public:
    enum Column { Op, Ranks, Bytes, Calls, MeanTime, AlgBw, BusBw, ColumnCount };
    using QAbstractTableModel::QAbstractTableModel;

    void setMetrics(const pd::RunMetrics& metrics);
    int rowCount(const QModelIndex& parent = {}) const override;
    int columnCount(const QModelIndex& parent = {}) const override;
    QVariant data(const QModelIndex& index, int role = Qt::DisplayRole) const override;
    QVariant headerData(int section, Qt::Orientation orientation, int role) const override;

  private:
    std::vector<pd::CollectiveMetrics> rows_;
};

}  // namespace pd::vis
