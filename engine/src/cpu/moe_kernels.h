// The CPU backend's mixture-of-experts kernels: routing (softmax, top-k, capacity), the
// gather of tokens into expert slots and the weighted scatter back, and their backward
// (shapes and conventions in backend/device_ops.h). Routing walks the tokens in order, so a
// sequence's slots are the same on every device and at every thread count.
#pragma once

namespace pd::cpu {

void moe_route(const float* logits, int seqs, int seq_len, int experts, int top_k, int capacity,
               float aux_weight, float* probs, float* routes, float* fractions, double* aux_sum);
void moe_dispatch(const float* x, const float* routes, int tokens, int top_k, int width,
                  float* dispatch);
void moe_combine(const float* y, const float* routes, int tokens, int top_k, int width, float* out);
void moe_combine_backward(const float* y, const float* routes, const float* dout, int tokens,
                          int top_k, int width, float* dy, float* dgate);
void moe_dispatch_backward(const float* ddispatch, const float* routes, int tokens, int top_k,
                           int width, float* dx);
void moe_router_backward(const float* probs, const float* routes, const float* fractions,
                         const float* dgate, int seqs, int seq_len, int experts, int top_k,
                         float aux_scale, float* dlogits);

}  // namespace pd::cpu
