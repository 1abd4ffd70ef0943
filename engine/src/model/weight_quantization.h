// ZeRO++'s qwZ (Wang et al. 2023): a shard's weights quantized to int8 before their
// all-gather, block by block (symmetric: one fp32 scale per group, absmax / 127), so the
// gather moves 1 byte an element; the receivers use the dequantized values.
#pragma once

#include <cstddef>

#include "pd/dtype.h"

namespace pd {

// Elements per quantization group. DeepSpeed sizes its groups near 8000 elements so that
// they divide each tensor; a card's units are small, so 2048.
inline constexpr std::size_t kQuantizedWeightGroup = 2048;

// In place: each group of `group` values (the last may be shorter) replaced by
// code x scale, code = round(x / scale) in [-127, 127], scale = absmax / 127, then stored as
// `stored` (the gathered parameters' type). A group of zeros stays zero.
void quantize_dequantize_int8(float* data, std::size_t count, std::size_t group, DType stored);

}  // namespace pd
