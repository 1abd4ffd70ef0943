// The CPU backend's transformer kernels: LayerNorm and causal multi-head self-attention
// (shapes and conventions in backend/device_ops.h). Attention runs one (sequence, head) pair
// per part on the device's intra-op threads, each pair's products one BLAS call; every result
// is computed in a fixed order, so it is the same at every thread count.
#pragma once

#include "cpu/intra_op_pool.h"

namespace pd::cpu {

inline constexpr float kLayerNormEps = 1e-5f;

void layer_norm_forward(IntraOpPool& pool, const float* x, const float* gamma, const float* beta,
                        int rows, int width, float* y, float* stats);
void layer_norm_backward(const float* x, const float* gamma, const float* stats, const float* dy,
                         int rows, int width, float* dx, float* dgamma, float* dbeta);
void attention_forward(IntraOpPool& pool, const float* q, const float* k, const float* v, int seqs,
                       int seq_len, int heads, int head_dim, float* probs, float* out);
void attention_backward(IntraOpPool& pool, const float* q, const float* k, const float* v,
                        const float* probs, const float* dout, int seqs, int seq_len, int heads,
                        int head_dim, float* dq, float* dk, float* dv);

void attention_block_forward(IntraOpPool& pool, const float* q, const float* k, const float* v,
                             int seqs, int q_len, int kv_len, int heads, int head_dim,
                             const int* q_pos, const int* kv_pos, float* acc, float* m, float* l);
void attention_block_finish(float* acc, float* m, const float* l, int seqs, int q_len, int heads,
                            int head_dim);
void attention_block_backward(IntraOpPool& pool, const float* q, const float* k, const float* v,
                              const float* out, const float* dout, const float* lse, int seqs,
                              int q_len, int kv_len, int heads, int head_dim, const int* q_pos,
                              const int* kv_pos, float* dq, float* dk, float* dv);

}  // namespace pd::cpu
