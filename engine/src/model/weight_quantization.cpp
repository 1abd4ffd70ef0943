#include "model/weight_quantization.h"

#include <algorithm>
#include <cmath>

namespace pd {

void quantize_dequantize_int8(float* data, std::size_t count, std::size_t group, DType stored) {
    for (std::size_t begin = 0; begin < count; begin += group) {
        const std::size_t end = std::min(count, begin + group);
        float absmax = 0.0f;
        for (std::size_t i = begin; i < end; ++i) absmax = std::max(absmax, std::fabs(data[i]));
        if (absmax == 0.0f) continue;
        const float scale = absmax / 127.0f;
        for (std::size_t i = begin; i < end; ++i) {
            const float code = std::clamp(std::nearbyint(data[i] / scale), -127.0f, 127.0f);
            data[i] = round_to(stored, code * scale);
        }
    }
}

}  // namespace pd
