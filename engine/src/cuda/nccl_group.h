// NCCL for groups whose devices are each their own GPU (NCCL refuses two ranks on one GPU, so
// virtual devices keep the communicator's own copies). libnccl is opened at run time, like
// cuBLAS, so nothing links it.
#pragma once

#include <cuda_runtime.h>

#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "backend/device_backend.h"

namespace pd::cuda {

// Every NCCL communicator of a run, so that a failure or a cancel anywhere aborts them all:
// an NCCL kernel waiting for a peer that will never call would otherwise hold its GPU queue.
class NcclRegistry {
  public:
    void add(void* comm);
    void remove(void* comm);
    bool empty() const;
    bool aborted() const;
    // Aborts every registered communicator once (ncclCommAbort); later calls do nothing.
    void abort_all() noexcept;
    // The first asynchronous error a communicator reports ("ncclSystemError: ..."), or empty.
    std::string async_error() const;

  private:
    mutable std::mutex mutex_;
    std::vector<void*> comms_;
    bool aborted_ = false;
};

// Why NCCL cannot be used here (library missing), or empty.
std::string nccl_unavailable_reason();

// Rank r runs on gpus[r] (all different). `stream_of(rank)` returns the calling thread's CUDA
// stream for that rank, or throws when the thread is not one of its streams.
std::unique_ptr<GroupCollectives> make_nccl_group(const std::vector<int>& gpus, bool native,
                                                  NcclRegistry& registry,
                                                  std::function<cudaStream_t(int rank)> stream_of);

}  // namespace pd::cuda
