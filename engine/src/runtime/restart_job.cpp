// A job that fails and restarts, as torchrun's elastic agent runs it: a planned failure
// (RunConfig::failure) kills a device or a node at the start of a step; the run aborts (the
// agent tears down every worker); with restarts left, every worker starts again and the
// script reloads the newest checkpoint, on a replacement node or, elastically, on the nodes
// left. The attempts are merged into one result on one time axis.
#include <algorithm>
#include <filesystem>

#include "pd/error.h"
#include "pd/run.h"
#include "runtime/checkpoint.h"

namespace pd {

namespace {

std::string devices_words(const std::vector<int>& devices) {
    if (devices.size() == 1) return "device " + std::to_string(devices.front());
    return "devices " + std::to_string(devices.front()) + "-" + std::to_string(devices.back());
}

// The newest complete checkpoint under `root`: its step (-1: none).
int newest_checkpoint(const std::string& root) {
    namespace fs = std::filesystem;
    int newest = -1;
    std::error_code ec;
    if (root.empty() || !fs::is_directory(root, ec)) return -1;
    for (const auto& entry : fs::directory_iterator(root, ec)) {
        const std::string name = entry.path().filename().string();
        if (name.rfind("step-", 0) != 0 || !fs::exists(entry.path() / "metadata.json")) continue;
        try {
            newest = std::max(newest, std::stoi(name.substr(5)));
        } catch (...) {
        }
    }
    return newest;
}

// Appends `attempt`'s trace to `into`, starting at `offset_ns`, its steps from `first_step`
// (training) numbered on from `executed` (the steps run before it).
void append_attempt(Trace& into, Trace attempt, std::int64_t offset_ns, int first_step,
                    int executed) {
    auto renumber = [&](int step) { return step < 0 ? step : step - first_step + executed; };
    for (TraceEvent& e : attempt.events) {
        e.start_ns += offset_ns;
        e.end_ns += offset_ns;
        e.step = renumber(e.step);
        into.events.push_back(std::move(e));
    }
    for (auto* samples : {&attempt.memory, &attempt.host_memory, &attempt.nvme_memory}) {
        auto& target = samples == &attempt.memory        ? into.memory
                       : samples == &attempt.host_memory ? into.host_memory
                                                         : into.nvme_memory;
        for (MemorySample m : *samples) {
            m.t_ns += offset_ns;
            target.push_back(m);
        }
    }
    for (CollectiveRecord c : attempt.collectives) {
        c.start_ns += offset_ns;
        c.end_ns += offset_ns;
        c.step = renumber(c.step);
        into.collectives.push_back(std::move(c));
    }
    for (StepRecord r : attempt.steps) {
        r.step = renumber(r.step);
        into.steps.push_back(r);
    }
    for (const auto& c : attempt.checkpoints) into.checkpoints.push_back(c);
    into.resumed_from = attempt.resumed_from;
}

std::int64_t trace_end(const Trace& t) {
    std::int64_t end = 0;
    for (const auto& e : t.events) end = std::max(end, e.end_ns);
    for (const auto& m : t.memory) end = std::max(end, m.t_ns);
    return end;
}

}  // namespace

RunResult Run::execute_job(const std::function<void(const RunProgress&)>& on_progress) {
    const RunConfig& job = config_;
    const FailurePlan& fail = job.failure;
    const int per_node = job.devices / job.cluster.node_count(job.devices);
    std::vector<int> lost;
    if (fail.node >= 0)
        for (int d = fail.node * per_node; d < (fail.node + 1) * per_node; ++d) lost.push_back(d);
    else
        lost.push_back(fail.device);
    const std::string what = fail.node >= 0 ? "node " + std::to_string(fail.node) + " (" +
                                                  devices_words(lost) + ") failed"
                                            : "device " + std::to_string(fail.device) + " failed";

    RunConfig cfg = job;  // each attempt: the job without its failure plan
    cfg.failure = {};
    cfg.max_restarts = 0;
    cfg.min_nodes = 0;
    FaultPlan faults = faults_;
    faults.crash_devices = lost;
    faults.crash_step = fail.step;
    faults.crash_words = what;
    faults.crash_restarts_alone = fail.worker_only;

    RunResult merged;
    int restarts = 0, executed = 0;
    std::int64_t offset = 0;
    int first_step = 0;  // the training step each attempt starts at
    for (;;) {
        Run attempt(cfg);
        attempt.attempt_of_job_ = true;
        attempt.inject_faults(faults);
        attempt.share_run_so_far(share_interval_ms_);
        {
            std::lock_guard lock(ctx_mutex_);
            attempt_ = &attempt;
            if (cancel_requested_.load()) attempt.cancel();
        }
        RunResult r = attempt.execute(on_progress);
        {
            std::lock_guard lock(ctx_mutex_);
            attempt_ = nullptr;
        }
        allocations_made_ += attempt.allocations_made();
        if (restarts == 0)
            merged.trace = std::move(r.trace);
        else
            append_attempt(merged.trace, std::move(r.trace), offset, first_step, executed);
        const int ran =
            r.device_failed ? fail.step + 1 - first_step : r.steps_completed - first_step;
        for (int s = 0; s < ran; ++s) merged.trace.trained_step.push_back(first_step + s);
        executed += ran;
        offset = trace_end(merged.trace);
        merged.status = r.status;
        merged.error = r.error;
        merged.timed_out = r.timed_out;
        merged.device_failed = r.device_failed;
        merged.oom = r.oom;
        merged.ooms = r.ooms;
        merged.steps_completed = r.steps_completed;
        merged.final_parameters = std::move(r.final_parameters);
        merged.final_master_parameters = std::move(r.final_master_parameters);
        if (!r.device_failed || faults.crash_step < 0) break;

        // The failure struck: does the job restart, on how many nodes, from what?
        Trace::Restart restart;
        restart.failed_at = executed - 1;
        restart.why = what;
        const int nodes = cfg.cluster.node_count(cfg.devices);
        if (restarts == job.max_restarts) {
            merged.error += "; max_restarts is " + std::to_string(job.max_restarts) +
                            (job.max_restarts == 0 ? ": the first failure ends the job"
                                                   : " and every restart is used: the job fails");
            break;
        }
        if (fail.node >= 0 && !fail.replaced) {
            const int needed = job.min_nodes > 0 ? job.min_nodes : nodes;
            if (nodes - 1 < needed) {
                merged.error += "; the node is not replaced and " + std::to_string(nodes - 1) +
                                " nodes remain, fewer than the " + std::to_string(needed) +
                                " the job needs (min_nodes): the rendezvous cannot complete";
                break;
            }
            cfg.devices -= per_node;
            cfg.cluster.nodes = nodes - 1;
            cfg.cluster.devices_per_node = 0;
        }
        ++restarts;
        faults = faults_;  // the replacement (or the smaller job) does not fail again
        const int newest = newest_checkpoint(cfg.checkpoint_dir);
        if (newest > 0 && job.checkpoint_local && fail.node >= 0) {
            restart.checkpoint = "the checkpoints were on the nodes' local disks, and node " +
                                 std::to_string(fail.node) + "'s went with it: the job starts over";
            cfg.resume_dir.clear();
            first_step = 0;
        } else if (newest > 0) {
            cfg.resume_dir = checkpoint_step_dir(cfg.checkpoint_dir, newest);
            restart.resumed_from = newest;
            first_step = newest;
        } else {
            restart.checkpoint = "no checkpoint was written yet: the job starts over";
            cfg.resume_dir.clear();
            first_step = 0;
        }
        restart.devices_after = cfg.devices;
        restart.t_ns = offset;
        merged.trace.restarts.push_back(restart);
        // A fresh start writes step directories the failed attempt already wrote: they go, as
        // a job starting over would write them again.
        if (cfg.resume_dir.empty() && !cfg.checkpoint_dir.empty()) {
            std::error_code ec;
            for (const auto& entry : std::filesystem::directory_iterator(cfg.checkpoint_dir, ec))
                std::filesystem::remove_all(entry.path(), ec);
        }
    }
    merged.trace.devices = std::max(merged.trace.devices, cfg.devices);
    // Every device, stream, in time order, as a single run records them.
    std::stable_sort(merged.trace.events.begin(), merged.trace.events.end(),
                     [](const TraceEvent& a, const TraceEvent& b) {
                         if (a.device != b.device) return a.device < b.device;
                         if (a.stream != b.stream) return a.stream < b.stream;
                         return a.start_ns < b.start_ns;
                     });
    auto by_time = [](const MemorySample& a, const MemorySample& b) { return a.t_ns < b.t_ns; };
    std::stable_sort(merged.trace.memory.begin(), merged.trace.memory.end(), by_time);
    std::stable_sort(merged.trace.host_memory.begin(), merged.trace.host_memory.end(), by_time);
    std::stable_sort(merged.trace.nvme_memory.begin(), merged.trace.nvme_memory.end(), by_time);
    if (merged.trace.restarts.empty()) merged.trace.trained_step.clear();
    return merged;
}

}  // namespace pd
