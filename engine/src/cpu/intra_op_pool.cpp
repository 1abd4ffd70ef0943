#include "cpu/intra_op_pool.h"

#include <utility>

#include "runtime/denormals.h"

namespace pd::cpu {

namespace {

// How long a worker, or a caller waiting for its workers, checks for the next kernel before
// it sleeps: some 50 microseconds, longer than the gap between a step's kernels and far
// shorter than a scheduler's time slice.
constexpr int kSpinChecks = 1 << 14;

inline void spin_pause() {
#if defined(__x86_64__) || defined(__i386__)
    __builtin_ia32_pause();
#else
    std::this_thread::yield();
#endif
}

// Checks `ready` up to kSpinChecks times; true as soon as it holds.
template <class Ready>
bool spin_until(Ready&& ready) {
    for (int i = 0; i < kSpinChecks; ++i) {
        if (ready()) return true;
        spin_pause();
    }
    return ready();
}

}  // namespace

IntraOpPool::IntraOpPool(int threads) {
    for (int i = 1; i < threads; ++i)
        workers_.emplace_back([this, i] {
            flush_denormals_on_this_thread();  // as the stream threads they help
            work(i);
        });
}

IntraOpPool::~IntraOpPool() {
    {
        std::lock_guard lock(mutex_);
        stopping_.store(true);
    }
    wake_.notify_all();
    for (auto& t : workers_) t.join();
}

void IntraOpPool::run(int parts, const std::function<void(int)>& part) {
    parts = std::clamp(parts, 1, threads());
    std::unique_lock held(run_mutex_, std::try_to_lock);
    if (parts == 1 || !held.owns_lock()) {
        for (int i = 0; i < parts; ++i) part(i);
        return;
    }
    {
        std::lock_guard lock(mutex_);
        part_ = &part;
        parts_ = parts;
        pending_.store(parts - 1);
        error_ = nullptr;
        generation_.fetch_add(1);
    }
    wake_.notify_all();  // no system call when every worker is still spinning
    std::exception_ptr mine;
    try {
        part(0);
    } catch (...) {
        mine = std::current_exception();
    }
    if (!spin_until([this] { return pending_.load() == 0; })) {
        std::unique_lock lock(mutex_);
        done_.wait(lock, [this] { return pending_.load() == 0; });
    }
    std::lock_guard lock(mutex_);
    part_ = nullptr;
    if (!mine) mine = error_;
    if (mine) std::rethrow_exception(mine);
}

void IntraOpPool::work(int index) {
    unsigned long long seen = 0;
    for (;;) {
        auto news = [&] { return stopping_.load() || generation_.load() != seen; };
        if (!spin_until(news)) {
            std::unique_lock lock(mutex_);
            wake_.wait(lock, news);
        }
        const std::function<void(int)>* part = nullptr;
        {
            // The kernel's generation, parts and function, read together: the next kernel
            // cannot begin before this one's parts are done.
            std::lock_guard lock(mutex_);
            if (stopping_.load()) return;
            seen = generation_.load();
            if (index < parts_) part = part_;
        }
        if (!part) continue;  // this kernel has fewer parts than threads
        std::exception_ptr error;
        try {
            (*part)(index);
        } catch (...) {
            error = std::current_exception();
        }
        if (error) {
            // Handed over whole (moved): the worker keeps no reference to the exception, so
            // the caller that rethrows it is the only one to free it.
            std::lock_guard lock(mutex_);
            if (!error_) error_ = std::move(error);
            error = nullptr;
        }
        // The last part done tells a caller that stopped spinning; under the mutex, so the
        // caller is either before its check or already waiting.
        if (pending_.fetch_sub(1) == 1) {
            std::lock_guard lock(mutex_);
            done_.notify_one();
        }
    }
}

}  // namespace pd::cpu
