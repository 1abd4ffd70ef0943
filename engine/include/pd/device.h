// A device: one participant with a memory budget and its streams (compute and comm).
#pragma once

#include <array>
#include <cstddef>
#include <memory>
#include <mutex>
#include <vector>

#include "pd/memory_category.h"
#include "pd/stream.h"
#include "pd/trace.h"

namespace pd {

class RunContext;
class DeviceBackend;
class DeviceOps;

// Accounts every live byte of one device by category. Allocation past capacity throws
// OutOfMemory; every change is sampled with the calling stream's clock.
class MemoryTracker {
  public:
    MemoryTracker(int device, std::size_t capacity, const RunContext& ctx, DeviceOps& ops);
    MemoryTracker(int device, std::size_t capacity, const RunContext& ctx);  // host memory

    void allocate(MemoryCategory category, std::size_t bytes);
    void release(MemoryCategory category, std::size_t bytes) noexcept;

    std::size_t capacity() const { return capacity_; }
    std::size_t live(MemoryCategory category) const;
    std::size_t live_total() const;
    std::size_t peak(MemoryCategory category) const;
    std::vector<MemorySample> take_samples();
    // Where this device's buffers live and its kernels run.
    DeviceOps& ops() const { return ops_; }

  private:
    void sample_locked(MemoryCategory category);

    int device_;
    std::size_t capacity_;
    const RunContext& ctx_;
    DeviceOps& ops_;
    mutable std::mutex mutex_;
    std::array<std::size_t, kMemoryCategoryCount> live_{};
    std::array<std::size_t, kMemoryCategoryCount> peak_{};
    std::size_t total_ = 0;
    std::vector<MemorySample> samples_;
};

// Float storage in a device's memory (host memory on the CPU backend, GPU memory on CUDA),
// accounted for as long as it lives. Its contents are reached through DeviceOps.
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
    float* data() { return data_; }
    const float* data() const { return data_; }
    std::size_t size() const { return count_; }
    bool empty() const { return count_ == 0; }
    // A copy of the contents in host memory (waits for the device).
    std::vector<float> to_host() const;

  private:
    MemoryTracker* tracker_ = nullptr;
    MemoryCategory category_ = MemoryCategory::workspace;
    std::size_t count_ = 0;
    float* data_ = nullptr;
};

class Device {
  public:
    Device(int id, std::size_t capacity, RunContext& ctx);  // on the CPU backend
    Device(int id, std::size_t capacity, RunContext& ctx, std::unique_ptr<DeviceBackend> backend);
    ~Device();
    Device(const Device&) = delete;
    Device& operator=(const Device&) = delete;

    int id() const { return id_; }
    DeviceBackend& backend() { return *backend_; }
    DeviceOps& ops() { return memory_.ops(); }
    MemoryTracker& memory() { return memory_; }
    const MemoryTracker& memory() const { return memory_; }
    Stream& compute() { return *compute_; }
    Stream& comm() { return *comm_; }
    Stream& stream(StreamKind kind) { return kind == StreamKind::compute ? *compute_ : *comm_; }

  private:
    int id_;
    std::unique_ptr<DeviceBackend> backend_;  // outlives memory_ and the streams
    MemoryTracker memory_;
    std::unique_ptr<Stream> compute_;
    std::unique_ptr<Stream> comm_;
};

}  // namespace pd
