#include "cpu/intra_op_pool.h"

#include <chrono>
#include <utility>

#include "runtime/denormals.h"

namespace pd::cpu {

namespace {

// How long a worker, or a caller waiting for its workers, checks for the next kernel before
// it sleeps: longer than the gap between a step's kernels and far shorter than a scheduler's
// time slice. Bounded in time, not in checks: a pause instruction lasts from a few to some
// 140 cycles depending on the core (16384 of them took 400 microseconds on a Zen 5).
constexpr auto kSpinTime = std::chrono::microseconds(50);

inline void spin_pause() {
#if defined(__x86_64__) || defined(__i386__)
    __builtin_ia32_pause();
#else
    std::this_thread::yield();
#endif
}

// Checks `ready` for up to kSpinTime; true as soon as it holds.
template <class Ready>
bool spin_until(Ready&& ready) {
    const auto deadline = std::chrono::steady_clock::now() + kSpinTime;
    for (;;) {
        for (int i = 0; i < 16; ++i) {
            if (ready()) return true;
            spin_pause();
        }
        if (std::chrono::steady_clock::now() >= deadline) return ready();
    }
}

constexpr unsigned long long claim_word(unsigned generation, unsigned next_part) {
    return (static_cast<unsigned long long>(generation) << 32) | next_part;
}

}  // namespace

IntraOpPool::IntraOpPool(int threads) {
    for (int i = 1; i < threads; ++i)
        workers_.emplace_back([this] {
            flush_denormals_on_this_thread();  // as the stream threads they help
            work();
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
    unsigned generation = 0;
    {
        std::lock_guard lock(mutex_);
        part_ = &part;
        parts_ = parts;
        error_ = nullptr;
        finished_.store(0);
        generation = generation_.load() + 1;
        claim_.store(claim_word(generation, 0));
        generation_.store(generation);
    }
    wake_.notify_all();  // no system call when every worker is still spinning
    run_parts(generation, parts, part);
    // Every part is claimed now; wait for those a worker is still running.
    if (!spin_until([&] { return finished_.load() == parts; })) {
        std::unique_lock lock(mutex_);
        done_.wait(lock, [&] { return finished_.load() == parts; });
    }
    std::exception_ptr error;
    {
        std::lock_guard lock(mutex_);
        part_ = nullptr;
        error = std::move(error_);
        error_ = nullptr;
    }
    if (error) std::rethrow_exception(error);
}

void IntraOpPool::run_parts(unsigned generation, int parts, const std::function<void(int)>& part) {
    for (;;) {
        unsigned long long claim = claim_.load();
        do {
            if ((claim >> 32) != generation ||
                (claim & 0xffffffffULL) >= static_cast<unsigned long long>(parts))
                return;
        } while (!claim_.compare_exchange_weak(claim, claim + 1));
        try {
            part(static_cast<int>(claim & 0xffffffffULL));
        } catch (...) {
            record_error(std::current_exception());
        }
        // The last part done tells a caller that stopped spinning; under the mutex, so the
        // caller is either before its check or already waiting.
        if (finished_.fetch_add(1) + 1 == parts) {
            std::lock_guard lock(mutex_);
            done_.notify_one();
        }
    }
}

void IntraOpPool::record_error(std::exception_ptr error) {
    // Handed over whole (moved): the worker keeps no reference to the exception, so the
    // caller that rethrows it is the only one to free it.
    std::lock_guard lock(mutex_);
    if (!error_) error_ = std::move(error);
}

void IntraOpPool::work() {
    unsigned seen = 0;
    for (;;) {
        auto news = [&] { return stopping_.load() || generation_.load() != seen; };
        if (!spin_until(news)) {
            std::unique_lock lock(mutex_);
            wake_.wait(lock, news);
        }
        const std::function<void(int)>* part = nullptr;
        int parts = 0;
        unsigned generation = 0;
        {
            // The kernel's generation, parts and function, read together. A kernel that has
            // ended meanwhile left no part to claim under its generation, so a stale function
            // is never called.
            std::lock_guard lock(mutex_);
            if (stopping_.load()) return;
            generation = seen = generation_.load();
            part = part_;
            parts = parts_;
        }
        if (part) run_parts(generation, parts, *part);
    }
}

}  // namespace pd::cpu
