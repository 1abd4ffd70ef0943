// A device's intra-op threads (PyTorch's intra-op pool): one kernel split into parts that run
// at once, the calling stream thread taking the first part. With one thread, parts run inline
// and nothing is started.
//
// Under the device clock a run gets one thread per device (resolve_intra_op_threads): an op's
// time there is the CPU time of the stream's own thread, which would miss the work of helper
// threads, and the device clock is chosen precisely when there are more streams than cores.
#pragma once

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <cstddef>
#include <exception>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

namespace pd::cpu {

class IntraOpPool {
  public:
    explicit IntraOpPool(int threads);
    ~IntraOpPool();
    IntraOpPool(const IntraOpPool&) = delete;
    IntraOpPool& operator=(const IntraOpPool&) = delete;

    int threads() const { return static_cast<int>(workers_.size()) + 1; }

    // Runs part(i) for i in [0, parts) with parts <= threads(), returning when all are done;
    // the first exception a part throws is rethrown here. Parts are claimed, not assigned:
    // the caller and each awake worker take the next unclaimed part until none is left, so a
    // worker the scheduler has not run yet (a busy or stolen core) costs nothing but its
    // share of the speed-up; the caller never waits for a part nobody has begun. Which
    // thread runs a part never changes its result. One kernel holds the pool at a time: a
    // second caller meanwhile (the device's other stream, e.g. a ring step's reduction
    // during a product) runs its parts inline rather than wait.
    void run(int parts, const std::function<void(int)>& part);

    // Splits [0, n) into at most threads() ranges of at least `grain` items (fewer when n is
    // small) and runs body(begin, end) on each.
    template <class Body>
    void parallel_for(std::size_t n, std::size_t grain, Body&& body) {
        const std::size_t by_grain = grain ? n / grain : n;
        const int parts =
            static_cast<int>(std::max<std::size_t>(1, std::min<std::size_t>(by_grain, threads())));
        if (parts == 1) {
            if (n) body(std::size_t{0}, n);
            return;
        }
        run(parts, [&](int i) {
            const std::size_t begin = n * static_cast<std::size_t>(i) / parts;
            const std::size_t end = n * static_cast<std::size_t>(i + 1) / parts;
            if (end > begin) body(begin, end);
        });
    }

  private:
    void work();
    // Claims and runs parts of kernel `generation` until none is left.
    void run_parts(unsigned generation, int parts, const std::function<void(int)>& part);
    void record_error(std::exception_ptr error);

    std::vector<std::thread> workers_;
    std::mutex mutex_;
    std::mutex run_mutex_;  // held by the kernel that has the workers
    std::condition_variable wake_;
    std::condition_variable done_;
    // Written under mutex_ before the kernel's generation is published: its parts and function.
    const std::function<void(int)>* part_ = nullptr;
    int parts_ = 0;
    // The kernel's generation (high 32 bits) and its next unclaimed part (low 32 bits), one
    // word, so that a worker still holding the previous kernel's function can never claim a
    // part of the next one.
    std::atomic<unsigned long long> claim_{0};
    std::atomic<int> finished_{0};  // parts of the current kernel done
    // Atomic so that workers (and the caller) can spin on them a little before sleeping: a
    // step's kernels follow each other within microseconds, and a wake-up through the
    // condition variable costs as much as a small part's work.
    std::atomic<unsigned> generation_{0};
    std::atomic<bool> stopping_{false};
    std::exception_ptr error_;
};

}  // namespace pd::cpu
