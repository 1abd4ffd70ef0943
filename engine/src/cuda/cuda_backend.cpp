#include "cuda/cuda_backend.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <mutex>
#include <optional>
#include <thread>
#include <vector>

#include "cuda/cuda_check.h"
#include "cuda/cuda_kernels.h"
#include "cuda/cuda_libraries.h"
#if PD_HAVE_NCCL
#include "cuda/nccl_group.h"
#endif
#include "pd/error.h"
#include "pd/optimizer.h"
#include "pd/run_config.h"
#include "pd/run_context.h"

namespace pd {

namespace {

// Marks: CUDA events recorded on a stream, standing for "when the GPU got here", resolved to
// the run's clock once every stream synchronized. One table per run so a mark taken on any
// stream resolves the same way.
class MarkTable {
  public:
    std::int64_t record(int gpu, cudaStream_t stream) {
        cudaEvent_t event = nullptr;
        PD_CUDA_CHECK(cudaEventCreate(&event));
        const cudaError_t status = cudaEventRecord(event, stream);
        if (status != cudaSuccess) {
            cudaEventDestroy(event);
            PD_CUDA_CHECK(status);
        }
        std::lock_guard lock(mutex_);
        marks_.push_back({event, gpu});
        return -static_cast<std::int64_t>(marks_.size());  // -(index + 1)
    }

    // Wall ns of the run for a time that may be a mark (negative); other times pass through.
    std::int64_t resolve(std::int64_t t, const std::vector<cudaEvent_t>& bases,
                         const std::vector<std::int64_t>& base_wall_ns) {
        if (t >= 0) return t;
        std::lock_guard lock(mutex_);
        const auto index = static_cast<std::size_t>(-t - 1);
        if (index >= marks_.size()) return 0;
        const Mark& m = marks_[index];
        float ms = 0.0f;
        // A mark never reached (the run aborted before it) has no time: put it at the base.
        if (cudaEventElapsedTime(&ms, bases[static_cast<std::size_t>(m.gpu)], m.event) !=
            cudaSuccess) {
            cudaGetLastError();
            ms = 0.0f;
        }
        return base_wall_ns[static_cast<std::size_t>(m.gpu)] +
               static_cast<std::int64_t>(std::llround(static_cast<double>(ms) * 1e6));
    }

    ~MarkTable() {
        for (const Mark& m : marks_) cudaEventDestroy(m.event);
    }

  private:
    struct Mark {
        cudaEvent_t event;
        int gpu;
    };
    std::mutex mutex_;
    std::vector<Mark> marks_;
};

struct SharedState {
    RunContext* ctx = nullptr;
    int gpus = 0;
    bool tf32 = false;
    bool native_collectives = false;
#if PD_HAVE_NCCL
    cuda::NcclRegistry nccl;
#endif
    MarkTable marks;
    std::vector<cudaEvent_t> bases;          // per GPU: the run's time origin on that GPU
    std::vector<std::int64_t> base_wall_ns;  // the run's wall clock at that origin
    std::vector<std::string> gpu_names;
};

// Makes `gpu` current for a host-side call and restores the caller's device afterwards, so a
// host call never leaves a worker thread on another GPU.
class ScopedDevice {
  public:
    explicit ScopedDevice(int gpu) {
        if (cudaGetDevice(&previous_) != cudaSuccess) {
            cudaGetLastError();
            previous_ = -1;
        }
        if (previous_ != gpu) PD_CUDA_CHECK(cudaSetDevice(gpu));
    }
    ~ScopedDevice() {
        if (previous_ >= 0) cudaSetDevice(previous_);
    }
    ScopedDevice(const ScopedDevice&) = delete;
    ScopedDevice& operator=(const ScopedDevice&) = delete;

  private:
    int previous_ = -1;
};

class CudaStreamBackend;
// The CUDA stream of the engine stream whose worker thread this is (null on other threads).
thread_local CudaStreamBackend* tl_stream = nullptr;

class CudaStreamBackend final : public StreamBackend {
  public:
    CudaStreamBackend(SharedState& shared, int gpu) : shared_(shared), gpu_(gpu) {
        PD_CUDA_CHECK(cudaSetDevice(gpu_));
        PD_CUDA_CHECK(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking));
        PD_CUBLAS_CHECK(cuda::cublas().create(&cublas_));
        PD_CUBLAS_CHECK(cuda::cublas().set_stream(cublas_, stream_));
        // The default math mode computes fp32 products in fp32 (no TF32 since cuBLAS 11), so
        // they match the CPU run; TF32 tensor cores only when asked for.
        PD_CUBLAS_CHECK(cuda::cublas().set_math_mode(
            cublas_, shared_.tf32 ? CUBLAS_TF32_TENSOR_OP_MATH : CUBLAS_DEFAULT_MATH));
    }
    ~CudaStreamBackend() override {
        cudaSetDevice(gpu_);
        cudaStreamSynchronize(stream_);
        cuda::cublas().destroy(cublas_);
        cudaStreamDestroy(stream_);
    }

    void bind_thread() override {
        PD_CUDA_CHECK(cudaSetDevice(gpu_));
        tl_stream = this;
    }
    std::int64_t mark() override { return shared_.marks.record(gpu_, stream_); }
    DeviceEvent record() override {
        cudaEvent_t event = nullptr;
        PD_CUDA_CHECK(cudaSetDevice(gpu_));
        PD_CUDA_CHECK(cudaEventCreateWithFlags(&event, cudaEventDisableTiming));
        std::shared_ptr<void> owned(event,
                                    [](void* e) { cudaEventDestroy(static_cast<cudaEvent_t>(e)); });
        PD_CUDA_CHECK(cudaEventRecord(event, stream_));
        return owned;
    }
    void wait(const DeviceEvent& event) override {
        if (event)
            PD_CUDA_CHECK(cudaStreamWaitEvent(stream_, static_cast<cudaEvent_t>(event.get()), 0));
    }
    void synchronize() override {
        ScopedDevice on(gpu_);
        drain();
    }
    // Waits until the queue is empty. With NCCL in the run, an NCCL kernel may wait for a
    // peer that failed and will never call: then poll, and abort every communicator once the
    // run is aborted or NCCL reports an error, so the queue drains instead of hanging.
    void drain() {
#if PD_HAVE_NCCL
        if (!shared_.nccl.empty()) {
            for (;;) {
                const cudaError_t status = cudaStreamQuery(stream_);
                if (status == cudaSuccess) return;
                if (status != cudaErrorNotReady) PD_CUDA_CHECK(status);
                if (const std::string error = shared_.nccl.async_error(); !error.empty())
                    shared_.ctx->abort(
                        std::make_exception_ptr(Error("NCCL: " + error, __FILE__, __LINE__)));
                if (shared_.ctx->aborted()) shared_.nccl.abort_all();
                std::this_thread::sleep_for(std::chrono::microseconds(100));
            }
        }
#endif
        PD_CUDA_CHECK(cudaStreamSynchronize(stream_));
    }

    int gpu() const {
        return gpu_;
    }
    cudaStream_t stream() const {
        return stream_;
    }
    cublasHandle_t cublas() const {
        return cublas_;
    }

  private:
    SharedState& shared_;
    int gpu_;
    cudaStream_t stream_ = nullptr;
    cublasHandle_t cublas_ = nullptr;
};

// Kernels and memory of one device on its GPU. On a device stream's thread everything is
// stream-ordered (cudaMallocAsync / cudaFreeAsync, async copies, kernels); on the host
// (setup, reading results, teardown, all after the streams synchronized) the plain
// synchronous calls are used and kernels are refused.
class CudaOps final : public DeviceOps {
  public:
    explicit CudaOps(int gpu) : gpu_(gpu) {}

    float* allocate(std::size_t count) override {
        return static_cast<float*>(
            allocate_zeroed(std::max<std::size_t>(count, 1) * sizeof(float)));
    }
    void release(float* data) noexcept override {
        if (!data) return;
        if (CudaStreamBackend* s = stream()) {
            cudaFreeAsync(data, s->stream());
            return;
        }
        try {
            ScopedDevice on(gpu_);
            cudaFree(data);  // host side: the streams are idle
        } catch (...) {
            // Nothing to do in a destructor: the context is gone with the process.
        }
    }
    void copy(float* dst, const float* src, std::size_t count) override {
        if (!count) return;
        PD_CUDA_CHECK(cudaMemcpyAsync(dst, src, count * sizeof(float), cudaMemcpyDefault,
                                      on_stream("copy").stream()));
    }
    void fill_zero(float* dst, std::size_t count) override {
        if (!count) return;
        PD_CUDA_CHECK(cudaMemsetAsync(dst, 0, count * sizeof(float), on_stream("fill").stream()));
    }
    void upload(float* dst, const float* host, std::size_t count) override {
        if (!count) return;
        // From pageable memory the copy has taken the host data when it returns.
        if (CudaStreamBackend* s = stream())
            PD_CUDA_CHECK(cudaMemcpyAsync(dst, host, count * sizeof(float), cudaMemcpyHostToDevice,
                                          s->stream()));
        else {
            ScopedDevice on(gpu_);
            PD_CUDA_CHECK(cudaMemcpy(dst, host, count * sizeof(float), cudaMemcpyHostToDevice));
        }
    }
    void download(float* host, const float* src, std::size_t count) override {
        if (!count) return;
        if (CudaStreamBackend* s = stream()) {
            PD_CUDA_CHECK(cudaMemcpyAsync(host, src, count * sizeof(float), cudaMemcpyDeviceToHost,
                                          s->stream()));
            s->drain();
        } else {
            ScopedDevice on(gpu_);
            PD_CUDA_CHECK(cudaMemcpy(host, src, count * sizeof(float), cudaMemcpyDeviceToHost));
        }
    }
    void add(float* y, const float* x, std::size_t count) override {
        cuda::add_inplace(on_stream("add").stream(), y, x, count);
    }
    // Mixed precision runs on the CPU backend only (validate() refuses it here).
    void round_to(DType dtype, float*, std::size_t) override {
        if (dtype == DType::fp32 || dtype == DType::int8) return;
        throw Error(std::string("precision '") + std::string(name_of(dtype)) +
                        "-mixed' is implemented on the CPU backend only",
                    __FILE__, __LINE__);
    }
    void gemm(bool trans_a, bool trans_b, int m, int n, int k, float alpha, const float* a,
              const float* b, float beta, float* c) override {
        cuda::gemm(on_stream("gemm").cublas(), trans_a, trans_b, m, n, k, alpha, a, b, beta, c);
    }
    void linear_forward(const float* x, const float* w, const float* bias, int rows, int in,
                        int out, float* y) override {
        CudaStreamBackend& s = on_stream("linear forward");
        cuda::linear_forward(s.cublas(), s.stream(), x, w, bias, rows, in, out, y);
    }
    void linear_backward(const float* x, const float* w, const float* dy, int rows, int in, int out,
                         float* dw, float* dbias, float* dx, GradWrite write) override {
        CudaStreamBackend& s = on_stream("linear backward");
        cuda::linear_backward(s.cublas(), s.stream(), x, w, dy, rows, in, out, dw, dbias, dx,
                              write == GradWrite::add);
    }
    void gelu_forward(const float* a, float* g, std::size_t n) override {
        cuda::gelu_forward(on_stream("gelu").stream(), a, g, n);
    }
    void gelu_backward(const float* a, const float* dg, float* da, std::size_t n) override {
        cuda::gelu_backward(on_stream("gelu backward").stream(), a, dg, da, n);
    }
    void softmax_cross_entropy(const float* logits, const float* labels, int rows, int classes,
                               float scale, float* dlogits, double* loss_sum) override {
        CudaStreamBackend& s = on_stream("softmax cross-entropy");
        if (loss_sum) {
            cuda::softmax_cross_entropy(s.stream(), logits, labels, rows, classes, scale, dlogits,
                                        loss_sum);
            return;
        }
        // Not counted (a tensor-parallel peer's replicated loss): sum into scratch.
        double* scratch = allocate_scalar();
        cuda::softmax_cross_entropy(s.stream(), logits, labels, rows, classes, scale, dlogits,
                                    scratch);
        cudaFreeAsync(scratch, s.stream());
    }
    void bias_residual(float* out, const float* bias, const float* residual, int rows,
                       int width) override {
        cuda::bias_residual(on_stream("bias + residual").stream(), out, bias, residual, rows,
                            width);
    }
    void optimizer_update(const OptimizerSettings& st, int t, float* params, const float* grads,
                          float* state, std::size_t count) override {
        if (st.master_weights)
            throw Error(
                "master weights (precision 'bf16-mixed') are implemented on the CPU "
                "backend only",
                __FILE__, __LINE__);
        if (st.per_tensor())
            throw Error("optimizer '" + std::string(name_of(st.kind)) +
                            "' is implemented on the CPU backend only",
                        __FILE__, __LINE__);
        cudaStream_t s = on_stream("optimizer").stream();
        if (st.kind == OptimizerKind::sgd) {
            cuda::sgd_momentum(s, params, grads, state, count, st.lr, st.momentum);
            return;
        }
        // The same bias corrections, in double then float, as the CPU update.
        const double bc1 = 1.0 - std::pow(static_cast<double>(st.beta1), t);
        const double bc2 = 1.0 - std::pow(static_cast<double>(st.beta2), t);
        const float step = static_cast<float>(st.lr / bc1);
        const float inv_sqrt_bc2 = static_cast<float>(1.0 / std::sqrt(bc2));
        cuda::adamw(s, params, grads, state, state + count, count, st.lr, st.beta1, st.beta2,
                    st.eps, st.weight_decay, step, inv_sqrt_bc2);
    }
    double* allocate_scalar() override {
        return static_cast<double*>(allocate_zeroed(sizeof(double)));
    }
    void release_scalar(double* s) noexcept override { release(reinterpret_cast<float*>(s)); }
    void zero_scalar(double* s) override {
        PD_CUDA_CHECK(cudaMemsetAsync(s, 0, sizeof(double), on_stream("zero").stream()));
    }
    double read_scalar(const double* s) override {
        double value = 0.0;
        if (CudaStreamBackend* st = stream()) {
            PD_CUDA_CHECK(
                cudaMemcpyAsync(&value, s, sizeof(double), cudaMemcpyDeviceToHost, st->stream()));
            st->drain();
        } else {
            ScopedDevice on(gpu_);
            PD_CUDA_CHECK(cudaMemcpy(&value, s, sizeof(double), cudaMemcpyDeviceToHost));
        }
        return value;
    }
    DeviceEvent record_event() override { return on_stream("event").record(); }
    void wait_event(const DeviceEvent& event) override { on_stream("wait").wait(event); }

  private:
    // The calling thread's device stream when it is one of this GPU's; otherwise null: the
    // host, whose calls make this GPU current for their duration (ScopedDevice).
    CudaStreamBackend* stream() const {
        if (tl_stream && tl_stream->gpu() == gpu_) return tl_stream;
        return nullptr;
    }
    CudaStreamBackend& on_stream(const char* what) const {
        CudaStreamBackend* s = stream();
        if (!s)
            throw Error(std::string(what) + " on cuda:" + std::to_string(gpu_) +
                            " must run on one of that GPU's device streams",
                        __FILE__, __LINE__);
        return *s;
    }
    // Stream-ordered on a device stream, plain (synchronous) on the host.
    void* allocate_zeroed(std::size_t bytes) {
        void* p = nullptr;
        if (CudaStreamBackend* s = stream()) {
            check_alloc(cudaMallocAsync(&p, bytes, s->stream()), bytes);
            PD_CUDA_CHECK(cudaMemsetAsync(p, 0, bytes, s->stream()));
        } else {
            ScopedDevice on(gpu_);
            check_alloc(cudaMalloc(&p, bytes), bytes);
            PD_CUDA_CHECK(cudaMemset(p, 0, bytes));
        }
        return p;
    }
    void check_alloc(cudaError_t status, std::size_t bytes) const {
        if (status == cudaSuccess) return;
        cudaGetLastError();
        throw Error("the GPU cuda:" + std::to_string(gpu_) + " has no room for " +
                        std::to_string(bytes) + " more bytes (" + cudaGetErrorName(status) +
                        "); the device budget did not run out first: lower other use of the GPU",
                    __FILE__, __LINE__);
    }

    int gpu_;
};

class CudaDeviceBackend final : public DeviceBackend {
  public:
    CudaDeviceBackend(SharedState& shared, int gpu, int virtual_index, int sharing)
        : shared_(shared), gpu_(gpu), virtual_index_(virtual_index), sharing_(sharing), ops_(gpu) {}

    std::string name() const override {
        std::string n = "cuda:" + std::to_string(gpu_) + " " +
                        shared_.gpu_names[static_cast<std::size_t>(gpu_)];
        if (sharing_ > 1)
            n += ", virtual device " + std::to_string(virtual_index_ + 1) + " of " +
                 std::to_string(sharing_) + " on this GPU";
        return n;
    }
    DeviceOps& ops() override { return ops_; }
    std::unique_ptr<StreamBackend> make_stream() override {
        return std::make_unique<CudaStreamBackend>(shared_, gpu_);
    }
    void resolve_times(std::vector<TraceEvent>& events, std::vector<CollectiveRecord>& collectives,
                       std::vector<MemorySample>& samples) override {
        auto at = [&](std::int64_t t) {
            return shared_.marks.resolve(t, shared_.bases, shared_.base_wall_ns);
        };
        std::vector<TraceEvent> kept;
        kept.reserve(events.size());
        for (TraceEvent& e : events) {
            e.start_ns = at(e.start_ns);
            e.end_ns = at(e.end_ns);
            if (e.end_ns < e.start_ns) e.end_ns = e.start_ns;
            // A wait whose event had already fired did not wait: not idle time worth drawing.
            if (e.kind == EventKind::wait && e.duration_ns() < 1000) continue;
            kept.push_back(std::move(e));
        }
        events = std::move(kept);
        for (CollectiveRecord& c : collectives) {
            c.start_ns = at(c.start_ns);
            c.end_ns = at(c.end_ns);
        }
        for (MemorySample& s : samples) s.t_ns = at(s.t_ns);
    }
    std::unique_ptr<GroupCollectives> make_group_collectives(
        const std::vector<DeviceBackend*>& members) override {
#if PD_HAVE_NCCL
        std::vector<int> gpus;
        for (DeviceBackend* m : members) {
            const auto* cuda_member = dynamic_cast<const CudaDeviceBackend*>(m);
            if (!cuda_member) return nullptr;
            gpus.push_back(cuda_member->gpu_);
        }
        // NCCL refuses two ranks on one GPU: virtual devices move data themselves.
        std::vector<int> sorted = gpus;
        std::sort(sorted.begin(), sorted.end());
        if (std::adjacent_find(sorted.begin(), sorted.end()) != sorted.end()) return nullptr;
        if (!cuda::nccl_unavailable_reason().empty()) return nullptr;
        return cuda::make_nccl_group(
            gpus, shared_.native_collectives, shared_.nccl, [gpus](int rank) {
                const int gpu = gpus[static_cast<std::size_t>(rank)];
                if (!tl_stream || tl_stream->gpu() != gpu)
                    throw Error("an NCCL call for cuda:" + std::to_string(gpu) +
                                    " must run on one of its streams",
                                __FILE__, __LINE__);
                return tl_stream->stream();
            });
#else
        (void)members;
        return nullptr;
#endif
    }
    std::optional<std::pair<std::size_t, std::size_t>> physical_memory() const override {
        std::size_t free_bytes = 0, total_bytes = 0;
        try {
            ScopedDevice on(gpu_);
            if (cudaMemGetInfo(&free_bytes, &total_bytes) != cudaSuccess) {
                cudaGetLastError();
                return std::nullopt;
            }
        } catch (const Error&) {
            return std::nullopt;
        }
        return std::make_pair(free_bytes, total_bytes);
    }

  private:
    SharedState& shared_;
    int gpu_;
    int virtual_index_;
    int sharing_;
    CudaOps ops_;
};

class CudaRunBackend final : public RunBackend {
  public:
    CudaRunBackend(const RunConfig& config, RunContext& ctx, int gpus) {
        shared_.ctx = &ctx;
        shared_.gpus = gpus;
        shared_.tf32 = config.tf32;
        shared_.native_collectives = config.native_collectives;
        const int used = std::min(gpus, config.devices);
        for (int g = 0; g < used; ++g) {
            cudaDeviceProp prop{};
            PD_CUDA_CHECK(cudaGetDeviceProperties(&prop, g));
            shared_.gpu_names.push_back(prop.name);
            PD_CUDA_CHECK(cudaSetDevice(g));
            // Keep freed memory in the pool: steps reuse it instead of returning it to the OS.
            cudaMemPool_t pool = nullptr;
            PD_CUDA_CHECK(cudaDeviceGetDefaultMemPool(&pool, g));
            std::uint64_t threshold = UINT64_MAX;
            PD_CUDA_CHECK(
                cudaMemPoolSetAttribute(pool, cudaMemPoolAttrReleaseThreshold, &threshold));
            for (int peer = 0; peer < used; ++peer) {
                int can = 0;
                if (peer != g && cudaDeviceCanAccessPeer(&can, g, peer) == cudaSuccess && can &&
                    cudaDeviceEnablePeerAccess(peer, 0) != cudaSuccess)
                    cudaGetLastError();  // already enabled
            }
        }
        // Each GPU's time origin, taken with the GPU idle, against the run's wall clock.
        for (int g = 0; g < used; ++g) {
            PD_CUDA_CHECK(cudaSetDevice(g));
            PD_CUDA_CHECK(cudaDeviceSynchronize());
            cudaEvent_t base = nullptr;
            PD_CUDA_CHECK(cudaEventCreate(&base));
            PD_CUDA_CHECK(cudaEventRecord(base, nullptr));
            PD_CUDA_CHECK(cudaEventSynchronize(base));
            shared_.bases.push_back(base);
            shared_.base_wall_ns.push_back(ctx.wall_now_ns());
        }
        for (int d = 0; d < config.devices; ++d) {
            const int gpu = d % used;
            sharing_.resize(static_cast<std::size_t>(used));
            ++sharing_[static_cast<std::size_t>(gpu)];
        }
    }
    ~CudaRunBackend() override {
        for (std::size_t g = 0; g < shared_.bases.size(); ++g) cudaEventDestroy(shared_.bases[g]);
    }

    std::unique_ptr<DeviceBackend> make_device(int index) override {
        const int used = static_cast<int>(shared_.bases.size());
        const int gpu = index % used;
        return std::make_unique<CudaDeviceBackend>(shared_, gpu, index / used,
                                                   sharing_[static_cast<std::size_t>(gpu)]);
    }

  private:
    SharedState shared_;
    std::vector<int> sharing_;
};

}  // namespace

std::string cuda_unavailable_reason() {
    int count = 0;
    const cudaError_t status = cudaGetDeviceCount(&count);
    if (status == cudaErrorNoDevice || status == cudaErrorInsufficientDriver) {
        cudaGetLastError();
        return std::string("no NVIDIA GPU with a working driver was found (cudaGetDeviceCount: ") +
               cudaGetErrorName(status) + ")";
    }
    if (status != cudaSuccess) {
        cudaGetLastError();
        return std::string("the CUDA runtime cannot use a GPU here (cudaGetDeviceCount: ") +
               cudaGetErrorName(status) + ", " + cudaGetErrorString(status) + ")";
    }
    if (count == 0) return "no CUDA GPU is present";
    std::string why;
    if (!cuda::load_cublas(&why)) return "the GPU is there but cuBLAS is not: " + why;
    return {};
}

std::unique_ptr<RunBackend> make_cuda_run_backend(const RunConfig& config, RunContext& ctx) {
    const std::string reason = cuda_unavailable_reason();
    if (!reason.empty()) PD_THROW(BadInput, "backend", "'cuda' is not available here: " + reason);
    int count = 0;
    PD_CUDA_CHECK(cudaGetDeviceCount(&count));
    return std::make_unique<CudaRunBackend>(config, ctx, count);
}

}  // namespace pd
