#include "cpu/small_gemm.h"

#include <cstdlib>
#include <stdexcept>
#include <string_view>
#include <vector>

// PD_SMALL_GEMM_X86: the build compiled small_gemm_avx2.cpp and small_gemm_avx512.cpp (x86-64
// only); elsewhere every product goes to BLAS.
#ifdef PD_SMALL_GEMM_X86
#include "cpu/small_gemm_kernel.h"  // its Operands
#endif

namespace pd::cpu {

#ifdef PD_SMALL_GEMM_X86
namespace small_gemm_detail {
void run_avx2(const Operands& o);
void run_avx512(const Operands& o);
void run_avx2_packed(const Operands& o, const PackedBuffers& buffers);
void run_avx512_packed(const Operands& o, const PackedBuffers& buffers);
}  // namespace small_gemm_detail
#endif

namespace {

constexpr double kMaxOperandFloats = 256.0 * 1024 / sizeof(float);
constexpr int kMaxInPlaceDepth = 1024;  // a panel of B' of at most 128 KiB (AVX-512)

SmallGemmIsa best_isa() {
#ifdef PD_SMALL_GEMM_X86
    if (cpu_runs(SmallGemmIsa::avx512)) return SmallGemmIsa::avx512;
    if (cpu_runs(SmallGemmIsa::avx2)) return SmallGemmIsa::avx2;
#endif
    return SmallGemmIsa::none;
}

SmallGemmIsa chosen_isa() {
    const SmallGemmIsa best = best_isa();
    const char* env = std::getenv("PD_SMALL_GEMM");
    if (!env) return best;
    const std::string_view want(env);
    if (want == "off") return SmallGemmIsa::none;
    if (want == "avx2" && best != SmallGemmIsa::none) return SmallGemmIsa::avx2;
    return best;
}

}  // namespace

SmallGemmIsa small_gemm_isa_for(int n) {
    const SmallGemmIsa isa = small_gemm_isa();
    return isa == SmallGemmIsa::avx512 && n <= 16 ? SmallGemmIsa::avx2 : isa;
}

bool cpu_runs(SmallGemmIsa isa) {
#ifdef PD_SMALL_GEMM_X86
    switch (isa) {
        case SmallGemmIsa::avx512:
            return __builtin_cpu_supports("avx512f");
        case SmallGemmIsa::avx2:
            return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
        case SmallGemmIsa::none:
            return true;
    }
    return false;
#else
    return isa == SmallGemmIsa::none;
#endif
}

bool large_products_to_blas() {
    static const bool blas = [] {
        const char* env = std::getenv("PD_LARGE_GEMM");
        return env && std::string_view(env) == "blas";
    }();
    return blas;
}

SmallGemmIsa small_gemm_isa() {
    static const SmallGemmIsa isa = chosen_isa();
    return isa;
}

std::string small_gemm_description() {
    const std::string which = large_products_to_blas()
                                  ? " for products whose operands are each <= 256 KiB "
                                    "(larger ones to BLAS: PD_LARGE_GEMM=blas)"
                                  : " (operands in place up to 256 KiB each, packed blocks above)";
    switch (small_gemm_isa()) {
        case SmallGemmIsa::avx512:
            return "own AVX-512 kernel" + which;
        case SmallGemmIsa::avx2:
            return "own AVX2 kernel" + which;
        case SmallGemmIsa::none:
            break;
    }
    return std::getenv("PD_SMALL_GEMM") ? "no own kernel (PD_SMALL_GEMM)"
                                        : "no own kernel (the CPU lacks AVX2 and FMA)";
}

bool fits_in_cache(int m, int n, int k) {
    const double mm = m, nn = n, kk = k;
    return mm * kk <= kMaxOperandFloats && kk * nn <= kMaxOperandFloats &&
           mm * nn <= kMaxOperandFloats;
}

bool small_gemm_suits(bool trans_a, bool trans_b, int m, int n, int k) {
    if (small_gemm_isa() == SmallGemmIsa::none || (trans_a && trans_b)) return false;
    if (n < 1 || m < 1 || k < 1) return false;
    return !large_products_to_blas() || fits_in_cache(m, n, k);
}

bool in_place_pays(int m, int k) {
    // The in-place kernel reads A once per panel of B' (k x two vectors): fine while A stays in
    // L2 and a panel in L1/L2. B and C are streamed once either way, so their size does not
    // matter (packing a wide B for a few rows of A, as ZeRO's devices have, costs more than the
    // product).
    return static_cast<double>(m) * k <= kMaxOperandFloats && k <= kMaxInPlaceDepth;
}

void own_gemm(SmallGemmIsa isa, bool trans_a, bool trans_b, int m, int n, int k, float alpha,
              const float* a, int lda, const float* b, int ldb, float beta, float* c, int ldc) {
    if (in_place_pays(m, k))
        small_gemm(isa, trans_a, trans_b, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
    else
        packed_gemm(isa, trans_a, trans_b, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
}

void packed_gemm(SmallGemmIsa isa, bool trans_a, bool trans_b, int m, int n, int k, float alpha,
                 const float* a, int lda, const float* b, int ldb, float beta, float* c, int ldc) {
#ifdef PD_SMALL_GEMM_X86
    using namespace small_gemm_detail;
    // Each thread's blocks, sized once for the widest sliver (AVX-512's 32 columns).
    thread_local std::vector<float> pack_a(static_cast<std::size_t>(kMc) * kKc),
        pack_b(static_cast<std::size_t>(kKc) * (kNc + 32)),
        sums(static_cast<std::size_t>(kMc + kRows) * (kNc + 32));
    const Operands o{trans_a, trans_b, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc, nullptr};
    const PackedBuffers buffers{pack_a.data(), pack_b.data(), sums.data()};
    if (isa == SmallGemmIsa::avx512) return run_avx512_packed(o, buffers);
    if (isa == SmallGemmIsa::avx2) return run_avx2_packed(o, buffers);
#else
    (void)isa, (void)trans_a, (void)trans_b, (void)m, (void)n, (void)k, (void)alpha, (void)a;
    (void)lda, (void)b, (void)ldb, (void)beta, (void)c, (void)ldc;
#endif
    throw std::logic_error("packed_gemm called without an instruction set to run it");
}

void small_gemm(SmallGemmIsa isa, bool trans_a, bool trans_b, int m, int n, int k, float alpha,
                const float* a, int lda, const float* b, int ldb, float beta, float* c, int ldc) {
#ifdef PD_SMALL_GEMM_X86
    // A panel of B' is k rows of up to 32 floats (AVX-512's two vectors); one per thread.
    thread_local std::vector<float> scratch;
    scratch.resize(static_cast<std::size_t>(k) * 32);
    const small_gemm_detail::Operands o{trans_a, trans_b, m,   n,    k, alpha, a,
                                        lda,     b,       ldb, beta, c, ldc,   scratch.data()};
    if (isa == SmallGemmIsa::avx512) return small_gemm_detail::run_avx512(o);
    if (isa == SmallGemmIsa::avx2) return small_gemm_detail::run_avx2(o);
#else
    (void)isa, (void)trans_a, (void)trans_b, (void)m, (void)n, (void)k, (void)alpha, (void)a;
    (void)lda, (void)b, (void)ldb, (void)beta, (void)c, (void)ldc;
#endif
    throw std::logic_error("small_gemm called without an instruction set to run it");
}

}  // namespace pd::cpu
