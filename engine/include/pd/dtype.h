// The element type a tensor stands for, and its rounding (bf16, fp16).
//
// Storage is always float: a bf16 or fp16 tensor is held in an fp32 container whose every
// value is representable in its type (rounded on each store, as torch.Tensor.to(dtype)
// does), so the CPU kernels keep computing in fp32, as tensor cores multiply 16-bit inputs and
// accumulate in fp32. Memory and communication count a tensor at its element type's real
// size (bytes_of), so a 16-bit tensor is 2 bytes an element wherever bytes are reported.
#pragma once

#include <bit>
#include <cstddef>
#include <cstdint>
#include <string_view>

namespace pd {

// int8: block-quantized values (ZeRO++'s qwZ weight all-gather): each is an int8 code times
// its block's scale, quantized before it is sent, so a collective moves 1 byte an element.
enum class DType : std::uint8_t { fp32, bf16, fp16, int8 };

constexpr std::size_t bytes_of(DType t) {
    return t == DType::fp32 ? 4 : t == DType::int8 ? 1 : 2;
}

constexpr std::string_view name_of(DType t) {
    return t == DType::bf16   ? "bf16"
           : t == DType::fp16 ? "fp16"
           : t == DType::int8 ? "int8"
                              : "fp32";
}

// Round to nearest even, as c10::BFloat16's round_to_nearest_even: the bf16 value in the
// float's upper 16 bits, the lower 16 zero. Any NaN becomes the quiet NaN 0x7fc0 (as PyTorch
// makes it); infinities stay, and finite values past bf16's largest round to infinity.
constexpr float round_to_bf16(float x) {
    const std::uint32_t u = std::bit_cast<std::uint32_t>(x);
    if ((u & 0x7fffffffu) > 0x7f800000u) return std::bit_cast<float>(0x7fc00000u);
    const std::uint32_t rounded = (u + 0x7fffu + ((u >> 16) & 1u)) & 0xffff0000u;
    return std::bit_cast<float>(rounded);
}

constexpr bool is_bf16_representable(float x) {
    return (std::bit_cast<std::uint32_t>(x) & 0xffffu) == 0;
}

// IEEE binary16 (1 sign, 5 exponent, 10 mantissa bits), round to nearest even, as
// c10::Half's conversion: the largest finite value is 65504, and anything from 65520 up
// (halfway to the next power of two, which rounds to even) becomes infinity; below 2^-14
// the values are subnormal multiples of 2^-24, and below 2^-25 they round to zero. Any NaN
// becomes the quiet NaN (fp16 0x7e00, fp32 0x7fc00000).
inline constexpr float kFp16Max = 65504.0f;
constexpr float round_to_fp16(float x) {
    const std::uint32_t u = std::bit_cast<std::uint32_t>(x);
    const std::uint32_t sign = u & 0x80000000u;
    const std::uint32_t a = u & 0x7fffffffu;
    if (a > 0x7f800000u) return std::bit_cast<float>(0x7fc00000u);
    if (a >= 0x477ff000u) return std::bit_cast<float>(sign | 0x7f800000u);  // 65520 and up
    if (a >= 0x38800000u) {  // normal: keep 10 of the 23 mantissa bits, ties to even
        const std::uint32_t rounded = (a + 0xfffu + ((a >> 13) & 1u)) & 0xffffe000u;
        return std::bit_cast<float>(sign | rounded);
    }
    // Subnormal: a multiple of 2^-24. Adding 0.5 (whose ulp is 2^-24) rounds to it, to even.
    const float magnitude = (std::bit_cast<float>(a) + 0.5f) - 0.5f;
    return std::bit_cast<float>(sign | std::bit_cast<std::uint32_t>(magnitude));
}

constexpr bool is_fp16_representable(float x) {
    const float r = round_to_fp16(x);
    return std::bit_cast<std::uint32_t>(r) == std::bit_cast<std::uint32_t>(x) || (r != r && x != x);
}

// TF32, the tensor-core input format of float32 matrix products (torch's allow_tf32): fp32's
// 8 exponent bits and 10 of its 23 mantissa bits, rounded to nearest even; NaN stays NaN.
constexpr float round_to_tf32(float x) {
    const std::uint32_t u = std::bit_cast<std::uint32_t>(x);
    if ((u & 0x7fffffffu) > 0x7f800000u) return std::bit_cast<float>(0x7fc00000u);
    return std::bit_cast<float>((u + 0xfffu + ((u >> 13) & 1u)) & 0xffffe000u);
}

// A stored value of type `t` (fp32 and int8, whose values are quantized by their sender:
// unchanged).
constexpr float round_to(DType t, float x) {
    return t == DType::bf16 ? round_to_bf16(x) : t == DType::fp16 ? round_to_fp16(x) : x;
}

}  // namespace pd
