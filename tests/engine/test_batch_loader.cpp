// The run's data loader: a prefetched batch is the batch a fresh draw gives, the next step's
// slices are the ones this step asked for, and what nobody asked for is dropped.
#include <QtTest>

#include "pd/model.h"
#include "pd/run_config.h"
#include "strategies/batch_loader.h"

using namespace pd;

class TestBatchLoader : public QObject {
    Q_OBJECT

    static HostBatch fresh(const SyntheticTask& task, const ModelShape& shape, int step, int first,
                           int rows) {
        HostBatch b;
        b.rows = rows;
        const auto tokens = static_cast<std::size_t>(shape.tokens(rows));
        b.x.resize(tokens * static_cast<std::size_t>(shape.input_dim));
        b.labels.resize(tokens);
        task.batch(step, first, rows, b.x.data(), b.labels.data());
        return b;
    }

  private slots:
    void prefetched_batches_are_the_next_steps_slices() {
        QFETCH(bool, transformer);
        RunConfig config;
        config.model = transformer ? ModelKind::transformer : ModelKind::mlp;
        config.heads = 2;
        config.seq_len = 8;
        const ModelShape shape = model_shape(config);
        const SyntheticTask task(shape, config.seed);
        BatchLoader loader(task, shape);

        // Step 0: two slices, drawn now.
        loader.load(0, 0, 4);
        loader.load(0, 4, 4);
        QCOMPARE(loader.prefetched(), std::size_t{0});
        loader.prefetch_after(0);
        QCOMPARE(loader.prefetched(), std::size_t{2});

        // Step 1 asks for one of them: the prefetched copy, equal to a fresh draw.
        const auto taken = loader.load(1, 4, 4);
        QCOMPARE(loader.prefetched(), std::size_t{1});
        const HostBatch expected = fresh(task, shape, 1, 4, 4);
        QCOMPARE(taken->rows, 4);
        QVERIFY(taken->x == expected.x);
        QVERIFY(taken->labels == expected.labels);
        QVERIFY(expected.x != fresh(task, shape, 0, 4, 4).x);  // steps differ

        // The slice step 1 never asked for is dropped; step 2 gets what step 1 asked for.
        loader.prefetch_after(1);
        QCOMPARE(loader.prefetched(), std::size_t{1});
        const auto next = loader.load(2, 4, 4);
        QVERIFY(next->x == fresh(task, shape, 2, 4, 4).x);
        QCOMPARE(loader.prefetched(), std::size_t{0});
        // A slice asked for again in the same step is drawn again, the same numbers.
        QVERIFY(loader.load(2, 4, 4)->x == next->x);
    }
    void prefetched_batches_are_the_next_steps_slices_data() {
        QTest::addColumn<bool>("transformer");
        QTest::newRow("mlp") << false;
        QTest::newRow("transformer sequences") << true;
    }
};

QTEST_APPLESS_MAIN(TestBatchLoader)
#include "test_batch_loader.moc"
