// torch.set_float32_matmul_precision on the CPU backend: 'highest' keeps fp32 product inputs,
// 'high' rounds them to TF32 (as allow_tf32), 'medium' to bf16; each step measures the
// rounding it did.
#include <QtTest>
#include <cmath>

#include "engine_test_support.h"
#include "pd/error.h"
#include "pd/scenario.h"

using namespace pd;
using namespace pd::test;

namespace {

RunConfig precision_config(const char* precision) {
    RunConfig c = small_config(StrategyKind::single, 1);
    ConfigSources sources;
    apply_scenario_json(std::string("{\"float32_matmul_precision\": \"") + precision + "\"}",
                        "test", c, sources);
    return c;
}

double mean_input_error(const RunResult& r) {
    double sum = 0;
    int n = 0;
    for (const StepRecord& s : r.trace.steps) {
        if (s.product_input_error < 0) return -1;
        sum += s.product_input_error;
        ++n;
    }
    return n ? sum / n : -1;
}

}  // namespace

class TestMatmulPrecision : public QObject {
    Q_OBJECT

  private slots:
    void the_setting_names_torchs_levels() {
        QVERIFY(!precision_config("highest").tf32);
        QVERIFY(precision_config("high").tf32);
        QVERIFY(!precision_config("high").bf16_products);
        QVERIFY(precision_config("medium").bf16_products);
        QVERIFY(!precision_config("medium").tf32);
        RunConfig c;
        ConfigSources sources;
        QVERIFY_THROWS_EXCEPTION(
            BadInput,
            apply_scenario_json(R"({"float32_matmul_precision": "low"})", "test", c, sources));
    }

    void medium_rounds_eight_times_coarser_than_high() {
        const RunResult highest = run_config(precision_config("highest"));
        const RunResult high = run_config(precision_config("high"));
        const RunResult medium = run_config(precision_config("medium"));
        for (const RunResult* r : {&highest, &high, &medium}) QCOMPARE(r->status, RunStatus::ok);
        QCOMPARE(mean_input_error(highest), -1.0);  // nothing rounded
        const double tf32 = mean_input_error(high), bf16 = mean_input_error(medium);
        // Relative RMS rounding error of uniform mantissas: about 2^-p / sqrt(3) for p explicit
        // bits under round-to-nearest (10 for TF32, 7 for bf16): 8x apart.
        QVERIFY2(tf32 > 1e-4 && tf32 < 4e-4, qPrintable(QString::number(tf32)));
        QVERIFY2(bf16 / tf32 > 6 && bf16 / tf32 < 10, qPrintable(QString::number(bf16 / tf32)));
        // 'high' is allow_tf32: the same run bit for bit.
        RunConfig tf32_run = small_config(StrategyKind::single, 1);
        tf32_run.tf32 = true;
        QCOMPARE(run_config(tf32_run).final_parameters, high.final_parameters);
        QVERIFY(medium.final_parameters != high.final_parameters);
        QVERIFY(high.final_parameters != highest.final_parameters);
    }

    void medium_is_refused_where_it_cannot_round() {
        RunConfig c = precision_config("medium");
        c.precision = Precision::bf16_mixed;
        try {
            validate(c, {{"float32_matmul_precision", "--float32-matmul-precision"}});
            QFAIL("medium under bf16-mixed accepted");
        } catch (const BadInput& e) {
            QVERIFY2(std::string(e.what()).find("--float32-matmul-precision") != std::string::npos,
                     e.what());
        }
        c = precision_config("medium");
        c.tf32 = true;
        QVERIFY_THROWS_EXCEPTION(BadInput, validate(c, {}));
    }
};

QTEST_APPLESS_MAIN(TestMatmulPrecision)
#include "test_matmul_precision.moc"
