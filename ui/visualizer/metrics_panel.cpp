#include "visualizer/metrics_panel.h"

#include <QGridLayout>
#include <QHeaderView>
#include <QLabel>
#include <QTableView>
#include <QVBoxLayout>

#include "visualizer/metrics_models.h"
#include "visualizer/metrics_text.h"

namespace pd::vis {

namespace {

QTableView* make_table(QAbstractItemModel* model, QWidget* parent) {
    auto* t = new QTableView(parent);
    t->setModel(model);
    t->verticalHeader()->hide();
    t->horizontalHeader()->setSectionResizeMode(QHeaderView::ResizeToContents);
    t->horizontalHeader()->setStretchLastSection(true);
    // Rows are chosen by the claims (highlight()), not by clicks.
    t->setSelectionMode(QAbstractItemView::NoSelection);
    t->setSelectionBehavior(QAbstractItemView::SelectRows);
    t->setEditTriggers(QAbstractItemView::NoEditTriggers);
    t->setAlternatingRowColors(true);
    t->setWordWrap(false);
    return t;
}

}  // namespace

MetricsPanel::MetricsPanel(QWidget* parent)
    : QWidget(parent),
      heading_(new QLabel(this)),
      lines_box_(new QWidget(this)),
      devices_(new DeviceMetricsModel(this)),
      collectives_(new CollectiveMetricsModel(this)) {
    auto* layout = new QVBoxLayout(this);
    layout->setContentsMargins(0, 0, 0, 0);
    QFont f = heading_->font();
    f.setBold(true);
    heading_->setFont(f);
    heading_->setWordWrap(true);
    layout->addWidget(heading_);
    lines_ = new QGridLayout(lines_box_);
    lines_->setContentsMargins(0, 0, 0, 0);
    lines_->setHorizontalSpacing(12);
    lines_->setVerticalSpacing(2);
    lines_->setColumnStretch(1, 1);
    layout->addWidget(lines_box_);
    device_table_ = make_table(devices_, this);
    collective_table_ = make_table(collectives_, this);
    layout->addWidget(device_table_, 2);
    layout->addWidget(collective_table_, 1);
}

void MetricsPanel::clear() {
    while (QLayoutItem* item = lines_->takeAt(0)) {
        delete item->widget();
        delete item;
    }
    heading_->clear();
    devices_->setMetrics({});
    collectives_->setMetrics({});
}

void MetricsPanel::setRun(const pd::RunConfig& config, const pd::RunResult& result,
                          const pd::RunMetrics& metrics, const QString& heading) {
    clear();
    heading_->setText(heading);
    int row = 0;
    for (const MetricLine& line : summary_lines(config, result, metrics)) {
        auto* label = new QLabel(line.label, lines_box_);
        auto* value = new QLabel(line.value, lines_box_);
        label->setToolTip(line.tip);
        value->setToolTip(line.tip);
        value->setWordWrap(true);
        value->setTextInteractionFlags(Qt::TextSelectableByMouse);
        label->setForegroundRole(QPalette::PlaceholderText);
        lines_->addWidget(label, row, 0, Qt::AlignTop);
        lines_->addWidget(value, row, 1, Qt::AlignTop);
        ++row;
    }
    devices_->setMetrics(metrics, result.trace.origin);
    collectives_->setMetrics(metrics);
    // A profiler trace records no memory by category and no model state: no columns of 0.
    const bool no_memory = result.trace.origin.imported && result.trace.memory.empty();
    bool reserved = false;
    for (const auto& d : metrics.devices) reserved = reserved || d.peak_reserved_bytes > 0;
    device_table_->setColumnHidden(DeviceMetricsModel::PeakMemory, no_memory);
    device_table_->setColumnHidden(DeviceMetricsModel::ModelState, no_memory);
    device_table_->setColumnHidden(DeviceMetricsModel::Reserved, no_memory && !reserved);
    collective_table_->setVisible(!counted_collectives(metrics).empty());
}

void MetricsPanel::clearHighlight() {
    for (QTableView* t : {device_table_, collective_table_}) t->clearSelection();
}

QRect MetricsPanel::highlight(const std::string& metric, int device) {
    clearHighlight();
    const auto starts = [&metric](const char* prefix) { return metric.rfind(prefix, 0) == 0; };
    // A collective's bytes, or its calls per step ("all_reduce_per_step": no dot); FLOPs,
    // tier, algorithm and straggler figures per step are lines of the box.
    const bool collective =
        starts("comm_bytes_per_step.") || (metric.size() > 9 && metric.ends_with("_per_step") &&
                                           metric.find('.') == std::string::npos);
    if (collective && collective_table_->isVisible()) return collective_table_->geometry();
    if (device >= 0 && device < devices_->rowCount()) {
        // Selection by code: the table's NoSelection mode only stops the mouse.
        device_table_->selectionModel()->select(
            devices_->index(device, 0),
            QItemSelectionModel::ClearAndSelect | QItemSelectionModel::Rows);
        device_table_->scrollTo(devices_->index(device, 0));
        const QRect row = device_table_->visualRect(devices_->index(device, 0));
        return QRect(device_table_->viewport()->mapTo(this, QPoint(0, row.top())),
                     QSize(device_table_->viewport()->width(), row.height()));
    }
    return lines_box_->geometry();
}

}  // namespace pd::vis
