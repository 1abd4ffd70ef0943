// Running a training job: build devices and streams for a config, run its steps, and return
// the trace, the losses and the final parameters. A run can be cancelled from another thread.
#pragma once

#include <atomic>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "pd/error.h"
#include "pd/fault_plan.h"
#include "pd/run_config.h"
#include "pd/trace.h"

namespace pd {

struct LoadedCheckpoint;

class RunContext;

enum class RunStatus { ok, out_of_memory, cancelled, failed };

// Why `backend` cannot run on this machine (no CUDA in this build, no GPU or driver), or an
// empty string when it can.
std::string backend_unavailable_reason(BackendKind backend);
std::string_view name_of(RunStatus s);

struct RunResult {
    RunStatus status = RunStatus::ok;
    std::string error;  // empty on success; otherwise what went wrong, and where
    // Failed because a collective timed out waiting for a peer that never came.
    bool timed_out = false;
    // Failed because a device or node failed (an injected failure, RunConfig::failure).
    bool device_failed = false;
    // The run's out-of-memory error: the lowest device that ran out (the same one each run).
    std::optional<OomInfo> oom;
    // Every device that ran out, lowest first (oom is the first): in data parallelism each
    // replica holds the same bytes, so all of them overflow at the same allocation.
    std::vector<OomInfo> ooms;
    Trace trace;                          // everything recorded, also when the run stopped early
    std::vector<float> final_parameters;  // empty unless the run completed
    // bf16-mixed: the optimizer's fp32 master weights at the end, in the same layout (the
    // parameters above are their bf16 rounding); empty otherwise.
    std::vector<float> final_master_parameters;
    int steps_completed = 0;
    // A look at a run that is still going (RunProgress::so_far): the steps so far, no final
    // parameters, and status ok until the run says otherwise.
    bool partial = false;
};

struct RunProgress {
    int steps_done = 0;
    int steps_total = 0;
    double loss = 0.0;
    // "setup"; "training" (once with steps_done 0 when set-up ends, then after each step);
    // "done"
    std::string phase;
    // Only when asked for (Run::share_run_so_far), on some "training" calls: what the run
    // recorded up to this step, for a viewer to draw while the rest runs.
    std::shared_ptr<const RunResult> so_far;
};

class Run {
  public:
    // Validates the config (throws BadInput).
    explicit Run(RunConfig config);
    ~Run();
    Run(const Run&) = delete;
    Run& operator=(const Run&) = delete;

    const RunConfig& config() const { return config_; }
    // Runs to the end (or until cancelled / out of memory / failed). Call once.
    RunResult execute(const std::function<void(const RunProgress&)>& on_progress = {});
    // Thread-safe; the run stops within a bounded time with status `cancelled`.
    void cancel();
    // Progress calls carry a copy of the run so far (RunProgress::so_far) after its first
    // step, then after any step that ends at least `interval_ms` after the last copy, so a
    // viewer can draw the first step while the others run. CPU backend with tracing only (a
    // GPU's times are queue marks until the run ends). Call before execute.
    void share_run_so_far(int interval_ms) { share_interval_ms_ = interval_ms; }

    // Reliability tests: faults this run suffers (set before execute), and how many
    // allocations the last execute made (to sweep every point a failure can strike).
    void inject_faults(FaultPlan plan) { faults_ = std::move(plan); }
    std::size_t allocations_made() const { return allocations_made_; }

  private:
    // A job with a planned failure: attempts run one after the other, each restart from the
    // newest checkpoint, merged into one result (engine/src/runtime/restart_job.cpp).
    RunResult execute_job(const std::function<void(const RunProgress&)>& on_progress);

    RunConfig config_;
    bool attempt_of_job_ = false;  // an attempt execute_job runs (it fails as planned)
    Run* attempt_ = nullptr;       // execute_job's running attempt (under ctx_mutex_)
    std::atomic<bool> cancel_requested_{false};
    std::mutex ctx_mutex_;
    RunContext* ctx_ = nullptr;  // live while execute() runs
    FaultPlan faults_;
    int share_interval_ms_ = -1;  // < 0: progress carries no copies
    std::size_t allocations_made_ = 0;
    // resume_dir's checkpoint, read and checked when the run is made (resume_from's: after its
    // writer ran, at the start of execute).
    std::shared_ptr<const LoadedCheckpoint> resume_;
    // resume_from: the run that writes the checkpoint this one resumes from.
    std::unique_ptr<RunConfig> writer_;
    // Checkpoint directories this run made for itself (no checkpoint_dir given, resume_from),
    // removed with it.
    std::vector<std::string> temporary_dirs_;
};

}  // namespace pd
