// DDP's compression hooks (comm_hook fp16 / bf16 on dp, fp32): the same buckets and calls as
// without a hook, half the bytes, training close to the uncompressed run; refused where the
// gradients are 16-bit already or the strategy is not DDP.
#include <QtTest>

#include "engine_test_support.h"
#include "pd/error.h"
#include "pd/metrics.h"

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
    }
};

QTEST_APPLESS_MAIN(TestCommHooks)
#include "test_comm_hooks.moc"
