#include "pd/run_context.h"

#include <cstdio>

#include "pd/stream.h"

namespace pd {

RunContext::RunContext(ClockMode resolved_clock, LinkModel link, bool tracing, double timeout_s)
    : clock_(resolved_clock),
      link_(link),
      topology_(link),
      tracing_(tracing),
      timeout_(std::chrono::duration_cast<std::chrono::steady_clock::duration>(
          std::chrono::duration<double>(timeout_s))),
      t0_(std::chrono::steady_clock::now()) {}

std::int64_t RunContext::wall_now_ns() const {
    return std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now() -
                                                                t0_)
        .count();
}

void RunContext::abort(std::exception_ptr error) noexcept {
    {
        std::lock_guard lock(error_mutex_);
        // A pending out-of-memory report came first: it stays the run's error.
        if (!first_error_)
            first_error_ = oom_errors_.empty() ? std::move(error) : oom_errors_.begin()->second;
    }
    aborted_.store(true, std::memory_order_release);
}

void RunContext::report_out_of_memory(int device, std::exception_ptr error) {
    std::lock_guard lock(error_mutex_);
    oom_errors_.emplace(device, std::move(error));  // a device's first report stays
}

bool RunContext::device_failed(int device) const {
    std::lock_guard lock(error_mutex_);
    return oom_errors_.count(device) > 0;
}

std::vector<std::exception_ptr> RunContext::out_of_memory_errors() const {
    std::lock_guard lock(error_mutex_);
    std::vector<std::exception_ptr> out;
    for (const auto& [device, error] : oom_errors_) out.push_back(error);
    return out;
}

void RunContext::work_began() noexcept {
    std::lock_guard lock(error_mutex_);
    ++progressing_;
}

void RunContext::work_ended() noexcept {
    std::lock_guard lock(error_mutex_);
    --progressing_;
    abort_if_stalled_locked();
}

void RunContext::abort_if_stalled_locked() {
    // Nothing can move any more and a device ran out: the run is over, and the lowest
    // device that ran out names the error, whichever thread reported first.
    if (progressing_ > 0 || oom_errors_.empty() || aborted_.load(std::memory_order_acquire)) return;
    if (!first_error_) first_error_ = oom_errors_.begin()->second;
    aborted_.store(true, std::memory_order_release);
}

RunContext::BlockedScope::BlockedScope(const RunContext& c)
    : ctx(Stream::current() ? const_cast<RunContext*>(&c) : nullptr) {
    if (ctx) ctx->work_ended();
}

RunContext::BlockedScope::~BlockedScope() {
    if (ctx) ctx->work_began();
}

std::exception_ptr RunContext::first_error() const {
    std::lock_guard lock(error_mutex_);
    return first_error_;
}

std::string RunContext::first_error_message() const {
    const auto error = first_error();
    if (!error) return {};
    try {
        std::rethrow_exception(error);
    } catch (const std::exception& e) {
        return e.what();
    } catch (...) {
        return "unknown error";
    }
}

bool RunContext::next_allocation_fails() const noexcept {
    const std::size_t k = allocations_.fetch_add(1) + 1;
    return faults_.fail_allocation != 0 && k == faults_.fail_allocation;
}

int RunContext::begin_collective_call(int device, const char* op) const {
    if (!faults_.dead_peer) return 0;
    std::lock_guard lock(calls_mutex_);
    return calls_[{device, op}]++;
}

void RunContext::check_dead_peer(int device, const char* op, int call, int ring_step) const {
    const auto& dead = faults_.dead_peer;
    if (!dead || dead->device != device || dead->collective != op || dead->call != call ||
        dead->ring_step != ring_step)
        return;
    throw DeviceFailure("device " + std::to_string(device) + " failed inside " + op + " (call " +
                            std::to_string(call) + ") at ring step " + std::to_string(ring_step) +
                            ": injected fault",
                        __FILE__, __LINE__);
}

void RunContext::throw_if_aborted() const {
    if (aborted()) throw_aborted("work");
}

void RunContext::throw_aborted(const std::string& what) const {
    throw Aborted(what + " abandoned because the run was aborted: " + first_error_message(),
                  __FILE__, __LINE__);
}

void RunContext::throw_timeout(const std::string& what) const {
    const double seconds = std::chrono::duration<double>(timeout_).count();
    char text[32];
    std::snprintf(text, sizeof text, "%g", seconds);
    throw CollectiveTimeout(what + " timed out after " + text + " s waiting for a peer", __FILE__,
                            __LINE__);
}

}  // namespace pd
