#include "pd/device.h"

#include <algorithm>
#include <utility>

#include "backend/device_backend.h"
#include "pd/error.h"
#include "pd/run_context.h"

namespace pd {

namespace {

// Blocks come in multiples of 512 bytes (PyTorch's CUDA allocator rounds the same way), so
// tensors of one shape, step after step, share one free list.
constexpr std::size_t kBlockFloats = 128;

std::size_t block_floats(std::size_t count) {
    return (std::max<std::size_t>(count, 1) + kBlockFloats - 1) / kBlockFloats * kBlockFloats;
}

// A block is accounted at its element type's size (a bf16 block of n floats is reserved as
// 2n bytes, an int8 one as n), so free lists are kept per element size as well as per size.
std::size_t block_key(std::size_t floats, DType dtype) {
    return floats * 4 + (bytes_of(dtype) == 4 ? 0 : bytes_of(dtype) == 2 ? 1 : 2);
}

}  // namespace

MemoryTracker::MemoryTracker(int device, std::size_t capacity, const RunContext& ctx,
                             DeviceOps& ops)
    : device_(device),
      capacity_(capacity),
      ctx_(ctx),
      ops_(ops),
      caching_(ops.reuses_freed_blocks()) {}

MemoryTracker::MemoryTracker(int device, std::size_t capacity, const RunContext& ctx)
    : MemoryTracker(device, capacity, ctx, shared_cpu_ops()) {}

MemoryTracker::~MemoryTracker() {
    std::lock_guard lock(mutex_);
    empty_cache_locked();
}

void MemoryTracker::empty_cache_locked() noexcept {
    for (auto& [key, blocks] : free_blocks_)
        for (float* block : blocks) ops_.release(block);
    free_blocks_.clear();
    reserved_ -= cached_bytes_;
    cached_bytes_ = 0;
}

void MemoryTracker::allocate(MemoryCategory category, std::size_t bytes) {
    std::lock_guard lock(mutex_);
    account_locked(category, bytes);
    // Held outside the cache (a transport payload) but on this device all the same.
    reserved_ += bytes;
    peak_reserved_ = std::max(peak_reserved_, reserved_);
}

float* MemoryTracker::acquire(MemoryCategory category, std::size_t count, Fill fill, DType dtype) {
    const std::size_t element = bytes_of(dtype);
    const std::size_t bytes = count * element;
    float* data = nullptr;
    bool reused = false;
    {
        std::lock_guard lock(mutex_);
        account_locked(category, bytes);
        if (!caching_) {
            reserved_ += bytes;
        } else {
            const std::size_t floats = block_floats(count);
            const auto it = free_blocks_.find(block_key(floats, dtype));
            if (it != free_blocks_.end() && !it->second.empty()) {
                data = it->second.back();
                it->second.pop_back();
                cached_bytes_ -= floats * element;
                reused = true;
            } else {
                if (reserved_ + floats * element > capacity_) empty_cache_locked();
                reserved_ += floats * element;
            }
        }
        peak_reserved_ = std::max(peak_reserved_, reserved_);
        if (!reused) ++system_allocations_;
    }
    if (reused) {
        if (fill == Fill::zero) ops_.fill_zero(data, count);
        return data;
    }
    try {
        const std::size_t floats = caching_ ? block_floats(count) : count;
        return fill == Fill::zero ? ops_.allocate(floats) : ops_.allocate_uninitialized(floats);
    } catch (...) {
        std::lock_guard lock(mutex_);
        reserved_ -= caching_ ? block_floats(count) * element : bytes;
        unaccount_locked(category, bytes);
        throw;
    }
}

void MemoryTracker::give_back(MemoryCategory category, float* data, std::size_t count,
                              DType dtype) noexcept {
    {
        std::lock_guard lock(mutex_);
        const std::size_t element = bytes_of(dtype);
        const std::size_t bytes = count * element;
        unaccount_locked(category, bytes);
        if (caching_) {
            const std::size_t floats = block_floats(count);
            try {
                free_blocks_[block_key(floats, dtype)].push_back(data);
                cached_bytes_ += floats * element;
                return;
            } catch (...) {  // no room in the free list: give the block to the system
                reserved_ -= floats * element;
            }
        } else {
            reserved_ -= bytes;
        }
    }
    ops_.release(data);
}

void MemoryTracker::account_locked(MemoryCategory category, std::size_t bytes) {
    const auto c = static_cast<std::size_t>(category);
    const bool injected = ctx_.next_allocation_fails();
    if (injected || bytes > capacity_ || total_ > capacity_ - bytes) {
        OomInfo info;
        info.injected = injected;
        info.device = device_;
        info.category = category;
        info.requested_bytes = bytes;
        info.live_bytes = total_;
        info.capacity_bytes = capacity_;
        info.where = where_;
        PD_THROW(OutOfMemory, info);
    }
    live_[c] += bytes;
    total_ += bytes;
    if (live_[c] > peak_[c]) peak_[c] = live_[c];
    sample_locked(category);
}

void MemoryTracker::release(MemoryCategory category, std::size_t bytes) noexcept {
    std::lock_guard lock(mutex_);
    reserved_ -= bytes;
    unaccount_locked(category, bytes);
}

void MemoryTracker::unaccount_locked(MemoryCategory category, std::size_t bytes) noexcept {
    live_[static_cast<std::size_t>(category)] -= bytes;
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

std::size_t MemoryTracker::reserved() const {
    std::lock_guard lock(mutex_);
    return reserved_;
}

std::size_t MemoryTracker::peak_reserved() const {
    std::lock_guard lock(mutex_);
    return peak_reserved_;
}

std::size_t MemoryTracker::system_allocations() const {
    std::lock_guard lock(mutex_);
    return system_allocations_;
}

std::vector<MemorySample> MemoryTracker::take_samples() {
    std::lock_guard lock(mutex_);
    return std::move(samples_);
}

std::vector<MemorySample> MemoryTracker::samples_so_far() const {
    std::lock_guard lock(mutex_);
    return samples_;
}

Buffer::Buffer(MemoryTracker& tracker, MemoryCategory category, std::size_t count, Fill fill,
               DType dtype)
    : category_(category), dtype_(dtype) {
    data_ = tracker.acquire(category, count, fill, dtype);
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
      dtype_(other.dtype_),
      count_(std::exchange(other.count_, 0)),
      data_(std::exchange(other.data_, nullptr)) {}

Buffer& Buffer::operator=(Buffer&& other) noexcept {
    if (this != &other) {
        reset();
        tracker_ = std::exchange(other.tracker_, nullptr);
        category_ = other.category_;
        dtype_ = other.dtype_;
        count_ = std::exchange(other.count_, 0);
        data_ = std::exchange(other.data_, nullptr);
    }
    return *this;
}

void Buffer::reset() noexcept {
    if (tracker_) tracker_->give_back(category_, data_, count_, dtype_);
    tracker_ = nullptr;
    count_ = 0;
    data_ = nullptr;
}

Device::Device(int id, std::size_t capacity, RunContext& ctx)
    : Device(id, capacity, ctx, make_cpu_device_backend()) {}

Device::Device(int id, std::size_t capacity, RunContext& ctx,
               std::unique_ptr<DeviceBackend> backend, std::size_t host_capacity,
               std::size_t nvme_capacity)
    : id_(id),
      backend_(std::move(backend)),
      memory_(id, capacity, ctx, backend_->ops()),
      host_memory_(id, host_capacity, ctx),
      nvme_memory_(id, nvme_capacity, ctx),
      compute_(std::make_unique<Stream>(id, StreamKind::compute, ctx, backend_->make_stream())),
      comm_(std::make_unique<Stream>(id, StreamKind::comm, ctx, backend_->make_stream())),
      // The host's work runs on its own thread, on the CPU whatever the backend.
      host_(std::make_unique<Stream>(id, StreamKind::host, ctx)) {
    host_memory_.mark_as(OffloadDevice::cpu);
    nvme_memory_.mark_as(OffloadDevice::nvme);
}

void Device::synchronize() {
    compute_->synchronize();
    comm_->synchronize();
    host_->synchronize();
}

Device::~Device() = default;

}  // namespace pd
