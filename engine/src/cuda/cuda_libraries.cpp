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

// A library's function table, opened once per process: `bind_all` fills the table.
template <class Table>
struct LoadedLibrary {
    Table table;
    std::string error;
    bool ok = false;

    template <class BindAll>
    LoadedLibrary(const std::string& versioned, const std::string& plain, BindAll bind_all) {
        void* h = open_library(versioned, plain, error);
        if (!h) {
            error = "cannot open " + versioned + " (" + error + ")";
            return;
        }
        ok = bind_all(h, table, error);
        if (!ok) error = versioned + ": " + error;
    }

    const Table* get(std::string* why) const {
        if (!ok && why) *why = error;
        return ok ? &table : nullptr;
    }
};

const LoadedLibrary<CublasLibrary>& loaded_cublas() {
    static const LoadedLibrary<CublasLibrary> loaded(
        "libcublas.so." + std::to_string(CUBLAS_VER_MAJOR), "libcublas.so",
        [](void* h, CublasLibrary& t, std::string& e) {
            return bind(h, "cublasCreate_v2", t.create, e) &&
                   bind(h, "cublasDestroy_v2", t.destroy, e) &&
                   bind(h, "cublasSetStream_v2", t.set_stream, e) &&
                   bind(h, "cublasSetMathMode", t.set_math_mode, e) &&
                   bind(h, "cublasSgemm_v2", t.sgemm, e) &&
                   bind(h, "cublasGetStatusName", t.status_name, e) &&
                   bind(h, "cublasGetStatusString", t.status_string, e);
        });
    return loaded;
}

#if PD_HAVE_NCCL
const LoadedLibrary<NcclLibrary>& loaded_nccl() {
    static const LoadedLibrary<NcclLibrary> loaded(
        "libnccl.so." + std::to_string(NCCL_MAJOR), "libnccl.so",
        [](void* h, NcclLibrary& t, std::string& e) {
            return bind(h, "ncclCommInitAll", t.init_all, e) &&
                   bind(h, "ncclCommDestroy", t.destroy, e) &&
                   bind(h, "ncclCommAbort", t.abort, e) &&
                   bind(h, "ncclCommGetAsyncError", t.async_error, e) &&
                   bind(h, "ncclGetErrorString", t.error_string, e) &&
                   bind(h, "ncclGroupStart", t.group_start, e) &&
                   bind(h, "ncclGroupEnd", t.group_end, e) && bind(h, "ncclSend", t.send, e) &&
                   bind(h, "ncclRecv", t.recv, e) && bind(h, "ncclAllReduce", t.all_reduce, e) &&
                   bind(h, "ncclReduceScatter", t.reduce_scatter, e) &&
                   bind(h, "ncclAllGather", t.all_gather, e) &&
                   bind(h, "ncclBroadcast", t.broadcast, e);
        });
    return loaded;
}
#endif

}  // namespace

const CublasLibrary* load_cublas(std::string* why) {
    return loaded_cublas().get(why);
}

const CublasLibrary& cublas() {
    std::string why;
    if (const CublasLibrary* table = load_cublas(&why)) return *table;
    throw Error("cuBLAS is not available: " + why, __FILE__, __LINE__);
}

#if PD_HAVE_NCCL
const NcclLibrary* load_nccl(std::string* why) {
    return loaded_nccl().get(why);
}

const NcclLibrary& nccl() {
    std::string why;
    if (const NcclLibrary* table = load_nccl(&why)) return *table;
    throw Error("NCCL is not available: " + why, __FILE__, __LINE__);
}
#endif

}  // namespace pd::cuda
