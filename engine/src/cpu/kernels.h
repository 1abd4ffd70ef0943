// The CPU backend's matrix products: on the engine's own kernel (small_gemm.h: in place when
// cache-sized, packed blocks above) where the CPU has AVX2 and FMA, the rest through BLAS. BLAS
// itself runs single-threaded (its own threads would be shared by every device of the run); a
// device's intra-op pool splits a large product into row or column blocks instead, each one call on
// its own thread, on the kernel chosen for the whole product. Element-wise kernels are in
// elementwise.h.
#pragma once

#include <string>
#include <vector>

#include "cpu/intra_op_pool.h"

namespace pd::cpu {

void init_blas_threads();
// The kernel table OpenBLAS runs on this CPU, and who chose it (OpenBLAS itself, or the
// OPENBLAS_CORETYPE environment variable), e.g. "OpenBLAS Cooperlake kernels (...)".
std::string blas_kernels();

// Which kernel a product of this shape runs on, e.g. "own AVX2, packed" or "OpenBLAS Zen".
std::string gemm_kernel(bool trans_a, bool trans_b, int m, int n, int k);

// Every product's time by shape, while switched on (paralleldeck-run --verbose): what ran on
// which kernel and how fast, measured as the run ran. Off, a product pays one relaxed load.
struct ProductClass {
    bool trans_a = false, trans_b = false;
    int m = 0, n = 0, k = 0;
    std::string kernel;
    long long calls = 0;
    double seconds = 0;  // wall time inside gemm, summed over calls
    // Run by gemm_on_this_thread: each call on one thread, several at once (attention's
    // heads), so its speed is read against one thread's peak.
    bool one_thread = false;
};
void profile_products(bool on);
std::vector<ProductClass> product_profile();

// C[m,n] = alpha * op(A) op(B) + beta * C, row-major.
void gemm(IntraOpPool& pool, bool trans_a, bool trans_b, int m, int n, int k, float alpha,
          const float* a, const float* b, float beta, float* c);

// The same product on the calling thread alone, with leading dimensions, on the kernel gemm()
// would choose for its shape: for kernels that split their work themselves (attention's
// products, one per sequence and head). Profiled as gemm() is.
void gemm_on_this_thread(bool trans_a, bool trans_b, int m, int n, int k, float alpha,
                         const float* a, int lda, const float* b, int ldb, float beta, float* c,
                         int ldc);

// y[b,out] = x[b,in] w[in,out] + bias
void linear_forward(IntraOpPool& pool, const float* x, const float* w, const float* bias, int rows,
                    int in, int out, float* y);
// dw += x^T dy, dbias += sum_rows dy, and (when dx != nullptr) dx = dy w^T. Without `accumulate`
// dw and dbias are written over instead (the same bits as adding to zeros).
void linear_backward(IntraOpPool& pool, const float* x, const float* w, const float* dy, int rows,
                     int in, int out, float* dw, float* dbias, float* dx, bool accumulate);

}  // namespace pd::cpu
