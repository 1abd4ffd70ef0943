#include "cuda/cuda_libraries.h"

#include <dlfcn.h>

#include "pd/error.h"

namespace pd::cuda {

namespace {

// Opens the library of this toolkit's major version, then any version; keeps it for the
// process (its functions are used until exit).
void* open_library(const std::string& versioned, const std::string& plain, std::string& error) {
    if (void* handle = dlopen(versioned.c_str(), RTLD_NOW | RTLD_LOCAL)) return handle;
    error = dlerror();
    if (void* handle = dlopen(plain.c_str(), RTLD_NOW | RTLD_LOCAL)) return handle;
    return nullptr;
}

template <class F>
bool bind(void* handle, const char* name, F& slot, std::string& error) {
    slot = reinterpret_cast<F>(dlsym(handle, name));
    if (!slot) error = std::string("symbol ") + name + " missing";
    return slot != nullptr;
}

struct LoadedCublas {
    CublasLibrary table;
    std::string error;
    bool ok = false;

    LoadedCublas() {
        const std::string name = "libcublas.so." + std::to_string(CUBLAS_VER_MAJOR);
        void* h = open_library(name, "libcublas.so", error);
        if (!h) {
            error = "cannot open " + name + " (" + error + ")";
            return;
        }
        ok = bind(h, "cublasCreate_v2", table.create, error) &&
             bind(h, "cublasDestroy_v2", table.destroy, error) &&
             bind(h, "cublasSetStream_v2", table.set_stream, error) &&
             bind(h, "cublasSetMathMode", table.set_math_mode, error) &&
             bind(h, "cublasSgemm_v2", table.sgemm, error) &&
             bind(h, "cublasGetStatusName", table.status_name, error) &&
             bind(h, "cublasGetStatusString", table.status_string, error);
        if (!ok) error = name + ": " + error;
    }
};

const LoadedCublas& loaded_cublas() {
    static const LoadedCublas loaded;
    return loaded;
}

}  // namespace

const CublasLibrary* load_cublas(std::string* why) {
    const LoadedCublas& l = loaded_cublas();
    if (!l.ok && why) *why = l.error;
    return l.ok ? &l.table : nullptr;
}

const CublasLibrary& cublas() {
    std::string why;
    if (const CublasLibrary* table = load_cublas(&why)) return *table;
    throw Error("cuBLAS is not available: " + why, __FILE__, __LINE__);
}

}  // namespace pd::cuda
