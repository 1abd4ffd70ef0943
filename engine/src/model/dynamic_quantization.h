// bitsandbytes' 8-bit dynamic quantisation (Dettmers et al., "8-bit Optimizers via Block-wise
// Quantization", 2022): 256 codes spread over [-1, 1] (or [0, 1]) with a dynamic exponent, so
// small magnitudes keep relative precision; a block of values is stored as one code per value
// and the block's absolute maximum in fp32.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>

namespace pd {

using QuantCode = std::array<float, 256>;

// bitsandbytes.functional.create_dynamic_map(signed, max_exponent_bits=7, total_bits=8),
// sorted: for exponent i = 0..6 the midpoints of linspace(0.1, 1, k + 1) times 10^(i - 6)
// (k = 2^i signed, 2^(i+1) unsigned), their negatives when signed, then 0 and 1. The midpoints
// are computed in double and rounded once to float (torch's float32 linspace can differ from
// this by an ulp; the replay reports the largest difference).
const QuantCode& dynamic_map(bool is_signed);

// The code index of each of n values (each already divided by its block's absmax, so in
// [-1, 1]) as bitsandbytes' quantize_2D (csrc/kernels.cu) finds it: a binary search from
// pivot 127 in steps of 64, 32, .. 1, then the nearer neighbour, a value exactly halfway
// staying at the last pivot. Its "lower" and "upper" are always the codes just below and
// above that pivot p, except before code 0, where both choices are code 0 (so the signed
// map's bound of -1 never matters). Run level by level across the values: each search is a
// chain of dependent loads, and side by side the chains overlap (3-4x faster than one value
// at a time); selects, not branches, as the comparisons are coin flips. `pivot` is scratch
// for n ints.
inline void quantize_dynamic_n(const QuantCode& code, const float* x, std::size_t n, int* pivot,
                               std::uint8_t* out) {
    for (std::size_t j = 0; j < n; ++j) pivot[j] = 127;
    for (int i = 64; i > 0; i >>= 1)
        for (std::size_t j = 0; j < n; ++j) {
            const int above = x[j] > code[static_cast<std::size_t>(pivot[j])];
            pivot[j] += (2 * above - 1) * i;
        }
    for (std::size_t j = 0; j < n; ++j) {
        const int p = pivot[j];
        const float val = code[static_cast<std::size_t>(p)];
        const int up = x[j] > val;
        const int neighbour = up ? p + 1 : (p > 0 ? p - 1 : 0);
        const float midpoint = (code[static_cast<std::size_t>(neighbour)] + val) * 0.5f;
        const int take = up ? x[j] > midpoint : x[j] < midpoint;
        out[j] = static_cast<std::uint8_t>(take ? neighbour : p);
    }
}

// One value (the tests' entry point to the same search).
inline std::uint8_t quantize_dynamic(const QuantCode& code, float x) {
    int pivot = 0;
    std::uint8_t out = 0;
    quantize_dynamic_n(code, &x, 1, &pivot, &out);
    return out;
}

}  // namespace pd
