// FP8 as Transformer Engine uses it: the two OCP 8-bit float encodings, and the delayed-scaling
// recipe (transformer_engine.common.recipe.DelayedScaling) that picks each tensor's scale.
//
// The CPU backend emulates FP8 matrix products: each input is multiplied by its tensor's scale
// and rounded to the encoding (values are held in fp32 containers, every one representable in
// the encoding), the product of the rounded values is summed in fp32, and the result is
// multiplied by both inverse scales, as cuBLASLt's FP8 GEMMs do with their scale_inv operands.
#pragma once

#include <bit>
#include <cstdint>
#include <string_view>

namespace pd {

// E4M3 (4 exponent bits, bias 7, 3 mantissa bits; no infinities, largest finite 448, smallest
// subnormal 2^-9) and E5M2 (IEEE-like: bias 15, 2 mantissa bits, largest finite 57344,
// smallest subnormal 2^-16).
enum class Fp8Encoding : std::uint8_t { e4m3, e5m2 };

inline constexpr float kE4M3Max = 448.0f;
inline constexpr float kE5M2Max = 57344.0f;

constexpr float fp8_max(Fp8Encoding e) {
    return e == Fp8Encoding::e4m3 ? kE4M3Max : kE5M2Max;
}
constexpr std::string_view name_of(Fp8Encoding e) {
    return e == Fp8Encoding::e4m3 ? "E4M3" : "E5M2";
}

// Rounds to the encoding, to nearest even, saturating: a value past the largest finite one
// (infinity included) becomes it, as TE's casts (__nv_cvt_float_to_fp8 with __NV_SATFINITE).
// NaN stays NaN. Below the smallest normal (2^-6, 2^-14) values are multiples of the smallest
// subnormal, and below half of it they round to zero.
constexpr float round_to_fp8(Fp8Encoding e, float x) {
    const int mantissa_bits = e == Fp8Encoding::e4m3 ? 3 : 2;
    const int min_normal_exp = e == Fp8Encoding::e4m3 ? -6 : -14;
    const std::uint32_t u = std::bit_cast<std::uint32_t>(x);
    const std::uint32_t sign = u & 0x80000000u;
    const std::uint32_t a = u & 0x7fffffffu;
    if (a > 0x7f800000u) return std::bit_cast<float>(0x7fc00000u);
    const float largest = fp8_max(e);
    float magnitude;
    if (a >= static_cast<std::uint32_t>(127 + min_normal_exp) << 23) {  // normal: ties to even
        const int shift = 23 - mantissa_bits;
        const std::uint32_t half = (1u << (shift - 1)) - 1u;
        const std::uint32_t rounded = (a + half + ((a >> shift) & 1u)) & ~((1u << shift) - 1u);
        magnitude = std::bit_cast<float>(rounded > 0x7f800000u ? 0x7f800000u : rounded);
    } else {
        // Subnormal: a multiple of 2^(min_normal_exp - mantissa_bits). Adding a power of two
        // whose ulp is that step rounds to it, to even (as round_to_fp16 does).
        const float step_ulp_base = std::bit_cast<float>(
            static_cast<std::uint32_t>(127 + min_normal_exp - mantissa_bits + 23) << 23);
        magnitude = (std::bit_cast<float>(a) + step_ulp_base) - step_ulp_base;
    }
    if (magnitude > largest) magnitude = largest;
    return std::bit_cast<float>(sign | std::bit_cast<std::uint32_t>(magnitude));
}

// DelayedScaling's fp8_format: HYBRID casts forward tensors (activations, weights) to E4M3 and
// gradients to E5M2; E4M3 casts every tensor to E4M3. off: no FP8.
enum class Fp8Format : std::uint8_t { off, hybrid, e4m3 };
// amax_compute_algo: the largest amax in the history window, or the latest one.
enum class AmaxAlgo : std::uint8_t { max, most_recent };

struct Fp8Recipe {
    Fp8Format format = Fp8Format::off;
    int amax_history_len = 1024;  // TE's default since 1.0
    AmaxAlgo amax_compute_algo = AmaxAlgo::max;
    int margin = 0;  // scale = fp8_max / amax / 2^margin

    bool enabled() const { return format != Fp8Format::off; }
    Fp8Encoding forward_encoding() const { return Fp8Encoding::e4m3; }
    Fp8Encoding gradient_encoding() const {
        return format == Fp8Format::hybrid ? Fp8Encoding::e5m2 : Fp8Encoding::e4m3;
    }
};

std::string_view name_of(Fp8Format f);
std::string_view name_of(AmaxAlgo a);

}  // namespace pd
