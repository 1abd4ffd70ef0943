#include "cpu/transformer_kernels.h"

#include <cblas.h>

#include <algorithm>
#include <cmath>
#include <vector>

namespace pd::cpu {

namespace {

// Rows per intra-op part for LayerNorm: a row costs a few flops per element.
constexpr std::size_t kRowGrain = 64;

std::size_t sz(int n) {
    return static_cast<std::size_t>(n);
}

}  // namespace

void layer_norm_forward(IntraOpPool& pool, const float* x, const float* gamma, const float* beta,
                        int rows, int width, float* y, float* stats) {
    const std::size_t w = sz(width);
    pool.parallel_for(sz(rows), kRowGrain, [&](std::size_t lo, std::size_t hi) {
        for (std::size_t r = lo; r < hi; ++r) {
            const float* xr = x + r * w;
            // Mean and variance in double: the row's sums are then exact to fp32's last bit
            // whatever the width.
            double sum = 0.0;
            for (std::size_t j = 0; j < w; ++j) sum += xr[j];
            const double mean = sum / static_cast<double>(w);
            double sq = 0.0;
            for (std::size_t j = 0; j < w; ++j) sq += (xr[j] - mean) * (xr[j] - mean);
            const double rstd = 1.0 / std::sqrt(sq / static_cast<double>(w) + kLayerNormEps);
            const float m = static_cast<float>(mean), s = static_cast<float>(rstd);
            float* yr = y + r * w;
            for (std::size_t j = 0; j < w; ++j) yr[j] = (xr[j] - m) * s * gamma[j] + beta[j];
            stats[2 * r] = m;
            stats[2 * r + 1] = s;
        }
    });
}

// One thread, rows in order: dgamma and dbeta sum over every row, and a fixed order keeps
// them the same at every thread count (the kernel is a small part of a block's time).
void layer_norm_backward(const float* x, const float* gamma, const float* stats, const float* dy,
                         int rows, int width, float* dx, float* dgamma, float* dbeta) {
    const std::size_t w = sz(width);
    for (std::size_t r = 0; r < sz(rows); ++r) {
        const float* xr = x + r * w;
        const float* dyr = dy + r * w;
        float* dxr = dx + r * w;
        const float mean = stats[2 * r], rstd = stats[2 * r + 1];
        // dx = rstd (g - mean(g) - xhat mean(g xhat)), g = dy * gamma.
        double sum_g = 0.0, sum_gx = 0.0;
        for (std::size_t j = 0; j < w; ++j) {
            const float xhat = (xr[j] - mean) * rstd;
            const float g = dyr[j] * gamma[j];
            sum_g += g;
            sum_gx += static_cast<double>(g) * xhat;
            dgamma[j] += dyr[j] * xhat;
            dbeta[j] += dyr[j];
        }
        const float mean_g = static_cast<float>(sum_g / static_cast<double>(w));
        const float mean_gx = static_cast<float>(sum_gx / static_cast<double>(w));
        for (std::size_t j = 0; j < w; ++j) {
            const float xhat = (xr[j] - mean) * rstd;
            dxr[j] = rstd * (dyr[j] * gamma[j] - mean_g - xhat * mean_gx);
        }
    }
}

void attention_forward(IntraOpPool& pool, const float* q, const float* k, const float* v, int seqs,
                       int seq_len, int heads, int head_dim, float* probs, float* out) {
    const int ld = heads * head_dim;
    const std::size_t s = sz(seq_len);
    const float scale = 1.0f / std::sqrt(static_cast<float>(head_dim));
    pool.parallel_for(sz(seqs) * sz(heads), 1, [&](std::size_t lo, std::size_t hi) {
        for (std::size_t pair = lo; pair < hi; ++pair) {
            const std::size_t b = pair / sz(heads), j = pair % sz(heads);
            const std::size_t base = b * s * sz(ld) + j * sz(head_dim);
            float* p = probs + pair * s * s;
            // Scores q k^T / sqrt(d), then a softmax of each row over its past and itself.
            cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, seq_len, seq_len, head_dim, scale,
                        q + base, ld, k + base, ld, 0.0f, p, seq_len);
            for (std::size_t i = 0; i < s; ++i) {
                float* row = p + i * s;
                const float top = *std::max_element(row, row + i + 1);
                double sum = 0.0;
                for (std::size_t c = 0; c <= i; ++c) {
                    row[c] = std::exp(row[c] - top);
                    sum += row[c];
                }
                const float inv = static_cast<float>(1.0 / sum);
                for (std::size_t c = 0; c <= i; ++c) row[c] *= inv;
                std::fill(row + i + 1, row + s, 0.0f);  // the masked future
            }
            cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, seq_len, head_dim, seq_len, 1.0f,
                        p, seq_len, v + base, ld, 0.0f, out + base, ld);
        }
    });
}

void attention_backward(IntraOpPool& pool, const float* q, const float* k, const float* v,
                        const float* probs, const float* dout, int seqs, int seq_len, int heads,
                        int head_dim, float* dq, float* dk, float* dv) {
    const int ld = heads * head_dim;
    const std::size_t s = sz(seq_len);
    const float scale = 1.0f / std::sqrt(static_cast<float>(head_dim));
    pool.parallel_for(sz(seqs) * sz(heads), 1, [&](std::size_t lo, std::size_t hi) {
        // dP, then dS in place: seq_len^2 scratch per part, freed with the part (a kernel's
        // own scratch, like cuBLAS's workspace, not a tensor the device accounts).
        std::vector<float> ds(s * s);
        for (std::size_t pair = lo; pair < hi; ++pair) {
            const std::size_t b = pair / sz(heads), j = pair % sz(heads);
            const std::size_t base = b * s * sz(ld) + j * sz(head_dim);
            const float* p = probs + pair * s * s;
            // dV = P^T dO; dP = dO V^T.
            cblas_sgemm(CblasRowMajor, CblasTrans, CblasNoTrans, seq_len, head_dim, seq_len, 1.0f,
                        p, seq_len, dout + base, ld, 0.0f, dv + base, ld);
            cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, seq_len, seq_len, head_dim, 1.0f,
                        dout + base, ld, v + base, ld, 0.0f, ds.data(), seq_len);
            // Softmax backward: dS = P (dP - rowsum(P dP)); masked entries have P = 0.
            for (std::size_t i = 0; i < s; ++i) {
                const float* pr = p + i * s;
                float* dr = ds.data() + i * s;
                double dot = 0.0;
                for (std::size_t c = 0; c <= i; ++c) dot += static_cast<double>(pr[c]) * dr[c];
                const float d = static_cast<float>(dot);
                for (std::size_t c = 0; c <= i; ++c) dr[c] = pr[c] * (dr[c] - d);
                std::fill(dr + i + 1, dr + s, 0.0f);
            }
            // dQ = dS K / sqrt(d); dK = dS^T Q / sqrt(d).
            cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, seq_len, head_dim, seq_len,
                        scale, ds.data(), seq_len, k + base, ld, 0.0f, dq + base, ld);
            cblas_sgemm(CblasRowMajor, CblasTrans, CblasNoTrans, seq_len, head_dim, seq_len, scale,
                        ds.data(), seq_len, q + base, ld, 0.0f, dk + base, ld);
        }
    });
}

}  // namespace pd::cpu
