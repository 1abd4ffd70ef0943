#include "cpu/intra_op_pool.h"

#include "runtime/denormals.h"

namespace pd::cpu {

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
        stopping_ = true;
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
        pending_ = parts - 1;
        error_ = nullptr;
        ++generation_;
    }
    wake_.notify_all();
    std::exception_ptr mine;
    try {
        part(0);
    } catch (...) {
        mine = std::current_exception();
    }
    std::unique_lock lock(mutex_);
    done_.wait(lock, [this] { return pending_ == 0; });
    part_ = nullptr;
    if (!mine) mine = error_;
    lock.unlock();
    if (mine) std::rethrow_exception(mine);
}

void IntraOpPool::work(int index) {
    unsigned long long seen = 0;
    std::unique_lock lock(mutex_);
    for (;;) {
        wake_.wait(lock, [&] { return stopping_ || generation_ != seen; });
        if (stopping_) return;
        seen = generation_;
        if (index >= parts_) continue;  // this kernel has fewer parts than threads
        const std::function<void(int)>* part = part_;
        lock.unlock();
        std::exception_ptr error;
        try {
            (*part)(index);
        } catch (...) {
            error = std::current_exception();
        }
        lock.lock();
        if (error && !error_) error_ = error;
        if (--pending_ == 0) done_.notify_one();
    }
}

}  // namespace pd::cpu
