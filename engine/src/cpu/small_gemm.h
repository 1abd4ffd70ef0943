// The engine's own product kernel: in place for products whose A sits in a core's cache (a
// card-size model's every product; at those sizes OpenBLAS spends a large share of each call
// packing), packed blocks above (small_gemm_kernel.h); cpu/kernels.cpp decides per whole
// product, and OpenBLAS takes only what this kernel does not (both operands transposed, a CPU
// without AVX2 and FMA).
// It runs with AVX-512F where the CPU has it, else with AVX2 and FMA, else not at all; the
// instruction set changes no bit of a result (each element of C is one in-order sum of fused
// multiply-adds either way). PD_SMALL_GEMM=off in the environment hands every product to
// OpenBLAS, =avx2 keeps the kernel off AVX-512: for side-by-side benchmarks.
#pragma once

#include <string>

namespace pd::cpu {

enum class SmallGemmIsa { none, avx2, avx512 };

// What this process uses: the CPU's best, or less where PD_SMALL_GEMM says so.
SmallGemmIsa small_gemm_isa();
// The instruction set for a product of n columns: small_gemm_isa(), except AVX2 where n is at
// most 16 (an AVX-512 panel is 32 columns wide; AVX2's 16 waste less on a narrow product, such
// as a classifier head's). The bits are the same either way.
SmallGemmIsa small_gemm_isa_for(int n);
// What this CPU could run (for tests comparing instruction sets).
bool cpu_runs(SmallGemmIsa isa);
// "own AVX-512 kernel for products whose operands are each <= 256 KiB", or why there is none.
std::string small_gemm_description();

// Whether C[m,n] = op(A) op(B) goes to the engine's own kernel (own_gemm): not both operands
// transposed, and with
// PD_LARGE_GEMM=blas each of A, B and C at most 256 KiB (the rest to BLAS, for side-by-side
// benchmarks).
bool small_gemm_suits(bool trans_a, bool trans_b, int m, int n, int k);
// Whether each of A, B and C is at most 256 KiB (the products PD_LARGE_GEMM=blas keeps on the
// own kernel).
bool fits_in_cache(int m, int n, int k);
// Whether the in-place kernel (small_gemm) suits: A of at most 256 KiB and k of at most 1024,
// whatever B and C (they are streamed once); else packed blocks.
bool in_place_pays(int m, int k);

// The own kernel for any size: in place where that pays (in_place_pays), packed blocks
// (packed_gemm) where it does not. Both give the same bits: each element of C is one
// in-order sum of fused multiply-adds, combined with alpha and beta at the end.
void own_gemm(SmallGemmIsa isa, bool trans_a, bool trans_b, int m, int n, int k, float alpha,
              const float* a, int lda, const float* b, int ldb, float beta, float* c, int ldc);
// Packed blocks at any size (cpu/small_gemm_kernel.h): what own_gemm runs above the caches.
void packed_gemm(SmallGemmIsa isa, bool trans_a, bool trans_b, int m, int n, int k, float alpha,
                 const float* a, int lda, const float* b, int ldb, float beta, float* c, int ldc);

// C = alpha * op(A) op(B) + beta * C, row-major with leading dimensions; beta 0 never reads C.
// Runs with `isa`, which must be one the CPU runs (and not none).
void small_gemm(SmallGemmIsa isa, bool trans_a, bool trans_b, int m, int n, int k, float alpha,
                const float* a, int lda, const float* b, int ldb, float beta, float* c, int ldc);

}  // namespace pd::cpu
