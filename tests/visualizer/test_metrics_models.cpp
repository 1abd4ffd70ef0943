// The metrics tables' item models, checked by QAbstractItemModelTester, and the headline
// lines the panel and the exported picture share.
#include <QAbstractItemModelTester>
#include <QtTest>

#include "pd/metrics.h"
#include "visualizer/metrics_models.h"
#include "visualizer/metrics_panel.h"
#include "visualizer/metrics_text.h"
#include "visualizer_test_support.h"

using namespace pd::vis;

class TestMetricsModels : public QObject {
    Q_OBJECT

    pd::RunConfig config_ = test::small_dp();
    std::shared_ptr<const pd::RunResult> result_;
    pd::RunMetrics metrics_;

  private slots:
    void initTestCase() {
        result_ = test::run_engine(config_);
        QCOMPARE(result_->status, pd::RunStatus::ok);
        metrics_ = pd::compute_metrics(result_->trace, config_);
        QVERIFY(!metrics_.collectives.empty());
    }

    void deviceModel() {
        DeviceMetricsModel model;
        QAbstractItemModelTester tester(&model,
                                        QAbstractItemModelTester::FailureReportingMode::QtTest);
        QCOMPARE(model.rowCount(), 0);
        model.setMetrics(metrics_);
        QCOMPARE(model.rowCount(), config_.devices);
        QCOMPARE(model.columnCount(), int(DeviceMetricsModel::ColumnCount));
        QCOMPARE(model.data(model.index(2, DeviceMetricsModel::Device)).toString(),
                 QStringLiteral("device 2"));
        QVERIFY(model.data(model.index(0, DeviceMetricsModel::Busy))
                    .toString()
                    .endsWith(QLatin1Char('%')));
        QVERIFY(model.data(model.index(0, DeviceMetricsModel::ModelState))
                    .toString()
                    .contains(QLatin1Char('(')));
        QVERIFY(!model.headerData(0, Qt::Horizontal, Qt::DisplayRole).toString().isEmpty());
        model.setMetrics({});
        QCOMPARE(model.rowCount(), 0);
    }

    void collectiveModel() {
        CollectiveMetricsModel model;
        QAbstractItemModelTester tester(&model,
                                        QAbstractItemModelTester::FailureReportingMode::QtTest);
        model.setMetrics(metrics_);
        QCOMPARE(model.rowCount(), static_cast<int>(metrics_.collectives.size()));
        const QString busbw = model.data(model.index(0, CollectiveMetricsModel::BusBw)).toString();
        QVERIFY(busbw.endsWith(QStringLiteral("GB/s")));
        QVERIFY(!model.headerData(CollectiveMetricsModel::BusBw, Qt::Horizontal, Qt::ToolTipRole)
                     .toString()
                     .isEmpty());
    }

    void summaryLinesNameTheirNumbers() {
        const auto lines = summary_lines(config_, *result_, metrics_);
        QStringList labels;
        for (const auto& l : lines) labels << l.label;
        for (const char* wanted :
             {"Status", "Step time", "Throughput", "Communication", "all_reduce"})
            QVERIFY2(labels.contains(QLatin1String(wanted)), wanted);
        QVERIFY(run_title(config_).contains(QStringLiteral("3 devices")));
    }

    // A run that stopped before its first step has nothing to time: no zeros presented as
    // measurements.
    void runWithoutStepsShowsNoTimings() {
        pd::RunConfig c = config_;
        c.capacity_bytes = 4096;
        const auto r = test::run_engine(c);
        QCOMPARE(r->status, pd::RunStatus::out_of_memory);
        const auto m = pd::compute_metrics(r->trace, c);
        QStringList labels;
        for (const auto& l : summary_lines(c, *r, m)) labels << l.label;
        QVERIFY(labels.contains(QStringLiteral("Measured")));
        QVERIFY(!labels.contains(QStringLiteral("Step time")));
        QVERIFY(!labels.contains(QStringLiteral("Throughput")));
        pd::RunConfig one = c;
        one.strategy = pd::StrategyKind::single;
        one.devices = 1;
        QVERIFY(run_title(one).contains(QStringLiteral("1 device")));
        QVERIFY(!run_title(one).contains(QStringLiteral("1 devices")));
    }

    void pipelineHasBubbleLine() {
        const auto c = test::small_pipeline();
        const auto r = test::run_engine(c);
        const auto m = pd::compute_metrics(r->trace, c);
        bool found = false;
        for (const auto& l : summary_lines(c, *r, m))
            if (l.label == QStringLiteral("Pipeline bubble"))
                found = l.value.contains(QStringLiteral("theoretical"));
        QVERIFY(found);
        QVERIFY(run_title(c).contains(QStringLiteral("gpipe")));
    }

    void panelFillsItsTables() {
        MetricsPanel panel;
        panel.setRun(config_, *result_, metrics_, QStringLiteral("dp"));
        QCOMPARE(panel.deviceModel()->rowCount(), config_.devices);
        QCOMPARE(panel.collectiveModel()->rowCount(),
                 static_cast<int>(metrics_.collectives.size()));
        panel.clear();
        QCOMPARE(panel.deviceModel()->rowCount(), 0);
    }
};

QTEST_MAIN(TestMetricsModels)
#include "test_metrics_models.moc"
