// FSDP2's per-module policies on the zero3 strategy: reshard_after_forward trades the
// backward's second all-gather for keeping every unit's parameters whole from forward to
// backward; the arithmetic, and so every number the run computes, is the same.
#include <QtTest>

#include "engine_test_support.h"
#include "pd/dtype.h"
#include "pd/error.h"
#include "pd/metrics.h"

using namespace pd;
using namespace pd::test;

namespace {

RunConfig fsdp_config(bool reshard, int accumulate = 1) {
    RunConfig c = small_config(StrategyKind::zero3, 4);
    c.layers = 4;
    c.batch = 32;
    c.steps = 3;
    c.accumulate = accumulate;
    c.reshard_after_forward = reshard;
    return c;
}

double gather_bytes(const RunResult& r, const RunConfig& c) {
    const RunMetrics m = compute_metrics(r.trace, c);
    const auto it = m.comm_bytes_per_step.find("all_gather");
    return it == m.comm_bytes_per_step.end() ? 0.0 : it->second;
}

int gathers_for_backward(const RunResult& r) {
    int n = 0;
    for (const auto& c : r.trace.collectives)
        n += c.label.find("backward") != std::string::npos ? 1 : 0;
    return n;
}

}  // namespace

class TestFsdpPolicies : public QObject {
    Q_OBJECT

  private slots:
    void keeping_parameters_halves_the_gathers_and_computes_the_same() {
        for (int k : {1, 2}) {
            const RunConfig a = fsdp_config(true, k), b = fsdp_config(false, k);
            const RunResult resharded = run_config(a), kept = run_config(b);
            QCOMPARE(resharded.status, RunStatus::ok);
            QCOMPARE(kept.status, RunStatus::ok);
            // Same products on the same values: bit for bit.
            QCOMPARE(kept.final_parameters, resharded.final_parameters);
            QVERIFY(gathers_for_backward(resharded) > 0);
            QCOMPARE(gathers_for_backward(kept), 0);
            const double ga = gather_bytes(resharded, a), gb = gather_bytes(kept, b);
            QVERIFY(ga > 0);
            QCOMPARE(gb, ga / 2);
            // Whole parameters held: at most two units at a time when resharding, every
            // unit at the end of forward otherwise.
            const std::size_t peak_a =
                peak_bytes(resharded, 0, MemoryCategory::gathered_parameters);
            const std::size_t peak_b = peak_bytes(kept, 0, MemoryCategory::gathered_parameters);
            const std::size_t model = 4 * ParamLayout::build(model_shape(a)).total;
            QVERIFY(peak_a < model / 2);
            QCOMPARE(peak_b, model);
        }
    }

    void mixed_precision_policy_keeps_fp32_shards_and_reduces_in_fp32() {
        // MixedPrecisionPolicy(param_dtype=bf16, reduce_dtype=fp32) against ZeRO-3's bf16
        // shards with an fp32 master (DeepSpeed's layout): the same 16 bytes of model state a
        // parameter, held 4 + 4 + 8 instead of 2 + 2 + 12, and twice the reduce-scatter bytes.
        RunConfig deepspeed = fsdp_config(true);
        deepspeed.precision = Precision::bf16_mixed;
        RunConfig fsdp2 = deepspeed;
        fsdp2.fp32_reduce = true;
        const RunResult a = run_config(deepspeed), b = run_config(fsdp2);
        QCOMPARE(a.status, RunStatus::ok);
        QCOMPARE(b.status, RunStatus::ok);
        const RunMetrics ma = compute_metrics(a.trace, deepspeed);
        const RunMetrics mb = compute_metrics(b.trace, fsdp2);
        for (std::size_t d = 0; d < mb.model_state.size(); ++d) {
            const ModelStateMetrics& x = ma.model_state[d];
            const ModelStateMetrics& y = mb.model_state[d];
            QCOMPARE(y.parameters, 2 * x.parameters);
            QCOMPARE(y.gradients, 2 * x.gradients);
            QCOMPARE(3 * y.optimizer_state, 2 * x.optimizer_state);
            QCOMPARE(y.parameters + y.gradients + y.optimizer_state,
                     x.parameters + x.gradients + x.optimizer_state);
            // The analytic P / N (the chunks of each unit differ by an element or so).
            QVERIFY(std::fabs(double(y.parameters) / y.analytic_parameters - 1) < 1e-3);
            QVERIFY(std::fabs(double(y.optimizer_state) / y.analytic_optimizer_state - 1) < 1e-3);
        }
        QCOMPARE(mb.comm_bytes_per_step.at("reduce_scatter"),
                 2 * ma.comm_bytes_per_step.at("reduce_scatter"));
        QCOMPARE(mb.comm_bytes_per_step.at("all_gather"), ma.comm_bytes_per_step.at("all_gather"));
        QVERIFY(b.final_master_parameters.empty());  // the shards are the fp32 copy
        // The fp32 shards are not bf16 values, and the losses stay with the bf16 run's.
        int not_bf16 = 0;
        for (float v : b.final_parameters) not_bf16 += round_to(DType::bf16, v) != v;
        QVERIFY(not_bf16 > 0);
        for (std::size_t k = 0; k < a.trace.steps.size(); ++k)
            QVERIFY(std::fabs(a.trace.steps[k].loss - b.trace.steps[k].loss) <
                    1e-2 * a.trace.steps[k].loss);
        RunConfig fp32 = fsdp2;
        fp32.precision = Precision::fp32;
        try {
            validate(fp32, {});
            QFAIL("reduce_dtype fp32 accepted without bf16 parameters");
        } catch (const BadInput& e) {
            QVERIFY2(QString::fromStdString(e.what()).contains(QLatin1String("bf16-mixed")),
                     e.what());
        }
    }

    void applies_to_zero3_only() {
        RunConfig c = small_config(StrategyKind::zero2, 2);
        c.reshard_after_forward = false;
        try {
            validate(c, {{"reshard_after_forward", "--no-reshard-after-forward"}});
            QFAIL("accepted under zero2");
        } catch (const BadInput& e) {
            QVERIFY2(QString::fromStdString(e.what()).contains(
                         QLatin1String("--no-reshard-after-forward: applies to strategy 'zero3'")),
                     e.what());
        }
    }
};

QTEST_GUILESS_MAIN(TestFsdpPolicies)
#include "test_fsdp_policies.moc"
