// State shared by every device of one run: the clock, the trace switch, and the abort flag
// that turns one participant's failure (or a cancel) into a prompt error everywhere.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <exception>
#include <mutex>
#include <string>

#include "pd/error.h"
#include "pd/run_config.h"

namespace pd {

class RunContext {
  public:
    RunContext(ClockMode resolved_clock, LinkModel link, bool tracing, double timeout_s);

    ClockMode clock() const { return clock_; }
    const LinkModel& link() const { return link_; }
    bool tracing() const { return tracing_; }
    std::int64_t wall_now_ns() const;

    // The first error wins; later ones are consequences (peers seeing the abort).
    void abort(std::exception_ptr error) noexcept;
    bool aborted() const noexcept { return aborted_.load(std::memory_order_acquire); }
    std::exception_ptr first_error() const;
    std::string first_error_message() const;
    void throw_if_aborted() const;

    // Blocks until `ready()` holds. Never hangs: throws Aborted when the run is aborted and
    // CollectiveTimeout (naming `what`) when the timeout passes. Re-checks every few ms so an
    // abort raised elsewhere is seen without a notify on this particular condition variable.
    template <class Ready>
    void wait(std::unique_lock<std::mutex>& lock, std::condition_variable& cv, Ready ready,
              const std::string& what) const {
        const auto deadline = std::chrono::steady_clock::now() + timeout_;
        while (!ready()) {
            if (aborted()) throw_aborted(what);
            if (std::chrono::steady_clock::now() >= deadline) throw_timeout(what);
            cv.wait_for(lock, std::chrono::milliseconds(5));
        }
    }

    std::uint64_t next_flow_id() { return flow_ids_.fetch_add(1) + 1; }

  private:
    [[noreturn]] void throw_aborted(const std::string& what) const;
    [[noreturn]] void throw_timeout(const std::string& what) const;

    ClockMode clock_;
    LinkModel link_;
    bool tracing_;
    std::chrono::steady_clock::duration timeout_;
    std::chrono::steady_clock::time_point t0_;
    std::atomic<bool> aborted_{false};
    mutable std::mutex error_mutex_;
    std::exception_ptr first_error_;
    std::atomic<std::uint64_t> flow_ids_{0};
};

}  // namespace pd
