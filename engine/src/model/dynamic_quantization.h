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

// The code index of x (x already divided by its block's absmax, so in [-1, 1]) as
// bitsandbytes' quantize_2D finds it: a binary search over the sorted code, then the nearer
// of the two neighbours (a value exactly halfway goes to the search's last pivot).
// (Inline: an update quantizes m and v of each value, and their searches overlap.)
inline std::uint8_t quantize_dynamic(const QuantCode& code, bool is_signed, float x) {
    // bitsandbytes' csrc/kernels.cu quantize_2D: a binary search from pivot 127 in steps of
    // 64, 32, .. 1, then the nearer neighbour. Its "lower" and "upper" are always the codes
    // just below and above the final pivot p (the last pivots the search left upward and
    // downward), except before the first code, where its lower bound is -1 (signed) or 0 and
    // both choices are code 0. Written with arithmetic selects: the comparisons are
    // data-dependent coin flips that would mispredict as branches.
    (void)is_signed;  // the bound below code 0 never changes the answer (see above)
    int p = 127;
    for (int i = 64; i > 0; i >>= 1) {
        const int above = x > code[static_cast<std::size_t>(p)];
        p += (2 * above - 1) * i;
    }
    const float val = code[static_cast<std::size_t>(p)];
    const int up = x > val;
    const int neighbour = up ? p + 1 : (p > 0 ? p - 1 : 0);
    const float midpoint = (code[static_cast<std::size_t>(neighbour)] + val) * 0.5f;
    // A value exactly at the midpoint stays at p, as in the kernel.
    const int take = up ? x > midpoint : x < midpoint;
    return static_cast<std::uint8_t>(take ? neighbour : p);
}

// quantize_dynamic of n values into out, level by level across the values: each value's search
// is a chain of dependent loads, and running the values side by side overlaps the chains
// (3-4x faster than one value at a time). `pivot` is scratch for n ints.
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

}  // namespace pd
