// The loss chart shows the run's own numbers: a point per step at the loss the engine
// recorded, and the step time its trace measured; the panel shows it for its run.
#include <QLineSeries>
#include <QScatterSeries>
#include <QtTest>
#include <cmath>

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

    // An fp16 run with loss scaling: the scale per step (log2) takes the right axis, every
    // skipped step is marked on the loss line; the next run without one gets the step time
    // back, and the chart holds exactly its three axes each time.
    void lossScaleAndSkippedSteps() {
        pd::RunConfig config = pd::vis::test::small_dp();
        config.steps = 6;
        config.precision = pd::Precision::fp16_mixed;
        config.loss_scaling.init = 0x1p24;  // overflows at first, then fits
        const auto r = pd::vis::test::run_engine(config);
        QCOMPARE(r->status, pd::RunStatus::ok);
        LossChart chart;
        chart.setRun(r, pd::compute_metrics(r->trace, config));
        QVERIFY(chart.lossScaleSeries() && chart.skippedSeries());
        QVERIFY(!chart.stepTimeSeries());  // the right axis is the scale's
        QCOMPARE(chart.lossScaleSeries()->count(), qsizetype{6});
        int skipped = 0;
        for (std::size_t i = 0; i < r->trace.steps.size(); ++i) {
            const pd::StepRecord& s = r->trace.steps[i];
            QCOMPARE(chart.lossScaleSeries()->at(static_cast<qsizetype>(i)).y(),
                     std::log2(s.loss_scale));
            if (s.skipped) {
                const QPointF p = chart.skippedSeries()->at(skipped++);
                QCOMPARE(p.x(), double(s.step + 1));
                QCOMPARE(p.y(), s.loss);
            }
        }
        QVERIFY(skipped >= 1);
        QCOMPARE(chart.skippedSeries()->count(), qsizetype(skipped));
        QVERIFY(chart.chart()->title().contains(QStringLiteral("skipped")));
        QCOMPARE(chart.chart()->axes().size(), qsizetype{3});
        QCOMPARE(chart.chart()->series().size(), qsizetype{3});
        pd::RunConfig plain = pd::vis::test::small_dp();
        const auto p = pd::vis::test::run_engine(plain);
        chart.setRun(p, pd::compute_metrics(p->trace, plain));
        QVERIFY(!chart.lossScaleSeries() && !chart.skippedSeries());
        QCOMPARE(chart.stepTimeSeries()->count(), static_cast<qsizetype>(p->trace.steps.size()));
        QCOMPARE(chart.chart()->axes().size(), qsizetype{3});
        QCOMPARE(chart.chart()->series().size(), qsizetype{2});
        chart.setSharedExtents(chart.naturalExtents());
        QCOMPARE(chart.chart()->axes().size(), qsizetype{3});
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

    // Comparisons switching between runs with and without a loss scale: each chart holds its
    // own three axes, never another run's.
    void comparisonsKeepTheirOwnAxes() {
        pd::RunConfig fp16 = pd::vis::test::small_dp();
        fp16.precision = pd::Precision::fp16_mixed;
        pd::RunConfig unscaled = fp16;
        unscaled.loss_scaling.dynamic = false;
        unscaled.loss_scaling.init = 1;
        pd::RunConfig fp32 = pd::vis::test::small_dp();
        const auto a = pd::vis::test::run_engine(fp16);
        const auto b = pd::vis::test::run_engine(unscaled);
        const auto c = pd::vis::test::run_engine(fp32);
        pd::vis::VisualizerPanel panel;
        panel.setRun(fp16, a);
        panel.setComparison(unscaled, b, QStringLiteral("loss_scale 1"));
        QVERIFY(panel.comparisonLossChart()->lossScaleSeries());
        panel.setComparison(fp32, c, QStringLiteral("precision fp32"));
        QVERIFY(!panel.comparisonLossChart()->lossScaleSeries());
        QCOMPARE(panel.comparisonLossChart()->chart()->axes().size(), qsizetype{3});
        QCOMPARE(panel.lossChart()->chart()->axes().size(), qsizetype{3});
        QVERIFY(panel.lossChart()->lossScaleSeries());
    }
};

QTEST_MAIN(TestLossChart)
#include "test_loss_chart.moc"
