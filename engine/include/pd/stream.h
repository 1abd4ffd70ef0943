// Streams and events, shaped like CUDA's: a stream runs its work in order on its own worker
// thread; an event recorded on one stream can be waited on by another.
//
// Each stream keeps the clock of the run: wall (real time since the run began) or device
// (the CPU time this stream's thread really spent, plus explicit jumps for transfers and
// waits), so that a laptop with fewer cores than streams still shows each device's timeline.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "pd/trace.h"

namespace pd {

class RunContext;
class StreamBackend;

class Event {
  public:
    bool fired() const;

  private:
    friend class Stream;
    mutable std::mutex mutex_;
    std::condition_variable cv_;
    bool fired_ = false;
    std::int64_t t_ns_ = 0;               // the recording stream's clock when it fired
    std::shared_ptr<void> device_event_;  // the device queue's event (CUDA), else null
};
using EventPtr = std::shared_ptr<Event>;

class Stream {
  public:
    using Task = std::function<void()>;

    // `backend` is the device queue behind this stream (CUDA), null when the stream's own
    // thread is the device (CPU). On a device queue, times are marks in the queue that the
    // device's backend resolves once the run's streams synchronized.
    Stream(int device, StreamKind kind, RunContext& ctx,
           std::unique_ptr<StreamBackend> backend = nullptr);
    ~Stream();
    Stream(const Stream&) = delete;
    Stream& operator=(const Stream&) = delete;

    int device() const { return device_; }
    StreamKind kind() const { return kind_; }

    // --- host side: enqueue work (never blocks) -------------------------------------------
    void enqueue(Task task);
    // Runs `body` as one traced op described by `event` (times filled in when it runs).
    void launch(TraceEvent event, Task body);
    EventPtr record();
    // Later work on this stream waits until `event` fired; the wait shows as idle time.
    void wait(EventPtr event, int step);
    // Blocks the caller until every enqueued task has run (or been skipped after an abort).
    void synchronize();

    // --- stream side: valid on this stream's own thread ----------------------------------
    static Stream* current();
    std::int64_t now_ns() const;
    // Device clock: the stream cannot be earlier than `t_ns` (a message arrived, a peer
    // finished). Wall clock: nothing to do, real time already passed.
    void advance_to(std::int64_t t_ns);
    // Records an idle span [began, now] (wall) or [now, ready_at] (device) as a wait event.
    void idle_until(std::int64_t began_ns, std::int64_t ready_at_ns, const std::string& label,
                    int step);
    void add_event(TraceEvent event);
    template <class F>
    void timed(TraceEvent event, F&& body) {
        event.start_ns = now_ns();
        try {
            body();
        } catch (...) {
            // The op that failed still ran until it failed: keep it in the trace.
            event.end_ns = now_ns();
            event.label += " (failed)";
            add_event(std::move(event));
            throw;
        }
        event.end_ns = now_ns();
        add_event(std::move(event));
    }

    // After synchronize(): what this stream recorded.
    std::vector<TraceEvent> take_events();
    std::vector<CollectiveRecord> take_collectives();
    // Copies, for a look at the run while it goes on (after synchronize(), between steps).
    std::vector<TraceEvent> events_so_far() const;
    std::vector<CollectiveRecord> collectives_so_far() const;
    void add_collective(CollectiveRecord record);

  private:
    void run_loop();
    void run_task(Task& task);

    int device_;
    StreamKind kind_;
    RunContext& ctx_;
    std::unique_ptr<StreamBackend> backend_;

    mutable std::mutex mutex_;
    std::condition_variable work_cv_;
    std::condition_variable idle_cv_;
    std::deque<Task> queue_;
    bool busy_ = false;
    bool stopping_ = false;

    // Touched only by the worker thread while running, read by the host after synchronize().
    std::int64_t clock_ns_ = 0;
    std::int64_t cpu_mark_ns_ = 0;
    std::vector<TraceEvent> events_;
    std::vector<CollectiveRecord> collectives_;

    std::thread worker_;
};

// CPU time consumed by the calling thread, in ns.
std::int64_t thread_cpu_ns();

}  // namespace pd
