#include "pd/dataset.h"

#include <algorithm>
#include <numeric>

#include "pd/error.h"

namespace pd {

std::string_view name_of(ShardPolicy p) {
    switch (p) {
        case ShardPolicy::auto_:
            return "auto";
        case ShardPolicy::file:
            return "file";
        case ShardPolicy::data:
            return "data";
        case ShardPolicy::off:
            return "off";
    }
    return "?";
}

std::optional<ShardPolicy> shard_policy_from_name(std::string_view name) {
    for (auto p : {ShardPolicy::auto_, ShardPolicy::file, ShardPolicy::data, ShardPolicy::off})
        if (name == name_of(p)) return p;
    return std::nullopt;
}

std::string_view name_of(InputApi a) {
    return a == InputApi::from_function ? "from_function" : "distribute_dataset";
}

std::optional<InputApi> input_api_from_name(std::string_view name) {
    for (auto a : {InputApi::distribute_dataset, InputApi::from_function})
        if (name == name_of(a)) return a;
    return std::nullopt;
}

int dataset_global_batch(const DatasetConfig& dataset, int replicas) {
    return dataset.api == InputApi::from_function ? dataset.batch * replicas : dataset.batch;
}

int DataPlan::examples() const {
    return std::accumulate(file_examples.begin(), file_examples.end(), 0);
}

int DataPlan::file_of(int example) const {
    const auto it = std::upper_bound(file_first.begin(), file_first.end(), example);
    return static_cast<int>(it - file_first.begin()) - 1;
}

int DataPlan::steps_per_epoch(int pipeline) const {
    return static_cast<int>(shards[static_cast<std::size_t>(pipeline)].size()) / pipeline_batch();
}

bool DataPlan::has_batch(int pipeline, int step) const {
    return repeat || step < steps_per_epoch(pipeline);
}

std::optional<int> DataPlan::example(int step, int replica, int row) const {
    const int p = pipeline_of_replica(replica);
    if (!has_batch(p, step)) return std::nullopt;
    const int k = step % steps_per_epoch(p);  // the batch within its epoch
    const int local = replica - p * replicas_per_pipeline;
    const std::size_t at = static_cast<std::size_t>(k) * pipeline_batch() +
                           static_cast<std::size_t>(local) * per_replica_batch + row;
    return shards[static_cast<std::size_t>(p)][at];
}

std::optional<int> DataPlan::example_at(int step, int global_row) const {
    return example(step, global_row / per_replica_batch, global_row % per_replica_batch);
}

DataPlan plan_data(const DatasetConfig& dataset, int replicas, int pipelines,
                   const std::string& where) {
    auto fail = [&](const std::string& why) { throw BadInput(where, why, __FILE__, __LINE__); };
    if (dataset.file_examples.empty()) fail("needs at least one file");
    for (int n : dataset.file_examples)
        if (n < 1) fail("every file must hold at least 1 example");
    if (dataset.batch < 1) fail("batch (what dataset.batch() is given) must be 1 or more");
    if (pipelines < 1 || replicas < 1 || replicas % pipelines != 0)
        fail("needs the replicas (" + std::to_string(replicas) +
             ") split evenly over the input pipelines, one per node (" + std::to_string(pipelines) +
             ")");
    DataPlan plan;
    plan.api = dataset.api;
    plan.repeat = dataset.repeat;
    plan.pipelines = pipelines;
    plan.replicas = replicas;
    plan.replicas_per_pipeline = replicas / pipelines;
    plan.dataset_batch = dataset.batch;
    plan.global_batch = dataset_global_batch(dataset, replicas);
    if (dataset.api == InputApi::from_function) {
        if (dataset.shard == ShardPolicy::auto_)
            fail(
                "shard 'auto' does not apply to from_function: distribute_datasets_from_function "
                "never auto-shards, so say what dataset_fn does itself (file, data or off)");
        plan.per_replica_batch = dataset.batch;
    } else {
        if (dataset.batch % replicas != 0)
            fail("batch " + std::to_string(dataset.batch) +
                 " is the global batch under distribute_dataset and must split evenly across " +
                 std::to_string(replicas) + " replicas");
        plan.per_replica_batch = dataset.batch / replicas;
    }
    plan.file_examples = dataset.file_examples;
    const int files = static_cast<int>(dataset.file_examples.size());
    for (int f = 0, first = 0; f < files; first += dataset.file_examples[f++])
        plan.file_first.push_back(first);

    plan.policy = dataset.shard == ShardPolicy::auto_ ? ShardPolicy::file : dataset.shard;
    if (plan.policy == ShardPolicy::file && pipelines > 1 && files < pipelines)
        fail(std::to_string(files) + " file" + (files == 1 ? "" : "s") + " for " +
             std::to_string(pipelines) + " input pipelines (workers): sharding by " +
             (dataset.shard == ShardPolicy::auto_ ? "file (what auto does with files)" : "file") +
             " needs at least one file per worker, tf.data's InvalidArgumentError. Set shard "
             "to data, or split the data into at least " +
             std::to_string(pipelines) + " files");
    plan.shards.resize(static_cast<std::size_t>(pipelines));
    const int total = plan.examples();
    for (int p = 0; p < pipelines; ++p) {
        auto& shard = plan.shards[static_cast<std::size_t>(p)];
        switch (plan.policy) {
            case ShardPolicy::file:  // files p, p + pipelines, ... read one after another
                for (int f = p; f < files; f += pipelines)
                    for (int i = 0; i < dataset.file_examples[f]; ++i)
                        shard.push_back(plan.file_first[f] + i);
                break;
            case ShardPolicy::data:  // reads everything, keeps every pipelines-th element
                for (int e = p; e < total; e += pipelines) shard.push_back(e);
                break;
            case ShardPolicy::off:
            case ShardPolicy::auto_:
                for (int e = 0; e < total; ++e) shard.push_back(e);
                break;
        }
        if (static_cast<int>(shard.size()) < plan.pipeline_batch())
            fail("input pipeline " + std::to_string(p) + "'s shard holds " +
                 std::to_string(shard.size()) + " examples, fewer than one batch of " +
                 std::to_string(plan.pipeline_batch()) + " (" +
                 std::to_string(plan.per_replica_batch) + " for each of its " +
                 std::to_string(plan.replicas_per_pipeline) + " replicas)");
    }
    return plan;
}

}  // namespace pd
