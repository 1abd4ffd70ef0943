// cuBLAS and NCCL are opened when a CUDA run starts instead of being linked, so the
// application, its tools and its package start on machines without them; the CUDA runtime is
// linked statically and finds the driver at run time. Each table is loaded once per process.
#pragma once

#include <cublas_v2.h>

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

}  // namespace pd::cuda
