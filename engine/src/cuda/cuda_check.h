// Checks for CUDA runtime and cuBLAS calls: a failure throws pd::Error naming the call, the
// error and file:line of the call site. Usable from .cpp (host compiler) and .cu (nvcc) files.
#pragma once

#include <cublas_v2.h>
#include <cuda_runtime.h>

#include <string>

#include "cuda/cuda_libraries.h"
#include "pd/error.h"

namespace pd::cuda::detail {

[[noreturn]] inline void throw_cuda_error(cudaError_t status, const char* call, const char* file,
                                          int line) {
    throw Error(std::string(call) + " failed: " + cudaGetErrorName(status) + " (" +
                    cudaGetErrorString(status) + ")",
                file, line);
}

[[noreturn]] inline void throw_cublas_error(cublasStatus_t status, const char* call,
                                            const char* file, int line) {
    const CublasLibrary* lib = load_cublas();
    throw Error(
        std::string(call) + " failed: " +
            (lib ? std::string(lib->status_name(status)) + " (" + lib->status_string(status) + ")"
                 : "cuBLAS status " + std::to_string(static_cast<int>(status))),
        file, line);
}

}  // namespace pd::cuda::detail

// The call is evaluated exactly once.
#define PD_CUDA_CHECK(call)                                                                   \
    do {                                                                                      \
        const cudaError_t pd_cuda_status_ = (call);                                           \
        if (pd_cuda_status_ != cudaSuccess)                                                   \
            ::pd::cuda::detail::throw_cuda_error(pd_cuda_status_, #call, __FILE__, __LINE__); \
    } while (0)

#define PD_CUBLAS_CHECK(call)                                                                     \
    do {                                                                                          \
        const cublasStatus_t pd_cublas_status_ = (call);                                          \
        if (pd_cublas_status_ != CUBLAS_STATUS_SUCCESS)                                           \
            ::pd::cuda::detail::throw_cublas_error(pd_cublas_status_, #call, __FILE__, __LINE__); \
    } while (0)

// After a <<<...>>> launch: reports bad launch configurations (and clears the non-sticky error
// so it is not blamed on a later call). Errors raised while the kernel runs surface later, at
// the next synchronizing call.
#define PD_CUDA_CHECK_LAUNCH()                                                               \
    do {                                                                                     \
        const cudaError_t pd_cuda_status_ = cudaGetLastError();                              \
        if (pd_cuda_status_ != cudaSuccess)                                                  \
            ::pd::cuda::detail::throw_cuda_error(pd_cuda_status_, "kernel launch", __FILE__, \
                                                 __LINE__);                                  \
    } while (0)
