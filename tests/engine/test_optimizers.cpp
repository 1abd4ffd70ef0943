// LAMB's layer-wise trust ratio and bitsandbytes' 8-bit AdamW (block-wise dynamic
// quantisation of both states): the rules on a tensor, and what the runs show (state bytes,
// loss beside AdamW's, a strategy that must equal the single device).
#include <QtTest>
#include <cmath>
#include <cstdint>
#include <random>

#include "engine_test_support.h"
#include "model/dynamic_quantization.h"
#include "pd/error.h"
#include "pd/metrics.h"
#include "pd/optimizer.h"

using namespace pd;
using namespace pd::test;

namespace {

// csrc/kernels.cu's quantize_2D transcribed as it is written (quadrants, pivots, bounds),
// the reference for the engine's restructured search.
std::uint8_t kernel_quantize_2d(const QuantCode& code, bool is_signed, float x) {
    float quadrants[3];
    for (int k = 0; k < 3; ++k) quadrants[k] = code[static_cast<std::size_t>(k * 64 + 63)];
    int pivot = 127, upper_pivot = 255, lower_pivot = 0;
    float lower = is_signed ? -1.0f : 0.0f, upper = 1.0f, midpoint;
    float val = quadrants[1];
    int local_pivot = 1, offset = 1;
    for (int i = 64; i > 0; i >>= 1) {
        if (x > val) {
            lower_pivot = pivot;
            lower = val;
            pivot += i;
            local_pivot += offset;
        } else {
            upper_pivot = pivot;
            upper = val;
            pivot -= i;
            local_pivot -= offset;
        }
        val = i >= 64 ? quadrants[local_pivot] : code[static_cast<std::size_t>(pivot)];
        offset -= 1;
    }
    if (x > val) {
        midpoint = (upper + val) * 0.5f;
        return static_cast<std::uint8_t>(x > midpoint ? upper_pivot : pivot);
    }
    midpoint = (lower + val) * 0.5f;
    return static_cast<std::uint8_t>(x < midpoint ? lower_pivot : pivot);
}

OptimizerSettings settings_for(OptimizerKind kind, std::vector<OptimizerTensor> tensors) {
    RunConfig c;
    c.optimizer = kind;
    OptimizerSettings s = OptimizerSettings::from(c);
    ParamLayout layout;
    for (const auto& t : tensors) {
        TensorSpec spec;
        spec.offset = t.offset;
        spec.count = t.count;
        layout.tensors.push_back(spec);
        layout.total = std::max(layout.total, t.offset + t.count);
    }
    s.set_tensors(layout);
    return s;
}

double norm(const float* v, std::size_t n) {
    double s = 0;
    for (std::size_t i = 0; i < n; ++i) s += double(v[i]) * v[i];
    return std::sqrt(s);
}

// Adam's first moment of one 8-bit tensor after one update with gradients `g`, dequantized,
// for quantisation blocks of `block` elements.
std::vector<float> first_moment_after_one_step(const std::vector<float>& g, int block) {
    OptimizerSettings s = settings_for(OptimizerKind::adamw8bit, {{0, g.size()}});
    s.blocksize = block;
    s.set_tensors([&] {
        ParamLayout l;
        TensorSpec t;
        t.count = g.size();
        l.tensors.push_back(t);
        l.total = g.size();
        return l;
    }());
    std::vector<float> w(g.size(), 0.5f), state(s.state_floats(g.size()), 0.0f);
    optimizer_update(s, 1, w.data(), g.data(), state.data(), g.size());
    const auto* codes = reinterpret_cast<const std::uint8_t*>(state.data());
    const float* absmax = state.data() + (2 * g.size() + 3) / 4;
    std::vector<float> m(g.size());
    for (std::size_t i = 0; i < g.size(); ++i)
        m[i] = dynamic_map(true)[codes[i]] * absmax[i / static_cast<std::size_t>(block)];
    return m;
}

RunConfig optimizer_config(OptimizerKind kind, StrategyKind strategy = StrategyKind::single,
                           int devices = 1) {
    RunConfig c = small_config(strategy, devices);
    c.width = 128;  // 128 x 128 weights: 16384 elements, 8 blocks of 2048
    c.layers = 2;
    c.batch = 32;
    c.steps = 6;
    c.optimizer = kind;
    return c;
}

}  // namespace

class TestOptimizers : public QObject {
    Q_OBJECT

  private slots:
    void dynamic_maps_are_bitsandbytes() {
        for (bool is_signed : {true, false}) {
            const QuantCode& code = dynamic_map(is_signed);
            for (std::size_t i = 1; i < code.size(); ++i) QVERIFY(code[i - 1] < code[i]);
            QCOMPARE(code[255], 1.0f);
        }
        const QuantCode& s = dynamic_map(true);
        QCOMPARE(s[127], 0.0f);  // 127 negative codes, 0, 127 positive, 1
        // The largest magnitude below 1: the last midpoint of linspace(0.1, 1, 65).
        QVERIFY(std::fabs(s[0] + 0.5f * (0.1f + 0.9f * 63 / 64 + 1.0f)) < 1e-6f);
        // The smallest: 1e-6 x the midpoint of linspace(0.1, 1, 2).
        QVERIFY(std::fabs(s[128] - 0.55e-6f) < 1e-12f);
        const QuantCode& u = dynamic_map(false);
        QCOMPARE(u[0], 0.0f);
        QVERIFY(std::fabs(u[1] - 0.325e-6f) < 1e-12f);  // 1e-6 x midpoint of (0.1, 0.55)
    }

    void quantisation_is_the_kernels_search() {
        std::mt19937 rng(3);
        std::uniform_real_distribution<float> unit(-1.0f, 1.0f);
        for (bool is_signed : {true, false}) {
            const QuantCode& code = dynamic_map(is_signed);
            std::vector<float> xs;
            for (int i = 0; i < 20000; ++i) {
                const float x = is_signed ? unit(rng) : std::fabs(unit(rng));
                xs.push_back(x);
                xs.push_back(x * 1e-4f);  // the dense small codes
            }
            for (float c : code) xs.push_back(c);  // every code and every midpoint exactly
            for (std::size_t i = 1; i < code.size(); ++i)
                xs.push_back((code[i - 1] + code[i]) * 0.5f);
            std::vector<int> scratch(xs.size());
            std::vector<std::uint8_t> out(xs.size());
            quantize_dynamic_n(code, xs.data(), xs.size(), scratch.data(), out.data());
            int nearest_mismatch = 0;
            for (std::size_t i = 0; i < xs.size(); ++i) {
                const std::uint8_t kernel = kernel_quantize_2d(code, is_signed, xs[i]);
                QCOMPARE(int(out[i]), int(kernel));
                QCOMPARE(int(quantize_dynamic(code, xs[i])), int(kernel));
                // Away from a midpoint (the random values), the kernel's answer is the
                // nearest code.
                if (i >= 40000) continue;
                const float d = std::fabs(xs[i] - code[kernel]);
                for (float c : code)
                    if (std::fabs(xs[i] - c) < d * (1 - 1e-6f)) ++nearest_mismatch;
            }
            QCOMPARE(nearest_mismatch, 0);
        }
    }

    void blocks_isolate_an_outlier() {
        // Small gradients with one outlier in the first block: block-wise, the other blocks'
        // first moments keep their precision; over the whole tensor at once (one block), the
        // outlier's absmax crushes them.
        std::mt19937 rng(11);
        std::normal_distribution<float> normal(0.0f, 1e-3f);
        std::vector<float> g(8192);
        for (float& v : g) v = normal(rng);
        g[5] = 10.0f;
        auto error_outside_first_block = [&](int block) {
            const std::vector<float> m = first_moment_after_one_step(g, block);
            double err = 0, ref = 0;
            for (std::size_t i = 2048; i < g.size(); ++i) {
                const double exact = (1.0 - 0.9f) * g[i];
                err += (m[i] - exact) * (m[i] - exact);
                ref += exact * exact;
            }
            return std::sqrt(err / ref);
        };
        const double blockwise = error_outside_first_block(2048);
        const double per_tensor = error_outside_first_block(8192);
        qInfo(
            "relative error of m outside the outlier's block: blocks of 2048 %.4f, one block "
            "%.4f",
            blockwise, per_tensor);
        QVERIFY(blockwise < 0.03);
        QVERIFY(per_tensor > 5 * blockwise);
    }

    void small_tensors_keep_fp32_states() {
        // A tensor under min_8bit_size: bitsandbytes' 32-bit update, the state 8 bytes a value.
        OptimizerSettings s = settings_for(OptimizerKind::adamw8bit, {{0, 100}, {100, 5000}});
        QCOMPARE(s.state_floats(5100), std::size_t{2 * 100 + (2 * 5000 + 3) / 4 + 2 * 3});
        std::vector<float> w(5100, 1.0f), g(5100, 0.01f), state(s.state_floats(5100), 0.0f);
        optimizer_update(s, 1, w.data(), g.data(), state.data(), 5100);
        // Step 1 of Adam moves every weight by about lr (m^/sqrt(v^) = 1), then decays it.
        const float expected =
            (1.0f - s.lr * 1.0f / (1.0f + 1e-8f / 0.01f)) * (1.0f - s.lr * s.weight_decay);
        QVERIFY(std::fabs(w[0] - expected) < 1e-6f);
        QCOMPARE(state[0], (1.0f - 0.9f) * 0.01f);      // fp32 m, as is
        QVERIFY(std::fabs(w[200] - expected) < 1e-5f);  // the 8-bit tensor: the same step
    }

    void lamb_moves_each_tensor_by_lr_times_its_norm() {
        // With the trust ratio ||w|| / ||u||, each tensor's step has norm lr x ||w||, whatever
        // its gradient's scale; a tensor of zeros takes the plain step (ratio 1).
        OptimizerSettings s = settings_for(OptimizerKind::lamb, {{0, 300}, {300, 50}, {350, 40}});
        s.lr = 0.01f;
        std::mt19937 rng(5);
        std::normal_distribution<float> normal(0.0f, 1.0f);
        std::vector<float> w(390), g(390), state(s.state_floats(390), 0.0f);
        for (std::size_t i = 0; i < 390; ++i) {
            w[i] = i < 300 ? 0.2f * normal(rng) : (i < 350 ? 3.0f * normal(rng) : 0.0f);
            g[i] = (i < 300 ? 1e-4f : 10.0f) * normal(rng);
        }
        const std::vector<float> before = w;
        optimizer_update(s, 1, w.data(), g.data(), state.data(), 390);
        for (auto [lo, n] : {std::pair<std::size_t, std::size_t>{0, 300}, {300, 50}}) {
            std::vector<float> step(n);
            for (std::size_t i = 0; i < n; ++i) step[i] = w[lo + i] - before[lo + i];
            const double ratio = norm(step.data(), n) / (s.lr * norm(before.data() + lo, n));
            QVERIFY2(std::fabs(ratio - 1.0) < 1e-4, qPrintable(QString::number(ratio)));
        }
        // Zero weights: u = m^/(sqrt(v^) + eps) = sign(g) at step 1, moved by lr.
        for (std::size_t i = 350; i < 390; ++i) QVERIFY(std::fabs(std::fabs(w[i]) - s.lr) < 1e-6f);
    }

    void eight_bit_states_take_a_quarter_of_the_bytes() {
        const RunResult adam = run_config(optimizer_config(OptimizerKind::adamw));
        const RunResult q8 = run_config(optimizer_config(OptimizerKind::adamw8bit));
        QCOMPARE(adam.status, RunStatus::ok);
        QCOMPARE(q8.status, RunStatus::ok);
        const RunConfig c = optimizer_config(OptimizerKind::adamw8bit);
        const RunMetrics ma = compute_metrics(adam.trace, optimizer_config(OptimizerKind::adamw));
        const RunMetrics mq = compute_metrics(q8.trace, c);
        const double a = double(ma.model_state.front().optimizer_state);
        const double q = double(mq.model_state.front().optimizer_state);
        // The measured bytes are the analytic ones: packed codes, absmaxes, small tensors fp32.
        QCOMPARE(q, mq.model_state.front().analytic_optimizer_state);
        OptimizerSettings s = OptimizerSettings::from(c);
        const ParamLayout layout = ParamLayout::build(model_shape(c));
        s.set_tensors(layout);
        std::size_t expected = 0;
        for (const TensorSpec& t : layout.tensors)
            expected += t.count >= 4096 ? 2 * t.count + 8 * ((t.count + 2047) / 2048) : 8 * t.count;
        QVERIFY(std::fabs(q - double(expected)) <= 4.0 * double(layout.tensors.size()));
        qInfo("optimizer state: AdamW %.0f bytes, AdamW8bit %.0f (%.3f)", a, q, q / a);
        QVERIFY(q / a > 0.25 && q / a < 0.3);  // 2 of 8 bytes, plus the fp32 small tensors
        // Its losses follow AdamW's closely without being AdamW's.
        bool differs = false;
        for (std::size_t k = 0; k < adam.trace.steps.size(); ++k) {
            const double la = adam.trace.steps[k].loss, lq = q8.trace.steps[k].loss;
            QVERIFY(std::fabs(la - lq) < 0.02 * la);
            differs |= la != lq;
        }
        QVERIFY(differs);
        QVERIFY(q8.trace.steps.back().loss < 0.8 * q8.trace.steps.front().loss);
    }

    void runs_measure_what_quantisation_loses() {
        // Every update records how far the stored codes are from the fp32 states; smaller
        // blocks (more absmaxes) store them more closely than one absmax per tensor.
        auto error_with = [](int block) {
            RunConfig c = optimizer_config(OptimizerKind::adamw8bit);
            c.optimizer_blocksize = block;
            const RunResult r = run_config(c);
            // (Step 1's body gradients are all zero, the head starting at zero: nothing to
            // measure there.)
            for (std::size_t k = 1; k < r.trace.steps.size(); ++k) {
                const StepRecord& s = r.trace.steps[k];
                if (s.state_error_m <= 0 || s.state_error_m > 0.05) return -1.0;
                if (s.state_error_v <= 0 || s.state_error_v > 0.05) return -1.0;
            }
            return *state_quantization_error(r.trace.steps, true);
        };
        const double small = error_with(256), bnb = error_with(2048), whole = error_with(1 << 16);
        qInfo("m stored within %.4f (blocks of 256), %.4f (2048), %.4f (one per tensor)", small,
              bnb, whole);
        QVERIFY(small > 0);
        QVERIFY(small < bnb);
        QVERIFY(bnb < whole);
        const RunResult plain = run_config(optimizer_config(OptimizerKind::adamw));
        QVERIFY(!state_quantization_error(plain.trace.steps, true));  // no 8-bit state
    }

    void data_parallel_equals_the_single_device() {
        // Each replica holds whole tensors and the same averaged gradients: dp's updates are
        // the single device's (to the rounding of the all-reduce's summation order).
        for (OptimizerKind kind : {OptimizerKind::lamb, OptimizerKind::adamw8bit}) {
            const RunResult one = run_config(optimizer_config(kind));
            const RunResult dp = run_config(optimizer_config(kind, StrategyKind::dp, 2));
            QCOMPARE(one.status, RunStatus::ok);
            QCOMPARE(dp.status, RunStatus::ok);
            QVERIFY(relative_error(dp.final_parameters, one.final_parameters) < 1e-4);
        }
    }

    void lamb_trains_where_the_trace_says_so() {
        const RunResult r = run_config(optimizer_config(OptimizerKind::lamb));
        QCOMPARE(r.status, RunStatus::ok);
        int updates = 0;
        for (const auto& e : r.trace.events)
            if (e.kind == EventKind::optimizer) {
                QCOMPARE(QString::fromStdString(e.label), QStringLiteral("LAMB"));
                ++updates;
            }
        QCOMPARE(updates, 6);
        QVERIFY(r.trace.steps.back().loss < r.trace.steps.front().loss);
    }

    void settings_are_checked() {
        auto refused = [](RunConfig c, const char* words) {
            try {
                validate(c, {});
            } catch (const BadInput& e) {
                if (QString::fromStdString(e.what()).contains(QLatin1String(words))) return true;
                qWarning("%s", e.what());
                return false;
            }
            return false;
        };
        QVERIFY(refused(optimizer_config(OptimizerKind::lamb, StrategyKind::zero2, 2),
                        "'lamb' runs under strategies single and dp"));
        QVERIFY(refused(optimizer_config(OptimizerKind::adamw8bit, StrategyKind::tp, 2),
                        "'adamw8bit' runs under strategies single and dp"));
        RunConfig bf16 = optimizer_config(OptimizerKind::adamw8bit);
        bf16.precision = Precision::bf16_mixed;
        QVERIFY(refused(bf16, "'adamw8bit' updates fp32 parameters"));
        RunConfig block = optimizer_config(OptimizerKind::adamw8bit);
        block.optimizer_blocksize = 1000;
        QVERIFY(refused(block, "must be a power of two from 64 to 2^24"));
    }
};

QTEST_GUILESS_MAIN(TestOptimizers)
#include "test_optimizers.moc"
