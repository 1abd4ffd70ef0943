// A step's FLOPs counted from the model's products (pd/flops.h): the formula by hand for each
// unit kind, recomputation as the trace's recompute events show it, 6ND beside the count, and
// MFU / HFU as the expectation metrics read them against the measured FMA peak.
#include <QtTest>
#include <cmath>

#include "engine_test_support.h"
#include "pd/expectations.h"
#include "pd/flops.h"
#include "pd/fma_peak.h"

using namespace pd;
using namespace pd::test;

class TestFlops : public QObject {
    Q_OBJECT

  private slots:
    // The MLP by hand: input 2·in·h forward and the weight gradient only backward; each block
    // 16h² forward and twice that backward; the head 2·h·C and twice that.
    void mlp_by_hand() {
        RunConfig c = small_config(StrategyKind::single, 1);
        c.width = 16;
        c.input_dim = 8;
        c.layers = 3;
        c.classes = 5;
        c.batch = 7;
        const auto f = step_flops(c);
        QVERIFY(f);
        const double h = 16, in = 8, C = 5, L = 3;
        const double per_token = (2 * in * h) * 2 + L * 16 * h * h * 3 + 2 * h * C * 3;
        QCOMPARE(f->model, per_token * 7);
        QCOMPARE(f->hardware, f->model);
        QCOMPARE(f->tokens, 7.0);
        const double params = in * h + h + L * (8 * h * h + 5 * h) + h * C + C;
        QCOMPARE(f->parameters, params);
        QCOMPARE(f->six_nd, 6 * params * 7);
        // Wide models come close to 6ND: the input projection and the biases are a sliver.
        c.width = 512;
        const auto wide = step_flops(c);
        QVERIFY(std::abs(wide->model / wide->six_nd - 1) < 0.01);
        QVERIFY(wide->model < wide->six_nd);
    }

    // Full recomputation re-runs each block's first product (8h² a token), and the trace
    // shows one recompute event per block per micro-batch: the counted extra is exactly those
    // events' products. Selective recomputation re-runs no product.
    void recomputation_is_hardware_flops_only() {
        RunConfig c = small_config(StrategyKind::single, 1);
        c.accumulate = 2;
        c.recompute = RecomputeMode::full;
        const auto full = step_flops(c);
        c.recompute = RecomputeMode::selective;
        const auto selective = step_flops(c);
        c.recompute = RecomputeMode::none;
        const auto none = step_flops(c);
        QCOMPARE(full->model, none->model);
        QCOMPARE(selective->hardware, none->model);
        const double h = c.width;
        QCOMPARE(full->hardware - full->model, c.layers * 8 * h * h * c.batch);
        c.recompute = RecomputeMode::full;
        const RunResult r = run_config(c);
        QCOMPARE(r.status, RunStatus::ok);
        int events = 0;
        for (const auto& e : r.trace.events) events += e.kind == EventKind::recompute;
        // Each event re-runs one block for one micro-batch of batch / accumulate rows.
        const double per_event = 8 * h * h * (c.batch / c.accumulate);
        QCOMPARE(events * per_event, (full->hardware - full->model) * c.steps);
    }

    // The transformer's attention: projections 8h² and the score products 4·h·T a token,
    // backward twice; a mixture of experts is not counted.
    void transformer_attention_counts_its_scores() {
        RunConfig c = small_config(StrategyKind::single, 1);
        c.model = ModelKind::transformer;
        c.width = 32;
        c.heads = 4;
        c.seq_len = 8;
        c.layers = 1;
        c.batch = 3;
        const auto f = step_flops(c);
        QVERIFY(f);
        const double h = 32, T = 8, in = c.input_dim, C = c.classes;
        const double per_token = 2 * in * h * 2 + (8 * h * h + 4 * h * T) * 3 +
                                 16 * h * h * 3 + 2 * h * C * 3;
        QCOMPARE(f->model, per_token * 3 * T);
        QCOMPARE(f->tokens, 3 * T);
        c.experts = 4;
        QVERIFY(!step_flops(c));
    }

    // A strategy spreads the same work: the model FLOPs of a step are the job's.
    void every_strategy_counts_the_same_step() {
        const auto single = step_flops(small_config(StrategyKind::single, 1));
        for (auto s : {StrategyKind::dp, StrategyKind::zero3, StrategyKind::pipeline,
                       StrategyKind::tp})
            QCOMPARE(step_flops(small_config(s, 2))->model, single->model);
    }

    void utilisation_and_the_metrics() {
        QCOMPARE(utilisation(1e9, 0.5, 2, 1.0), 1.0);
        QCOMPARE(utilisation(1e9, 1.0, 4, 2.5), 0.1);
        QCOMPARE(utilisation(1e9, 0.0, 4, 2.5), 0.0);
        if (fma_instruction_sets().empty()) QSKIP("this CPU has no fp32 FMA to measure");
        const FmaPeak peak = fma_peak(1);
        QVERIFY(peak.gflops > 0);
        QVERIFY(known_fma_peak(1));
        QCOMPARE(known_fma_peak(1)->gflops, peak.gflops);
        RunConfig c = small_config(StrategyKind::single, 1);
        c.recompute = RecomputeMode::full;
        const RunEvidence e = run_for_evidence(c);
        const auto mfu = read_metric("mfu", e, -1);
        const auto hfu = read_metric("hfu", e, -1);
        QVERIFY(mfu && hfu && *mfu > 0);
        const auto f = step_flops(c);
        // The same step time and peak under both: their ratio is the FLOPs'.
        QVERIFY(std::abs(*hfu / *mfu - f->hardware / f->model) < 1e-12);
        QCOMPARE(*read_metric("flops.model_per_step", e, -1), f->model);
        QCOMPARE(*read_metric("flops.six_nd_per_step", e, -1), f->six_nd);
    }
};

QTEST_APPLESS_MAIN(TestFlops)
#include "test_flops.moc"
