// Every strategy trains the same model to the same numbers as one device, and really learns.
#include <QtTest>

#include "engine_test_support.h"
#include "pd/error.h"

using namespace pd;
using namespace pd::test;

Q_DECLARE_METATYPE(pd::StrategyKind)
Q_DECLARE_METATYPE(pd::OptimizerKind)

class TestStrategies : public QObject {
    Q_OBJECT
  private slots:
    void matches_single_device_data() {
        QTest::addColumn<StrategyKind>("strategy");
        QTest::addColumn<int>("devices");
        QTest::addColumn<OptimizerKind>("optimizer");
        QTest::addColumn<bool>("overlap");
        for (OptimizerKind o : {OptimizerKind::sgd, OptimizerKind::adamw}) {
            const char* on = o == OptimizerKind::sgd ? "sgd" : "adamw";
            QTest::addRow("dp2_%s", on) << StrategyKind::dp << 2 << o << true;
            QTest::addRow("dp4_%s", on) << StrategyKind::dp << 4 << o << true;
            QTest::addRow("dp4_no_overlap_%s", on) << StrategyKind::dp << 4 << o << false;
            QTest::addRow("ps_3_workers_%s", on) << StrategyKind::ps << 4 << o << true;
        }
    }

    void matches_single_device() {
        QFETCH(StrategyKind, strategy);
        QFETCH(int, devices);
        QFETCH(OptimizerKind, optimizer);
        QFETCH(bool, overlap);
        RunConfig reference = small_config(StrategyKind::single, 1);
        reference.optimizer = optimizer;
        const RunResult expected = run_config(reference);
        QCOMPARE(expected.status, RunStatus::ok);

        RunConfig c = small_config(strategy, devices);
        c.optimizer = optimizer;
        c.overlap = overlap;
        const RunResult got = run_config(c);
        QVERIFY2(got.status == RunStatus::ok, got.error.c_str());
        QCOMPARE(got.steps_completed, 5);
        QCOMPARE(got.final_parameters.size(), expected.final_parameters.size());
        const double err = relative_error(got.final_parameters, expected.final_parameters);
        QVERIFY2(err <= 1e-4, qPrintable(QStringLiteral("relative error %1").arg(err)));
        // The parameters moved: a strategy that never updated would match nothing useful.
        QVERIFY(relative_error(got.final_parameters,
                               initial_parameters(
                                   ModelShape{c.input_dim, c.width, c.layers, c.classes}, c.seed)) >
                1e-3);
        for (std::size_t s = 0; s < got.trace.steps.size(); ++s)
            QVERIFY(std::abs(got.trace.steps[s].loss - expected.trace.steps[s].loss) <=
                    1e-4 * std::abs(expected.trace.steps[s].loss));
    }

    // Overlap changes when the all-reduce runs, never what it sums: identical numbers.
    void overlap_on_and_off_agree() {
        RunConfig on = small_config(StrategyKind::dp, 3);
        RunConfig off = on;
        off.overlap = false;
        const RunResult a = run_config(on), b = run_config(off);
        QCOMPARE(a.status, RunStatus::ok);
        QCOMPARE(b.status, RunStatus::ok);
        QCOMPARE(a.final_parameters, b.final_parameters);
    }

    void loss_falls_data() {
        QTest::addColumn<StrategyKind>("strategy");
        QTest::addColumn<int>("devices");
        QTest::addRow("single") << StrategyKind::single << 1;
        QTest::addRow("dp") << StrategyKind::dp << 2;
        QTest::addRow("ps") << StrategyKind::ps << 3;
    }

    void loss_falls() {
        QFETCH(StrategyKind, strategy);
        QFETCH(int, devices);
        RunConfig c = small_config(strategy, devices);
        c.steps = 50;
        const RunResult r = run_config(c);
        QVERIFY2(r.status == RunStatus::ok, r.error.c_str());
        QCOMPARE(r.trace.steps.size(), std::size_t{50});
        QVERIFY2(r.trace.steps.back().loss < r.trace.steps.front().loss,
                 qPrintable(QStringLiteral("loss %1 -> %2")
                                .arg(r.trace.steps.front().loss)
                                .arg(r.trace.steps.back().loss)));
    }

    // What a card shows in its 2-6 steps: the zero-initialised head starts every run at
    // ln(classes), and the loss is at least 10% lower by the last step, at the shapes the
    // bundled cards use (and at the learning rates they set).
    void learns_in_a_cards_few_steps_data() {
        QTest::addColumn<int>("width");
        QTest::addColumn<int>("layers");
        QTest::addColumn<int>("batch");
        QTest::addColumn<int>("steps");
        QTest::addColumn<OptimizerKind>("optimizer");
        QTest::addColumn<double>("lr");
        QTest::addRow("width 128, 4 blocks, 2 steps")
            << 128 << 4 << 32 << 2 << OptimizerKind::adamw << 0.0;
        QTest::addRow("width 256, 8 blocks, lr 1e-3, 2 steps")
            << 256 << 8 << 32 << 2 << OptimizerKind::adamw << 1e-3;
        QTest::addRow("width 256, 8 blocks, lr 1e-3, 3 steps")
            << 256 << 8 << 32 << 3 << OptimizerKind::adamw << 1e-3;
        QTest::addRow("width 32, 2 blocks, 2 steps")
            << 32 << 2 << 32 << 2 << OptimizerKind::adamw << 0.0;
        QTest::addRow("sgd, width 64, 3 steps") << 64 << 2 << 32 << 3 << OptimizerKind::sgd << 0.0;
        QTest::addRow("width 128, 4 blocks, 6 steps")
            << 128 << 4 << 32 << 6 << OptimizerKind::adamw << 0.0;
    }

    void learns_in_a_cards_few_steps() {
        QFETCH(int, width);
        QFETCH(int, layers);
        QFETCH(int, batch);
        QFETCH(int, steps);
        QFETCH(OptimizerKind, optimizer);
        QFETCH(double, lr);
        RunConfig c;
        c.width = width;
        c.layers = layers;
        c.batch = batch;
        c.steps = steps;
        c.optimizer = optimizer;
        c.lr = lr;
        const RunResult r = run_config(c);
        QVERIFY2(r.status == RunStatus::ok, r.error.c_str());
        QCOMPARE(r.trace.steps.size(), std::size_t(steps));
        const double first = r.trace.steps.front().loss, last = r.trace.steps.back().loss;
        QVERIFY2(std::abs(first - std::log(double(c.classes))) < 1e-5,
                 qPrintable(QStringLiteral("step 0 loss %1, ln(classes) %2")
                                .arg(first)
                                .arg(std::log(double(c.classes)))));
        QVERIFY2(last < 0.9 * first,
                 qPrintable(QStringLiteral("loss %1 -> %2").arg(first).arg(last)));
    }

    // AdamW's default learning rate follows the width (muP: 0.128 / width); SGD's is fixed.
    void default_learning_rate_suits_the_width() {
        RunConfig c;
        c.width = 128;
        QCOMPARE(c.effective_lr(), 1e-3);
        c.width = 256;
        QCOMPARE(c.effective_lr(), 5e-4);
        c.width = 32;
        QCOMPARE(c.effective_lr(), 4e-3);
        c.lr = 0.02;
        QCOMPARE(c.effective_lr(), 0.02);
        c.lr = 0;
        c.optimizer = OptimizerKind::sgd;
        QCOMPARE(c.effective_lr(), 0.01);
    }

    void buckets_cover_all_parameters_in_backward_order() {
        const ParamLayout layout = ParamLayout::build(ModelShape{32, 64, 3, 10});
        // Bucket ranges are internal; their effect is visible as all-reduce sizes summing to P.
        RunConfig c = small_config(StrategyKind::dp, 2);
        c.width = 64;
        c.steps = 1;
        const RunResult r = run_config(c);
        QCOMPARE(r.status, RunStatus::ok);
        std::size_t reduced = 0;
        for (const auto& col : r.trace.collectives)
            if (col.device == 0 && col.op == "all_reduce" && col.step == 0) reduced += col.bytes;
        QCOMPARE(reduced, layout.total * sizeof(float));
    }

    // A TF custom loop's tf.reduce_mean under MirroredStrategy: each replica divides its loss
    // by its own slice, the gradients are summed, so they come out `replicas` times too large:
    // with SGD, exactly the correct run at that multiple of the learning rate. Only dp has it.
    void replica_mean_loss_multiplies_the_gradients_by_the_replicas() {
        RunConfig c = small_config(StrategyKind::dp, 4);
        c.optimizer = OptimizerKind::sgd;
        c.lr = 0.003;
        c.clip_grad_norm = 1e6;  // never clips; reports the norm
        c.loss_replica_mean = true;
        const RunResult wrong = run_config(c);
        QVERIFY2(wrong.status == RunStatus::ok, wrong.error.c_str());
        c.loss_replica_mean = false;
        const RunResult right = run_config(c);
        c.lr = 4 * 0.003;
        const RunResult right_4x_lr = run_config(c);
        QVERIFY(right.trace.steps.front().grad_norm > 0);
        QCOMPARE(wrong.trace.steps.front().grad_norm, 4 * right.trace.steps.front().grad_norm);
        QVERIFY(wrong.final_parameters == right_4x_lr.final_parameters);
        QVERIFY(wrong.final_parameters != right.final_parameters);
        RunConfig single = small_config(StrategyKind::single, 1);
        single.loss_replica_mean = true;
        try {
            validate(single, {{"loss_reduction", "--loss-reduction"}});
            QFAIL("accepted on one device");
        } catch (const BadInput& e) {
            QVERIFY2(std::string(e.what()).find("--loss-reduction") != std::string::npos, e.what());
        }
    }
};

QTEST_APPLESS_MAIN(TestStrategies)
#include "test_strategies.moc"
