// The CPU backend's element-wise kernels: GELU, bias and residual adds, softmax
// cross-entropy, and the optimizers' updates. Each works on a contiguous range, so the
// intra-op pool can hand slices of one tensor to its threads.
//
// Vectorised by the compiler, not by hand: plain loops over restrict pointers, built with
// -O3 -fno-math-errno -fno-trapping-math (elementwise.cpp only), and with GCC's function
// multi-versioning compiled three times, for x86-64-v4 (AVX-512), x86-64-v3 (AVX2 + FMA) and
// the x86-64 baseline (SSE2), chosen once at load time. The .deb thus runs on any x86-64 and
// uses 16- or 8-wide vectors where the CPU has them (GELU's polynomial is compute-bound: 16
// lanes halve its time on an AVX-512 core); no SIMD library or intrinsics to keep in step
// with two backends. The v4 and v3 clones give bit-identical results (each lane fuses the
// same multiply-adds and no sum is reassociated; checked on 100,003 random inputs of every
// kernel); the baseline has no FMA and rounds those products separately.
//
// GELU's tanh is not libm's: 1 + tanh(u) = 2 / (1 + exp(-2u)), with exp from a degree-7
// polynomial after range reduction by ln 2. Error against the exact tanh-form GELU (double
// precision), |x| <= 10: forward at most 1.4e-7 * max(1, |x|), backward at most 2.0e-7, where
// the same formulas with float std::tanh err by 1.2e-7 and 5.6e-7 (test_elementwise.cpp
// holds the bounds, with margin). exp in softmax: relative error below 2e-7.
#pragma once

#include <cstddef>

namespace pd::cpu {

// g = x * Phi_tanh(x), GPT-2's tanh approximation of GELU.
void gelu_forward(const float* a, float* g, std::size_t n);
// da = dg * GELU'(a); da may be dg.
void gelu_backward(const float* a, const float* dg, float* da, std::size_t n);

// y += x
void add_inplace(float* y, const float* x, std::size_t n);
// x = pd::round_to_bf16(x), element-wise (round to nearest even, NaN kept a NaN)
void round_to_bf16(float* x, std::size_t n);
// x = pd::round_to_fp16(x), element-wise (overflow to infinity, subnormals kept)
void round_to_fp16(float* x, std::size_t n);
// out[r, j] += bias[j] + residual[r, j] for rows [0, rows)
void bias_residual(float* out, const float* bias, const float* residual, std::size_t rows,
                   std::size_t width);
// y[r, :] = bias for rows [0, rows)
void broadcast_rows(float* y, const float* bias, std::size_t rows, std::size_t width);
// sums[j] += sum_r x[r, j]
void add_column_sums(float* sums, const float* x, std::size_t rows, std::size_t width);

// Rows [0, rows) of a softmax cross-entropy: returns their summed loss; dlogits = (p -
// onehot(label)) * scale. Labels are class indices stored as floats.
double softmax_cross_entropy(const float* logits, const float* labels, std::size_t rows,
                             std::size_t classes, float scale, float* dlogits);

// PyTorch's SGD with momentum (v = mu v + g; p -= lr v) over n parameters.
void sgd_update(float* params, const float* grads, float* velocity, std::size_t n, float lr,
                float momentum);
// PyTorch's AdamW step: decoupled decay, then p -= step * m / (sqrt(v) * inv_sqrt_bc2 + eps)
// with step = lr / (1 - beta1^t) and inv_sqrt_bc2 = 1 / sqrt(1 - beta2^t).
struct AdamWStep {
    float lr, beta1, beta2, eps, weight_decay, step, inv_sqrt_bc2;
};
void adamw_update(float* params, const float* grads, float* m, float* v, std::size_t n,
                  const AdamWStep& s);

}  // namespace pd::cpu
