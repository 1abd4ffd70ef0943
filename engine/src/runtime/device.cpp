#include "pd/device.h"

#include <utility>

#include "backend/device_backend.h"
#include "pd/error.h"
#include "pd/run_context.h"

namespace pd {

MemoryTracker::MemoryTracker(int device, std::size_t capacity, const RunContext& ctx,
                             DeviceOps& ops)
    : device_(device), capacity_(capacity), ctx_(ctx), ops_(ops) {}

MemoryTracker::MemoryTracker(int device, std::size_t capacity, const RunContext& ctx)
    : MemoryTracker(device, capacity, ctx, shared_cpu_ops()) {}

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
    try {
        data_ = tracker.ops().allocate(count);  // zeroed
    } catch (...) {
        tracker.release(category, count * sizeof(float));
        throw;
    }
    tracker_ = &tracker;
    count_ = count;
}

std::vector<float> Buffer::to_host() const {
    std::vector<float> host(count_);
    if (count_) tracker_->ops().download(host.data(), data_, count_);
    return host;
}

Buffer::Buffer(Buffer&& other) noexcept
    : tracker_(std::exchange(other.tracker_, nullptr)),
      category_(other.category_),
      count_(std::exchange(other.count_, 0)),
      data_(std::exchange(other.data_, nullptr)) {}

Buffer& Buffer::operator=(Buffer&& other) noexcept {
    if (this != &other) {
        reset();
        tracker_ = std::exchange(other.tracker_, nullptr);
        category_ = other.category_;
        count_ = std::exchange(other.count_, 0);
        data_ = std::exchange(other.data_, nullptr);
    }
    return *this;
}

void Buffer::reset() noexcept {
    if (tracker_) {
        tracker_->ops().release(data_);
        tracker_->release(category_, count_ * sizeof(float));
    }
    tracker_ = nullptr;
    count_ = 0;
    data_ = nullptr;
}

Device::Device(int id, std::size_t capacity, RunContext& ctx)
    : Device(id, capacity, ctx, make_cpu_device_backend()) {}

Device::Device(int id, std::size_t capacity, RunContext& ctx,
               std::unique_ptr<DeviceBackend> backend)
    : id_(id),
      backend_(std::move(backend)),
      memory_(id, capacity, ctx, backend_->ops()),
      compute_(std::make_unique<Stream>(id, StreamKind::compute, ctx, backend_->make_stream())),
      comm_(std::make_unique<Stream>(id, StreamKind::comm, ctx, backend_->make_stream())) {}

Device::~Device() = default;

}  // namespace pd
