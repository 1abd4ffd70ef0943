#include "cpu/fp8_cast.h"

#include <cmath>

namespace pd::cpu {

Fp8CastStats cast_fp8(Fp8Encoding encoding, float scale, const float* src, float* dst,
                      std::size_t count) {
    Fp8CastStats s;
    const float largest = fp8_max(encoding);
    for (std::size_t i = 0; i < count; ++i) {
        const float x = src[i];
        const float scaled = x * scale;  // fp32, as TE's cast kernel multiplies
        const float q = round_to_fp8(encoding, scaled);
        dst[i] = q;
        s.amax = std::fmax(s.amax, std::fabs(x));
        if (x != 0.0f) ++s.nonzero;
        if (std::fabs(scaled) > largest) ++s.saturated;
        if (x != 0.0f && q == 0.0f) ++s.flushed;
        if (std::isfinite(scaled)) {
            const double e = static_cast<double>(scaled) - q;
            s.error_squares += e * e;
            s.value_squares += static_cast<double>(scaled) * scaled;
        }
    }
    return s;
}

}  // namespace pd::cpu
