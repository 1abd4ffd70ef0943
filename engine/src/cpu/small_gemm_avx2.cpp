// The small-product kernel for AVX2 with FMA (x86-64-v3): compiled with -mavx2 -mfma, called
// only where the CPU has both (small_gemm.cpp).
#include <immintrin.h>

#include "cpu/small_gemm_kernel.h"

namespace pd::cpu::small_gemm_detail {

namespace {

struct Avx2 {
    using reg = __m256;
    static constexpr int lanes = 8;
    static reg zero() { return _mm256_setzero_ps(); }
    static reg set1(float x) { return _mm256_set1_ps(x); }
    static reg load(const float* p) { return _mm256_loadu_ps(p); }
    static reg broadcast(const float* p) { return _mm256_broadcast_ss(p); }
    static reg fma(reg a, reg b, reg c) { return _mm256_fmadd_ps(a, b, c); }
    static reg mul(reg a, reg b) { return _mm256_mul_ps(a, b); }
    // Lanes [0, count) of p; the others are neither read nor written.
    static __m256i first(int count) {
        return _mm256_cmpgt_epi32(_mm256_set1_epi32(count),
                                  _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7));
    }
    static reg load_first(const float* p, int count) {
        return count == lanes ? load(p) : _mm256_maskload_ps(p, first(count));
    }
    static void store_first(float* p, reg v, int count) {
        if (count == lanes)
            _mm256_storeu_ps(p, v);
        else
            _mm256_maskstore_ps(p, first(count), v);
    }
};

}  // namespace

void run_avx2(const Operands& o) {
    run<Avx2>(o);
}

void run_avx2_packed(const Operands& o, const PackedBuffers& buffers) {
    run_packed<Avx2>(o, buffers);
}

}  // namespace pd::cpu::small_gemm_detail
