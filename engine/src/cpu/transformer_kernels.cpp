#include "cpu/transformer_kernels.h"

#include <algorithm>
#include <cmath>
#include <vector>

#include "cpu/kernels.h"

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
            gemm_on_this_thread(false, true, seq_len, seq_len, head_dim, scale, q + base, ld,
                                k + base, ld, 0.0f, p, seq_len);
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
            gemm_on_this_thread(false, false, seq_len, head_dim, seq_len, 1.0f, p, seq_len,
                                v + base, ld, 0.0f, out + base, ld);
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
            gemm_on_this_thread(true, false, seq_len, head_dim, seq_len, 1.0f, p, seq_len,
                                dout + base, ld, 0.0f, dv + base, ld);
            gemm_on_this_thread(false, true, seq_len, seq_len, head_dim, 1.0f, dout + base, ld,
                                v + base, ld, 0.0f, ds.data(), seq_len);
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
            gemm_on_this_thread(false, false, seq_len, head_dim, seq_len, scale, ds.data(), seq_len,
                                k + base, ld, 0.0f, dq + base, ld);
            gemm_on_this_thread(true, false, seq_len, head_dim, seq_len, scale, ds.data(), seq_len,
                                q + base, ld, 0.0f, dk + base, ld);
        }
    });
}

// Rows that see nothing of a block keep their state; a block no row sees is skipped whole (the
// causal future of a ring step). Positions must ascend.
void attention_block_forward(IntraOpPool& pool, const float* q, const float* k, const float* v,
                             int seqs, int q_len, int kv_len, int heads, int head_dim,
                             const int* q_pos, const int* kv_pos, float* acc, float* m, float* l) {
    // Positions ascend: a block wholly in every query's future costs nothing (causal skip).
    if (kv_len == 0 || q_len == 0 || kv_pos[0] > q_pos[q_len - 1]) return;
    const int ld = heads * head_dim;
    const std::size_t sq = sz(q_len), skv = sz(kv_len), d = sz(head_dim);
    const float scale = 1.0f / std::sqrt(static_cast<float>(head_dim));
    pool.parallel_for(sz(seqs) * sz(heads), 1, [&](std::size_t lo, std::size_t hi) {
        std::vector<float> s(sq * skv);
        for (std::size_t pair = lo; pair < hi; ++pair) {
            const std::size_t b = pair / sz(heads), j = pair % sz(heads);
            const std::size_t qbase = b * sq * sz(ld) + j * d, kbase = b * skv * sz(ld) + j * d;
            gemm_on_this_thread(false, true, q_len, kv_len, head_dim, scale, q + qbase, ld,
                                k + kbase, ld, 0.0f, s.data(), kv_len);
            float* mr = m + pair * sq;
            float* lr = l + pair * sq;
            for (std::size_t i = 0; i < sq; ++i) {
                float* row = s.data() + i * skv;
                float top = -INFINITY;
                for (std::size_t c = 0; c < skv; ++c)
                    if (kv_pos[c] <= q_pos[i]) top = std::max(top, row[c]);
                if (top == -INFINITY) {  // nothing visible: this row's P is zero
                    std::fill(row, row + skv, 0.0f);
                    continue;
                }
                const float new_m = std::max(mr[i], top);
                const float rescale = std::exp(mr[i] - new_m);  // 0 for the first block seen
                double sum = 0.0;
                for (std::size_t c = 0; c < skv; ++c) {
                    row[c] = kv_pos[c] <= q_pos[i] ? std::exp(row[c] - new_m) : 0.0f;
                    sum += row[c];
                }
                lr[i] = lr[i] * rescale + static_cast<float>(sum);
                mr[i] = new_m;
                float* out = acc + qbase + i * sz(ld);
                for (std::size_t c = 0; c < d; ++c) out[c] *= rescale;
            }
            // acc += P V for this block.
            gemm_on_this_thread(false, false, q_len, head_dim, kv_len, 1.0f, s.data(), kv_len,
                                v + kbase, ld, 1.0f, acc + qbase, ld);
        }
    });
}

void attention_block_finish(float* acc, float* m, const float* l, int seqs, int q_len, int heads,
                            int head_dim) {
    const std::size_t ld = sz(heads) * sz(head_dim), d = sz(head_dim);
    for (std::size_t b = 0; b < sz(seqs); ++b)
        for (std::size_t j = 0; j < sz(heads); ++j)
            for (std::size_t i = 0; i < sz(q_len); ++i) {
                const std::size_t row = (b * sz(heads) + j) * sz(q_len) + i;
                float* out = acc + (b * sz(q_len) + i) * ld + j * d;
                const float inv = 1.0f / l[row];
                for (std::size_t c = 0; c < d; ++c) out[c] *= inv;
                m[row] += std::log(l[row]);
            }
}

void attention_block_backward(IntraOpPool& pool, const float* q, const float* k, const float* v,
                              const float* out, const float* dout, const float* lse, int seqs,
                              int q_len, int kv_len, int heads, int head_dim, const int* q_pos,
                              const int* kv_pos, float* dq, float* dk, float* dv) {
    if (kv_len == 0 || q_len == 0 || kv_pos[0] > q_pos[q_len - 1]) return;  // as forward
    const int ld = heads * head_dim;
    const std::size_t sq = sz(q_len), skv = sz(kv_len), d = sz(head_dim);
    const float scale = 1.0f / std::sqrt(static_cast<float>(head_dim));
    pool.parallel_for(sz(seqs) * sz(heads), 1, [&](std::size_t lo, std::size_t hi) {
        std::vector<float> p(sq * skv), ds(sq * skv);
        for (std::size_t pair = lo; pair < hi; ++pair) {
            const std::size_t b = pair / sz(heads), j = pair % sz(heads);
            const std::size_t qbase = b * sq * sz(ld) + j * d, kbase = b * skv * sz(ld) + j * d;
            const float* lr = lse + pair * sq;
            // P = exp(S - lse), the final probabilities of this block's keys.
            gemm_on_this_thread(false, true, q_len, kv_len, head_dim, scale, q + qbase, ld,
                                k + kbase, ld, 0.0f, p.data(), kv_len);
            for (std::size_t i = 0; i < sq; ++i)
                for (std::size_t c = 0; c < skv; ++c) {
                    float& x = p[i * skv + c];
                    x = kv_pos[c] <= q_pos[i] ? std::exp(x - lr[i]) : 0.0f;
                }
            gemm_on_this_thread(true, false, kv_len, head_dim, q_len, 1.0f, p.data(), kv_len,
                                dout + qbase, ld, 1.0f, dv + kbase, ld);
            gemm_on_this_thread(false, true, q_len, kv_len, head_dim, 1.0f, dout + qbase, ld,
                                v + kbase, ld, 0.0f, ds.data(), kv_len);
            for (std::size_t i = 0; i < sq; ++i) {
                // D = rowsum(dout * out) over the head's columns: rowsum(P dP) over all keys.
                const float* o = out + qbase + i * sz(ld);
                const float* g = dout + qbase + i * sz(ld);
                double dot = 0.0;
                for (std::size_t c = 0; c < d; ++c) dot += static_cast<double>(o[c]) * g[c];
                const float D = static_cast<float>(dot);
                for (std::size_t c = 0; c < skv; ++c)
                    ds[i * skv + c] = p[i * skv + c] * (ds[i * skv + c] - D);
            }
            gemm_on_this_thread(false, false, q_len, head_dim, kv_len, scale, ds.data(), kv_len,
                                k + kbase, ld, 1.0f, dq + qbase, ld);
            gemm_on_this_thread(true, false, kv_len, head_dim, q_len, scale, ds.data(), kv_len,
                                q + qbase, ld, 1.0f, dk + kbase, ld);
        }
    });
}

}  // namespace pd::cpu
