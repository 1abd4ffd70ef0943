#include "visualizer/metrics_models.h"

#include "visualizer/device_name.h"
#include "visualizer/format.h"
#include "visualizer/metrics_text.h"

namespace pd::vis {

void DeviceMetricsModel::setMetrics(const pd::RunMetrics& metrics, const pd::TraceOrigin& origin) {
    beginResetModel();
    metrics_ = metrics;
    origin_ = origin;
    endResetModel();
}

int DeviceMetricsModel::rowCount(const QModelIndex& parent) const {
    return parent.isValid() ? 0 : static_cast<int>(metrics_.devices.size());
}

int DeviceMetricsModel::columnCount(const QModelIndex& parent) const {
    return parent.isValid() ? 0 : ColumnCount;
}

QVariant DeviceMetricsModel::data(const QModelIndex& index, int role) const {
    if (!checkIndex(index, CheckIndexOption::IndexIsValid | CheckIndexOption::ParentIsInvalid))
        return {};
    const auto& d = metrics_.devices[static_cast<std::size_t>(index.row())];
    if (role == Qt::TextAlignmentRole)
        return QVariant::fromValue(Qt::Alignment(index.column() == Device
                                                     ? Qt::AlignLeft | Qt::AlignVCenter
                                                     : Qt::AlignRight | Qt::AlignVCenter));
    if (role == Qt::ToolTipRole && index.column() == ModelState)
        return QStringLiteral("Parameters + gradients + optimizer state, measured (analytic)");
    if (role != Qt::DisplayRole) return {};
    switch (index.column()) {
        case Device:
            return device_name(origin_, d.device);
        case Busy:
            return percent_text(d.busy_fraction);
        case Idle:
            return duration_text(d.idle_s * 1e9);
        case CommExposed:
            return duration_text(d.exposed_comm_s * 1e9);
        case CommOverlapped:
            return duration_text(d.overlapped_comm_s * 1e9);
        case PeakMemory:
            return bytes_text(static_cast<double>(d.peak_total_bytes));
        case Reserved:
            return d.peak_reserved_bytes ? bytes_text(static_cast<double>(d.peak_reserved_bytes))
                                         : QStringLiteral("—");
        case ModelState: {
            for (const auto& s : metrics_.model_state)
                if (s.device == d.device)
                    return QStringLiteral("%1 (%2)").arg(
                        bytes_text(
                            static_cast<double>(s.parameters + s.gradients + s.optimizer_state)),
                        bytes_text(s.analytic_parameters + s.analytic_gradients +
                                   s.analytic_optimizer_state));
            return QStringLiteral("—");
        }
        default:
            return {};
    }
}

QVariant DeviceMetricsModel::headerData(int section, Qt::Orientation orientation, int role) const {
    if (orientation != Qt::Horizontal) return {};
    if (role == Qt::ToolTipRole && section != Device && section != ModelState &&
        section < ColumnCount)
        return section == PeakMemory
                   ? QStringLiteral("Per device: the peak of this device's live bytes")
               : section == Reserved
                   ? QStringLiteral(
                         "Per device: the most its caching allocator held at once, live "
                         "or kept for reuse (PyTorch's memory_reserved); out-of-memory "
                         "counts live bytes only")
                   : QStringLiteral(
                         "Per device: this device's own time over the figure steps "
                         "(not summed over devices)");
    if (role != Qt::DisplayRole) return {};
    switch (section) {
        case Device:
            return device_noun(origin_);
        case Busy:
            return QStringLiteral("Busy");
        case Idle:
            return QStringLiteral("Idle");
        case CommExposed:
            return QStringLiteral("Comm exposed");
        case CommOverlapped:
            return QStringLiteral("Comm overlapped");
        case PeakMemory:
            return QStringLiteral("Peak memory");
        case Reserved:
            return QStringLiteral("Reserved");
        case ModelState:
            return QStringLiteral("Model state (analytic)");
        default:
            return {};
    }
}

void CollectiveMetricsModel::setMetrics(const pd::RunMetrics& metrics) {
    beginResetModel();
    rows_ = counted_collectives(metrics);  // the figure steps, as the lines above the table
    endResetModel();
}

int CollectiveMetricsModel::rowCount(const QModelIndex& parent) const {
    return parent.isValid() ? 0 : static_cast<int>(rows_.size());
}

int CollectiveMetricsModel::columnCount(const QModelIndex& parent) const {
    return parent.isValid() ? 0 : ColumnCount;
}

QVariant CollectiveMetricsModel::data(const QModelIndex& index, int role) const {
    if (!checkIndex(index, CheckIndexOption::IndexIsValid | CheckIndexOption::ParentIsInvalid))
        return {};
    const auto& c = rows_[static_cast<std::size_t>(index.row())];
    if (role == Qt::TextAlignmentRole)
        return QVariant::fromValue(Qt::Alignment(index.column() == Op
                                                     ? Qt::AlignLeft | Qt::AlignVCenter
                                                     : Qt::AlignRight | Qt::AlignVCenter));
    if (role != Qt::DisplayRole) return {};
    switch (index.column()) {
        case Op:
            return qs(c.op);
        // An imported trace may not record a collective's size or group: unknown, not 0.
        case Ranks:
            return c.ranks > 0 ? QVariant(c.ranks) : QVariant(QStringLiteral("unknown"));
        case Bytes:
            return c.bytes ? bytes_text(static_cast<double>(c.bytes)) : QStringLiteral("unknown");
        case Calls:
            return c.count;
        case MeanTime:
            return duration_text(c.mean_time_s * 1e9);
        case AlgBw:
            return c.bytes ? gbps_text(c.algbw_gbps) : QStringLiteral("unknown");
        case BusBw:
            return c.bytes && c.ranks > 0 ? gbps_text(c.busbw_gbps) : QStringLiteral("unknown");
        default:
            return {};
    }
}

QVariant CollectiveMetricsModel::headerData(int section, Qt::Orientation orientation,
                                            int role) const {
    if (orientation != Qt::Horizontal) return {};
    if (role == Qt::ToolTipRole && (section == AlgBw || section == BusBw))
        return QStringLiteral(
            "Per device: algbw = bytes / time; busbw = algbw × 2(n−1)/n for all-reduce, "
            "(n−1)/n for reduce-scatter and all-gather (nccl-tests)");
    if (role == Qt::ToolTipRole && (section == Bytes || section == Calls))
        return QStringLiteral(
            "Per device: each device's buffer per call, and its calls over the figure "
            "steps (the steps the Figures over line names)");
    if (role != Qt::DisplayRole) return {};
    switch (section) {
        case Op:
            return QStringLiteral("Collective");
        case Ranks:
            return QStringLiteral("Ranks");
        case Bytes:
            return QStringLiteral("Bytes/call");
        case Calls:
            return QStringLiteral("Calls");
        case MeanTime:
            return QStringLiteral("Mean time");
        case AlgBw:
            return QStringLiteral("algbw");
        case BusBw:
            return QStringLiteral("busbw");
        default:
            return {};
    }
}

}  // namespace pd::vis
