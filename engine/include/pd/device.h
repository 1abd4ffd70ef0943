// A device: one participant with a memory budget and its streams (compute and comm).
#pragma once

#include <array>
#include <cstddef>
#include <memory>
#include <mutex>
#include <unordered_map>
#include <vector>

#include "pd/dtype.h"
#include "pd/memory_category.h"
#include "pd/stream.h"
#include "pd/trace.h"

namespace pd {

class RunContext;
class DeviceBackend;
class DeviceOps;

// What a new buffer holds: zeros, or whatever its block held before (for a buffer that its
// first kernel overwrites whole).
enum class Fill { zero, none };

// Accounts every live byte of one device by category. Allocation past capacity throws
// OutOfMemory; every change is sampled with the calling stream's clock.
//
// It also holds the device's caching allocator (PyTorch's idea): a released buffer's block
// goes to a free list by size and is handed out again, so a training step in steady state
// neither asks the system for memory nor page-faults. Live bytes (what the memory bars show
// and what capacity limits) count what buffers asked for; *reserved* bytes count the blocks
// held, live or cached, as torch.cuda.memory_reserved does. Where a new block would take
// reserved past capacity, the cache is emptied first (PyTorch frees its cached blocks and
// retries the same way). Backends that cannot reuse a block at once keep no cache.
class MemoryTracker {
  public:
    MemoryTracker(int device, std::size_t capacity, const RunContext& ctx, DeviceOps& ops);
    MemoryTracker(int device, std::size_t capacity, const RunContext& ctx);  // host memory
    ~MemoryTracker();
    MemoryTracker(const MemoryTracker&) = delete;
    MemoryTracker& operator=(const MemoryTracker&) = delete;

    // Accounting only, for memory that lives elsewhere (a collective's staging payload).
    void allocate(MemoryCategory category, std::size_t bytes);
    void release(MemoryCategory category, std::size_t bytes) noexcept;
    // Storage for `count` floats standing for `count` elements of `dtype`, accounted at
    // bytes_of(dtype) each (see pd/dtype.h), and its return (with the same dtype).
    float* acquire(MemoryCategory category, std::size_t count, Fill fill,
                   DType dtype = DType::fp32);
    void give_back(MemoryCategory category, float* data, std::size_t count,
                   DType dtype = DType::fp32) noexcept;

    std::size_t capacity() const { return capacity_; }
    // A device's share of host memory (ZeRO-Offload) or of NVMe (ZeRO-Infinity): its
    // out-of-memory errors say so.
    void mark_as(OffloadDevice where) { where_ = where; }
    std::size_t live(MemoryCategory category) const;
    std::size_t live_total() const;
    std::size_t peak(MemoryCategory category) const;
    std::size_t reserved() const;
    std::size_t peak_reserved() const;
    // Blocks the system really handed out (a cache hit asks for none).
    std::size_t system_allocations() const;
    std::vector<MemorySample> take_samples();
    std::vector<MemorySample> samples_so_far() const;  // a copy, while the run goes on
    // Where this device's buffers live and its kernels run.
    DeviceOps& ops() const { return ops_; }

  private:
    void sample_locked(MemoryCategory category);
    void account_locked(MemoryCategory category, std::size_t bytes);
    void unaccount_locked(MemoryCategory category, std::size_t bytes) noexcept;
    void empty_cache_locked() noexcept;

    int device_;
    OffloadDevice where_ = OffloadDevice::none;  // none: the device's own memory
    std::size_t capacity_;
    const RunContext& ctx_;
    DeviceOps& ops_;
    mutable std::mutex mutex_;
    std::array<std::size_t, kMemoryCategoryCount> live_{};
    std::array<std::size_t, kMemoryCategoryCount> peak_{};
    std::size_t total_ = 0;
    std::vector<MemorySample> samples_;
    bool caching_;
    // By block: its floats and whether it holds bf16 (see block_key in device.cpp).
    std::unordered_map<std::size_t, std::vector<float*>> free_blocks_;
    std::size_t cached_bytes_ = 0;
    std::size_t reserved_ = 0;
    std::size_t peak_reserved_ = 0;
    std::size_t system_allocations_ = 0;
};

// Float storage in a device's memory (host memory on the CPU backend, GPU memory on CUDA),
// accounted for as long as it lives. Its contents are reached through DeviceOps. A bf16
// buffer is float storage holding bf16 values only, accounted at 2 bytes an element.
class Buffer {
  public:
    Buffer() = default;
    Buffer(MemoryTracker& tracker, MemoryCategory category, std::size_t count,
           Fill fill = Fill::zero, DType dtype = DType::fp32);
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
    DType dtype() const { return dtype_; }
    std::size_t bytes() const { return count_ * bytes_of(dtype_); }
    // A copy of the contents in host memory (waits for the device).
    std::vector<float> to_host() const;

  private:
    MemoryTracker* tracker_ = nullptr;
    MemoryCategory category_ = MemoryCategory::workspace;
    DType dtype_ = DType::fp32;
    std::size_t count_ = 0;
    float* data_ = nullptr;
};

class Device {
  public:
    // `host_capacity`, `nvme_capacity`: its shares of host memory and NVMe (what it
    // offloads; 0: none).
    Device(int id, std::size_t capacity, RunContext& ctx);  // on the CPU backend
    Device(int id, std::size_t capacity, RunContext& ctx, std::unique_ptr<DeviceBackend> backend,
           std::size_t host_capacity = 0, std::size_t nvme_capacity = 0);
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
    // The host's side of this device: PCIe copies and the CPU's optimizer step (ZeRO-Offload).
    Stream& host() { return *host_; }
    Stream& stream(StreamKind kind) {
        return kind == StreamKind::compute ? *compute_ : kind == StreamKind::comm ? *comm_ : *host_;
    }
    // Host memory this device's offloaded state lives in (its own budget and bar).
    MemoryTracker& host_memory() { return host_memory_; }
    const MemoryTracker& host_memory() const { return host_memory_; }
    // NVMe this device's ZeRO-Infinity state lives in (its own budget and bar).
    MemoryTracker& nvme_memory() { return nvme_memory_; }
    const MemoryTracker& nvme_memory() const { return nvme_memory_; }
    // Finishes the work of every stream.
    void synchronize();

  private:
    int id_;
    std::unique_ptr<DeviceBackend> backend_;  // outlives memory_ and the streams
    MemoryTracker memory_;
    MemoryTracker host_memory_;
    MemoryTracker nvme_memory_;
    std::unique_ptr<Stream> compute_;
    std::unique_ptr<Stream> comm_;
    std::unique_ptr<Stream> host_;
};

}  // namespace pd
