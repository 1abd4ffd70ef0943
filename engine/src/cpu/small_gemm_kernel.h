// The small-product kernel, written once over a SIMD type V (small_gemm_avx2.cpp and
// small_gemm_avx512.cpp instantiate it, each compiled for its instruction set). Included by
// those two files only: everything here is a template on V, so no function compiled with one
// instruction set can be linked in place of another's. No standard-library calls either, for
// the same reason (an inline std:: function compiled for AVX-512 could be the copy every file
// links to).
//
// C = alpha * op(A) B' + beta * C, row-major, where B' = op(B). The kernel does not pack A:
// it broadcasts one element of A per row and multiplies it with a row of a panel of B', so
// every operand must already be in cache (small_gemm.h says which shapes qualify). Each
// element of C is one sum over k in order, started from zero, whatever the tiling: a part of
// C computed on its own (the intra-op pool's split) gives the same bits as the whole product.
#pragma once

#include <immintrin.h>

#include <cstddef>

namespace pd::cpu::small_gemm_detail {

struct Operands {
    bool trans_a, trans_b;
    int m, n, k;
    float alpha;
    const float* a;
    int lda;
    const float* b;
    int ldb;
    float beta;
    float* c;
    int ldc;
    float* scratch;  // k * panel_width floats, for the panels of B' that must be copied
};

// The packed path's buffers (packed_product), each thread's own.
struct PackedBuffers {
    float* a;     // kMc x kKc: a block of op(A), in slivers of kRows rows
    float* b;     // kKc x kNc: a block of B', in slivers of V::lanes * 2 columns
    float* sums;  // kMc x kNc: the sums so far of a block of C, tile by tile
};

// C's R rows from the accumulators: alpha * sum (+ beta * C), columns [0, cols).
template <class V, int R>
inline void store_tile(const Operands& o, const typename V::reg* lo, const typename V::reg* hi,
                       float* c, int cols) {
    const typename V::reg alpha = V::set1(o.alpha), beta = V::set1(o.beta);
    const int cols_lo = cols < V::lanes ? cols : V::lanes;
    const int cols_hi = cols - cols_lo;
#pragma GCC unroll 8
    for (int r = 0; r < R; ++r) {
        float* cr = c + static_cast<std::size_t>(r) * o.ldc;
        typename V::reg out_lo = V::mul(alpha, lo[r]), out_hi = V::mul(alpha, hi[r]);
        if (o.beta != 0.0f) {  // beta 0 never reads C: it may hold anything, NaN included
            out_lo = V::fma(beta, V::load_first(cr, cols_lo), out_lo);
            if (cols_hi > 0) out_hi = V::fma(beta, V::load_first(cr + V::lanes, cols_hi), out_hi);
        }
        V::store_first(cr, out_lo, cols_lo);
        if (cols_hi > 0) V::store_first(cr + V::lanes, out_hi, cols_hi);
    }
}

// R rows of C times one panel of V::lanes * 2 columns: k rows, `stride` floats apart. `cols`
// < width for the last panel of a row (only C's loads and stores are masked: that panel is a
// zero-padded copy).
template <class V, bool TransA, int R>
inline void tile(const Operands& o, const float* a, const float* panel, std::size_t stride,
                 float* c, int cols) {
    // The accumulators must live in registers: the loops over rows are unrolled (GCC's -O2
    // would not, and keeps arrays it does not unroll in memory), and k and lda are locals.
    const int k = o.k;
    const std::size_t lda = static_cast<std::size_t>(o.lda);
    typename V::reg lo[R], hi[R];
#pragma GCC unroll 8
    for (int r = 0; r < R; ++r) lo[r] = hi[r] = V::zero();
    for (int p = 0; p < k; ++p) {
        const float* bp = panel + static_cast<std::size_t>(p) * stride;
        const typename V::reg b0 = V::load(bp), b1 = V::load(bp + V::lanes);
        const float* ap = TransA ? a + static_cast<std::size_t>(p) * lda : a + p;
#pragma GCC unroll 8
        for (int r = 0; r < R; ++r) {
            const typename V::reg av = V::broadcast(TransA ? ap + r : ap + r * lda);
            lo[r] = V::fma(av, b0, lo[r]);
            hi[r] = V::fma(av, b1, hi[r]);
        }
    }
    store_tile<V, R>(o, lo, hi, c, cols);
}

// The last rows (fewer than six) as one tile of exactly that many: R counts down to `rows`.
template <class V, bool TransA, int R = 5>
inline void last_rows(const Operands& o, int rows, const float* a, const float* panel,
                      std::size_t stride, float* c, int cols) {
    if constexpr (R > 0) {
        if (rows == R)
            tile<V, TransA, R>(o, a, panel, stride, c, cols);
        else
            last_rows<V, TransA, R - 1>(o, rows, a, panel, stride, c, cols);
    }
}

// Rows [0, m) of C against one panel, six at a time, then the rest.
template <class V, bool TransA>
inline void rows_of_panel(const Operands& o, const float* panel, std::size_t stride, int j,
                          int cols) {
    auto a_at = [&](int i) { return TransA ? o.a + i : o.a + static_cast<std::size_t>(i) * o.lda; };
    auto c_at = [&](int i) { return o.c + static_cast<std::size_t>(i) * o.ldc + j; };
    int i = 0;
    for (; i + 6 <= o.m; i += 6) tile<V, TransA, 6>(o, a_at(i), panel, stride, c_at(i), cols);
    last_rows<V, TransA>(o, o.m - i, a_at(i), panel, stride, c_at(i), cols);
}

// out[t][q] = in[q][t] for an 8 x 8 block (rows ld_in and ld_out floats apart), in AVX
// registers: a scalar copy of a transposed B into panels cost some 5% of a card's step (AVX2).
template <class V>
inline void transpose_8x8(const float* in, int ld_in, float* out, int ld_out) {
    __m256 r[8], t[8];
    for (int q = 0; q < 8; ++q) r[q] = _mm256_loadu_ps(in + static_cast<std::size_t>(q) * ld_in);
    for (int q = 0; q < 8; q += 2) {
        t[q] = _mm256_unpacklo_ps(r[q], r[q + 1]);
        t[q + 1] = _mm256_unpackhi_ps(r[q], r[q + 1]);
    }
    for (int q = 0; q < 8; q += 4) {
        r[q] = _mm256_shuffle_ps(t[q], t[q + 2], 0x44);
        r[q + 1] = _mm256_shuffle_ps(t[q], t[q + 2], 0xEE);
        r[q + 2] = _mm256_shuffle_ps(t[q + 1], t[q + 3], 0x44);
        r[q + 3] = _mm256_shuffle_ps(t[q + 1], t[q + 3], 0xEE);
    }
    for (int q = 0; q < 4; ++q) {
        _mm256_storeu_ps(out + static_cast<std::size_t>(q) * ld_out,
                         _mm256_permute2f128_ps(r[q], r[q + 4], 0x20));
        _mm256_storeu_ps(out + static_cast<std::size_t>(q + 4) * ld_out,
                         _mm256_permute2f128_ps(r[q], r[q + 4], 0x31));
    }
}

// Columns [j, j + cols) of B' as k rows of `width` floats, zero beyond cols. (A template on V
// only so that each instruction set's file keeps its own copy.)
template <class V>
inline void copy_panel(const Operands& o, int j, int cols, int width, float* panel) {
    for (int p = 0; p < o.k; ++p) {
        float* row = panel + static_cast<std::size_t>(p) * width;
        for (int q = cols; q < width; ++q) row[q] = 0.0f;
    }
    if (o.trans_b) {  // B'[p][j + q] = B[j + q][p]: read B's rows, write the panel's columns
        const int q8 = cols - cols % 8, p8 = o.k - o.k % 8;
        for (int q = 0; q < q8; q += 8)
            for (int p = 0; p < p8; p += 8)
                transpose_8x8<V>(o.b + static_cast<std::size_t>(j + q) * o.ldb + p, o.ldb,
                                 panel + static_cast<std::size_t>(p) * width + q, width);
        for (int q = 0; q < cols; ++q) {  // what the 8 x 8 blocks left: the edges
            const float* brow = o.b + static_cast<std::size_t>(j + q) * o.ldb;
            for (int p = q < q8 ? p8 : 0; p < o.k; ++p)
                panel[static_cast<std::size_t>(p) * width + q] = brow[p];
        }
    } else {
        for (int p = 0; p < o.k; ++p)
            for (int q = 0; q < cols; ++q)
                panel[static_cast<std::size_t>(p) * width + q] =
                    o.b[static_cast<std::size_t>(p) * o.ldb + j + q];
    }
}

template <class V, bool TransA>
inline void product(const Operands& o) {
    constexpr int W = V::lanes * 2;
    for (int j = 0; j < o.n; j += W) {
        const int cols = o.n - j < W ? o.n - j : W;
        // A full panel of an untransposed B is read where it lies; a transposed one, or the
        // last narrow one, is copied first (once for all of C's rows).
        if (!o.trans_b && cols == W) {
            rows_of_panel<V, TransA>(o, o.b + j, static_cast<std::size_t>(o.ldb), j, cols);
        } else {
            copy_panel<V>(o, j, cols, W, o.scratch);
            rows_of_panel<V, TransA>(o, o.scratch, W, j, cols);
        }
    }
}

// ---- Products larger than the caches: packed blocks, as BLIS and OpenBLAS do ----
//
// op(A) and B' are copied block by block into contiguous slivers (A's kRows rows, B's two
// vectors of columns, each kKc deep), so the micro-kernel streams both from L1 and L2 however
// large the product. Blocking k changes no bit: a tile's sums so far are kept in fp32
// (`sums`) and taken up again with the next block's k in order, so each element of C is still
// one in-order sum of fused multiply-adds from zero, combined with alpha and beta once at the
// end: the same bits as the in-place path above, for any size and any split across threads.
constexpr int kRows = 6;   // rows of a micro-tile (12 accumulators, 2 vectors a row)
constexpr int kKc = 256;   // k per block: a sliver of B' (kKc x 2 vectors) fits in L1
constexpr int kMc = 144;   // rows per block: a block of A (kMc x kKc) fits in L2
constexpr int kNc = 1024;  // columns per block of B' (kKc x kNc in L2/L3)

// Rows [i0, i0 + rows) and k [p0, p0 + kc) of op(A): slivers of kRows rows, each p's kRows
// values together, zero past the last row.
template <class V, bool TransA>
inline void pack_a(const Operands& o, int i0, int rows, int p0, int kc, float* out) {
    const std::size_t lda = static_cast<std::size_t>(o.lda);
    for (int s = 0; s < rows; s += kRows) {
        float* sliver = out + static_cast<std::size_t>(s) * kc;
        const int live = rows - s < kRows ? rows - s : kRows;
        for (int p = 0; p < kc; ++p) {
            float* dst = sliver + static_cast<std::size_t>(p) * kRows;
            for (int r = 0; r < kRows; ++r) {
                const std::size_t i = static_cast<std::size_t>(i0 + s + r),
                                  pp = static_cast<std::size_t>(p0 + p);
                dst[r] = r < live ? (TransA ? o.a[pp * lda + i] : o.a[i * lda + pp]) : 0.0f;
            }
        }
    }
}

// Columns [j0, j0 + cols) and k [p0, p0 + kc) of B': slivers of W columns, zero past the last.
template <class V>
inline void pack_b(const Operands& o, int j0, int cols, int p0, int kc, float* out) {
    constexpr int W = V::lanes * 2;
    const std::size_t ldb = static_cast<std::size_t>(o.ldb);
    for (int q = 0; q < cols; q += W) {
        float* sliver = out + static_cast<std::size_t>(q) * kc;
        const int live = cols - q < W ? cols - q : W;
        if (o.trans_b) {  // B'[p][j] = B[j][p]: read B's rows, write the sliver's columns
            for (int c = 0; c < W; ++c) {
                float* dst = sliver + c;
                if (c >= live) {
                    for (int p = 0; p < kc; ++p) dst[static_cast<std::size_t>(p) * W] = 0.0f;
                    continue;
                }
                const float* src = o.b + static_cast<std::size_t>(j0 + q + c) * ldb + p0;
                for (int p = 0; p < kc; ++p) dst[static_cast<std::size_t>(p) * W] = src[p];
            }
        } else {
            for (int p = 0; p < kc; ++p) {
                const float* src = o.b + static_cast<std::size_t>(p0 + p) * ldb + j0 + q;
                float* dst = sliver + static_cast<std::size_t>(p) * W;
                if (live == W) {
                    V::store_first(dst, V::load(src), V::lanes);
                    V::store_first(dst + V::lanes, V::load(src + V::lanes), V::lanes);
                } else {
                    for (int c = 0; c < W; ++c) dst[c] = c < live ? src[c] : 0.0f;
                }
            }
        }
    }
}

// One micro-tile over one block of k: from zero (the first block) or its sums so far, into
// its sums (not the last block) or into C (the last: `rows` x `cols` of it, as store_tile).
template <class V>
inline void packed_tile(const Operands& o, const float* a, const float* b, int kc, float* sums,
                        bool first, bool last, float* c, int rows, int cols) {
    constexpr int W = V::lanes * 2;
    typename V::reg lo[kRows], hi[kRows];
#pragma GCC unroll 8
    for (int r = 0; r < kRows; ++r) {
        lo[r] = first ? V::zero() : V::load(sums + r * W);
        hi[r] = first ? V::zero() : V::load(sums + r * W + V::lanes);
    }
    for (int p = 0; p < kc; ++p) {
        const float* bp = b + static_cast<std::size_t>(p) * W;
        const typename V::reg b0 = V::load(bp), b1 = V::load(bp + V::lanes);
        const float* ap = a + static_cast<std::size_t>(p) * kRows;
#pragma GCC unroll 8
        for (int r = 0; r < kRows; ++r) {
            const typename V::reg av = V::broadcast(ap + r);
            lo[r] = V::fma(av, b0, lo[r]);
            hi[r] = V::fma(av, b1, hi[r]);
        }
    }
    if (!last) {
#pragma GCC unroll 8
        for (int r = 0; r < kRows; ++r) {
            V::store_first(sums + r * W, lo[r], V::lanes);
            V::store_first(sums + r * W + V::lanes, hi[r], V::lanes);
        }
        return;
    }
    switch (rows) {  // the last rows of C may be fewer (the sliver's others are its padding)
        case kRows:
            return store_tile<V, kRows>(o, lo, hi, c, cols);
        case 5:
            return store_tile<V, 5>(o, lo, hi, c, cols);
        case 4:
            return store_tile<V, 4>(o, lo, hi, c, cols);
        case 3:
            return store_tile<V, 3>(o, lo, hi, c, cols);
        case 2:
            return store_tile<V, 2>(o, lo, hi, c, cols);
        default:
            return store_tile<V, 1>(o, lo, hi, c, cols);
    }
}

template <class V, bool TransA>
inline void packed_product(const Operands& o, const PackedBuffers& buf) {
    constexpr int W = V::lanes * 2;
    for (int jc = 0; jc < o.n; jc += kNc) {
        const int nc = o.n - jc < kNc ? o.n - jc : kNc;
        const int slivers_b = (nc + W - 1) / W;
        for (int ic = 0; ic < o.m; ic += kMc) {
            const int mc = o.m - ic < kMc ? o.m - ic : kMc;
            const int slivers_a = (mc + kRows - 1) / kRows;
            for (int pc = 0; pc < o.k; pc += kKc) {
                const int kc = o.k - pc < kKc ? o.k - pc : kKc;
                const bool first = pc == 0, last = pc + kc == o.k;
                pack_b<V>(o, jc, nc, pc, kc, buf.b);
                pack_a<V, TransA>(o, ic, mc, pc, kc, buf.a);
                for (int q = 0; q < slivers_b; ++q) {
                    const int cols = nc - q * W < W ? nc - q * W : W;
                    const float* b = buf.b + static_cast<std::size_t>(q) * W * kc;
                    for (int s = 0; s < slivers_a; ++s) {
                        const int rows = mc - s * kRows < kRows ? mc - s * kRows : kRows;
                        float* c =
                            o.c + static_cast<std::size_t>(ic + s * kRows) * o.ldc + jc + q * W;
                        float* sums =
                            buf.sums + (static_cast<std::size_t>(q) * slivers_a + s) * kRows * W;
                        packed_tile<V>(o, buf.a + static_cast<std::size_t>(s) * kRows * kc, b, kc,
                                       sums, first, last, c, rows, cols);
                    }
                }
            }
        }
    }
}

template <class V>
inline void run_packed(const Operands& o, const PackedBuffers& buf) {
    if (o.trans_a)
        packed_product<V, true>(o, buf);
    else
        packed_product<V, false>(o, buf);
}

template <class V>
inline void run(const Operands& o) {
    if (o.trans_a)
        product<V, true>(o);
    else
        product<V, false>(o);
}

}  // namespace pd::cpu::small_gemm_detail
