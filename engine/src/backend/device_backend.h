// What a backend provides for one device of a run: its kernels and memory (DeviceOps), what
// each of its streams needs beyond a worker thread (StreamBackend), and how the times it
// recorded become nanoseconds of the run's wall clock.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "backend/device_ops.h"
#include "pd/trace.h"

namespace pd {

class RunContext;
struct RunConfig;

// A device queue behind a Stream (CUDA: a cudaStream_t). The Stream's worker thread enqueues
// into it; times are marks in the queue, resolved once the queue drained.
class StreamBackend {
  public:
    virtual ~StreamBackend() = default;
    // On the stream's worker thread, before its first task.
    virtual void bind_thread() = 0;
    // A placeholder time (negative) for "when the device reaches this point of the queue".
    virtual std::int64_t mark() = 0;
    virtual DeviceEvent record() = 0;
    virtual void wait(const DeviceEvent& event) = 0;
    // Blocks the caller until the queue drained; throws the device's error if it failed.
    virtual void synchronize() = 0;
};

// Collectives over a group of devices by a library of the backend's (NCCL when each device
// is its own GPU), one call per rank, made on that rank's stream thread. The communicator's
// explicit ring uses `exchange` for each step (so every phase is still a traced event);
// `native` groups run whole collectives in one call instead (reduce-scatter and all-gather
// need equal chunks: count divisible by the group size).
class GroupCollectives {
  public:
    virtual ~GroupCollectives() = default;
    virtual bool native() const = 0;
    // One ring step: send to rank `to` and receive `recv_count` floats from rank `from`.
    virtual void exchange(int rank, const float* send, std::size_t send_count, int to, float* recv,
                          std::size_t recv_count, int from) = 0;
    virtual void send(int rank, const float* data, std::size_t count, int to) = 0;
    virtual void recv(int rank, float* data, std::size_t count, int from) = 0;
    virtual void all_reduce(int rank, float* data, std::size_t count) = 0;
    virtual void reduce_scatter(int rank, float* data, std::size_t count) = 0;
    virtual void all_gather(int rank, float* data, std::size_t count) = 0;
    virtual void broadcast(int rank, float* data, std::size_t count, int root) = 0;
};

class DeviceBackend {
  public:
    virtual ~DeviceBackend() = default;
    // "cpu", or the GPU and whether it is shared ("cuda:0 NVIDIA H200, virtual device 2 of 4").
    virtual std::string name() const = 0;
    virtual DeviceOps& ops() = 0;
    // Null when the stream's thread is the device (CPU).
    virtual std::unique_ptr<StreamBackend> make_stream() = 0;
    // Replaces mark placeholders by ns on the run's clock; drops waits that did not wait.
    virtual void resolve_times(std::vector<TraceEvent>& /*events*/,
                               std::vector<CollectiveRecord>& /*collectives*/,
                               std::vector<MemorySample>& /*samples*/) {}
    // A library group over `members` (this device first or not, in rank order), or null when
    // the backend has none for them: the communicator then moves data itself (transport).
    virtual std::unique_ptr<GroupCollectives> make_group_collectives(
        const std::vector<DeviceBackend*>& /*members*/) {
        return nullptr;
    }
    // Free and total memory of the GPU behind this device, when there is one.
    virtual std::optional<std::pair<std::size_t, std::size_t>> physical_memory() const {
        return std::nullopt;
    }
};

// Creates the devices of one run for the configured backend (shared state such as CUDA
// library handles lives here). Throws BadInput when the backend is not available.
class RunBackend {
  public:
    virtual ~RunBackend() = default;
    virtual std::unique_ptr<DeviceBackend> make_device(int index) = 0;
};

std::unique_ptr<RunBackend> make_run_backend(const RunConfig& config, RunContext& ctx);
// How a CPU device rounds every matrix product's two inputs before the product, whose sums stay
// fp32 (torch.set_float32_matmul_precision): not at all ('highest'), to TF32 ('high', as tensor
// cores take float32 products under allow_tf32; pd::round_to_tf32), or to bf16 ('medium').
enum class ProductInputs { fp32, tf32, bf16 };
// A CPU device whose kernels use `intra_op_threads` threads (the stream's own and helpers).
std::unique_ptr<DeviceBackend> make_cpu_device_backend(int intra_op_threads = 1,
                                                       ProductInputs inputs = ProductInputs::fp32);
// The CPU's kernels and host memory; stateless, so one serves every host-memory tracker.
DeviceOps& shared_cpu_ops();

}  // namespace pd
