// fp16 mixed precision with loss scaling (precision fp16-mixed): IEEE half rounding, GradScaler's
// rules (skip on inf or NaN, back off, grow after growth_interval clean steps, once per
// optimizer step under accumulation), unscaling before clipping, and what the runs show:
// gradients that underflow without a scale, activations that overflow fp16 but not bf16.
#include <QtTest>
#include <bit>
#include <cmath>
#include <cstdint>
#include <limits>

#include "engine_test_support.h"
#include "model/grad_scaler.h"
#include "pd/error.h"
#include "pd/metrics.h"

using namespace pd;
using namespace pd::test;

namespace {

// The value of an IEEE binary16 bit pattern, decoded by the format's definition.
double half_value(std::uint16_t h) {
    const int sign = h >> 15, exponent = (h >> 10) & 0x1f, mantissa = h & 0x3ff;
    double v;
    if (exponent == 0)
        v = std::ldexp(mantissa, -24);
    else if (exponent == 31)
        v = mantissa ? std::numeric_limits<double>::quiet_NaN()
                     : std::numeric_limits<double>::infinity();
    else
        v = std::ldexp(1024 + mantissa, exponent - 25);
    return sign ? -v : v;
}

RunConfig fp16_config(StrategyKind strategy = StrategyKind::single, int devices = 1) {
    RunConfig c = small_config(strategy, devices);
    c.batch = 16;
    c.steps = 8;
    c.precision = Precision::fp16_mixed;
    return c;
}

RunResult run_ok(const RunConfig& c) {
    RunResult r = run_config(c);
    if (r.status != RunStatus::ok) qWarning("%s", r.error.c_str());
    return r;
}

// Every step's scale follows from the step before by GradScaler's rules.
void check_scale_rules(const std::vector<StepRecord>& steps, const LossScaling& s) {
    QVERIFY(!steps.empty());
    QCOMPARE(steps.front().loss_scale, s.init);
    int tracker = 0;
    for (std::size_t k = 1; k < steps.size(); ++k) {
        double expected = steps[k - 1].loss_scale;
        if (steps[k - 1].skipped) {
            expected *= s.backoff_factor;
            tracker = 0;
        } else if (++tracker == s.growth_interval) {
            expected *= s.growth_factor;
            tracker = 0;
        }
        QCOMPARE(steps[k].loss_scale, expected);
    }
}

}  // namespace

class TestLossScaling : public QObject {
    Q_OBJECT

  private slots:
    // Every fp16 value is its own rounding, and every midpoint between neighbours rounds to
    // the one with an even mantissa; past the largest finite value, infinity.
    void fp16_rounding_is_round_to_nearest_even() {
        for (std::uint32_t h = 0; h < 0x7c00; ++h) {
            const float v = static_cast<float>(half_value(static_cast<std::uint16_t>(h)));
            QCOMPARE(std::bit_cast<std::uint32_t>(round_to_fp16(v)),
                     std::bit_cast<std::uint32_t>(v));
            QCOMPARE(round_to_fp16(-v), -v);
            if (h + 1 < 0x7c00) {
                const double next = half_value(static_cast<std::uint16_t>(h + 1));
                const float mid =
                    static_cast<float>((half_value(static_cast<std::uint16_t>(h)) + next) / 2);
                const float even = (h & 1) ? static_cast<float>(next) : v;
                QCOMPARE(round_to_fp16(mid), even);
                // Just above the midpoint rounds up, just below rounds down.
                QCOMPARE(round_to_fp16(std::nextafter(mid, 1e9f)), static_cast<float>(next));
                QCOMPARE(round_to_fp16(std::nextafter(mid, -1e9f)), v);
            }
        }
        QCOMPARE(kFp16Max, 65504.0f);
        QCOMPARE(round_to_fp16(65519.99f), 65504.0f);
        QVERIFY(std::isinf(round_to_fp16(65520.0f)));
        QVERIFY(std::isinf(round_to_fp16(-1e6f)) && round_to_fp16(-1e6f) < 0);
        QCOMPARE(round_to_fp16(0x1p-25f), 0.0f);  // the tie between 0 and 2^-24: even is 0
        QCOMPARE(round_to_fp16(0x1.8p-25f), 0x1p-24f);
        QCOMPARE(round_to_fp16(0.1f), 0.0999755859375f);  // torch.tensor(0.1).half()
        QVERIFY(std::isnan(round_to_fp16(std::numeric_limits<float>::quiet_NaN())));
        QCOMPARE(round_to(DType::fp16, 3.0f), 3.0f);
        QCOMPARE(bytes_of(DType::fp16), std::size_t{2});
        QVERIFY(is_fp16_representable(2048.0f) && !is_fp16_representable(2049.0f));
    }

    void grad_scaler_rules() {
        LossScaling s;
        s.growth_interval = 3;
        GradScaler scaler(s);
        QCOMPARE(scaler.scale(), 65536.0f);
        QCOMPARE(scaler.inverse_scale(), 1.0f / 65536.0f);
        QVERIFY(!scaler.update(true));  // skipped, backed off
        QCOMPARE(scaler.scale(), 32768.0f);
        QCOMPARE(scaler.applied_steps(), 0);
        QVERIFY(scaler.update(false));
        QVERIFY(scaler.update(false));
        QCOMPARE(scaler.scale(), 32768.0f);  // two clean steps: not yet
        QVERIFY(scaler.update(false));
        QCOMPARE(scaler.scale(), 65536.0f);  // the third: doubled
        QCOMPARE(scaler.applied_steps(), 3);
        QVERIFY(!scaler.update(true));  // an overflow restarts the count
        QVERIFY(scaler.update(false));
        QVERIFY(scaler.update(false));
        QCOMPARE(scaler.scale(), 32768.0f);
        // Never grown to infinity.
        LossScaling big;
        big.init = 0x1p127;
        big.growth_interval = 1;
        GradScaler top(big);
        QVERIFY(top.update(false));
        QCOMPARE(top.scale(), 0x1p127f);
        // Static: the scale stays, an overflow still skips.
        LossScaling fixed;
        fixed.dynamic = false;
        fixed.init = 1024;
        GradScaler still(fixed);
        QVERIFY(!still.update(true));
        QCOMPARE(still.scale(), 1024.0f);
    }

    // A run whose first scale overflows: the first steps are skipped (the weights do not
    // move), the scale halves until the gradients fit, then grows after growth_interval
    // clean steps, exactly as GradScaler's rules say.
    void skipped_steps_leave_the_weights_and_follow_the_rules() {
        RunConfig c = fp16_config();
        c.loss_scaling.init = 0x1p24;  // GradScaler users raise init_scale this far
        c.loss_scaling.growth_interval = 3;
        c.steps = 12;
        const RunResult r = run_ok(c);
        QCOMPARE(r.status, RunStatus::ok);
        int skipped = 0;
        for (const auto& s : r.trace.steps) skipped += s.skipped;
        QVERIFY2(skipped >= 2, qPrintable(QString::number(skipped)));
        QVERIFY(r.trace.steps.front().skipped);
        QVERIFY(skipped < c.steps);  // and it did train afterwards
        check_scale_rules(r.trace.steps, c.loss_scaling);
        QVERIFY(r.trace.steps.back().loss < r.trace.steps.front().loss);
        // The timeline names every skipped update, after the check that found the inf.
        int named = 0, checks = 0;
        for (const auto& e : r.trace.events) {
            named += e.label == "AdamW skipped (inf/NaN gradients)";
            checks += e.label == "GradScaler: unscale_, inf/NaN check";
        }
        QCOMPARE(named, skipped);
        QCOMPARE(checks, c.steps);
        // A skipped step leaves the weights: one step, skipped, ends at the initial weights.
        RunConfig one = c;
        one.steps = 1;
        const RunResult first = run_ok(one);
        QVERIFY(first.trace.steps.front().skipped);
        const std::vector<float> init = initial_parameters(model_shape(one), one.seed);
        QCOMPARE(first.final_master_parameters, init);
        for (std::size_t i = 0; i < init.size(); ++i)
            QCOMPARE(first.final_parameters[i], round_to_fp16(init[i]));
        // The same step with a scale that fits is applied.
        one.loss_scaling.init = 256;
        const RunResult applied = run_ok(one);
        QVERIFY(!applied.trace.steps.front().skipped);
        QVERIFY(applied.final_master_parameters != init);
    }

    // Without a scale, small gradients flush to zero in fp16; the dynamic scale keeps most of
    // them; bf16 (fp32's exponent range) keeps them all.
    void loss_scaling_rescues_underflowing_gradients() {
        RunConfig c = fp16_config();
        c.steps = 16;
        c.loss_scaling.dynamic = false;
        c.loss_scaling.init = 1;
        const RunResult unscaled = run_ok(c);
        c.loss_scaling = LossScaling{};
        const RunResult scaled = run_ok(c);
        c.precision = Precision::bf16_mixed;
        const RunResult bf16 = run_ok(c);
        const auto z_unscaled = gradient_zero_fraction(unscaled.trace.steps);
        const auto z_scaled = gradient_zero_fraction(scaled.trace.steps);
        const auto z_bf16 = gradient_zero_fraction(bf16.trace.steps);
        QVERIFY(z_unscaled && z_scaled && z_bf16);
        qInfo("zero gradients: fp16 unscaled %.4f, fp16 scaled %.4f, bf16 %.4f", *z_unscaled,
              *z_scaled, *z_bf16);
        QVERIFY(*z_unscaled > 0.005);
        QVERIFY(*z_unscaled > 4 * *z_scaled);
        QVERIFY(*z_bf16 < *z_unscaled / 4);
        for (const auto& s : bf16.trace.steps) QCOMPARE(s.loss_scale, 0.0);  // no scaler
    }

    // Inputs large enough that the first layer's outputs pass 65504: every fp16 step overflows
    // in forward, so every step is skipped and the scale falls below 1 (what the AMP docs warn
    // of for bf16-pretrained models); in bf16 every value stays finite and every step applies.
    void activations_that_overflow_fp16_but_not_bf16() {
        RunConfig c = fp16_config();
        c.input_scale = 10000;
        c.steps = 20;
        const RunResult fp16 = run_ok(c);
        QCOMPARE(fp16.status, RunStatus::ok);
        for (const auto& s : fp16.trace.steps) {
            QVERIFY(s.skipped);
            QVERIFY(!std::isfinite(s.loss));
        }
        QCOMPARE(fp16.trace.steps.back().loss_scale, 65536.0 * std::ldexp(1.0, -19));
        QVERIFY(fp16.trace.steps.back().loss_scale < 1);
        c.precision = Precision::bf16_mixed;
        const RunResult bf16 = run_ok(c);
        for (const auto& s : bf16.trace.steps) {
            QVERIFY(std::isfinite(s.loss));
            QVERIFY(!s.skipped);
            QVERIFY(std::isfinite(s.grad_norm));
        }
    }

    // clip_grad_norm_ reads the unscaled gradients: an SGD step moves the weights by lr x
    // max_norm whatever the loss scale (clipping the scaled gradients would move them 1/scale
    // as far), and the recorded norm is the unscaled one.
    void clipping_happens_after_unscaling() {
        for (Precision p : {Precision::fp32, Precision::fp16_mixed}) {
            RunConfig c = fp16_config();
            c.precision = p;
            c.optimizer = OptimizerKind::sgd;
            c.lr = 0.01;
            c.steps = 1;
            c.loss_scaling.init = 1024;
            c.clip_grad_norm = 1e-3;
            const RunResult r = run_ok(c);
            QCOMPARE(r.status, RunStatus::ok);
            QVERIFY(r.trace.steps.front().grad_norm > 100 * c.clip_grad_norm);
            const std::vector<float> init = initial_parameters(model_shape(c), c.seed);
            const std::vector<float>& after =
                p == Precision::fp32 ? r.final_parameters : r.final_master_parameters;
            double moved = 0;
            for (std::size_t i = 0; i < init.size(); ++i)
                moved += (double(after[i]) - init[i]) * (double(after[i]) - init[i]);
            moved = std::sqrt(moved);
            QVERIFY2(std::abs(moved - c.lr * c.clip_grad_norm) < 1e-3 * c.lr * c.clip_grad_norm,
                     qPrintable(QString::number(moved)));
        }
        // fp16's recorded norm is fp32's up to fp16 rounding, not 1024 times it.
        RunConfig c = fp16_config();
        c.steps = 1;
        c.loss_scaling.init = 1024;
        c.clip_grad_norm = 1e-3;
        const double n16 = run_ok(c).trace.steps.front().grad_norm;
        c.precision = Precision::fp32;
        const double n32 = run_ok(c).trace.steps.front().grad_norm;
        QVERIFY2(std::abs(n16 - n32) < 0.01 * n32, qPrintable(QString("%1 %2").arg(n16).arg(n32)));
    }

    // Under accumulation the scale is checked and updated once per optimizer step: one record
    // per step, the rules hold per step, and the run trains like fp32 with the same batch.
    void accumulation_updates_the_scale_once_per_step() {
        RunConfig c = fp16_config();
        c.accumulate = 4;
        c.steps = 10;
        c.loss_scaling.init = 0x1p22;
        c.loss_scaling.growth_interval = 2;
        const RunResult r = run_ok(c);
        QCOMPARE(int(r.trace.steps.size()), c.steps);
        check_scale_rules(r.trace.steps, c.loss_scaling);
        int skipped = 0;
        for (const auto& s : r.trace.steps) skipped += s.skipped;
        QVERIFY(skipped >= 1 && skipped < c.steps);
        // dp with fp16 and accumulation follows the same rules on every replica.
        RunConfig d = c;
        d.strategy = StrategyKind::dp;
        d.devices = 2;
        const RunResult dp = run_ok(d);
        QCOMPARE(dp.status, RunStatus::ok);
        check_scale_rules(dp.trace.steps, d.loss_scaling);
    }

    // Without an fp32 master copy (master_weights false) an update under half a 16-bit step
    // is rounded away: SGD with lr 1e-6 leaves every stored weight as it was, while the master
    // copy of the same run keeps it; and the optimizer state is 4 bytes a parameter smaller.
    void without_master_weights_small_updates_are_lost() {
        for (Precision p : {Precision::bf16_mixed, Precision::fp16_mixed}) {
            RunConfig c = fp16_config();
            c.precision = p;
            c.optimizer = OptimizerKind::sgd;
            c.lr = 1e-6;
            c.steps = 2;
            c.master_weights = false;
            const RunResult lost = run_ok(c);
            QCOMPARE(lost.status, RunStatus::ok);
            QVERIFY(lost.final_master_parameters.empty());
            const std::vector<float> init = initial_parameters(model_shape(c), c.seed);
            std::size_t moved = 0, nonzero = 0;
            for (std::size_t i = 0; i < init.size(); ++i) {
                const float start = round_to(c.tensor_dtype(), init[i]);
                QCOMPARE(lost.final_parameters[i],
                         round_to(c.tensor_dtype(), lost.final_parameters[i]));
                nonzero += std::abs(start) > 1e-2f;
                moved += std::abs(start) > 1e-2f && lost.final_parameters[i] != start;
            }
            QVERIFY(nonzero > init.size() / 2);
            QCOMPARE(moved, std::size_t{0});  // every weight of some size kept its value
            c.master_weights = true;
            const RunResult kept = run_ok(c);
            QVERIFY(kept.final_master_parameters != init);
            const RunMetrics a = compute_metrics(lost.trace, c);
            const RunMetrics b = compute_metrics(kept.trace, c);
            QCOMPARE(a.model_state.front().optimizer_state + 4 * init.size(),
                     b.model_state.front().optimizer_state);
        }
    }

    void settings_are_checked() {
        auto refused = [](RunConfig c, const ConfigSources& sources, const char* words) {
            try {
                validate(c, sources);
            } catch (const BadInput& e) {
                if (QString::fromStdString(e.what()).contains(QLatin1String(words))) return true;
                qWarning("%s", e.what());
                return false;
            }
            return false;
        };
        RunConfig z = fp16_config(StrategyKind::zero3, 2);
        QVERIFY(refused(z, {}, "'fp16-mixed' runs under strategies single and dp"));
        RunConfig b = fp16_config();
        b.precision = Precision::bf16_mixed;
        QVERIFY(refused(b, {{"loss_scale", "--loss-scale"}}, "--loss-scale"));
        RunConfig p = small_config(StrategyKind::pipeline, 2);
        p.clip_grad_norm = 1;
        QVERIFY(refused(p, {{"clip_grad_norm", "--clip-grad-norm"}}, "single and dp"));
        RunConfig s = fp16_config();
        s.loss_scaling.init = 0;
        QVERIFY(refused(s, {}, "the loss scale must be more than 0"));
        s = fp16_config();
        s.input_scale = 0;
        QVERIFY(refused(s, {}, "--input-scale"));
        s = fp16_config();
        s.loss_scaling.growth_interval = 0;
        QVERIFY(refused(s, {}, "--loss-scale-growth-interval"));
        validate(fp16_config(StrategyKind::dp, 2));  // and the supported ones pass
    }
};

QTEST_APPLESS_MAIN(TestLossScaling)
#include "test_loss_scaling.moc"
