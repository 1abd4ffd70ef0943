// The metrics tables' item models, checked by QAbstractItemModelTester, and the headline
// lines the panel and the exported picture share.
#include <QAbstractItemModelTester>
#include <QtTest>
#include <map>
#include <tuple>

#include "pd/metrics.h"
#include "visualizer/format.h"
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
        // The caching allocator's reserved bytes beside the live peak, never below it.
        const auto& d0 = metrics_.devices.front();
        QVERIFY(d0.peak_reserved_bytes >= d0.peak_total_bytes);
        QCOMPARE(model.data(model.index(0, DeviceMetricsModel::Reserved)).toString(),
                 bytes_text(static_cast<double>(d0.peak_reserved_bytes)));
        QVERIFY(model.headerData(DeviceMetricsModel::Reserved, Qt::Horizontal, Qt::ToolTipRole)
                    .toString()
                    .contains(QStringLiteral("live bytes only")));
        model.setMetrics({});
        QCOMPARE(model.rowCount(), 0);
    }

    // The collectives table and the metrics lines sit under "Figures over steps 2–3": they
    // count the calls of those steps, not of the whole run (setup and the cold first step).
    void collectivesCountTheFigureSteps() {
        pd::RunConfig c = config_;
        c.steps = 3;
        const auto r = test::run_engine(c);
        QCOMPARE(r->status, pd::RunStatus::ok);
        const auto m = pd::compute_metrics(r->trace, c);
        QCOMPARE(m.figure_steps.first, 1);
        QCOMPARE(m.figure_steps.last, 2);
        // Calls per device in the figure steps, by operation, size and group, from the trace.
        std::map<std::tuple<std::string, std::size_t, int>, int> expected;
        std::map<std::tuple<std::string, std::size_t, int>, int> whole_run;
        for (const auto& rec : r->trace.collectives) {
            ++whole_run[{rec.op, rec.bytes, rec.ranks}];
            if (rec.step >= 0 && m.figure_steps.contains(rec.step))
                ++expected[{rec.op, rec.bytes, rec.ranks}];
        }
        for (auto& [key, n] : expected) n /= c.devices;
        QVERIFY(!expected.empty());
        // The run's other steps had calls too: a table over the whole run would differ.
        QVERIFY(whole_run.begin()->second / c.devices != expected.begin()->second);
        CollectiveMetricsModel model;
        QAbstractItemModelTester tester(&model,
                                        QAbstractItemModelTester::FailureReportingMode::QtTest);
        model.setMetrics(m);
        QCOMPARE(model.rowCount(), static_cast<int>(expected.size()));
        std::map<std::tuple<std::string, std::size_t, int>, int> shown;
        for (int row = 0; row < model.rowCount(); ++row) {
            const std::string op =
                model.data(model.index(row, CollectiveMetricsModel::Op)).toString().toStdString();
            const int ranks = model.data(model.index(row, CollectiveMetricsModel::Ranks)).toInt();
            const int calls = model.data(model.index(row, CollectiveMetricsModel::Calls)).toInt();
            for (const auto& [key, n] : expected)
                if (std::get<0>(key) == op && std::get<2>(key) == ranks &&
                    model.data(model.index(row, CollectiveMetricsModel::Bytes)).toString() ==
                        bytes_text(static_cast<double>(std::get<1>(key))))
                    shown[key] = calls;
        }
        QCOMPARE(shown, expected);
        // The lines under the "Figures over" line say the same counts.
        const auto lines = summary_lines(c, *r, m);
        for (const auto& [key, n] : expected) {
            const QString wanted = QStringLiteral("%1 × %2").arg(n).arg(
                bytes_text(static_cast<double>(std::get<1>(key))));
            bool found = false;
            for (const auto& line : lines)
                found = found || (line.label == QString::fromStdString(std::get<0>(key)) &&
                                  line.value.startsWith(wanted));
            QVERIFY2(found, qPrintable(wanted));
        }
    }

    void collectiveModel() {
        CollectiveMetricsModel model;
        QAbstractItemModelTester tester(&model,
                                        QAbstractItemModelTester::FailureReportingMode::QtTest);
        model.setMetrics(metrics_);
        QCOMPARE(model.rowCount(), static_cast<int>(metrics_.figure_collectives.size()));
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
        // How many intra-op threads each device used, and why one under the device clock.
        for (const auto& l : lines)
            if (l.label == QLatin1String("Threads")) {
                QCOMPARE(l.value.startsWith(QString::number(result_->trace.intra_op_threads) +
                                            QStringLiteral(" intra-op thread")),
                         true);
                QCOMPARE(l.value.contains(QStringLiteral("device clock")),
                         result_->trace.clock == pd::ClockMode::device);
            }
        QVERIFY(labels.contains(QStringLiteral("Threads")));
        // The MLP run has no activation count; a transformer run sets one beside its peak.
        QVERIFY(!labels.contains(QStringLiteral("Activations (device 0)")));
        pd::RunConfig t = config_;
        t.model = pd::ModelKind::transformer;
        t.heads = 4;
        t.seq_len = 4;
        const auto rt = test::run_engine(t);
        QCOMPARE(rt->status, pd::RunStatus::ok);
        const auto mt = pd::compute_metrics(rt->trace, t);
        bool found = false;
        for (const auto& l : summary_lines(t, *rt, mt))
            if (l.label == QLatin1String("Activations (device 0)")) {
                found = true;
                QVERIFY2(l.value.contains(QStringLiteral(" peak · ")) &&
                             l.value.endsWith(QStringLiteral(" analytic")),
                         qPrintable(l.value));
            }
        QVERIFY(found);
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
        // The run's own prediction and its causes beside the formula, and the note's line.
        QVERIFY(m.bubble && m.bubble->predicted);
        QStringList labels, values;
        for (const auto& l : summary_lines(c, *r, m)) {
            labels << l.label;
            values << l.value;
        }
        QVERIFY(labels.contains(QStringLiteral("Bubble vs formula")));
        QVERIFY(values.join(QLatin1Char('\n')).contains(QStringLiteral("predicted")));
        const QString note = bubble_note(m);
        QVERIFY2(note.startsWith(QStringLiteral("Bubble ")), qPrintable(note));
        QVERIFY(note.contains(QStringLiteral("predicted from this run's stage times")));
        QVERIFY(note.contains(QStringLiteral("textbook")));
        QVERIFY(bubble_note(metrics_).isEmpty());  // data parallel: no bubble
    }

    void bubbleCausesText_data() {
        QTest::addColumn<double>("imbalance");
        QTest::addColumn<double>("transfers");
        QTest::addColumn<double>("optimizer");
        QTest::addColumn<QString>("text");
        QTest::addRow("largest first, a true minus")
            << 0.021 << 0.010 << -0.033
            << QStringLiteral("−3.3 pts optimizer tail, +2.1 stage imbalance, +1.0 transfers");
        QTest::addRow("below 0.05 points left out")
            << 0.0004 << 0.012 << 0.0 << QStringLiteral("+1.2 pts transfers");
        QTest::addRow("nothing to explain") << 0.0 << 0.0 << 0.0 << QString();
    }
    void bubbleCausesText() {
        QFETCH(double, imbalance);
        QFETCH(double, transfers);
        QFETCH(double, optimizer);
        QFETCH(QString, text);
        pd::BubbleCauses c;
        c.stage_imbalance = imbalance;
        c.transfers = transfers;
        c.optimizer_tail = optimizer;
        QCOMPARE(bubble_causes_text(c, pd::PipelineSchedule::one_f_one_b), text);
    }

    void noteAndStepsFromCraftedMetrics() {
        pd::RunMetrics m;
        m.figure_steps = {1, 3};
        QCOMPARE(figure_steps_text(m), QStringLiteral("steps 2–4"));
        m.bubble = pd::BubbleMetrics{};
        m.bubble->measured = 0.31;
        m.bubble->theoretical = 0.27;
        pd::BubblePrediction p;
        p.fraction = 0.30;
        p.causes.stage_imbalance = 0.021;
        p.causes.transfers = 0.010;
        m.bubble->predicted = p;
        QCOMPARE(bubble_note(m),
                 QStringLiteral("Bubble 31% measured (steps 2–4), 30% predicted from this run's "
                                "stage times, 27% textbook: +2.1 pts stage imbalance, +1.0 "
                                "transfers"));
        m.figure_steps = {0, 0};
        QCOMPARE(figure_steps_text(m), QStringLiteral("step 1"));
        QVERIFY(figure_steps_text(pd::RunMetrics{}).isEmpty());
    }

    // Each communication figure says whether it is one device's or the sum over devices.
    void communicationSaysPerDeviceOrSummed() {
        for (const auto& l : summary_lines(config_, *result_, metrics_)) {
            if (l.label == QStringLiteral("Communication"))
                QVERIFY2(l.value.contains(QStringLiteral("summed over 3 devices")),
                         qPrintable(l.value));
            if (l.label == QStringLiteral("all_reduce"))
                QVERIFY2(l.value.contains(QStringLiteral("per device")), qPrintable(l.value));
        }
        DeviceMetricsModel devices;
        devices.setMetrics(metrics_);
        QVERIFY(devices.headerData(DeviceMetricsModel::CommExposed, Qt::Horizontal, Qt::ToolTipRole)
                    .toString()
                    .startsWith(QStringLiteral("Per device")));
        CollectiveMetricsModel collectives;
        QVERIFY(
            collectives.headerData(CollectiveMetricsModel::Bytes, Qt::Horizontal, Qt::ToolTipRole)
                .toString()
                .startsWith(QStringLiteral("Per device")));
    }

    void panelFillsItsTables() {
        MetricsPanel panel;
        panel.setRun(config_, *result_, metrics_, QStringLiteral("dp"));
        QCOMPARE(panel.deviceModel()->rowCount(), config_.devices);
        QCOMPARE(panel.collectiveModel()->rowCount(),
                 static_cast<int>(metrics_.figure_collectives.size()));
        panel.clear();
        QCOMPARE(panel.deviceModel()->rowCount(), 0);
    }

    void highlightFindsTheFigure() {
        // A claim's metric brings its own figure into view: calls and bytes of a collective the
        // collectives table, FLOPs and tier figures per step the lines above it.
        MetricsPanel panel;
        panel.resize(900, 700);
        panel.setRun(config_, *result_, metrics_, QStringLiteral("dp"));
        panel.show();
        QVERIFY(QTest::qWaitForWindowExposed(&panel));
        const QRect table = panel.highlight("all_reduce_per_step", -1);
        QCOMPARE(panel.highlight("comm_bytes_per_step.all_reduce", -1), table);
        for (const char* line : {"flops.model_per_step", "tier.intra_node.bytes_per_step",
                                 "straggler.wait_per_step", "optimizer.state_error_m"})
            QVERIFY2(panel.highlight(line, -1) != table, line);
    }

    void eightBitStatesLine() {
        pd::RunConfig c = config_;
        c.optimizer = pd::OptimizerKind::adamw8bit;
        c.width = 96;  // 96 x 96 weights: 9216 elements, 8-bit states
        const auto r = test::run_engine(c);
        QCOMPARE(r->status, pd::RunStatus::ok);
        const pd::RunMetrics m = pd::compute_metrics(r->trace, c);
        bool found = false;
        for (const auto& line : summary_lines(c, *r, m))
            if (line.label == QStringLiteral("8-bit states")) {
                found = true;
                QVERIFY2(line.value.contains(QStringLiteral("blocks of 2048")),
                         qPrintable(line.value));
                QVERIFY(line.value.contains(QLatin1Char('%')));
            }
        QVERIFY(found);
        bool plain = false;  // and no such line for fp32 states
        for (const auto& line : summary_lines(config_, *result_, metrics_))
            plain |= line.label == QStringLiteral("8-bit states");
        QVERIFY(!plain);
    }
};

QTEST_MAIN(TestMetricsModels)
#include "test_metrics_models.moc"
