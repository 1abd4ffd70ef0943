#include "cpu/elementwise.h"

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdint>

#include "pd/dtype.h"

// Three clones of each loop (see elementwise.h). Sanitizer builds keep the baseline only: the
// load-time resolver runs before the sanitizer runtime is set up.
#if defined(__GNUC__) && !defined(__clang__) && defined(__x86_64__) && !defined(PD_SANITIZED)
#define PD_VECTOR_CLONES \
    __attribute__((target_clones("arch=x86-64-v4", "arch=x86-64-v3", "default")))
#else
#define PD_VECTOR_CLONES
#endif

namespace pd::cpu {

namespace {

constexpr float kSqrt2OverPi = 0.7978845608028654f;
constexpr float kGeluCoeff = 0.044715f;

// exp(x) for x in [-80, 80] (clamped, so the result stays a normal float): x = n ln2 + r with
// |r| <= ln2 / 2, exp(r) by its Taylor polynomial to degree 7 (truncation below 6e-9
// relative), times 2^n built in the exponent bits. Branch-free so loops vectorise; the
// round-to-nearest is the 1.5 * 2^23 trick, which needs no SSE4.1.
inline float exp_approx(float x) {
    x = std::min(std::max(x, -80.0f), 80.0f);
    constexpr float kRound = 12582912.0f;
    const float n = (x * 1.44269504088896341f + kRound) - kRound;
    // ln 2 in two parts: n * kLn2Hi is exact for |n| < 2^9.
    const float r = (x - n * 0.693145751953125f) - n * 1.428606765330187e-06f;
    float p = 1.0f / 5040.0f;
    p = p * r + 1.0f / 720.0f;
    p = p * r + 1.0f / 120.0f;
    p = p * r + 1.0f / 24.0f;
    p = p * r + 1.0f / 6.0f;
    p = p * r + 0.5f;
    p = p * r + 1.0f;
    p = p * r + 1.0f;
    const std::int32_t bits = (static_cast<std::int32_t>(n) + 127) << 23;
    return p * std::bit_cast<float>(bits);
}

// (1 + tanh(u)) / 2 = 1 / (1 + exp(-2u)): exact algebra, and accurate in relative terms even
// where tanh(u) is near -1 (where 1 + tanh(u) would cancel).
inline float half_one_plus_tanh(float u) {
    return 1.0f / (1.0f + exp_approx(-2.0f * u));
}

}  // namespace

PD_VECTOR_CLONES
void gelu_forward(const float* __restrict a, float* __restrict g, std::size_t n) {
    for (std::size_t i = 0; i < n; ++i) {
        const float x = a[i];
        const float u = kSqrt2OverPi * (x + kGeluCoeff * x * x * x);
        g[i] = x * half_one_plus_tanh(u);
    }
}

namespace {

// d/dx [x s(x)] with s = (1 + tanh u) / 2 = 1 / (1 + e), e = exp(-2u): s + x * (1 - tanh^2 u)
// / 2 * u', and 1 - tanh^2 u = 4 s (1 - s) = 4 e s^2 (1 - s = e s, with no cancellation
// where s is near 1).
inline float gelu_grad(float a) {
    // Past |x| = 20 GELU' is 0 or 1 to float precision; clamping keeps x^2 below overflow.
    const float x = std::min(std::max(a, -20.0f), 20.0f);
    const float u = kSqrt2OverPi * (x + kGeluCoeff * x * x * x);
    const float e = exp_approx(-2.0f * u);
    const float s = 1.0f / (1.0f + e);
    const float du = kSqrt2OverPi * (1.0f + 3.0f * kGeluCoeff * x * x);
    return s + 2.0f * x * e * s * s * du;
}

// In place and out of place as separate loops: with one loop over (dg, da) the compiler must
// check at run time whether they overlap, and an exact overlap (in place) failed that check
// into the scalar loop.
PD_VECTOR_CLONES
void gelu_backward_in_place(const float* __restrict a, float* __restrict d, std::size_t n) {
    for (std::size_t i = 0; i < n; ++i) d[i] *= gelu_grad(a[i]);
}

PD_VECTOR_CLONES
void gelu_backward_out_of_place(const float* __restrict a, const float* __restrict dg,
                                float* __restrict da, std::size_t n) {
    for (std::size_t i = 0; i < n; ++i) da[i] = dg[i] * gelu_grad(a[i]);
}

}  // namespace

void gelu_backward(const float* a, const float* dg, float* da, std::size_t n) {
    if (da == dg)
        gelu_backward_in_place(a, da, n);
    else
        gelu_backward_out_of_place(a, dg, da, n);
}

PD_VECTOR_CLONES
void add_inplace(float* __restrict y, const float* __restrict x, std::size_t n) {
    for (std::size_t i = 0; i < n; ++i) y[i] += x[i];
}

PD_VECTOR_CLONES
void round_to_bf16(float* __restrict x, std::size_t n) {
    // pd::round_to_bf16 without its branch, so the loop vectorises.
    for (std::size_t i = 0; i < n; ++i) {
        const std::uint32_t u = std::bit_cast<std::uint32_t>(x[i]);
        const std::uint32_t rounded = (u + 0x7fffu + ((u >> 16) & 1u)) & 0xffff0000u;
        x[i] = std::bit_cast<float>((u & 0x7fffffffu) > 0x7f800000u ? 0x7fc00000u : rounded);
    }
}

void round_to_fp16(float* x, std::size_t n) {
    for (std::size_t i = 0; i < n; ++i) x[i] = pd::round_to_fp16(x[i]);
}

PD_VECTOR_CLONES
void bias_residual(float* __restrict out, const float* __restrict bias,
                   const float* __restrict residual, std::size_t rows, std::size_t width) {
    for (std::size_t r = 0; r < rows; ++r) {
        float* __restrict o = out + r * width;
        const float* __restrict res = residual + r * width;
        for (std::size_t j = 0; j < width; ++j) o[j] += bias[j] + res[j];
    }
}

void broadcast_rows(float* y, const float* bias, std::size_t rows, std::size_t width) {
    for (std::size_t r = 0; r < rows; ++r) std::copy_n(bias, width, y + r * width);
}

PD_VECTOR_CLONES
void add_column_sums(float* __restrict sums, const float* __restrict x, std::size_t rows,
                     std::size_t width) {
    for (std::size_t r = 0; r < rows; ++r) {
        const float* __restrict row = x + r * width;
        for (std::size_t j = 0; j < width; ++j) sums[j] += row[j];
    }
}

PD_VECTOR_CLONES
double softmax_cross_entropy(const float* __restrict logits, const float* __restrict labels,
                             std::size_t rows, std::size_t classes, float scale,
                             float* __restrict dlogits) {
    double total = 0.0;
    for (std::size_t r = 0; r < rows; ++r) {
        const float* __restrict z = logits + r * classes;
        float* __restrict dz = dlogits + r * classes;
        float zmax = z[0];
        for (std::size_t j = 1; j < classes; ++j) zmax = std::max(zmax, z[j]);
        // exp(z - max) into dz first, then normalised in place.
        for (std::size_t j = 0; j < classes; ++j) dz[j] = exp_approx(z[j] - zmax);
        double sum = 0.0;
        for (std::size_t j = 0; j < classes; ++j) sum += dz[j];
        const std::size_t label = static_cast<std::size_t>(labels[r]);
        total += std::log(sum) - static_cast<double>(z[label] - zmax);
        const float inv_sum = static_cast<float>(1.0 / sum) * scale;
        for (std::size_t j = 0; j < classes; ++j) dz[j] *= inv_sum;
        dz[label] -= scale;
    }
    return total;
}

PD_VECTOR_CLONES
void sgd_update(float* __restrict params, const float* __restrict grads, float* __restrict velocity,
                std::size_t n, float lr, float momentum) {
    for (std::size_t i = 0; i < n; ++i) {
        const float v = momentum * velocity[i] + grads[i];
        velocity[i] = v;
        params[i] -= lr * v;
    }
}

PD_VECTOR_CLONES
void adamw_update(float* __restrict params, const float* __restrict grads, float* __restrict m,
                  float* __restrict v, std::size_t n, const AdamWStep& s) {
    const float decay = s.lr * s.weight_decay;
    const float b1 = s.beta1, b2 = s.beta2, one_b1 = 1.0f - s.beta1, one_b2 = 1.0f - s.beta2;
    const float step = s.step, inv_sqrt_bc2 = s.inv_sqrt_bc2, eps = s.eps;
    for (std::size_t i = 0; i < n; ++i) {
        const float g = grads[i];
        const float mi = b1 * m[i] + one_b1 * g;
        const float vi = b2 * v[i] + one_b2 * g * g;
        m[i] = mi;
        v[i] = vi;
        float p = params[i];
        p -= decay * p;
        params[i] = p - step * mi / (std::sqrt(vi) * inv_sqrt_bc2 + eps);
    }
}

}  // namespace pd::cpu
