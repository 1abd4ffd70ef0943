#include "cpu/kernels.h"

#include <cblas.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdlib>
#include <map>
#include <mutex>
#include <tuple>

#include "cpu/elementwise.h"
#include "cpu/small_gemm.h"

namespace pd::cpu {

namespace {

// A product is split only where each part keeps a thread busy far longer than waking it
// takes: at least 2 MFLOP a part (some 20 microseconds; the pool spins between kernels).
constexpr double kMinFlopsPerPart = 2e6;

void blas_gemm(bool trans_a, bool trans_b, int m, int n, int k, float alpha, const float* a,
               int lda, const float* b, int ldb, float beta, float* c, int ldc) {
    cblas_sgemm(CblasRowMajor, trans_a ? CblasTrans : CblasNoTrans,
                trans_b ? CblasTrans : CblasNoTrans, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
}

// One block of a product, by the kernel chosen for the whole product (so a block's bits never
// depend on how many threads split it).
void gemm_block(bool own, bool trans_a, bool trans_b, int m, int n, int k, float alpha,
                const float* a, int lda, const float* b, int ldb, float beta, float* c, int ldc) {
    if (own)
        own_gemm(small_gemm_isa_for(n), trans_a, trans_b, m, n, k, alpha, a, lda, b, ldb, beta, c,
                 ldc);
    else
        blas_gemm(trans_a, trans_b, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
}

}  // namespace

void init_blas_threads() {
    static std::once_flag once;
    std::call_once(once, [] { openblas_set_num_threads(1); });
}

std::string blas_kernels() {
    const char* core = openblas_get_corename();
    const char* forced = std::getenv("OPENBLAS_CORETYPE");
    return std::string("OpenBLAS ") + (core ? core : "?") + " kernels (" +
           (forced ? std::string("OPENBLAS_CORETYPE=") + forced
                   : std::string("chosen by OpenBLAS from the CPU id")) +
           ")";
}

std::string gemm_kernel(bool trans_a, bool trans_b, int m, int n, int k) {
    if (small_gemm_suits(trans_a, trans_b, m, n, k))
        return std::string(small_gemm_isa_for(n) == SmallGemmIsa::avx512 ? "own AVX-512"
                                                                         : "own AVX2") +
               (in_place_pays(m, k) ? ", in place" : ", packed");
    const char* core = openblas_get_corename();
    return std::string("OpenBLAS ") + (core ? core : "?");
}

namespace {

std::atomic<bool> g_profiling{false};
std::mutex g_profile_mutex;
std::map<std::tuple<bool, bool, int, int, int, bool>, ProductClass> g_profile;

void gemm_unprofiled(IntraOpPool& pool, bool trans_a, bool trans_b, int m, int n, int k,
                     float alpha, const float* a, const float* b, float beta, float* c);

}  // namespace

void profile_products(bool on) {
    std::lock_guard lock(g_profile_mutex);
    if (on) g_profile.clear();
    g_profiling.store(on, std::memory_order_relaxed);
}

std::vector<ProductClass> product_profile() {
    std::lock_guard lock(g_profile_mutex);
    std::vector<ProductClass> out;
    for (const auto& [key, value] : g_profile) out.push_back(value);
    return out;
}

namespace {

// Runs `product` and, while profiling, adds its wall time to its shape's class.
template <class Product>
void profiled(bool trans_a, bool trans_b, int m, int n, int k, bool one_thread, Product&& product) {
    if (!g_profiling.load(std::memory_order_relaxed)) return product();
    const auto start = std::chrono::steady_clock::now();
    product();
    const double s =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    std::lock_guard lock(g_profile_mutex);
    ProductClass& pc = g_profile[{trans_a, trans_b, m, n, k, one_thread}];
    if (pc.calls == 0)
        pc = {trans_a, trans_b, m, n, k, gemm_kernel(trans_a, trans_b, m, n, k), 0, 0, one_thread};
    ++pc.calls;
    pc.seconds += s;
}

}  // namespace

void gemm(IntraOpPool& pool, bool trans_a, bool trans_b, int m, int n, int k, float alpha,
          const float* a, const float* b, float beta, float* c) {
    profiled(trans_a, trans_b, m, n, k, false,
             [&] { gemm_unprofiled(pool, trans_a, trans_b, m, n, k, alpha, a, b, beta, c); });
}

void gemm_on_this_thread(bool trans_a, bool trans_b, int m, int n, int k, float alpha,
                         const float* a, int lda, const float* b, int ldb, float beta, float* c,
                         int ldc) {
    if (m == 0 || n == 0) return;
    profiled(trans_a, trans_b, m, n, k, true, [&] {
        gemm_block(small_gemm_suits(trans_a, trans_b, m, n, k), trans_a, trans_b, m, n, k, alpha, a,
                   lda, b, ldb, beta, c, ldc);
    });
}

namespace {

void gemm_unprofiled(IntraOpPool& pool, bool trans_a, bool trans_b, int m, int n, int k,
                     float alpha, const float* a, const float* b, float beta, float* c) {
    if (m == 0 || n == 0) return;
    const int lda = trans_a ? m : k;
    const int ldb = trans_b ? k : n;
    const double flops = 2.0 * m * n * static_cast<double>(k);
    const int parts = static_cast<int>(std::min<double>(pool.threads(), flops / kMinFlopsPerPart));
    const bool own = small_gemm_suits(trans_a, trans_b, m, n, k);
    if (parts <= 1) {
        gemm_block(own, trans_a, trans_b, m, n, k, alpha, a, lda, b, ldb, beta, c, n);
        return;
    }
    // Split the longer side of C: rows of op(A) (and C), or columns of op(B) (and C). Each
    // element of C still sums over the whole k in one call.
    const bool by_rows = m >= n;
    const int extent = by_rows ? m : n;
    pool.run(parts, [&](int part) {
        const int i0 = static_cast<int>(static_cast<long long>(extent) * part / parts);
        const int len = static_cast<int>(static_cast<long long>(extent) * (part + 1) / parts) - i0;
        if (len <= 0) return;
        if (by_rows) {
            const float* a0 = trans_a ? a + i0 : a + static_cast<std::size_t>(i0) * lda;
            gemm_block(own, trans_a, trans_b, len, n, k, alpha, a0, lda, b, ldb, beta,
                       c + static_cast<std::size_t>(i0) * n, n);
        } else {
            const float* b0 = trans_b ? b + static_cast<std::size_t>(i0) * ldb : b + i0;
            gemm_block(own, trans_a, trans_b, m, len, k, alpha, a, lda, b0, ldb, beta, c + i0, n);
        }
    });
}

}  // namespace

void linear_forward(IntraOpPool& pool, const float* x, const float* w, const float* bias, int rows,
                    int in, int out, float* y) {
    broadcast_rows(y, bias, static_cast<std::size_t>(rows), static_cast<std::size_t>(out));
    gemm(pool, false, false, rows, out, in, 1.0f, x, w, 1.0f, y);
}

void linear_backward(IntraOpPool& pool, const float* x, const float* w, const float* dy, int rows,
                     int in, int out, float* dw, float* dbias, float* dx, bool accumulate) {
    gemm(pool, true, false, in, out, rows, 1.0f, x, dy, accumulate ? 1.0f : 0.0f, dw);
    if (!accumulate) std::fill_n(dbias, out, 0.0f);  // a row, not the weight's matrix
    add_column_sums(dbias, dy, static_cast<std::size_t>(rows), static_cast<std::size_t>(out));
    if (dx) gemm(pool, false, true, rows, in, out, 1.0f, dy, w, 0.0f, dx);
}

}  // namespace pd::cpu
