// State shared by every device of one run: the clock, the trace switch, and the abort flag
// that turns one participant's failure (or a cancel) into a prompt error everywhere.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <exception>
#include <map>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include "pd/error.h"
#include "pd/fault_plan.h"
#include "pd/run_config.h"
#include "pd/topology.h"

namespace pd {

class RunContext {
  public:
    RunContext(ClockMode resolved_clock, LinkModel link, bool tracing, double timeout_s);

    ClockMode clock() const { return clock_; }
    // The link inside a node (and between any two devices of a one-node run).
    const LinkModel& link() const { return link_; }
    // Nodes, NICs and tiers (one node over `link` unless set_cluster is called).
    const Topology& topology() const { return topology_; }
    CollectiveAlgorithm allreduce_algorithm() const { return algorithm_; }
    void set_cluster(Topology topology, CollectiveAlgorithm algorithm) {
        topology_ = std::move(topology);
        algorithm_ = algorithm;
    }
    // How many times its measured CPU time a stream's compute counts on the device clock (a
    // straggler's slowdown on its compute stream; 1 elsewhere).
    void set_straggler(Straggler straggler) { straggler_ = straggler; }
    double compute_time_scale(int device) const {
        return straggler_.device == device ? straggler_.slowdown : 1.0;
    }
    bool tracing() const { return tracing_; }
    std::int64_t wall_now_ns() const;

    // The first error wins; later ones are consequences (peers seeing the abort).
    void abort(std::exception_ptr error) noexcept;
    bool aborted() const noexcept { return aborted_.load(std::memory_order_acquire); }
    std::exception_ptr first_error() const;
    std::string first_error_message() const;
    void throw_if_aborted() const;

    // Out of memory does not stop the run at once. In data parallelism every replica makes
    // the same allocations, so every device overflows at the same point; aborting on the
    // first report would name whichever thread got there first, a different device each run.
    // Instead the device that ran out stops (its streams skip what is left, see
    // device_failed), the other devices go on until each has also run out, finished its work
    // or blocked waiting on a device that stopped; then the run aborts with the lowest
    // device's report as its error. Which devices ran out then depends on the program, not on
    // thread timing.
    void report_out_of_memory(int device, std::exception_ptr error);
    bool device_failed(int device) const;
    // A device whose input ran out left the training loop (its process finished): its streams
    // skip whatever is enqueued from now on, and peers waiting on it time out.
    void leave_loop(int device) noexcept {
        left_loop_.fetch_or(std::uint64_t{1} << device, std::memory_order_release);
    }
    bool left_loop(int device) const noexcept {
        return (left_loop_.load(std::memory_order_acquire) >> device) & 1u;
    }
    // The planned failure (FaultPlan::crash_devices) strikes now: those devices' streams fail
    // on their next work, aborting the run with a DeviceFailure naming them.
    void crash_planned_devices() noexcept {
        std::uint64_t mask = 0;
        for (int d : faults_.crash_devices) mask |= std::uint64_t{1} << d;
        (faults_.crash_restarts_alone ? left_loop_ : crashed_)
            .fetch_or(mask, std::memory_order_release);
    }
    bool crashed(int device) const noexcept {
        return (crashed_.load(std::memory_order_acquire) >> device) & 1u;
    }
    const FaultPlan& faults() const { return faults_; }
    // Every report, lowest device first (one per device: its first).
    std::vector<std::exception_ptr> out_of_memory_errors() const;
    // Streams (and the host while it enqueues) that can still make progress: the run aborts on
    // a pending out-of-memory report when this drops to zero. A stream counts from when work
    // is queued on it until its queue is empty, except while it blocks in wait().
    void work_began() noexcept;
    void work_ended() noexcept;

    // Blocks until `ready()` holds. Never hangs: throws Aborted when the run is aborted and
    // CollectiveTimeout (naming `what`) when the timeout passes. Re-checks every few ms so an
    // abort raised elsewhere is seen without a notify on this particular condition variable.
    template <class Ready>
    void wait(std::unique_lock<std::mutex>& lock, std::condition_variable& cv, Ready ready,
              const std::string& what) const {
        if (ready()) return;
        // Blocked: this stream cannot make progress until another one does.
        const BlockedScope blocked(*this);
        const auto deadline = std::chrono::steady_clock::now() + timeout_;
        while (!ready()) {
            if (aborted()) throw_aborted(what);
            if (std::chrono::steady_clock::now() >= deadline) throw_timeout(what);
            cv.wait_for(lock, std::chrono::milliseconds(5));
        }
    }

    std::uint64_t next_flow_id() { return flow_ids_.fetch_add(1) + 1; }

    // Fault injection for reliability tests (FaultPlan). Counts every accounted allocation and
    // says whether this one is the planned failure.
    void set_faults(FaultPlan plan) { faults_ = std::move(plan); }
    bool next_allocation_fails() const noexcept;
    std::size_t allocations() const noexcept { return allocations_.load(); }
    // Throws DeviceFailure when `device` is the planned dead peer at this point of `op`;
    // `call` counts that device's calls of `op` (the caller keeps the count).
    void check_dead_peer(int device, const char* op, int call, int ring_step) const;
    // This device's call number of `op`, counted only when a dead peer is planned (else 0).
    int begin_collective_call(int device, const char* op) const;

  private:
    // A stream's worker thread blocked in wait() stops counting as able to progress (the
    // host thread never counted, so it is left alone).
    struct BlockedScope {
        explicit BlockedScope(const RunContext& ctx);
        ~BlockedScope();
        RunContext* ctx;
    };
    void abort_if_stalled_locked();
    [[noreturn]] void throw_aborted(const std::string& what) const;
    [[noreturn]] void throw_timeout(const std::string& what) const;

    ClockMode clock_;
    LinkModel link_;
    Topology topology_;
    CollectiveAlgorithm algorithm_ = CollectiveAlgorithm::ring;
    Straggler straggler_;
    bool tracing_;
    std::chrono::steady_clock::duration timeout_;
    std::chrono::steady_clock::time_point t0_;
    std::atomic<bool> aborted_{false};
    std::atomic<std::uint64_t> left_loop_{0};  // a bit per device (at most 64)
    std::atomic<std::uint64_t> crashed_{0};
    mutable std::mutex error_mutex_;
    std::exception_ptr first_error_;
    std::map<int, std::exception_ptr> oom_errors_;  // by device; guarded by error_mutex_
    int progressing_ = 0;                           // guarded by error_mutex_
    std::atomic<std::uint64_t> flow_ids_{0};
    FaultPlan faults_;
    mutable std::atomic<std::size_t> allocations_{0};
    mutable std::mutex calls_mutex_;
    mutable std::map<std::pair<int, std::string>, int> calls_;
};

}  // namespace pd
