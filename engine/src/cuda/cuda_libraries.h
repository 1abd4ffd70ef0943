// cuBLAS and NCCL are opened when a CUDA run starts instead of being linked, so the
// application, its tools and its package start on machines without them; the CUDA runtime is
// linked statically and finds the driver at run time. Each table is loaded once per process.
#pragma once

#include <cublas_v2.h>
#if PD_HAVE_NCCL
#include <nccl.h>
#endif

#include <string>

namespace pd::cuda {

struct CublasLibrary {
    decltype(&cublasCreate_v2) create = nullptr;
    decltype(&cublasDestroy_v2) destroy = nullptr;
    decltype(&cublasSetStream_v2) set_stream = nullptr;
    decltype(&cublasSetMathMode) set_math_mode = nullptr;
    decltype(&cublasSgemm_v2) sgemm = nullptr;
    decltype(&cublasGetStatusName) status_name = nullptr;
    decltype(&cublasGetStatusString) status_string = nullptr;
};

// Null when the library cannot be opened; `why` then says which file and why not.
const CublasLibrary* load_cublas(std::string* why = nullptr);
// Throws pd::Error naming the library when it cannot be opened.
const CublasLibrary& cublas();

#if PD_HAVE_NCCL
struct NcclLibrary {
    decltype(&ncclCommInitAll) init_all = nullptr;
    decltype(&ncclCommDestroy) destroy = nullptr;
    decltype(&ncclCommAbort) abort = nullptr;
    decltype(&ncclCommGetAsyncError) async_error = nullptr;
    decltype(&ncclGetErrorString) error_string = nullptr;
    decltype(&ncclGroupStart) group_start = nullptr;
    decltype(&ncclGroupEnd) group_end = nullptr;
    decltype(&ncclSend) send = nullptr;
    decltype(&ncclRecv) recv = nullptr;
    decltype(&ncclAllReduce) all_reduce = nullptr;
    decltype(&ncclReduceScatter) reduce_scatter = nullptr;
    decltype(&ncclAllGather) all_gather = nullptr;
    decltype(&ncclBroadcast) broadcast = nullptr;
};
const NcclLibrary* load_nccl(std::string* why = nullptr);
const NcclLibrary& nccl();
#endif

}  // namespace pd::cuda
