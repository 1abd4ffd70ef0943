#include "cuda/cuda_kernels.h"

#include <algorithm>
#include <cmath>

#include "cuda/cuda_check.h"

namespace pd::cuda {

namespace {

constexpr int kThreads = 256;
// Elementwise grids stay at most this many blocks and loop over the rest (grid-stride).
constexpr std::size_t kMaxBlocks = 65536;

unsigned blocks_for(std::size_t n) {
    return static_cast<unsigned>(std::min((n + kThreads - 1) / kThreads, kMaxBlocks));
}

__device__ std::size_t global_index() {
    return static_cast<std::size_t>(blockIdx.x) * blockDim.x + threadIdx.x;
}

__device__ std::size_t grid_stride() {
    return static_cast<std::size_t>(blockDim.x) * gridDim.x;
}

// nvcc fuses a * b + c into one FMA by default; the CPU build (x86-64 without -mfma) rounds the
// product and the sum separately. These intrinsics are never fused, so each operation rounds
// as in the CPU code, in the same order.
__device__ __forceinline__ float mul(float a, float b) {
    return __fmul_rn(a, b);
}
__device__ __forceinline__ float add(float a, float b) {
    return __fadd_rn(a, b);
}
__device__ __forceinline__ float sub(float a, float b) {
    return __fsub_rn(a, b);
}

constexpr float kSqrt2OverPi = 0.7978845608028654f;
constexpr float kGeluCoeff = 0.044715f;
constexpr float kGeluCoeff3 = 3.0f * kGeluCoeff;  // folded as the CPU's 3.0f * kGeluCoeff is

// ---- linear ----

__global__ void broadcast_rows_kernel(const float* bias, std::size_t width, std::size_t n,
                                      float* y) {
    for (std::size_t i = global_index(); i < n; i += grid_stride()) y[i] = bias[i % width];
}

// One thread per column, summing the rows in order onto the existing value (or onto zero), as
// the CPU does (deterministic, and the same float rounding sequence).
__global__ void column_sums_kernel(const float* dy, int rows, std::size_t width, float* dbias,
                                   bool accumulate) {
    for (std::size_t j = global_index(); j < width; j += grid_stride()) {
        float acc = accumulate ? dbias[j] : 0.0f;
        const float* col = dy + j;
#pragma unroll 8
        for (int r = 0; r < rows; ++r) acc += col[static_cast<std::size_t>(r) * width];
        dbias[j] = acc;
    }
}

// ---- GELU (tanh approximation) ----

__device__ __forceinline__ float gelu_inner(float x) {
    return mul(kSqrt2OverPi, add(x, mul(mul(mul(kGeluCoeff, x), x), x)));
}

__global__ void gelu_forward_kernel(const float* a, float* g, std::size_t n) {
    for (std::size_t i = global_index(); i < n; i += grid_stride()) {
        const float x = a[i];
        const float t = tanhf(gelu_inner(x));
        g[i] = mul(mul(0.5f, x), add(1.0f, t));
    }
}

// da may alias dg: each element is read before it is written, by the same thread.
__global__ void gelu_backward_kernel(const float* a, const float* dg, float* da, std::size_t n) {
    for (std::size_t i = global_index(); i < n; i += grid_stride()) {
        const float x = a[i];
        const float t = tanhf(gelu_inner(x));
        const float sech2 = sub(1.0f, mul(t, t));
        const float d =
            add(mul(0.5f, add(1.0f, t)), mul(mul(mul(mul(0.5f, x), sech2), kSqrt2OverPi),
                                             add(1.0f, mul(mul(kGeluCoeff3, x), x))));
        da[i] = mul(dg[i], d);
    }
}

// ---- softmax cross-entropy ----

constexpr int kWarp = 32;
constexpr unsigned kFullMask = 0xffffffffu;

struct MaxOp {
    __device__ float operator()(float a, float b) const { return fmaxf(a, b); }
};
struct SumOp {
    __device__ double operator()(double a, double b) const { return a + b; }
};

// Every thread of the block (blockDim.x a multiple of 32, at most 1024) gets the same result;
// the combining order is fixed by the block size, so it is deterministic.
template <typename T, typename Op>
__device__ T block_all_reduce(T v, Op op, T* scratch /* [32] */) {
    for (int offset = kWarp / 2; offset > 0; offset /= 2)
        v = op(v, __shfl_xor_sync(kFullMask, v, offset));
    const int lane = static_cast<int>(threadIdx.x) % kWarp;
    const int warp = static_cast<int>(threadIdx.x) / kWarp;
    if (lane == 0) scratch[warp] = v;
    __syncthreads();
    T result = scratch[0];
    const int warps = static_cast<int>(blockDim.x) / kWarp;
    for (int w = 1; w < warps; ++w) result = op(result, scratch[w]);
    __syncthreads();  // scratch may be reused right after
    return result;
}

// One block per row; the block strides over the classes.
__global__ void softmax_cross_entropy_kernel(const float* logits, const float* labels, int classes,
                                             float scale, float* dlogits, double* loss_sum) {
    __shared__ float max_scratch[kWarp];
    __shared__ double sum_scratch[kWarp];
    const std::size_t row = blockIdx.x;
    const float* z = logits + row * classes;
    float* dz = dlogits + row * classes;
    const int first = static_cast<int>(threadIdx.x);
    const int stride = static_cast<int>(blockDim.x);

    float zmax = -INFINITY;
    for (int j = first; j < classes; j += stride) zmax = fmaxf(zmax, z[j]);
    zmax = block_all_reduce(zmax, MaxOp{}, max_scratch);

    double sum = 0.0;
    for (int j = first; j < classes; j += stride) sum += exp(static_cast<double>(z[j] - zmax));
    sum = block_all_reduce(sum, SumOp{}, sum_scratch);
    const double log_sum = log(sum);

    // An out-of-range label (undefined on the CPU) must not read past the row: it yields a NaN
    // loss and no one-hot term instead. The float test also rejects NaN labels.
    const float label_value = labels[row];
    int label = -1;
    if (label_value >= 0.0f && label_value < static_cast<float>(classes)) {
        label = static_cast<int>(label_value);
        if (label >= classes) label = -1;
    }
    if (threadIdx.x == 0) {
        const double loss = label >= 0 ? log_sum - static_cast<double>(z[label] - zmax) : nan("");
        atomicAdd(loss_sum, loss);
    }
    for (int j = first; j < classes; j += stride) {
        const double p = exp(static_cast<double>(z[j] - zmax) - log_sum);
        dz[j] = static_cast<float>((p - (j == label ? 1.0 : 0.0)) * scale);
    }
}

// ---- elementwise ----

__global__ void add_inplace_kernel(float* y, const float* x, std::size_t n) {
    for (std::size_t i = global_index(); i < n; i += grid_stride()) y[i] = add(y[i], x[i]);
}

// out += (bias + residual), the CPU's association order.
__global__ void bias_residual_kernel(float* out, const float* bias, const float* residual,
                                     std::size_t width, std::size_t n) {
    for (std::size_t i = global_index(); i < n; i += grid_stride())
        out[i] = add(out[i], add(bias[i % width], residual[i]));
}

// ---- optimizers (operation order as in optimizer.cpp) ----

__global__ void sgd_momentum_kernel(float* params, const float* grads, float* velocity,
                                    std::size_t n, float lr, float momentum) {
    for (std::size_t i = global_index(); i < n; i += grid_stride()) {
        const float v = add(mul(momentum, velocity[i]), grads[i]);
        velocity[i] = v;
        params[i] = sub(params[i], mul(lr, v));
    }
}

__global__ void adamw_kernel(float* params, const float* grads, float* m, float* v, std::size_t n,
                             float lr, float beta1, float beta2, float eps, float weight_decay,
                             float step_size, float inv_sqrt_bc2) {
    const float one_minus_beta1 = sub(1.0f, beta1);
    const float one_minus_beta2 = sub(1.0f, beta2);
    const float decay = mul(lr, weight_decay);
    for (std::size_t i = global_index(); i < n; i += grid_stride()) {
        const float g = grads[i];
        const float mi = add(mul(beta1, m[i]), mul(one_minus_beta1, g));
        const float vi = add(mul(beta2, v[i]), mul(mul(one_minus_beta2, g), g));
        m[i] = mi;
        v[i] = vi;
        float p = params[i];
        p = sub(p, mul(decay, p));
        p = sub(p, __fdiv_rn(mul(step_size, mi), add(mul(__fsqrt_rn(vi), inv_sqrt_bc2), eps)));
        params[i] = p;
    }
}

}  // namespace

void gemm(cublasHandle_t handle, bool trans_a, bool trans_b, int m, int n, int k, float alpha,
          const float* a, const float* b, float beta, float* c) {
    if (m == 0 || n == 0) return;
    // Row-major X is column-major X^T, so C^T[n,m] = op(B)^T op(A)^T with the same leading
    // dimensions. They are at least 1 because cuBLAS rejects 0 even when k == 0 (then A and B
    // are not read and C is only scaled by beta).
    const int lda = std::max(1, trans_a ? m : k);
    const int ldb = std::max(1, trans_b ? k : n);
    PD_CUBLAS_CHECK(cublas().sgemm(handle, trans_b ? CUBLAS_OP_T : CUBLAS_OP_N,
                                   trans_a ? CUBLAS_OP_T : CUBLAS_OP_N, n, m, k, &alpha, b, ldb, a,
                                   lda, &beta, c, n));
}

void linear_forward(cublasHandle_t handle, cudaStream_t stream, const float* x, const float* w,
                    const float* bias, int rows, int in, int out, float* y) {
    if (rows == 0 || out == 0) return;
    const std::size_t n = static_cast<std::size_t>(rows) * static_cast<std::size_t>(out);
    broadcast_rows_kernel<<<blocks_for(n), kThreads, 0, stream>>>(
        bias, static_cast<std::size_t>(out), n, y);
    PD_CUDA_CHECK_LAUNCH();
    gemm(handle, false, false, rows, out, in, 1.0f, x, w, 1.0f, y);
}

void linear_backward(cublasHandle_t handle, cudaStream_t stream, const float* x, const float* w,
                     const float* dy, int rows, int in, int out, float* dw, float* dbias,
                     float* dx, bool accumulate) {
    gemm(handle, true, false, in, out, rows, 1.0f, x, dy, accumulate ? 1.0f : 0.0f, dw);
    if (out > 0) {
        column_sums_kernel<<<blocks_for(static_cast<std::size_t>(out)), kThreads, 0, stream>>>(
            dy, rows, static_cast<std::size_t>(out), dbias, accumulate);
        PD_CUDA_CHECK_LAUNCH();
    }
    if (dx) gemm(handle, false, true, rows, in, out, 1.0f, dy, w, 0.0f, dx);
}

void gelu_forward(cudaStream_t stream, const float* a, float* g, std::size_t n) {
    if (n == 0) return;
    gelu_forward_kernel<<<blocks_for(n), kThreads, 0, stream>>>(a, g, n);
    PD_CUDA_CHECK_LAUNCH();
}

void gelu_backward(cudaStream_t stream, const float* a, const float* dg, float* da, std::size_t n) {
    if (n == 0) return;
    gelu_backward_kernel<<<blocks_for(n), kThreads, 0, stream>>>(a, dg, da, n);
    PD_CUDA_CHECK_LAUNCH();
}

void softmax_cross_entropy(cudaStream_t stream, const float* logits, const float* labels, int rows,
                           int classes, float scale, float* dlogits, double* loss_sum) {
    if (rows <= 0 || classes <= 0) return;
    // Few classes are the common case: size the block to them (whole warps, at most kThreads).
    const int threads = std::min(kThreads, (classes + kWarp - 1) / kWarp * kWarp);
    softmax_cross_entropy_kernel<<<static_cast<unsigned>(rows), threads, 0, stream>>>(
        logits, labels, classes, scale, dlogits, loss_sum);
    PD_CUDA_CHECK_LAUNCH();
}

void add_inplace(cudaStream_t stream, float* y, const float* x, std::size_t n) {
    if (n == 0) return;
    add_inplace_kernel<<<blocks_for(n), kThreads, 0, stream>>>(y, x, n);
    PD_CUDA_CHECK_LAUNCH();
}

void bias_residual(cudaStream_t stream, float* out, const float* bias, const float* residual,
                   int rows, int width) {
    if (rows <= 0 || width <= 0) return;
    const std::size_t n = static_cast<std::size_t>(rows) * static_cast<std::size_t>(width);
    bias_residual_kernel<<<blocks_for(n), kThreads, 0, stream>>>(
        out, bias, residual, static_cast<std::size_t>(width), n);
    PD_CUDA_CHECK_LAUNCH();
}

void sgd_momentum(cudaStream_t stream, float* params, const float* grads, float* velocity,
                  std::size_t n, float lr, float momentum) {
    if (n == 0) return;
    sgd_momentum_kernel<<<blocks_for(n), kThreads, 0, stream>>>(params, grads, velocity, n, lr,
                                                                momentum);
    PD_CUDA_CHECK_LAUNCH();
}

void adamw(cudaStream_t stream, float* params, const float* grads, float* m, float* v,
           std::size_t n, float lr, float beta1, float beta2, float eps, float weight_decay,
           float step_size, float inv_sqrt_bc2) {
    if (n == 0) return;
    adamw_kernel<<<blocks_for(n), kThreads, 0, stream>>>(
        params, grads, m, v, n, lr, beta1, beta2, eps, weight_decay, step_size, inv_sqrt_bc2);
    PD_CUDA_CHECK_LAUNCH();
}

}  // namespace pd::cuda
