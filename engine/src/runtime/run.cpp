#include "pd/run.h"

#include <algorithm>
#include <chrono>
#include <exception>
#include <filesystem>
#include <new>
#include <optional>
#include <thread>

#include <unistd.h>

#include "backend/device_backend.h"
#include "pd/memory_plan.h"
#include "pd/run_context.h"
#include "pd/scenario.h"
#include "runtime/checkpoint.h"
#include "runtime/data_reads.h"
#include "strategies/strategy.h"

namespace pd {

std::string_view name_of(RunStatus s) {
    switch (s) {
        case RunStatus::ok:
            return "ok";
        case RunStatus::out_of_memory:
            return "out_of_memory";
        case RunStatus::cancelled:
            return "cancelled";
        case RunStatus::failed:
            return "failed";
    }
    return "?";
}

namespace {

// A new directory for checkpoints nobody asked to keep.
std::string make_temporary_dir() {
    static std::atomic<unsigned> counter{0};
    const auto dir = std::filesystem::temp_directory_path() /
                     ("paralleldeck-checkpoints-" + std::to_string(::getpid()) + "-" +
                      std::to_string(counter.fetch_add(1)));
    std::error_code ec;
    std::filesystem::remove_all(dir, ec);
    std::filesystem::create_directories(dir, ec);
    if (ec)
        throw Error("cannot create a temporary checkpoint directory '" + dir.string() +
                        "': " + ec.message(),
                    __FILE__, __LINE__);
    return dir.string();
}

}  // namespace

Run::Run(RunConfig config) : config_(std::move(config)) {
    validate(config_);
    if (config_.checkpoint_every > 0 && config_.checkpoint_dir.empty()) {
        config_.checkpoint_dir = make_temporary_dir();
        temporary_dirs_.push_back(config_.checkpoint_dir);
    }
    if (config_.resume_from_step > 0) {
        // The job as the scenario's resume_from changes it, run first to write the checkpoint.
        writer_ = std::make_unique<RunConfig>(config_);
        RunConfig& w = *writer_;
        ConfigSources sources;
        apply_scenario_json(config_.resume_from, "resume_from", w, sources);
        w.steps = config_.resume_from_step;
        w.resume_from_step = 0;
        w.resume_from.clear();
        w.checkpoint_every = w.steps;
        w.checkpoint_dir = make_temporary_dir();
        temporary_dirs_.push_back(w.checkpoint_dir);
        validate(w, sources);
    }
    if (!config_.resume_dir.empty()) {
        LoadedCheckpoint loaded = read_checkpoint(config_.resume_dir, config_, "--resume");
        if (loaded.step >= config_.steps)
            throw BadInput("--resume",
                           "'" + loaded.dir + "' was written after step " +
                               std::to_string(loaded.step) + " and this run has " +
                               std::to_string(config_.steps) +
                               " steps: nothing is left to run (raise --steps)",
                           __FILE__, __LINE__);
        resume_ = std::make_shared<const LoadedCheckpoint>(std::move(loaded));
    }
    check_checkpoint_targets(config_, resume_ ? resume_->step : 0, "--checkpoint-dir");
}

Run::~Run() {
    for (const std::string& dir : temporary_dirs_) {
        std::error_code ec;
        std::filesystem::remove_all(dir, ec);
    }
}

void Run::cancel() {
    cancel_requested_.store(true);
    std::lock_guard lock(ctx_mutex_);
    if (ctx_) ctx_->abort(std::make_exception_ptr(Cancelled("run cancelled", __FILE__, __LINE__)));
    if (attempt_) attempt_->cancel();
}

namespace {

// After `step` steps, every device writes what it owns on its host stream (timed as a write to
// local NVMe at nvme_write_gbps); the step directory appears once all are written.
void write_checkpoint(RunEnvironment& env, Strategy& strategy, int step, Trace& trace) {
    const RunConfig& c = env.config;
    const std::string staging = checkpoint_staging_dir(c.checkpoint_dir, step);
    std::error_code ec;
    std::filesystem::remove_all(staging, ec);
    std::filesystem::create_directories(staging, ec);
    if (ec)
        throw Error("cannot create checkpoint directory '" + staging + "': " + ec.message(),
                    __FILE__, __LINE__);
    const int moments = env.optimizer.moments();
    std::vector<std::vector<StateSlice>> mine(env.devices.size());
    for (const StateSlice& s : slices_to_write(strategy.state_slices()))
        mine[static_cast<std::size_t>(s.device)].push_back(s);
    std::vector<CheckpointFile> files(env.devices.size());
    for (std::size_t d = 0; d < env.devices.size(); ++d) {
        if (mine[d].empty()) continue;
        std::size_t bytes = 0;
        for (const StateSlice& s : mine[d])
            bytes += s.count * sizeof(float) * (1 + static_cast<std::size_t>(moments));
        const std::string name = "device-" + std::to_string(d) + ".bin";
        trace.checkpoints.push_back({step, static_cast<int>(d), bytes});
        TraceEvent ev;
        ev.kind = EventKind::copy;
        ev.label = "checkpoint after step " + std::to_string(step) + ": " + name;
        ev.step = step - 1;
        ev.bytes = bytes;
        // After the step's own work on this device, whose values it saves.
        Device& dev = *env.devices[d];
        dev.host().wait(dev.compute().record(), step - 1);
        dev.host().wait(dev.comm().record(), step - 1);
        dev.host().launch(ev, [&, d, bytes, name] {
            Stream& s = *Stream::current();
            const std::int64_t start = s.now_ns();
            files[d] = write_checkpoint_file((std::filesystem::path(staging) / name).string(),
                                             mine[d], moments);
            s.advance_to(start + static_cast<std::int64_t>(c.nvme_write.transfer_ns(bytes)));
        });
        // A blocking save (dcp.save): the next step starts once the file is written.
        dev.compute().wait(dev.host().record(), step);
        dev.comm().wait(dev.host().record(), step);
    }
    env.synchronize_all();
    if (env.ctx.aborted()) return;
    std::vector<CheckpointFile> written;
    for (CheckpointFile& f : files)
        if (!f.file.empty()) written.push_back(std::move(f));
    commit_checkpoint(c.checkpoint_dir, step, c, written);
}

// resume_dir's optimizer moments into every copy of the state the strategy holds (its
// parameters came from the checkpoint through the initial values).
void restore_moments(Strategy& strategy, const LoadedCheckpoint& loaded) {
    for (const StateSlice& s : strategy.state_slices())
        for (std::size_t j = 0; j < loaded.moments.size(); ++j)
            std::copy_n(loaded.moments[j].data() + s.begin, s.count, s.moments + j * s.stride);
}

// What the devices recorded, gathered into `trace`. `Gather::take` empties the streams (the
// run's end); `Gather::copy` leaves them as they are (a look while the run goes on).
enum class Gather { take, copy };

void collect_trace(RunEnvironment& env, Trace& trace, Gather gather = Gather::take) {
    const bool take = gather == Gather::take;
    trace.clock = env.ctx.clock();
    trace.intra_op_threads =
        resolve_intra_op_threads(env.config, env.ctx.clock(), std::thread::hardware_concurrency());
    trace.link = env.config.link;
    trace.cluster = env.config.cluster;
    trace.devices = env.config.devices;
    trace.backend = env.config.backend;
    for (auto& d : env.devices) {
        trace.capacity_bytes.push_back(d->memory().capacity());
        if (env.config.offloads()) trace.host_capacity_bytes.push_back(d->host_memory().capacity());
        if (env.config.uses_nvme())
            trace.nvme_capacity_bytes.push_back(d->nvme_memory().capacity());
        trace.peak_reserved_bytes.push_back(d->memory().peak_reserved());
        trace.device_names.push_back("device " + std::to_string(d->id()) + " (" +
                                     d->backend().name() + ")");
        if (const auto gpu = d->backend().physical_memory()) trace.gpu_memory_bytes.push_back(*gpu);
        std::vector<TraceEvent> events;
        std::vector<CollectiveRecord> collectives;
        for (StreamKind kind : {StreamKind::compute, StreamKind::comm, StreamKind::host}) {
            Stream& stream = d->stream(kind);
            auto stream_events = take ? stream.take_events() : stream.events_so_far();
            events.insert(events.end(), std::make_move_iterator(stream_events.begin()),
                          std::make_move_iterator(stream_events.end()));
            auto stream_collectives =
                take ? stream.take_collectives() : stream.collectives_so_far();
            collectives.insert(collectives.end(), stream_collectives.begin(),
                               stream_collectives.end());
        }
        auto samples = take ? d->memory().take_samples() : d->memory().samples_so_far();
        // A GPU's times are marks in its queues until now.
        d->backend().resolve_times(events, collectives, samples);
        std::stable_sort(
            events.begin(), events.end(), [](const TraceEvent& a, const TraceEvent& b) {
                return a.stream < b.stream || (a.stream == b.stream && a.start_ns < b.start_ns);
            });
        trace.events.insert(trace.events.end(), std::make_move_iterator(events.begin()),
                            std::make_move_iterator(events.end()));
        trace.collectives.insert(trace.collectives.end(), collectives.begin(), collectives.end());
        trace.memory.insert(trace.memory.end(), samples.begin(), samples.end());
        auto host = take ? d->host_memory().take_samples() : d->host_memory().samples_so_far();
        trace.host_memory.insert(trace.host_memory.end(), host.begin(), host.end());
        auto nvme = take ? d->nvme_memory().take_samples() : d->nvme_memory().samples_so_far();
        trace.nvme_memory.insert(trace.nvme_memory.end(), nvme.begin(), nvme.end());
    }
    const auto by_time = [](const MemorySample& a, const MemorySample& b) {
        return a.t_ns < b.t_ns;
    };
    std::stable_sort(trace.memory.begin(), trace.memory.end(), by_time);
    std::stable_sort(trace.host_memory.begin(), trace.host_memory.end(), by_time);
    std::stable_sort(trace.nvme_memory.begin(), trace.nvme_memory.end(), by_time);
    if (!env.routing.empty()) {
        ExpertRouting& r = trace.routing;
        r.experts = env.shape.experts;
        r.top_k = env.shape.top_k;
        r.capacity = env.shape.expert_capacity();
        r.capacity_factor = env.shape.capacity_factor;
        r.tokens_per_expert.assign(static_cast<std::size_t>(r.experts), 0);
        for (const auto& counters : env.routing) {
            for (std::size_t e = 0; e < r.tokens_per_expert.size(); ++e)
                r.tokens_per_expert[e] += counters->tokens_per_expert[e];
            r.assignments += counters->assignments;
            r.dropped += counters->dropped;
        }
    }
}

// The step's load-balancing loss: each device summed it over its sequences and MoE layers;
// the objective adds its mean over the batch's sequences. Reset for the next step.
double take_aux_loss(RunEnvironment& env) {
    double sum = 0.0;
    for (auto& counters : env.routing) {
        sum += counters->aux.read();
        counters->aux.zero();
    }
    return sum / env.config.batch;
}

// The host counts as able to progress while it enqueues work (RunContext::work_began):
// a device that ran out of memory before the rest of the step is queued must not end the
// run before the other devices have their share of it.
struct HostEnqueues {
    explicit HostEnqueues(RunContext& c) : ctx(c) { ctx.work_began(); }
    ~HostEnqueues() { ctx.work_ended(); }
    HostEnqueues(const HostEnqueues&) = delete;
    HostEnqueues& operator=(const HostEnqueues&) = delete;
    RunContext& ctx;
};

void classify_failure(RunContext& ctx, RunResult& result) {
    // Every device that ran out, lowest first; the run's error names the lowest.
    for (const auto& e : ctx.out_of_memory_errors()) {
        try {
            std::rethrow_exception(e);
        } catch (const OutOfMemory& oom) {
            result.ooms.push_back(oom.info());
        } catch (...) {
        }
    }
    const auto error = ctx.first_error();
    try {
        std::rethrow_exception(error);
    } catch (const OutOfMemory& e) {
        result.status = RunStatus::out_of_memory;
        result.oom = e.info();
        if (result.ooms.empty()) result.ooms.push_back(e.info());  // raised on the host
        result.error = e.what();  // names device, category and sizes; where it was raised is noise
    } catch (const Cancelled& e) {
        result.status = RunStatus::cancelled;
        result.error = e.what();
    } catch (const std::bad_alloc&) {
        // The host's memory, not a device's: the estimate before the run (memory_plan.h) is a
        // lower bound, and the machine's other work can take what it saw available.
        result.status = RunStatus::out_of_memory;
        result.error = "the host ran out of memory during the run (an allocation failed)";
    } catch (const DeviceFailure& e) {
        result.status = RunStatus::failed;
        result.device_failed = true;
        result.error = e.what();
    } catch (const CollectiveTimeout& e) {
        result.status = RunStatus::failed;
        result.timed_out = true;
        result.error = e.what();
    } catch (const Error& e) {
        result.status = RunStatus::failed;
        result.error = std::string(e.what()) + " (" + e.where() + ")";
    } catch (const std::exception& e) {
        result.status = RunStatus::failed;
        result.error = e.what();
    } catch (...) {
        result.status = RunStatus::failed;
        result.error = "unknown error";
    }
    // Devices that ran out after another failure are its consequences, not the run's error.
    if (result.status != RunStatus::out_of_memory) result.ooms.clear();
}

}  // namespace

RunResult Run::execute(const std::function<void(const RunProgress&)>& on_progress) {
    if (config_.failure.enabled() && !attempt_of_job_) return execute_job(on_progress);
    if (writer_ && !resume_) {
        // resume_from: the writer's run first; a failure of it is this run's.
        Run writer(*writer_);
        const RunResult written = writer.execute();
        if (written.status != RunStatus::ok) {
            RunResult failed;
            failed.status = written.status;
            failed.error =
                "the run that writes the checkpoint to resume from (resume_from) "
                "failed: " +
                written.error;
            return failed;
        }
        resume_ = std::make_shared<const LoadedCheckpoint>(
            read_checkpoint(writer_->checkpoint_dir, config_, "resume_from"));
    }
    const ClockMode clock = resolve_clock(config_, std::thread::hardware_concurrency());
    RunContext ctx(clock, config_.link, config_.trace_enabled, config_.collective_timeout_s);
    ctx.set_faults(faults_);
    ctx.set_cluster(Topology(config_.cluster, config_.link, config_.devices),
                    config_.allreduce_algorithm);
    ctx.set_straggler(config_.straggler);
    {
        std::lock_guard lock(ctx_mutex_);
        ctx_ = &ctx;
        if (cancel_requested_.load())
            ctx.abort(std::make_exception_ptr(Cancelled("run cancelled", __FILE__, __LINE__)));
    }
    auto report = [&](int done, double loss, const char* phase,
                      std::shared_ptr<const RunResult> so_far = {}) {
        if (on_progress) on_progress(RunProgress{done, config_.steps, loss, phase, so_far});
    };
    const bool share = on_progress && share_interval_ms_ >= 0 &&
                       config_.backend == BackendKind::cpu && config_.trace_enabled;
    std::optional<std::chrono::steady_clock::time_point> last_share;

    RunResult result;
    // Refused before anything is allocated: the initial weights and (on the CPU backend) the
    // devices' memory are the host's.
    if (const std::string why = host_memory_shortage(config_); !why.empty()) {
        {
            std::lock_guard lock(ctx_mutex_);
            ctx_ = nullptr;
        }
        result.status = RunStatus::out_of_memory;
        result.error = why;
        try {
            report(0, 0.0, "done");
        } catch (...) {
        }
        return result;
    }
    try {
        RunEnvironment env(config_, ctx);
        std::unique_ptr<Strategy> strategy = make_strategy(env);
        // Resuming: the checkpoint's parameters are where every strategy starts from.
        if (resume_) {
            env.initial = resume_->params;
            result.trace.resumed_from = {resume_->step, resume_->strategy, resume_->devices};
        }
        const int first_step = resume_ ? resume_->step : 0;
        // Whatever happens, no stream may still run the strategy's work when it is destroyed.
        struct DrainOnExit {
            RunEnvironment& env;
            ~DrainOnExit() {
                if (std::uncaught_exceptions() > 0)
                    env.ctx.abort(std::make_exception_ptr(
                        Error("the run stopped on a host-side error", __FILE__, __LINE__)));
                env.synchronize_all();
            }
        } drain{env};
        try {
            report(0, 0.0, "setup");
            {
                const HostEnqueues enqueuing(ctx);
                strategy->enqueue_setup();
            }
            env.synchronize_all();
            if (resume_ && !ctx.aborted()) restore_moments(*strategy, *resume_);
            // Set-up is over: a long first step reads as training, not as set-up.
            if (!ctx.aborted()) report(0, 0.0, "training");
            if (env.data) describe_data(*env.data, result.trace.data);
            for (int step = first_step; step < config_.steps && !ctx.aborted(); ++step) {
                if (env.data) {
                    // A pipeline with no batch left (one pass over the data): its devices
                    // leave the loop; when every pipeline has run out, the loop is over.
                    auto& data = result.trace.data;
                    std::vector<int> leaving = devices_without_batch(*env.data, step);
                    if (static_cast<int>(leaving.size()) == config_.devices) {
                        data.ended_at_step = step;
                        break;
                    }
                    if (!leaving.empty() && data.left_at_step < 0) {
                        data.left_at_step = step;
                        data.left_devices = leaving;
                        for (int d : leaving) ctx.leave_loop(d);
                    }
                    record_reads(*env.data, step, data);
                }
                if (step == faults_.crash_step) ctx.crash_planned_devices();
                {
                    const HostEnqueues enqueuing(ctx);
                    strategy->enqueue_step(step);
                }
                // The host would wait idle for the step: it draws the next one's data instead.
                if (step + 1 < config_.steps) env.batches.prefetch_after(step);
                env.synchronize_all();
                if (ctx.aborted()) break;
                const double loss = strategy->step_loss();
                StepRecord record{step, loss};
                strategy->step_numerics(record);
                result.trace.steps.push_back(record);
                if (!env.routing.empty())
                    result.trace.routing.aux_loss.push_back(take_aux_loss(env));
                result.steps_completed = step + 1;
                if (config_.checkpoint_every > 0 && (step + 1) % config_.checkpoint_every == 0) {
                    write_checkpoint(env, *strategy, step + 1, result.trace);
                    if (ctx.aborted()) break;
                }
                std::shared_ptr<RunResult> so_far;
                const auto now = std::chrono::steady_clock::now();
                if (share && step + 1 < config_.steps &&
                    (!last_share ||
                     now - *last_share >= std::chrono::milliseconds(share_interval_ms_))) {
                    // Every stream is idle between steps: their records can be copied.
                    so_far = std::make_shared<RunResult>();
                    so_far->partial = true;
                    so_far->steps_completed = result.steps_completed;
                    so_far->trace.steps = result.trace.steps;
                    so_far->trace.routing.aux_loss = result.trace.routing.aux_loss;
                    so_far->trace.gradient_updates = strategy->gradient_updates();
                    collect_trace(env, so_far->trace, Gather::copy);
                    last_share = now;
                }
                report(step + 1, loss, "training", std::move(so_far));
            }
            if (!ctx.aborted()) {
                result.final_parameters = strategy->parameters();
                result.final_master_parameters = strategy->master_parameters();
            }
            result.trace.gradient_updates = strategy->gradient_updates();
            // The training is done: a cancel from now on has nothing left to stop.
            if (!result.final_parameters.empty()) {
                std::lock_guard lock(ctx_mutex_);
                ctx_ = nullptr;
            }
        } catch (...) {
            // A host-side failure (or a throwing progress callback): record it as the run's
            // error, let the streams drain, and keep the trace recorded so far.
            ctx.abort(std::current_exception());
            env.synchronize_all();
        }
        collect_trace(env, result.trace);
    } catch (...) {
        ctx.abort(std::current_exception());
    }
    {
        std::lock_guard lock(ctx_mutex_);
        ctx_ = nullptr;
    }
    try {
        report(result.steps_completed,
               result.trace.steps.empty() ? 0.0 : result.trace.steps.back().loss, "done");
    } catch (...) {
        ctx.abort(std::current_exception());  // only counts if nothing failed before
    }
    // A cancel that raced the end of training (after the final parameters were read) stops
    // nothing: the run completed.
    bool late_cancel = false;
    if (ctx.aborted() && !result.final_parameters.empty()) {
        try {
            std::rethrow_exception(ctx.first_error());
        } catch (const Cancelled&) {
            late_cancel = true;
        } catch (...) {
        }
    }
    if (ctx.aborted() && !late_cancel) {
        classify_failure(ctx, result);
        // The timeout names a collective; why a peer never came is the data's doing.
        if (const std::string left = left_loop_words(result.trace.data); !left.empty())
            result.error = left + ". " + result.error;
        if (faults_.crash_restarts_alone && result.timed_out)
            result.error = faults_.crash_words + " at the start of step " +
                           std::to_string(faults_.crash_step + 1) +
                           " and only its worker restarted: a new process "
                           "outside the others' communicator, which wait for it. " +
                           result.error;
    }
    allocations_made_ = ctx.allocations();
    return result;
}

}  // namespace pd
