// FSDP2's per-module policies on the zero3 strategy: reshard_after_forward trades the
// backward's second all-gather for keeping every unit's parameters whole from forward to
// backward; the arithmetic, and so every number the run computes, is the same.
#include <QtTest>

#include "engine_test_support.h"
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
