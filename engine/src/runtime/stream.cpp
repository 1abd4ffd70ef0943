#include "pd/stream.h"

#include <time.h>

#include "backend/device_backend.h"
#include "pd/error.h"
#include "pd/run_context.h"
#include "runtime/denormals.h"

namespace pd {

namespace {
thread_local Stream* tl_current_stream = nullptr;
// Real waits shorter than this are scheduling noise, not idle time worth drawing.
constexpr std::int64_t kMinWallWaitNs = 1000;
}  // namespace

std::int64_t thread_cpu_ns() {
    timespec ts{};
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return static_cast<std::int64_t>(ts.tv_sec) * 1'000'000'000 + ts.tv_nsec;
}

bool Event::fired() const {
    std::lock_guard lock(mutex_);
    return fired_;
}

Stream::Stream(int device, StreamKind kind, RunContext& ctx, std::unique_ptr<StreamBackend> backend)
    : device_(device), kind_(kind), ctx_(ctx), backend_(std::move(backend)) {
    worker_ = std::thread([this] {
        flush_denormals_on_this_thread();
        run_loop();
    });
}

Stream::~Stream() {
    {
        std::lock_guard lock(mutex_);
        stopping_ = true;
    }
    work_cv_.notify_all();
    worker_.join();
}

void Stream::enqueue(Task task) {
    {
        std::lock_guard lock(mutex_);
        // An idle stream with work again can make progress (RunContext::work_began).
        if (!busy_ && queue_.empty()) ctx_.work_began();
        queue_.push_back(std::move(task));
    }
    work_cv_.notify_one();
}

void Stream::launch(TraceEvent event, Task body) {
    event.device = device_;
    event.stream = kind_;
    enqueue([this, event = std::move(event), body = std::move(body)]() mutable {
        timed(std::move(event), body);
    });
}

EventPtr Stream::record() {
    auto event = std::make_shared<Event>();
    enqueue([this, event] {
        // The device's own event first: a waiter that sees `fired_` also finds it.
        DeviceEvent device_event = backend_ ? backend_->record() : nullptr;
        {
            std::lock_guard lock(event->mutex_);
            event->device_event_ = std::move(device_event);
            event->fired_ = true;
            event->t_ns_ = now_ns();
        }
        event->cv_.notify_all();
    });
    return event;
}

void Stream::wait(EventPtr event, int step) {
    enqueue([this, event = std::move(event), step] {
        const std::int64_t began = now_ns();
        std::int64_t ready_at = 0;
        {
            std::unique_lock lock(event->mutex_);
            ctx_.wait(
                lock, event->cv_, [&] { return event->fired_; },
                "device " + std::to_string(device_) + " " + std::string(name_of(kind_)) +
                    " stream waiting on an event");
            ready_at = event->t_ns_;
        }
        // A device queue waits on the device (the host has only enqueued up to the event).
        if (backend_) backend_->wait(event->device_event_);
        idle_until(began, ready_at, "wait for event", step);
    });
}

void Stream::synchronize() {
    std::unique_lock lock(mutex_);
    idle_cv_.wait(lock, [this] { return queue_.empty() && !busy_; });
    lock.unlock();
    if (backend_) {
        try {
            backend_->synchronize();
        } catch (...) {
            ctx_.abort(std::current_exception());
        }
    }
}

Stream* Stream::current() {
    return tl_current_stream;
}

std::int64_t Stream::now_ns() const {
    if (backend_) return ctx_.tracing() ? backend_->mark() : 0;
    if (ctx_.clock() == ClockMode::wall) return ctx_.wall_now_ns();
    const std::int64_t spent = thread_cpu_ns() - cpu_mark_ns_;
    if (kind_ != StreamKind::compute) return clock_ns_ + spent;
    // A straggler's compute counts `slowdown` times what it measured (1 for every other).
    const double scale = ctx_.compute_time_scale(device_);
    return clock_ns_ + (scale == 1.0 ? spent : static_cast<std::int64_t>(spent * scale));
}

void Stream::advance_to(std::int64_t t_ns) {
    if (ctx_.clock() == ClockMode::wall) return;
    const std::int64_t now = now_ns();
    clock_ns_ = t_ns > now ? t_ns : now;
    cpu_mark_ns_ = thread_cpu_ns();
}

void Stream::idle_until(std::int64_t began_ns, std::int64_t ready_at_ns, const std::string& label,
                        int step) {
    TraceEvent wait_event;
    wait_event.device = device_;
    wait_event.stream = kind_;
    wait_event.kind = EventKind::wait;
    wait_event.label = label;
    wait_event.step = step;
    if (backend_) {  // marks: the backend drops the waits that did not wait once resolved
        wait_event.start_ns = began_ns;
        wait_event.end_ns = now_ns();
        add_event(std::move(wait_event));
        return;
    }
    if (ctx_.clock() == ClockMode::wall) {
        wait_event.start_ns = began_ns;
        wait_event.end_ns = now_ns();
        if (wait_event.duration_ns() >= kMinWallWaitNs) add_event(std::move(wait_event));
        return;
    }
    wait_event.start_ns = now_ns();
    advance_to(ready_at_ns);
    wait_event.end_ns = now_ns();
    if (wait_event.duration_ns() > 0) add_event(std::move(wait_event));
}

void Stream::add_event(TraceEvent event) {
    if (!ctx_.tracing() && event.kind != EventKind::oom) return;
    event.device = device_;
    event.stream = kind_;
    events_.push_back(std::move(event));
}

void Stream::add_collective(CollectiveRecord record) {
    if (ctx_.tracing()) collectives_.push_back(std::move(record));
}

std::vector<TraceEvent> Stream::take_events() {
    std::lock_guard lock(mutex_);
    return std::move(events_);
}

std::vector<CollectiveRecord> Stream::take_collectives() {
    std::lock_guard lock(mutex_);
    return std::move(collectives_);
}

std::vector<TraceEvent> Stream::events_so_far() const {
    std::lock_guard lock(mutex_);
    return events_;
}

std::vector<CollectiveRecord> Stream::collectives_so_far() const {
    std::lock_guard lock(mutex_);
    return collectives_;
}

void Stream::run_loop() {
    tl_current_stream = this;
    if (backend_) {
        try {
            backend_->bind_thread();
        } catch (...) {
            ctx_.abort(std::current_exception());
        }
    }
    cpu_mark_ns_ = thread_cpu_ns();
    std::unique_lock lock(mutex_);
    for (;;) {
        work_cv_.wait(lock, [this] { return stopping_ || !queue_.empty(); });
        if (queue_.empty()) break;  // stopping with nothing left
        Task task = std::move(queue_.front());
        queue_.pop_front();
        busy_ = true;
        lock.unlock();
        run_task(task);
        task = nullptr;  // release captures outside the lock
        lock.lock();
        busy_ = false;
        if (queue_.empty()) {
            // Before the host can see this stream idle: a pending out-of-memory report
            // aborts the run here when this was the last stream able to progress.
            ctx_.work_ended();
            idle_cv_.notify_all();
        }
    }
    tl_current_stream = nullptr;
}

void Stream::run_task(Task& task) {
    // After an abort the remaining work is skipped, not run: the run is over. So is the work
    // of a device that ran out of memory, while the others go on (RunContext's rule), and of
    // a device that left the training loop.
    if (ctx_.aborted() || ctx_.device_failed(device_) || ctx_.left_loop(device_)) return;
    if (ctx_.crashed(device_)) {
        ctx_.abort(std::make_exception_ptr(
            DeviceFailure(ctx_.faults().crash_words + " at the start of step " +
                              std::to_string(ctx_.faults().crash_step + 1) + ": injected failure",
                          __FILE__, __LINE__)));
        return;
    }
    try {
        task();
    } catch (const OutOfMemory& oom) {
        TraceEvent event;
        event.kind = EventKind::oom;
        event.label = oom.what();
        event.bytes = oom.info().requested_bytes;
        event.start_ns = event.end_ns = now_ns();
        add_event(std::move(event));
        ctx_.report_out_of_memory(device_, std::current_exception());
    } catch (...) {
        ctx_.abort(std::current_exception());
    }
}

}  // namespace pd
