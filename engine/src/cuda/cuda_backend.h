// The CUDA backend: each device of a run is a GPU ordinal, or a virtual device sharing one
// when a run asks for more devices than there are GPUs (each its own stream pair and memory
// budget). Kernels and copies are launched from the engine streams' worker threads onto
// their cudaStream_t; times are CUDA events on those streams.
#pragma once

#include <memory>
#include <string>

#include "backend/device_backend.h"

namespace pd {

// Throws BadInput("backend", ...) naming why when no GPU can be used.
std::unique_ptr<RunBackend> make_cuda_run_backend(const RunConfig& config, RunContext& ctx);

// Why the CUDA backend cannot run on this machine, or empty when it can ("no CUDA GPU:
// cudaGetDeviceCount returned cudaErrorNoDevice (...)"). For the app and the GPU tests.
std::string cuda_unavailable_reason();

}  // namespace pd
