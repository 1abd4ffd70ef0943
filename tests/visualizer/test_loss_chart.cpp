// The loss chart shows the run's own numbers: a point per step at the loss the engine
// recorded, and the step time its trace measured; the panel shows it for its run.
#include <QLineSeries>
#include <QtTest>

#include "pd/metrics.h"
#include "visualizer/loss_chart.h"
#include "visualizer/visualizer_panel.h"
#include "visualizer_test_support.h"

using pd::vis::LossChart;

class TestLossChart : public QObject {
    Q_OBJECT

  private slots:
    void seriesAreTheRunsLossesAndStepTimes() {
        pd::RunConfig config = pd::vis::test::small_dp();
        config.steps = 4;
        const auto r = pd::vis::test::run_engine(config);
        QCOMPARE(r->status, pd::RunStatus::ok);
        const pd::RunMetrics m = pd::compute_metrics(r->trace, config);
        LossChart chart;
        chart.setRun(r, m);
        const QList<QPointF> loss = chart.lossSeries()->points();
        QCOMPARE(loss.size(), static_cast<qsizetype>(r->trace.steps.size()));
        QCOMPARE(loss.size(), qsizetype{4});
        for (qsizetype i = 0; i < loss.size(); ++i) {
            const pd::StepRecord& s = r->trace.steps[static_cast<std::size_t>(i)];
            QCOMPARE(loss[i].x(), static_cast<double>(s.step + 1));  // labels count from 1
            QCOMPARE(loss[i].y(), s.loss);
        }
        const QList<QPointF> time = chart.stepTimeSeries()->points();
        QCOMPARE(time.size(), loss.size());
        for (qsizetype i = 0; i < time.size(); ++i) {
            QCOMPARE(time[i].x(), loss[i].x());
            QVERIFY(time[i].y() > 0);
            // The step's extent in the trace, in milliseconds.
            const auto& sm = m.steps[static_cast<std::size_t>(i)];
            QCOMPARE(sm.step + 1, static_cast<int>(time[i].x()));
            QCOMPARE(time[i].y(), sm.time_s * 1e3);
        }
        QVERIFY(chart.chart()->title().contains(QStringLiteral("%1 → %2")
                                                    .arg(r->trace.steps.front().loss, 0, 'f', 3)
                                                    .arg(r->trace.steps.back().loss, 0, 'f', 3)));
        chart.setRun(nullptr, {});
        QCOMPARE(chart.lossSeries()->count(), 0);
        QVERIFY(chart.chart()->title().contains(QStringLiteral("no step")));
    }

    void readableInBothThemes() {
        const auto r = pd::vis::test::run_engine(pd::vis::test::small_dp());
        const pd::RunMetrics m = pd::compute_metrics(r->trace, pd::vis::test::small_dp());
        LossChart chart;
        chart.setRun(r, m);
        for (auto theme : {pd::vis::ThemeChoice::light, pd::vis::ThemeChoice::dark}) {
            chart.setTheme(theme);
            const auto pal = pd::vis::TimelinePalette::choose(theme, QPalette());
            QCOMPARE(chart.chart()->backgroundBrush().color(), pal.background);
            QCOMPARE(chart.lossSeries()->color(), pal.all_gather);
            QCOMPARE(chart.chart()->titleBrush().color(), pal.text);
            // The loss line stands out from the background it is drawn on.
            QVERIFY(std::abs(pal.all_gather.lightness() - pal.background.lightness()) > 60);
        }
    }

    void panelShowsItForItsRun() {
        const pd::RunConfig config = pd::vis::test::small_dp();
        const auto r = pd::vis::test::run_engine(config);
        pd::vis::VisualizerPanel panel;
        panel.setRun(config, r);
        QVERIFY(panel.lossChart());
        QCOMPARE(panel.lossChart()->lossSeries()->count(),
                 static_cast<qsizetype>(r->trace.steps.size()));
        QCOMPARE(panel.lossChart()->lossSeries()->at(0).y(), r->trace.steps.front().loss);
    }
};

QTEST_MAIN(TestLossChart)
#include "test_loss_chart.moc"
