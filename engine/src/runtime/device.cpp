#include "pd/device.h"

#include <utility>

#include "pd/error.h"
#include "pd/run_context.h"

namespace pd {

MemoryTracker::MemoryTracker(int device, std::size_t capacity, const RunContext& ctx)
    : device_(device), capacity_(capacity), ctx_(ctx) {}

void MemoryTracker::allocate(MemoryCategory category, std::size_t bytes) {
    std::lock_guard lock(mutex_);
    const auto c = static_cast<std::size_t>(category);
    if (bytes > capacity_ || total_ > capacity_ - bytes) {
        OomInfo info;
        info.device = device_;
        info.category = category;
        info.requested_bytes = bytes;
        info.live_bytes = total_;
        info.capacity_bytes = capacity_;
        PD_THROW(OutOfMemory, info);
    }
    live_[c] += bytes;
    total_ += bytes;
    if (live_[c] > peak_[c]) peak_[c] = live_[c];
    sample_locked(category);
}

void MemoryTracker::release(MemoryCategory category, std::size_t bytes) noexcept {
    std::lock_guard lock(mutex_);
    const auto c = static_cast<std::size_t>(category);
    live_[c] -= bytes;
    total_ -= bytes;
    sample_locked(category);
}

void MemoryTracker::sample_locked(MemoryCategory category) {
    if (!ctx_.tracing()) return;
    const Stream* stream = Stream::current();
    // Host-side changes (teardown) have no device clock; on the wall clock they take wall time.
    std::int64_t t = 0;
    if (stream)
        t = stream->now_ns();
    else if (ctx_.clock() == ClockMode::wall)
        t = ctx_.wall_now_ns();
    else
        return;
    samples_.push_back({device_, category, live_[static_cast<std::size_t>(category)], t});
}

std::size_t MemoryTracker::live(MemoryCategory category) const {
    std::lock_guard lock(mutex_);
    return live_[static_cast<std::size_t>(category)];
}

std::size_t MemoryTracker::live_total() const {
    std::lock_guard lock(mutex_);
    return total_;
}

std::size_t MemoryTracker::peak(MemoryCategory category) const {
    std::lock_guard lock(mutex_);
    return peak_[static_cast<std::size_t>(category)];
}

std::vector<MemorySample> MemoryTracker::take_samples() {
    std::lock_guard lock(mutex_);
    return std::move(samples_);
}

Buffer::Buffer(MemoryTracker& tracker, MemoryCategory category, std::size_t count)
    : category_(category) {
    tracker.allocate(category, count * sizeof(float));
    tracker_ = &tracker;
    count_ = count;
    data_ = std::make_unique<float[]>(count);  // zeroed
}

Buffer::Buffer(Buffer&& other) noexcept
    : tracker_(std::exchange(other.tracker_, nullptr)),
      category_(other.category_),
      count_(std::exchange(other.count_, 0)),
      data_(std::move(other.data_)) {}

Buffer& Buffer::operator=(Buffer&& other) noexcept {
    if (this != &other) {
        reset();
        tracker_ = std::exchange(other.tracker_, nullptr);
        category_ = other.category_;
        count_ = std::exchange(other.count_, 0);
        data_ = std::move(other.data_);
    }
    return *this;
}

void Buffer::reset() noexcept {
    if (tracker_) tracker_->release(category_, count_ * sizeof(float));
    tracker_ = nullptr;
    count_ = 0;
    data_.reset();
}

Device::Device(int id, std::size_t capacity, RunContext& ctx)
    : id_(id),
      memory_(id, capacity, ctx),
      compute_(std::make_unique<Stream>(id, StreamKind::compute, ctx)),
      comm_(std::make_unique<Stream>(id, StreamKind::comm, ctx)) {}

Device::~Device() = default;

}  // namespace pd
