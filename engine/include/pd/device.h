// A device: one participant with a memory budget and its streams (compute and comm).
#pragma once

#include <array>
#include <cstddef>
#include <memory>
#include <mutex>
#include <span>
#include <vector>

#include "pd/memory_category.h"
#include "pd/stream.h"
#include "pd/trace.h"

namespace pd {

class RunContext;

// Accounts every live byte of one device by category. Allocation past capacity throws
// OutOfMemory; every change is sampled with the calling stream's clock.
class MemoryTracker {
  public:
    MemoryTracker(int device, std::size_t capacity, const RunContext& ctx);

    void allocate(MemoryCategory category, std::size_t bytes);
    void release(MemoryCategory category, std::size_t bytes) noexcept;

    std::size_t capacity() const { return capacity_; }
    std::size_t live(MemoryCategory category) const;
    std::size_t live_total() const;
    std::size_t peak(MemoryCategory category) const;
    std::vector<MemorySample> take_samples();

  private:
    void sample_locked(MemoryCategory category);

    int device_;
    std::size_t capacity_;
    const RunContext& ctx_;
    mutable std::mutex mutex_;
    std::array<std::size_t, kMemoryCategoryCount> live_{};
    std::array<std::size_t, kMemoryCategoryCount> peak_{};
    std::size_t total_ = 0;
    std::vector<MemorySample> samples_;
};

// Float storage accounted on a device for as long as it lives.
class Buffer {
  public:
    Buffer() = default;
    Buffer(MemoryTracker& tracker, MemoryCategory category, std::size_t count);
    Buffer(Buffer&& other) noexcept;
    Buffer& operator=(Buffer&& other) noexcept;
    Buffer(const Buffer&) = delete;
    Buffer& operator=(const Buffer&) = delete;
    ~Buffer() { reset(); }

    void reset() noexcept;
    float* data() { return data_.get(); }
    const float* data() const { return data_.get(); }
    std::size_t size() const { return count_; }
    bool empty() const { return count_ == 0; }
    std::span<float> span() { return {data_.get(), count_}; }
    std::span<const float> span() const { return {data_.get(), count_}; }

  private:
    MemoryTracker* tracker_ = nullptr;
    MemoryCategory category_ = MemoryCategory::workspace;
    std::size_t count_ = 0;
    std::unique_ptr<float[]> data_;
};

class Device {
  public:
    Device(int id, std::size_t capacity, RunContext& ctx);
    ~Device();
    Device(const Device&) = delete;
    Device& operator=(const Device&) = delete;

    int id() const { return id_; }
    MemoryTracker& memory() { return memory_; }
    const MemoryTracker& memory() const { return memory_; }
    Stream& compute() { return *compute_; }
    Stream& comm() { return *comm_; }
    Stream& stream(StreamKind kind) { return kind == StreamKind::compute ? *compute_ : *comm_; }

  private:
    int id_;
    MemoryTracker memory_;
    std::unique_ptr<Stream> compute_;
    std::unique_ptr<Stream> comm_;
};

}  // namespace pd
