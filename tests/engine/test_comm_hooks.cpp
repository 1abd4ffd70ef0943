// DDP's compression hooks on dp, fp32: fp16 / bf16 (comm_hook: the same buckets and calls as
// without a hook, half the bytes, training close to the uncompressed run; refused where the
// gradients are 16-bit already or the strategy is not DDP) and PowerSGD (orthogonal factors,
// a full-rank approximation that is the plain all-reduce, error feedback's memory, torch's
// rules on what to compress and when to start).
#include <QtTest>

#include "engine_test_support.h"
#include "pd/error.h"
#include "pd/metrics.h"
#include "strategies/powersgd.h"

using namespace pd;
using namespace pd::test;

class TestCommHooks : public QObject {
    Q_OBJECT

  private slots:
    void halves_the_bytes_and_keeps_the_buckets() {
        RunConfig plain = small_config(StrategyKind::dp, 2);
        const RunResult base = run_config(plain);
        QCOMPARE(base.status, RunStatus::ok);
        for (DType hook : {DType::fp16, DType::bf16}) {
            RunConfig c = plain;
            c.comm_hook = hook;
            const RunResult r = run_config(c);
            QCOMPARE(r.status, RunStatus::ok);
            QCOMPARE(r.trace.collectives.size(), base.trace.collectives.size());
            for (std::size_t i = 0; i < r.trace.collectives.size(); ++i)
                QCOMPARE(r.trace.collectives[i].bytes * 2, base.trace.collectives[i].bytes);
            // Replicas agree, and the update stayed close to the uncompressed one.
            const double err = relative_error(r.final_parameters, base.final_parameters);
            QVERIFY2(err > 0 && err < 1e-2, qPrintable(QString::number(err)));
            // Every partial sum rounded to the hook's type: it is not the fp32 run.
            QVERIFY(r.trace.steps.back().loss != base.trace.steps.back().loss);
        }
    }

    void gram_schmidt_gives_orthonormal_columns() {
        const int rows = 7, cols = 3;
        std::vector<float> a(rows * cols);
        powersgd_random_q(1, 0, 0, 0, a.data(), a.size());
        orthogonalize_columns(a.data(), rows, cols);
        for (int i = 0; i < cols; ++i)
            for (int j = 0; j < cols; ++j) {
                double dot = 0;
                for (int r = 0; r < rows; ++r) dot += double(a[r * cols + i]) * a[r * cols + j];
                QVERIFY(std::abs(dot - (i == j ? 1.0 : 0.0)) < 1e-6);
            }
    }

    // torch's _should_compress: (n + m) x rank x min_compression_rate < n x m; vectors whole.
    void compresses_what_torch_would() {
        RunConfig c = small_config(StrategyKind::dp, 2);  // width 32: blocks 32 x 128
        const ParamLayout layout = ParamLayout::build(model_shape(c));
        RunConfig::PowerSgd ps;
        ps.rank = 4;
        const auto plan =
            powersgd_buckets(layout, make_grad_buckets(layout, 1 << 30), ps);  // one bucket
        QCOMPARE(plan.size(), std::size_t{1});
        std::size_t weights = 0, counted = 0;
        for (const PowerSgdTensor& t : plan[0].tensors) {
            counted += t.count;
            const bool matrix = t.m > 1;
            QCOMPARE(t.compress, matrix && (t.n + t.m) * 4 * 2 < t.n * t.m);
            weights += t.compress;
        }
        QCOMPARE(counted, layout.total);
        QVERIFY(weights >= std::size_t(c.layers) * 2);  // every block's two products
    }

    // At full rank (and compressing everything) P Qᵀ is M itself: the plain all-reduce.
    void full_rank_is_the_plain_all_reduce() {
        RunConfig plain = small_config(StrategyKind::dp, 2);
        RunConfig c = plain;
        c.powersgd.rank = 1024;
        c.powersgd.min_compression_rate = 0;
        c.powersgd.start_iter = 2;
        const RunResult a = run_config(plain), b = run_config(c);
        QCOMPARE(b.status, RunStatus::ok);
        const double err = relative_error(b.final_parameters, a.final_parameters);
        QVERIFY2(err < 1e-4, qPrintable(QString::number(err)));
        // Rank 1 is another run.
        c.powersgd.rank = 1;
        c.powersgd.min_compression_rate = 2;
        const RunResult low = run_config(c);
        QVERIFY(relative_error(low.final_parameters, a.final_parameters) > 1e-3);
        // Up to three all-reduces a bucket once compressing (whole tensors, P, Q), one before.
        int plain_calls = 0, hooked_calls = 0;
        for (const auto& r : a.trace.collectives)
            plain_calls += r.device == 0 && r.op == "all_reduce";
        for (const auto& r : low.trace.collectives)
            hooked_calls += r.device == 0 && r.op == "all_reduce";
        const int buckets = plain_calls / plain.steps;
        const ParamLayout layout = ParamLayout::build(model_shape(c));
        int per_step = 0;
        for (const PowerSgdBucket& bucket :
             powersgd_buckets(layout, make_grad_buckets(layout, c.bucket_bytes), c.powersgd))
            per_step += (bucket.uncompressed_count > 0 ? 1 : 0) + (bucket.p_count > 0 ? 2 : 0);
        QVERIFY(per_step > buckets);
        QCOMPARE(hooked_calls, 2 * buckets + (plain.steps - 2) * per_step);
    }

    void error_feedback_holds_a_gradient_and_changes_the_run() {
        RunConfig c = small_config(StrategyKind::dp, 2);
        c.powersgd.rank = 1;
        c.powersgd.start_iter = 2;
        c.steps = 6;
        const RunResult with = run_config(c);
        c.powersgd.error_feedback = false;
        const RunResult without = run_config(c);
        QCOMPARE(with.status, RunStatus::ok);
        const std::size_t n = ParamLayout::build(model_shape(c)).total;
        for (int d = 0; d < 2; ++d) {
            QCOMPARE(peak_bytes(without, d, MemoryCategory::gradients), 4 * n);
            QCOMPARE(peak_bytes(with, d, MemoryCategory::gradients), 8 * n);
        }
        QVERIFY(with.final_parameters != without.final_parameters);
        c.powersgd.error_feedback = true;
        c.powersgd.warm_start = false;
        QVERIFY(run_config(c).final_parameters != with.final_parameters);
    }

    void refused_where_it_cannot_apply() {
        RunConfig c = small_config(StrategyKind::dp, 2);
        c.comm_hook = DType::fp16;
        c.precision = Precision::bf16_mixed;
        QVERIFY_THROWS_EXCEPTION(BadInput, validate(c));
        RunConfig z = small_config(StrategyKind::zero2, 2);
        z.comm_hook = DType::fp16;
        QVERIFY_THROWS_EXCEPTION(BadInput, validate(z, {{"comm_hook", "--comm-hook"}}));
        c.precision = Precision::fp32;
        validate(c, {{"comm_hook", "--comm-hook"}});
        RunConfig p = small_config(StrategyKind::dp, 2);
        p.powersgd.rank = 2;
        p.powersgd.start_iter = 1;  // before DDP's buckets settle, with error feedback
        QVERIFY_THROWS_EXCEPTION(BadInput, validate(p));
        p.powersgd.start_iter = 2;
        validate(p);
        p.comm_hook = DType::fp16;
        QVERIFY_THROWS_EXCEPTION(BadInput, validate(p));
        RunConfig z1 = small_config(StrategyKind::zero1, 2);
        z1.powersgd.rank = 2;
        z1.powersgd.start_iter = 2;
        QVERIFY_THROWS_EXCEPTION(BadInput, validate(z1, {{"powersgd_rank", "--powersgd-rank"}}));
    }
};

QTEST_APPLESS_MAIN(TestCommHooks)
#include "test_comm_hooks.moc"
