// FSDP2's per-module policies on the zero3 strategy: reshard_after_forward trades the
// backward's second all-gather for keeping every unit's parameters whole from forward to
// backward; the arithmetic, and so every number the run computes, is the same.
#include <QtTest>
#include <cmath>
#include <set>

#include "engine_test_support.h"
#include "model/weight_quantization.h"
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

    void resharding_to_a_node_keeps_the_backward_gathers_inside_it() {
        // 8 devices on 2 nodes: resharding after forward to groups of 4 (FSDP2's int, ZeRO++'s
        // hpZ) keeps a quarter of each unit per device, and the backward all-gathers it within
        // the node: no backward gather crosses nodes, at a quarter of keeping whole units.
        auto config = [](bool reshard, int to) {
            RunConfig c = fsdp_config(reshard);
            c.devices = 8;
            c.cluster.nodes = 2;
            c.reshard_to = to;
            return c;
        };
        const RunConfig cr = config(true, 0), ch = config(true, 4), ck = config(false, 0);
        const RunResult resharded = run_config(cr), hpz = run_config(ch), kept = run_config(ck);
        QCOMPARE(hpz.status, RunStatus::ok);
        QCOMPARE(hpz.final_parameters, resharded.final_parameters);
        int within = 0;
        for (const auto& c : hpz.trace.collectives)
            if (c.label.find("backward") != std::string::npos) {
                QVERIFY2(c.label.find("(within 4 devices)") != std::string::npos, c.label.c_str());
                ++within;
            }
        QVERIFY(within > 0);
        auto inter = [](const RunResult& r, const RunConfig& c) {
            return compute_metrics(r.trace, c)
                .cluster.tiers[static_cast<std::size_t>(LinkTier::inter_node)]
                .bytes_per_step;
        };
        QVERIFY(inter(hpz, ch) < inter(resharded, cr));
        QCOMPARE(inter(hpz, ch), inter(kept, ck));  // only the forward's gathers cross
        const std::size_t peak_r = peak_bytes(resharded, 0, MemoryCategory::gathered_parameters);
        const std::size_t peak_h = peak_bytes(hpz, 0, MemoryCategory::gathered_parameters);
        const std::size_t peak_k = peak_bytes(kept, 0, MemoryCategory::gathered_parameters);
        QVERIFY(peak_r < peak_h);
        QVERIFY(peak_h < peak_k);
        for (int bad : {1, 3, 8}) {
            RunConfig c = config(true, bad);
            QVERIFY_THROWS_EXCEPTION(BadInput, validate(c, {}));
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

    void quantized_weights_are_int8_codes_per_group() {
        std::vector<float> v(5000);
        for (std::size_t i = 0; i < v.size(); ++i)
            v[i] = std::sin(0.37f * static_cast<float>(i)) * (i < 2048 ? 1.0f : 1e-3f);
        v[3000] = 0.5f;  // an outlier in the second group only
        std::fill(v.begin() + 4096, v.end(), 0.0f);
        std::vector<float> q = v;
        quantize_dequantize_int8(q.data(), q.size(), 2048, DType::fp32);
        for (std::size_t g = 0; g < 2; ++g) {
            float absmax = 0;
            for (std::size_t i = g * 2048; i < (g + 1) * 2048; ++i)
                absmax = std::max(absmax, std::fabs(v[i]));
            const float scale = absmax / 127.0f;
            std::set<float> codes;
            for (std::size_t i = g * 2048; i < (g + 1) * 2048; ++i) {
                QVERIFY(std::fabs(q[i] - v[i]) <= 0.5f * scale * 1.0001f);
                codes.insert(std::nearbyint(q[i] / scale));
            }
            QVERIFY(codes.size() <= 255);  // -127 .. 127
        }
        for (std::size_t i = 4096; i < v.size(); ++i) QCOMPARE(q[i], 0.0f);  // zeros stay
        // The outlier's group loses its small values; the first group keeps its own scale.
        int lost = 0;
        for (std::size_t i = 2048; i < 4096; ++i) lost += q[i] == 0.0f && v[i] != 0.0f;
        QVERIFY(lost > 1000);
    }

    void qwz_gathers_one_byte_an_element() {
        RunConfig plain = fsdp_config(true);
        RunConfig qwz = plain;
        qwz.quantized_weights = true;
        const RunResult a = run_config(plain), b = run_config(qwz);
        QCOMPARE(b.status, RunStatus::ok);
        QCOMPARE(gather_bytes(b, qwz), gather_bytes(a, plain) / 4);  // int8 against fp32
        // Forward and backward use the dequantized weights: the numbers change a little.
        QVERIFY(b.final_parameters != a.final_parameters);
        for (std::size_t k = 0; k < a.trace.steps.size(); ++k)
            QVERIFY(std::fabs(a.trace.steps[k].loss - b.trace.steps[k].loss) <
                    1e-2 * a.trace.steps[k].loss);
        int int8_gathers = 0;
        for (const auto& c : b.trace.collectives) int8_gathers += c.label.ends_with("(int8)");
        QVERIFY(int8_gathers > 0);
    }

    // ZeRO++'s qgZ: each unit's gradients go to their owners by one all-to-all of int8 chunks
    // (a quarter of the reduce-scatter's fp32 bytes, padded to equal chunks), and each owner sums
    // the dequantized chunks in fp32. The parameter gathers stay fp32 (qwZ is its own switch);
    // the values differ a little from exact sums.
    void qgz_sends_int8_gradients_by_all_to_all() {
        RunConfig plain = fsdp_config(true);
        RunConfig qgz = plain;
        qgz.quantized_gradients = true;
        const RunResult a = run_config(plain), b = run_config(qgz);
        QCOMPARE(b.status, RunStatus::ok);
        const RunMetrics ma = compute_metrics(a.trace, plain), mb = compute_metrics(b.trace, qgz);
        QCOMPARE(mb.comm_bytes_per_step.count("reduce_scatter"), std::size_t{0});
        const double rs = ma.comm_bytes_per_step.at("reduce_scatter");
        const double a2a = mb.comm_bytes_per_step.at("all_to_all");
        QVERIFY2(a2a >= rs / 4 && a2a < rs / 4 * 1.01,
                 qPrintable(QString("%1 %2").arg(a2a).arg(rs)));
        QCOMPARE(gather_bytes(b, qgz), gather_bytes(a, plain));
        int exchanges = 0;
        for (const auto& c : b.trace.collectives)
            exchanges += c.device == 0 && c.step == 1 && c.op == "all_to_all" &&
                         c.label.ends_with("(int8, qgZ)");
        QCOMPARE(exchanges, plain.layers + 2);  // one per unit: input, blocks, head
        QVERIFY(b.final_parameters != a.final_parameters);
        for (std::size_t k = 0; k < a.trace.steps.size(); ++k)
            QVERIFY(std::fabs(a.trace.steps[k].loss - b.trace.steps[k].loss) <
                    1e-2 * a.trace.steps[k].loss);
        // Combinations it cannot honour are refused by name.
        for (const bool hybrid : {false, true}) {
            RunConfig bad = qgz;
            if (hybrid) {
                bad.hybrid_shard = true;
                bad.cluster.nodes = 2;
            } else {
                bad.precision = Precision::bf16_mixed;
                bad.fp32_reduce = true;
            }
            try {
                validate(bad, {{"quantized_gradients", "--quantized-gradients"}});
                QFAIL("accepted");
            } catch (const BadInput& e) {
                QVERIFY2(std::string(e.what()).find("--quantized-gradients") != std::string::npos,
                         e.what());
            }
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
