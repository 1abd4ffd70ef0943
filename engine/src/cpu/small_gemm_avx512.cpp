// The small-product kernel for AVX-512F: compiled with -mavx512f, called only where the CPU
// has it (small_gemm.cpp).
#include <immintrin.h>

#include "cpu/small_gemm_kernel.h"

namespace pd::cpu::small_gemm_detail {

namespace {

struct Avx512 {
    using reg = __m512;
    static constexpr int lanes = 16;
    static reg zero() { return _mm512_setzero_ps(); }
    static reg set1(float x) { return _mm512_set1_ps(x); }
    static reg load(const float* p) { return _mm512_loadu_ps(p); }
    static reg broadcast(const float* p) { return _mm512_set1_ps(*p); }
    static reg fma(reg a, reg b, reg c) { return _mm512_fmadd_ps(a, b, c); }
    static reg mul(reg a, reg b) { return _mm512_mul_ps(a, b); }
    // Lanes [0, count) of p; the others are neither read nor written.
    static __mmask16 first(int count) { return static_cast<__mmask16>((1u << count) - 1u); }
    static reg load_first(const float* p, int count) {
        return _mm512_maskz_loadu_ps(first(count), p);
    }
    static void store_first(float* p, reg v, int count) {
        _mm512_mask_storeu_ps(p, first(count), v);
    }
};

}  // namespace

void run_avx512(const Operands& o) {
    run<Avx512>(o);
}

void run_avx512_packed(const Operands& o, const PackedBuffers& buffers) {
    run_packed<Avx512>(o, buffers);
}

}  // namespace pd::cpu::small_gemm_detail
