#include "runtime/data_reads.h"

namespace pd {

void describe_data(const DataPlan& plan, Trace::DataReads& out) {
    out.present = true;
    out.policy = std::string(name_of(plan.policy));
    out.api = std::string(name_of(plan.api));
    out.repeat = plan.repeat;
    out.pipelines = plan.pipelines;
    out.replicas_per_pipeline = plan.replicas_per_pipeline;
    out.dataset_batch = plan.dataset_batch;
    out.per_replica_batch = plan.per_replica_batch;
    out.global_batch = plan.global_batch;
    out.file_examples = plan.file_examples;
    for (int p = 0; p < plan.pipelines; ++p) {
        out.shard_examples.push_back(
            static_cast<int>(plan.shards[static_cast<std::size_t>(p)].size()));
        // Sharding by data reads every example and keeps every pipelines-th; by file a
        // pipeline opens its own files only; off reads (and keeps) everything.
        out.scanned_examples.push_back(
            plan.policy == ShardPolicy::data ? plan.examples() : out.shard_examples.back());
        out.steps_per_epoch.push_back(plan.steps_per_epoch(p));
        const int files = static_cast<int>(plan.file_examples.size());
        out.files_opened.push_back(plan.policy == ShardPolicy::file
                                       ? (files - p + plan.pipelines - 1) / plan.pipelines
                                       : files);
    }
}

std::vector<int> devices_without_batch(const DataPlan& plan, int step) {
    std::vector<int> out;
    for (int r = 0; r < plan.replicas; ++r)
        if (!plan.has_batch(plan.pipeline_of_replica(r), step)) out.push_back(r);
    return out;
}

void record_reads(const DataPlan& plan, int step, Trace::DataReads& out) {
    for (int r = 0; r < plan.replicas; ++r) {
        const int p = plan.pipeline_of_replica(r);
        if (!plan.has_batch(p, step)) continue;
        Trace::DataReads::Slice slice{step, r, step / plan.steps_per_epoch(p), {}};
        for (int row = 0; row < plan.per_replica_batch; ++row) {
            const int id = *plan.example(step, r, row);
            auto& runs = slice.runs;
            if (!runs.empty()) {
                auto& last = runs.back();
                if (last.count == 1 && id > last.first) {
                    last.stride = id - last.first;
                    ++last.count;
                    continue;
                }
                if (id == last.first + last.count * last.stride) {
                    ++last.count;
                    continue;
                }
            }
            runs.push_back({id, 1, 1});
        }
        out.reads.push_back(std::move(slice));
    }
}

namespace {

std::string device_list(const std::vector<int>& devices) {
    std::string out = devices.size() == 1 ? "device " : "devices ";
    for (std::size_t i = 0; i < devices.size(); ++i) {
        if (i > 0) out += i + 1 == devices.size() ? " and " : ", ";
        out += std::to_string(devices[i]);
    }
    return out;
}

}  // namespace

std::string left_loop_words(const Trace::DataReads& data) {
    if (data.left_at_step < 0) return {};
    std::vector<int> pipelines;
    for (int d : data.left_devices) {
        const int p = d / data.replicas_per_pipeline;
        if (pipelines.empty() || pipelines.back() != p) pipelines.push_back(p);
    }
    std::string which;
    for (std::size_t i = 0; i < pipelines.size(); ++i) {
        const int p = pipelines[i];
        which += (i ? ", " : "") + std::string("input pipeline ") + std::to_string(p) + " had " +
                 std::to_string(data.steps_per_epoch[static_cast<std::size_t>(p)]) + " batch" +
                 (data.steps_per_epoch[static_cast<std::size_t>(p)] == 1 ? "" : "es");
    }
    return "step " + std::to_string(data.left_at_step + 1) + ": " + device_list(data.left_devices) +
           " had no batch (" + which + ", and the data does not repeat) and left the training " +
           "loop; the other devices went on into the step's collectives, which wait for every "
           "device";
}

}  // namespace pd
