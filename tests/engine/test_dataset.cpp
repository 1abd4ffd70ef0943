// A run's dataset (pd/dataset.h): files sharded across input pipelines by tf.data's policies,
// batches split across replicas by the input API, epochs that drop their remainder, the
// examples the model really trains on, and a pipeline that runs out before the others: its
// device leaves the loop and its peers' collective times out, naming why.
#include <QtTest>

#include <set>

#include "engine_test_support.h"
#include "pd/dataset.h"
#include "pd/error.h"
#include "pd/metrics.h"
#include "pd/run.h"
#include "pd/scenario.h"
#include "strategies/batch_loader.h"

using namespace pd;
using namespace pd::test;

namespace {

DatasetConfig dataset(std::vector<int> files, int batch, ShardPolicy shard,
                      InputApi api = InputApi::distribute_dataset, bool repeat = true) {
    DatasetConfig d;
    d.file_examples = std::move(files);
    d.batch = batch;
    d.shard = shard;
    d.api = api;
    d.repeat = repeat;
    return d;
}

// Why plan_data refuses, or "" when it accepts.
std::string plan_refusal(const DatasetConfig& d, int replicas, int pipelines) {
    try {
        plan_data(d, replicas, pipelines, "scenario key 'dataset'");
    } catch (const BadInput& e) {
        return e.what();
    }
    return "";
}

RunConfig data_run(int devices, int nodes, const DatasetConfig& d, int steps) {
    RunConfig c = small_config(devices == 1 ? StrategyKind::single : StrategyKind::dp, devices);
    c.cluster.nodes = nodes;
    c.dataset = d;
    c.batch = dataset_global_batch(d, c.data_parallel_replicas());
    c.steps = steps;
    return c;
}

std::string scenario_refusal(const std::string& json) {
    try {
        RunConfig c;
        ConfigSources sources;
        apply_scenario_json(json, "test.json", c, sources);
        validate(c, sources);
    } catch (const BadInput& e) {
        return e.what();
    }
    return "";
}

}  // namespace

class TestDataset : public QObject {
    Q_OBJECT

  private slots:
    void policies_shard_files_and_elements() {
        // 4 files of 10, 2 pipelines.
        const std::vector<int> files{10, 10, 10, 10};
        const DataPlan by_file = plan_data(dataset(files, 4, ShardPolicy::file), 2, 2, "d");
        // Pipeline 0 reads files 0 and 2, pipeline 1 files 1 and 3, each file in order.
        QCOMPARE(by_file.shards[0].size(), std::size_t{20});
        QCOMPARE(by_file.shards[0][0], 0);
        QCOMPARE(by_file.shards[0][10], 20);
        QCOMPARE(by_file.shards[1][0], 10);
        QCOMPARE(by_file.shards[1][19], 39);
        const DataPlan by_data = plan_data(dataset(files, 4, ShardPolicy::data), 2, 2, "d");
        // Every element, every other one kept.
        QCOMPARE(by_data.shards[1].size(), std::size_t{20});
        QCOMPARE(by_data.shards[1][0], 1);
        QCOMPARE(by_data.shards[1][1], 3);
        QCOMPARE(by_data.shards[1][19], 39);
        const DataPlan off = plan_data(dataset(files, 4, ShardPolicy::off), 2, 2, "d");
        QCOMPARE(off.shards[0], off.shards[1]);
        QCOMPARE(off.shards[0].size(), std::size_t{40});
        // auto shards by file: the dataset is read from files.
        const DataPlan automatic = plan_data(dataset(files, 4, ShardPolicy::auto_), 2, 2, "d");
        QCOMPARE(automatic.policy, ShardPolicy::file);
        QCOMPARE(automatic.shards, by_file.shards);
    }

    void fewer_files_than_workers_is_tf_datas_error() {
        // auto (and file) with 2 files on 4 workers: refused, naming the fixes.
        for (ShardPolicy p : {ShardPolicy::auto_, ShardPolicy::file}) {
            const std::string why = plan_refusal(dataset({64, 64}, 16, p), 4, 4);
            QVERIFY2(why.find("InvalidArgumentError") != std::string::npos, why.c_str());
            QVERIFY2(why.find("shard to data") != std::string::npos, why.c_str());
            QVERIFY2(why.find("at least 4 files") != std::string::npos, why.c_str());
            QVERIFY2(why.find("scenario key 'dataset'") != std::string::npos, why.c_str());
        }
        QCOMPARE(plan_refusal(dataset({64, 64}, 16, ShardPolicy::data), 4, 4), std::string());
        QCOMPARE(plan_refusal(dataset({64, 64}, 16, ShardPolicy::off), 4, 4), std::string());
        // One worker (MirroredStrategy on one host): nothing to shard.
        QCOMPARE(plan_refusal(dataset({64}, 16, ShardPolicy::auto_), 4, 1), std::string());
    }

    void input_api_sets_the_per_replica_batch() {
        // distribute_dataset: the batch is global, split across the replicas.
        const DataPlan split = plan_data(dataset({1024}, 128, ShardPolicy::auto_), 4, 1, "d");
        QCOMPARE(split.per_replica_batch, 32);
        QCOMPARE(split.global_batch, 128);
        // from_function: each batch goes whole to one replica.
        const DataPlan whole =
            plan_data(dataset({1024}, 32, ShardPolicy::data, InputApi::from_function), 8, 1, "d");
        QCOMPARE(whole.per_replica_batch, 32);
        QCOMPARE(whole.global_batch, 256);
        QCOMPARE(
            dataset_global_batch(dataset({1}, 32, ShardPolicy::data, InputApi::from_function), 8),
            256);
        // from_function never auto-shards; a global batch must split evenly.
        QVERIFY(plan_refusal(dataset({1024}, 32, ShardPolicy::auto_, InputApi::from_function), 8, 1)
                    .find("never auto-shards") != std::string::npos);
        QVERIFY(plan_refusal(dataset({1024}, 30, ShardPolicy::auto_), 4, 1).find("split evenly") !=
                std::string::npos);
        // A shard too small for one batch.
        QVERIFY(plan_refusal(dataset({16, 16}, 64, ShardPolicy::file), 2, 2)
                    .find("fewer than one batch") != std::string::npos);
    }

    void epochs_drop_the_remainder_and_repeat() {
        // 100 examples, batches of 32: 3 steps an epoch, 4 examples never read.
        const DataPlan plan = plan_data(dataset({100}, 32, ShardPolicy::auto_), 1, 1, "d");
        QCOMPARE(plan.steps_per_epoch(0), 3);
        QCOMPARE(*plan.example(2, 0, 31), 95);
        QCOMPARE(*plan.example(3, 0, 0), 0);  // epoch 2 starts over
        const DataPlan once = plan_data(
            dataset({100}, 32, ShardPolicy::auto_, InputApi::distribute_dataset, false), 1, 1, "d");
        QVERIFY(once.has_batch(0, 2));
        QVERIFY(!once.has_batch(0, 3));
        QVERIFY(!once.example(3, 0, 0).has_value());
    }

    void the_model_trains_on_the_planned_examples() {
        // The loader's rows are the examples the plan assigns, drawn the same way each time.
        RunConfig c = data_run(4, 2, dataset({40, 40}, 16, ShardPolicy::data), 2);
        const ModelShape shape = model_shape(c);
        const SyntheticTask task(shape, c.seed);
        const DataPlan plan = plan_data(c.dataset, 4, 2, "d");
        BatchLoader loader(task, shape);
        loader.read_from(&plan);
        const auto in = static_cast<std::size_t>(shape.input_dim);
        std::vector<float> x(in);
        std::vector<int> label(1);
        for (int step : {0, 1, 5}) {
            const auto batch = loader.load(step, 4, 8);  // replicas 1 and 2, 4 rows each
            for (int row = 0; row < 8; ++row) {
                const int id = *plan.example_at(step, 4 + row);
                task.example(id, x.data(), label.data());
                QCOMPARE(std::vector<float>(batch->x.begin() + row * in,
                                            batch->x.begin() + (row + 1) * in),
                         x);
                QCOMPARE(batch->labels[static_cast<std::size_t>(row)], label[0]);
            }
        }
        // Replica 1 is pipeline 0's second: elements 4..7 of its shard (0, 2, 4, ...).
        QCOMPARE(*plan.example_at(0, 4), 8);
        // Replica 2 is pipeline 1's first: its shard is 1, 3, 5, ...
        QCOMPARE(*plan.example_at(0, 8), 1);
    }

    void a_run_records_and_summarises_its_reads() {
        RunConfig c = data_run(4, 4, dataset({64, 64, 64, 64}, 32, ShardPolicy::data), 3);
        const RunResult r = run_config(c);
        QVERIFY2(r.status == RunStatus::ok, r.error.c_str());
        const auto& data = r.trace.data;
        QVERIFY(data.present);
        QCOMPARE(data.policy, std::string("data"));
        QCOMPARE(data.reads.size(), std::size_t{12});  // 3 steps x 4 devices
        // Device 1 in step 0: examples 1, 5, ... 29 (every 4th from 1).
        const auto& slice = data.reads[1];
        QCOMPARE(slice.device, 1);
        QCOMPARE(slice.runs.size(), std::size_t{1});
        QCOMPARE(slice.runs[0].first, 1);
        QCOMPARE(slice.runs[0].stride, 4);
        QCOMPARE(slice.runs[0].count, 8);
        const DataSummary s = summarize_data(r.trace);
        QCOMPARE(s.duplicate_fraction, 0.0);
        QCOMPARE(s.reads, 96);
        QCOMPARE(s.distinct_read, 96);
        QCOMPARE(s.devices[2].examples_scanned, 256);  // data: every pipeline reads everything
        QCOMPARE(s.devices[2].examples_kept, 64);
        QCOMPARE(s.devices[2].files_opened, 4);
        // Sharding off: every pipeline reads the same batches, every read a duplicate.
        c.dataset.shard = ShardPolicy::off;
        const DataSummary off = summarize_data(run_config(c).trace);
        QCOMPARE(off.duplicate_fraction, 1.0);
        QCOMPARE(off.distinct_read, 24);
        // By file: one file each.
        c.dataset.shard = ShardPolicy::file;
        const DataSummary file = summarize_data(run_config(c).trace);
        QCOMPARE(file.devices[3].files_opened, 1);
        QCOMPARE(file.devices[3].files_read, 1);
        QCOMPARE(file.devices[3].examples_scanned, 64);
    }

    void a_pipeline_that_runs_out_leaves_its_peers_waiting() {
        // Host 3's file holds one batch fewer: at step 3 its device leaves the loop, and the
        // others' gradient all-reduce times out (never hangs), the error saying why.
        RunConfig c = data_run(
            4, 4,
            dataset({64, 64, 64, 48}, 64, ShardPolicy::file, InputApi::distribute_dataset, false),
            5);
        c.collective_timeout_s = 0.5;
        const RunResult r = run_config(c);
        QCOMPARE(r.status, RunStatus::failed);
        QVERIFY(r.timed_out);
        QCOMPARE(r.steps_completed, 3);
        QCOMPARE(r.trace.data.left_at_step, 3);
        QCOMPARE(r.trace.data.left_devices, std::vector<int>{3});
        QVERIFY2(r.error.find("device 3 had no batch") != std::string::npos, r.error.c_str());
        QVERIFY2(r.error.find("timed out after 0.5 s") != std::string::npos, r.error.c_str());
        // Equal files: every pipeline runs out together and the loop just ends.
        c.dataset.file_examples = {64, 64, 64, 64};
        const RunResult even = run_config(c);
        QVERIFY2(even.status == RunStatus::ok, even.error.c_str());
        QVERIFY(!even.timed_out);
        QCOMPARE(even.steps_completed, 4);
        QCOMPARE(even.trace.data.ended_at_step, 4);
        QCOMPARE(even.trace.data.left_at_step, -1);
    }

    void scenario_keys_and_refusals() {
        // The dataset sets the run's batch.
        RunConfig c;
        ConfigSources sources;
        apply_scenario_json(
            R"({"strategy": "dp", "devices": 8, "dataset": {"files": 4, "examples": 1002,
                "batch": 16, "api": "from_function", "shard": "data"}})",
            "t.json", c, sources);
        QCOMPARE(c.batch, 128);
        QCOMPARE(c.dataset.file_examples, (std::vector<int>{251, 251, 250, 250}));
        validate(c, sources);
        // A batch that contradicts the dataset names batch.
        QVERIFY(scenario_refusal(R"({"strategy": "dp", "devices": 2, "batch": 10,
                                     "dataset": {"files": [64], "batch": 16}})")
                    .find("scenario key 'batch'") != std::string::npos);
        QVERIFY(scenario_refusal(R"({"dataset": {"files": [64], "batch": 16, "shuffle": 1}})")
                    .find("not a dataset setting") != std::string::npos);
        QVERIFY(scenario_refusal(R"({"dataset": {"files": 4, "batch": 16}})")
                    .find("needs \"examples\"") != std::string::npos);
        QVERIFY(scenario_refusal(R"({"dataset": {"files": [64], "batch": 16, "shard": "row"}})")
                    .find("unknown shard policy") != std::string::npos);
        QVERIFY(scenario_refusal(R"({"strategy": "pipeline", "devices": 2,
                                     "dataset": {"files": [64], "batch": 16}})")
                    .find("single, dp and zero1-3") != std::string::npos);
        QVERIFY(scenario_refusal(R"({"strategy": "dp", "devices": 2, "accumulate": 2,
                                     "dataset": {"files": [64], "batch": 16}})")
                    .find("accumulate") != std::string::npos);
        // "none" clears it (a comparison run without one).
        apply_scenario_json(R"({"dataset": "none"})", "t.json", c, sources);
        QVERIFY(!c.dataset.enabled());
    }
};

QTEST_GUILESS_MAIN(TestDataset)
#include "test_dataset.moc"
