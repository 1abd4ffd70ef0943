// FP8 as Transformer Engine runs it: the E4M3 and E5M2 roundings, DelayedScaling's amax
// history and scale update, and a run whose blocks' products take FP8 operands.
#include <QtTest>
#include <cmath>
#include <limits>
#include <set>

#include "backend/device_backend.h"
#include "engine_test_support.h"
#include "model/fp8_scaling.h"
#include "pd/error.h"
#include "pd/fp8.h"

using namespace pd;
using namespace pd::test;

namespace {

// Every finite non-negative value of an encoding, from its definition: exponent field e
// (bias b), mantissa field m of `bits` bits; e = 0 is subnormal.
std::set<float> encoding_values(int exponent_bits, int mantissa_bits, float largest) {
    std::set<float> values;
    const int bias = (1 << (exponent_bits - 1)) - 1;
    for (int e = 0; e < (1 << exponent_bits); ++e)
        for (int m = 0; m < (1 << mantissa_bits); ++m) {
            const float frac = static_cast<float>(m) / static_cast<float>(1 << mantissa_bits);
            const float v = e == 0 ? std::ldexp(frac, 1 - bias) : std::ldexp(1.0f + frac, e - bias);
            if (v <= largest) values.insert(v);
        }
    return values;
}

RunConfig fp8_config(Fp8Format format, StrategyKind strategy = StrategyKind::single,
                     int devices = 1) {
    RunConfig c = small_config(strategy, devices);
    c.layers = 2;
    c.steps = 4;
    c.fp8.format = format;
    c.fp8.amax_history_len = 16;
    return c;
}

void expect_refused(RunConfig c, const char* why) {
    try {
        validate(c, {{"fp8", "--fp8"}});
        QFAIL(why);
    } catch (const BadInput& e) {
        QVERIFY2(std::string(e.what()).find("--fp8") != std::string::npos, e.what());
    }
}

}  // namespace

class TestFp8 : public QObject {
    Q_OBJECT

  private slots:
    void roundings_land_on_the_encodings_values() {
        for (const Fp8Encoding e : {Fp8Encoding::e4m3, Fp8Encoding::e5m2}) {
            const bool e4 = e == Fp8Encoding::e4m3;
            const std::set<float> exact =
                e4 ? encoding_values(4, 3, kE4M3Max) : encoding_values(5, 2, kE5M2Max);
            // 127 (with 0) for E4M3: 2 of 256 codes are NaN and there is no infinity; 124 for
            // E5M2, whose top exponent holds infinities and NaNs.
            QCOMPARE(exact.size(), e4 ? std::size_t{127} : std::size_t{124});
            for (const float v : exact) {
                QCOMPARE(round_to_fp8(e, v), v);
                QCOMPARE(round_to_fp8(e, -v), -v);
            }
            // Any float rounds to the nearest value, ties to the even code.
            std::set<float> seen;
            const std::vector<float> sorted(exact.begin(), exact.end());
            for (int i = 0; i < 200000; ++i) {
                const float x = std::ldexp(1.0f + static_cast<float>(i % 1000) / 1000.0f,
                                           i / 1000 - (e4 ? 12 : 20));
                const float r = round_to_fp8(e, x);
                seen.insert(r);
                QVERIFY(exact.count(r));
                auto hi = std::lower_bound(sorted.begin(), sorted.end(), x);
                if (hi == sorted.end()) {
                    QCOMPARE(r, fp8_max(e));  // saturated
                    continue;
                }
                if (hi == sorted.begin()) continue;
                const float lo = *(hi - 1);
                const float d = std::fabs(r - x);
                QVERIFY(d <= x - lo && d <= *hi - x);
            }
            QCOMPARE(seen.size(), exact.size());
        }
        // Saturation, not infinity; NaN stays NaN; half the smallest subnormal rounds to 0.
        QCOMPARE(round_to_fp8(Fp8Encoding::e4m3, 464.0f), 448.0f);
        QCOMPARE(round_to_fp8(Fp8Encoding::e4m3, -1e30f), -448.0f);
        QCOMPARE(round_to_fp8(Fp8Encoding::e5m2, std::numeric_limits<float>::infinity()), 57344.0f);
        QVERIFY(std::isnan(round_to_fp8(Fp8Encoding::e5m2, std::nanf(""))));
        QCOMPARE(round_to_fp8(Fp8Encoding::e4m3, std::ldexp(1.0f, -10)), 0.0f);
        QCOMPARE(round_to_fp8(Fp8Encoding::e4m3, std::ldexp(1.5f, -10)), std::ldexp(1.0f, -9));
        QCOMPARE(round_to_fp8(Fp8Encoding::e5m2, std::ldexp(1.0f, -16)), std::ldexp(1.0f, -16));
        QCOMPARE(round_to_fp8(Fp8Encoding::e5m2, std::ldexp(1.0f, -17)), 0.0f);
        QCOMPARE(round_to_fp8(Fp8Encoding::e4m3, 0.3f), 0.3125f);
    }

    void delayed_scaling_follows_the_amax_history() {
        auto backend = make_cpu_device_backend(1);
        DeviceOps& ops = backend->ops();
        Fp8Recipe recipe;
        recipe.format = Fp8Format::hybrid;
        recipe.amax_history_len = 3;
        Fp8Scaling scaling(recipe, 2);
        std::vector<float> dst(1);
        auto pass = [&](float amax) {
            const float v = amax;
            return scaling.cast(ops, 1, Fp8Role::input1, &v, dst.data(), 1);
        };
        // Scale 1 until a history exists; then 448 / the largest amax of the last 3 passes.
        QCOMPARE(pass(2.0f), 1.0f);
        scaling.update(true);
        QCOMPARE(scaling.scale(1, Fp8Role::input1), 448.0f / 2.0f);
        QCOMPARE(pass(8.0f), 224.0f);
        scaling.update(true);
        QCOMPARE(scaling.scale(1, Fp8Role::input1), 448.0f / 8.0f);
        pass(4.0f);
        scaling.update(true);
        QCOMPARE(scaling.scale(1, Fp8Role::input1), 448.0f / 8.0f);  // 8 still in the window
        pass(1.0f);
        scaling.update(true);
        QCOMPARE(scaling.scale(1, Fp8Role::input1), 448.0f / 8.0f);  // passes 2-4: 8, 4, 1
        pass(1.0f);
        scaling.update(true);
        QCOMPARE(scaling.scale(1, Fp8Role::input1), 448.0f / 4.0f);  // passes 3-5: 8 is out
        // The history after the update: slot 0 cleared, the current amax last.
        const std::vector<float>& h = scaling.history(1, Fp8Role::input1);
        QCOMPARE(h.size(), std::size_t{3});
        QCOMPARE(h[0], 0.0f);
        QCOMPARE(h[2], 1.0f);
        // A backward update leaves forward tensors alone; an amax of 0 keeps the scale.
        scaling.update(false);
        QCOMPARE(scaling.scale(1, Fp8Role::input1), 448.0f / 4.0f);
        const float zero = 0.0f;
        scaling.cast(ops, 1, Fp8Role::grad_output1, &zero, dst.data(), 1);
        scaling.update(false);
        QCOMPARE(scaling.scale(1, Fp8Role::grad_output1), 1.0f);
        // Gradients take E5M2 under HYBRID: scale 57344 / amax, with the margin's 2^-m.
        recipe.margin = 1;
        recipe.amax_compute_algo = AmaxAlgo::most_recent;
        Fp8Scaling g(recipe, 2);
        const float big = 16.0f, small = 2.0f;
        g.cast(ops, 1, Fp8Role::grad_output2, &big, dst.data(), 1);
        g.update(false);
        g.cast(ops, 1, Fp8Role::grad_output2, &small, dst.data(), 1);
        g.update(false);
        QCOMPARE(g.scale(1, Fp8Role::grad_output2), 57344.0f / 2.0f / 2.0f);  // latest only
    }

    void a_run_casts_every_block_product_and_the_format_decides_what_underflows() {
        const RunResult hybrid = run_config(fp8_config(Fp8Format::hybrid));
        const RunResult e4m3 = run_config(fp8_config(Fp8Format::e4m3));
        const RunResult plain = run_config(fp8_config(Fp8Format::off));
        for (const RunResult* r : {&hybrid, &e4m3, &plain}) QCOMPARE(r->status, RunStatus::ok);
        const RunConfig c = fp8_config(Fp8Format::hybrid);
        const long long rows = c.batch, h = c.width, f = 4LL * c.width;
        // Step 3 (scales from a history): both products' operands of every block, all non-zero
        // but the inputs' few exact zeros.
        const StepRecord& s = hybrid.trace.steps[2];
        QVERIFY(s.fp8_forward.nonzero > c.layers * (rows * h + rows * f + 2 * h * f) * 99 / 100);
        QVERIFY(s.fp8_forward.relative_error > 0 && s.fp8_forward.relative_error < 0.05);
        QVERIFY(s.fp8_max_scale > 100 * s.fp8_min_scale);  // one scale could not serve them all
        // Step 2's gradients are cast at scale 1 (no history yet): E4M3's smallest subnormal
        // (2^-9) flushes far more of them than E5M2's (2^-16).
        const StepRecord& h2 = hybrid.trace.steps[1];
        const StepRecord& e2 = e4m3.trace.steps[1];
        QVERIFY(h2.fp8_gradients.nonzero > 0);
        // (E4M3 flushes every output gradient of the last products, so the first products'
        // gradients are all zero and not counted; E5M2 keeps over a quarter of them.)
        QVERIFY(e2.fp8_gradients.nonzero > 0);
        QCOMPARE(e2.fp8_gradients.flushed, e2.fp8_gradients.nonzero);
        QVERIFY(h2.fp8_gradients.flushed < h2.fp8_gradients.nonzero * 3 / 4);
        // The products are FP8's: the losses move off the fp32 run's, the formats apart.
        QVERIFY(hybrid.trace.steps.back().loss != plain.trace.steps.back().loss);
        QVERIFY(hybrid.trace.steps.back().loss != e4m3.trace.steps.back().loss);
        QCOMPARE(plain.trace.steps.back().fp8_max_scale, 0.0);
    }

    void data_parallel_replicas_stay_identical() {
        const RunResult dp = run_config(fp8_config(Fp8Format::hybrid, StrategyKind::dp, 2));
        QCOMPARE(dp.status, RunStatus::ok);
        QVERIFY(dp.trace.steps.back().fp8_gradients.nonzero > 0);
    }

    void what_it_cannot_run_is_refused_by_name() {
        RunConfig c = fp8_config(Fp8Format::hybrid);
        c.strategy = StrategyKind::zero3;
        c.devices = 2;
        expect_refused(c, "zero3");
        c = fp8_config(Fp8Format::hybrid);
        c.model = ModelKind::transformer;
        expect_refused(c, "transformer");
        c = fp8_config(Fp8Format::hybrid);
        c.precision = Precision::fp16_mixed;
        expect_refused(c, "fp16-mixed");
        c = fp8_config(Fp8Format::hybrid);
        c.accumulate = 2;
        expect_refused(c, "accumulate");
        c = fp8_config(Fp8Format::hybrid);
        c.recompute = RecomputeMode::selective;
        expect_refused(c, "recompute");
        c = fp8_config(Fp8Format::hybrid);
        c.fp8.amax_history_len = 0;
        QVERIFY_THROWS_EXCEPTION(BadInput, validate(c, {}));
    }
};

QTEST_APPLESS_MAIN(TestFp8)
#include "test_fp8.moc"
