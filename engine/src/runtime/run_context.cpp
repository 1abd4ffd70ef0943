#include "pd/run_context.h"

namespace pd {

RunContext::RunContext(ClockMode resolved_clock, LinkModel link, bool tracing, double timeout_s)
    : clock_(resolved_clock),
      link_(link),
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
        if (!first_error_) first_error_ = std::move(error);
    }
    aborted_.store(true, std::memory_order_release);
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

void RunContext::throw_if_aborted() const {
    if (aborted()) throw_aborted("work");
}

void RunContext::throw_aborted(const std::string& what) const {
    throw Aborted(what + " abandoned because the run was aborted: " + first_error_message(),
                  __FILE__, __LINE__);
}

void RunContext::throw_timeout(const std::string& what) const {
    const double seconds = std::chrono::duration<double>(timeout_).count();
    throw CollectiveTimeout(
        what + " timed out after " + std::to_string(seconds) + " s waiting for a peer", __FILE__,
        __LINE__);
}

}  // namespace pd
