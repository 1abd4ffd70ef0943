// CPU kernels of the model. Every matrix product goes through BLAS (single-threaded per call:
// each stream is one thread, as each GPU stream would be one queue).
#pragma once

#include <cstddef>

namespace pd::cpu {

void init_blas_threads();

// C[m,n] = alpha * op(A) op(B) + beta * C, row-major.
void gemm(bool trans_a, bool trans_b, int m, int n, int k, float alpha, const float* a,
          const float* b, float beta, float* c);

// y[b,out] = x[b,in] w[in,out] + bias
void linear_forward(const float* x, const float* w, const float* bias, int rows, int in, int out,
                    float* y);
// dw += x^T dy, dbias += sum_rows dy, and (when dx != nullptr) dx = dy w^T.
void linear_backward(const float* x, const float* w, const float* dy, int rows, int in, int out,
                     float* dw, float* dbias, float* dx);

void gelu_forward(const float* a, float* g, std::size_t n);
void gelu_backward(const float* a, const float* dg, float* da, std::size_t n);

// Softmax cross-entropy (labels are class indices stored as floats): returns the summed loss over rows; dlogits = (p - onehot) * scale.
double softmax_cross_entropy(const float* logits, const float* labels, int rows, int classes,
                             float scale, float* dlogits);

void add_inplace(float* y, const float* x, std::size_t n);

}  // namespace pd::cpu
