// The element type a tensor stands for, and bf16 rounding.
//
// Storage is always float: a bf16 tensor is held in an fp32 container whose every value is
// bf16-representable (rounded to bf16 on each store, as torch.Tensor.to(torch.bfloat16)
// does), so the CPU kernels keep computing in fp32, as tensor cores multiply bf16 and
// accumulate in fp32. Memory and communication count a tensor at its element type's real
// size (bytes_of), so a bf16 tensor is 2 bytes an element wherever bytes are reported.
#pragma once

#include <bit>
#include <cstddef>
#include <cstdint>
#include <string_view>

namespace pd {

enum class DType : std::uint8_t { fp32, bf16 };

constexpr std::size_t bytes_of(DType t) {
    return t == DType::bf16 ? 2 : 4;
}

constexpr std::string_view name_of(DType t) {
    return t == DType::bf16 ? "bf16" : "fp32";
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

}  // namespace pd
