#include "cpu/kernels.h"

#include <cblas.h>

#include <algorithm>
#include <cmath>
#include <mutex>

namespace pd::cpu {

void init_blas_threads() {
    static std::once_flag once;
    std::call_once(once, [] { openblas_set_num_threads(1); });
}

void gemm(bool trans_a, bool trans_b, int m, int n, int k, float alpha, const float* a,
          const float* b, float beta, float* c) {
    if (m == 0 || n == 0) return;
    const int lda = trans_a ? m : k;
    const int ldb = trans_b ? k : n;
    cblas_sgemm(CblasRowMajor, trans_a ? CblasTrans : CblasNoTrans,
                trans_b ? CblasTrans : CblasNoTrans, m, n, k, alpha, a, lda, b, ldb, beta, c, n);
}

void linear_forward(const float* x, const float* w, const float* bias, int rows, int in, int out,
                    float* y) {
    for (int r = 0; r < rows; ++r) std::copy_n(bias, out, y + static_cast<std::size_t>(r) * out);
    gemm(false, false, rows, out, in, 1.0f, x, w, 1.0f, y);
}

void linear_backward(const float* x, const float* w, const float* dy, int rows, int in, int out,
                     float* dw, float* dbias, float* dx) {
    gemm(true, false, in, out, rows, 1.0f, x, dy, 1.0f, dw);
    for (int r = 0; r < rows; ++r) {
        const float* row = dy + static_cast<std::size_t>(r) * out;
        for (int j = 0; j < out; ++j) dbias[j] += row[j];
    }
    if (dx) gemm(false, true, rows, in, out, 1.0f, dy, w, 0.0f, dx);
}

namespace {
constexpr float kSqrt2OverPi = 0.7978845608028654f;
constexpr float kGeluCoeff = 0.044715f;
}  // namespace

// GELU, tanh approximation (as GPT-2 and llm.c use).
void gelu_forward(const float* a, float* g, std::size_t n) {
    for (std::size_t i = 0; i < n; ++i) {
        const float x = a[i];
        const float inner = kSqrt2OverPi * (x + kGeluCoeff * x * x * x);
        g[i] = 0.5f * x * (1.0f + std::tanh(inner));
    }
}

void gelu_backward(const float* a, const float* dg, float* da, std::size_t n) {
    for (std::size_t i = 0; i < n; ++i) {
        const float x = a[i];
        const float inner = kSqrt2OverPi * (x + kGeluCoeff * x * x * x);
        const float t = std::tanh(inner);
        const float sech2 = 1.0f - t * t;
        const float d = 0.5f * (1.0f + t) +
                        0.5f * x * sech2 * kSqrt2OverPi * (1.0f + 3.0f * kGeluCoeff * x * x);
        da[i] = dg[i] * d;
    }
}

double softmax_cross_entropy(const float* logits, const float* labels, int rows, int classes,
                             float scale, float* dlogits) {
    double total = 0.0;
    for (int r = 0; r < rows; ++r) {
        const float* z = logits + static_cast<std::size_t>(r) * classes;
        float* dz = dlogits + static_cast<std::size_t>(r) * classes;
        const float zmax = *std::max_element(z, z + classes);
        double sum = 0.0;
        for (int j = 0; j < classes; ++j) sum += std::exp(static_cast<double>(z[j] - zmax));
        const double log_sum = std::log(sum);
        const int label = static_cast<int>(labels[r]);
        total += log_sum - static_cast<double>(z[label] - zmax);
        for (int j = 0; j < classes; ++j) {
            const double p = std::exp(static_cast<double>(z[j] - zmax) - log_sum);
            dz[j] = static_cast<float>((p - (j == label ? 1.0 : 0.0)) * scale);
        }
    }
    return total;
}

void add_inplace(float* y, const float* x, std::size_t n) {
    for (std::size_t i = 0; i < n; ++i) y[i] += x[i];
}

}  // namespace pd::cpu
