// CUDA kernels of the model, each launched on the stream it is given. Every function mirrors
// one in cpu/kernels.h with the same row-major semantics, so a CUDA run matches a CPU run.
// Errors come back as pd::Error naming the call and file:line (see cuda_check.h).
#pragma once

#include <cublas_v2.h>
#include <cuda_runtime.h>

#include <cstddef>

namespace pd::cuda {

// C[m,n] = alpha * op(A) op(B) + beta * C, row-major (through cuBLAS, column-major, by
// computing C^T = op(B)^T op(A)^T). `handle` is already bound to `stream`.
void gemm(cublasHandle_t handle, bool trans_a, bool trans_b, int m, int n, int k, float alpha,
          const float* a, const float* b, float beta, float* c);

// y[rows,out] = x[rows,in] w[in,out] + bias
void linear_forward(cublasHandle_t handle, cudaStream_t stream, const float* x, const float* w,
                    const float* bias, int rows, int in, int out, float* y);
// dw += x^T dy, dbias += column sums of dy, and (when dx != nullptr) dx = dy w^T. Without
// `accumulate` dw and dbias are written over instead (the same bits as adding to zeros).
void linear_backward(cublasHandle_t handle, cudaStream_t stream, const float* x, const float* w,
                     const float* dy, int rows, int in, int out, float* dw, float* dbias, float* dx,
                     bool accumulate);

void gelu_forward(cudaStream_t stream, const float* a, float* g, std::size_t n);
// da may alias dg.
void gelu_backward(cudaStream_t stream, const float* a, const float* dg, float* da, std::size_t n);

// Softmax cross-entropy over `rows` rows of `classes` logits; labels are class indices stored
// as floats. Adds the summed loss (double) to *loss_sum; dlogits = (p - onehot) * scale.
void softmax_cross_entropy(cudaStream_t stream, const float* logits, const float* labels, int rows,
                           int classes, float scale, float* dlogits, double* loss_sum);

void add_inplace(cudaStream_t stream, float* y, const float* x, std::size_t n);
// out[r, j] += bias[j] + residual[r, j]
void bias_residual(cudaStream_t stream, float* out, const float* bias, const float* residual,
                   int rows, int width);

// PyTorch's SGD with momentum: v = mu v + g; p -= lr v.
void sgd_momentum(cudaStream_t stream, float* params, const float* grads, float* velocity,
                  std::size_t n, float lr, float momentum);
// AdamW as in optimizer.cpp: m, v moments; decoupled weight decay; bias corrections given.
void adamw(cudaStream_t stream, float* params, const float* grads, float* m, float* v,
           std::size_t n, float lr, float beta1, float beta2, float eps, float weight_decay,
           float step_size, float inv_sqrt_bc2);

}  // namespace pd::cuda
