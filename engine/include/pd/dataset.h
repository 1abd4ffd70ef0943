// A run's input data as a finite dataset of files and examples (scenario key `dataset`), read
// the way tf.distribute reads it: one input pipeline per host (node), each taking its share by
// an auto-shard policy, batched and split across the host's replicas. Without a dataset a run
// draws fresh synthetic samples every step (SyntheticTask); with one, example e is always the
// same sample, so epochs repeat data and a policy that duplicates or drops it shows.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace pd {

// tf.data.experimental.AutoShardPolicy. auto_ shards by file when the dataset is read from
// files (ours always is), and fails when there are fewer files than input pipelines.
enum class ShardPolicy { auto_, file, data, off };
std::string_view name_of(ShardPolicy p);
std::optional<ShardPolicy> shard_policy_from_name(std::string_view name);
inline constexpr const char* kShardPolicyNames = "auto, file, data, off";

// How the training loop hands the dataset to the strategy.
// distribute_dataset (strategy.experimental_distribute_dataset, and Keras' fit): the dataset
// is batched with the GLOBAL batch, auto-sharded across pipelines, and each batch is split
// across the replicas (per replica = batch / replicas).
// from_function (strategy.distribute_datasets_from_function): each pipeline's dataset_fn
// shards and batches itself, and each batch goes whole to ONE replica (per replica = batch);
// no auto-sharding, so `shard` names what dataset_fn does (file, data or off).
enum class InputApi { distribute_dataset, from_function };
std::string_view name_of(InputApi a);
std::optional<InputApi> input_api_from_name(std::string_view name);
inline constexpr const char* kInputApiNames = "distribute_dataset, from_function";

struct DatasetConfig {
    std::vector<int> file_examples;  // examples in each file; empty: no dataset
    ShardPolicy shard = ShardPolicy::auto_;
    InputApi api = InputApi::distribute_dataset;
    int batch = 0;  // the value given to dataset.batch()
    // Each pipeline's data repeats epoch after epoch (dataset.repeat()); false: one pass, and
    // a pipeline with no batch left leaves the training loop.
    bool repeat = true;
    bool enabled() const { return !file_examples.empty(); }
};

// What each pipeline reads, resolved for a number of replicas and pipelines. Every batch drops
// its remainder (drop_remainder=True: static shapes, as TPUs and jit need): a pipeline's
// epoch is floor(shard / its batch) steps, and the examples past the last full batch are not
// read that epoch.
struct DataPlan {
    ShardPolicy policy = ShardPolicy::auto_;  // as applied: never auto_
    InputApi api = InputApi::distribute_dataset;
    bool repeat = true;
    int pipelines = 1;
    int replicas = 1;
    int replicas_per_pipeline = 1;
    int per_replica_batch = 0;
    int global_batch = 0;
    int dataset_batch = 0;        // what dataset.batch() was given
    std::vector<int> file_first;  // each file's first example id (ids run on across files)
    std::vector<int> file_examples;
    std::vector<std::vector<int>> shards;  // per pipeline: its example ids, in reading order

    int examples() const;
    int file_of(int example) const;
    int pipeline_of_replica(int replica) const { return replica / replicas_per_pipeline; }
    // Examples one pipeline's batch holds: per replica x its replicas.
    int pipeline_batch() const { return per_replica_batch * replicas_per_pipeline; }
    int steps_per_epoch(int pipeline) const;
    // Whether the pipeline has a batch for `step` (always, when the data repeats).
    bool has_batch(int pipeline, int step) const;
    // The example at row `row` of replica `replica`'s slice of `step`; none past the data.
    std::optional<int> example(int step, int replica, int row) const;
    // The global batch's row `global_row` (replica-major: replica r holds rows r x per
    // replica ...): the example there.
    std::optional<int> example_at(int step, int global_row) const;
};

// Resolves `dataset` for `replicas` replicas fed by `pipelines` input pipelines. Throws
// BadInput naming `where` (e.g. "scenario key 'dataset'") and what to change: fewer files than
// pipelines under auto or file (tf.data's InvalidArgumentError), a global batch that does not
// split across the replicas, a shard too small for one batch.
DataPlan plan_data(const DatasetConfig& dataset, int replicas, int pipelines,
                   const std::string& where);

// The global batch a dataset makes: batch under distribute_dataset, batch x replicas under
// from_function.
int dataset_global_batch(const DatasetConfig& dataset, int replicas);

}  // namespace pd
