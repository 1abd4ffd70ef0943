// The CPU's FP8 cast (DeviceOps::cast_fp8): scale, round to the encoding, and count what the
// cast did, in one pass in index order.
#pragma once

#include <cstddef>

#include "backend/device_ops.h"

namespace pd::cpu {

Fp8CastStats cast_fp8(Fp8Encoding encoding, float scale, const float* src, float* dst,
                      std::size_t count);

}  // namespace pd::cpu
