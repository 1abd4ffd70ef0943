#include "model/dynamic_quantization.h"

#include <algorithm>
#include <cmath>
#include <vector>

namespace pd {

namespace {

QuantCode make_dynamic_map(bool is_signed) {
    constexpr int kMaxExponentBits = 7, kTotalBits = 8;
    constexpr int kNonSignBits = kTotalBits - 1;
    std::vector<double> data;
    for (int i = 0; i < kMaxExponentBits; ++i) {
        const int items = is_signed ? (1 << (i + kNonSignBits - kMaxExponentBits)) + 1
                                    : (1 << (i + kNonSignBits - kMaxExponentBits + 1)) + 1;
        const double scale = std::pow(10.0, -(kMaxExponentBits - 1) + i);
        for (int k = 0; k + 1 < items; ++k) {
            const double lo = 0.1 + 0.9 * k / (items - 1);
            const double hi = 0.1 + 0.9 * (k + 1) / (items - 1);
            const double mean = (lo + hi) / 2.0;
            data.push_back(scale * mean);
            if (is_signed) data.push_back(-scale * mean);
        }
    }
    // total_bits - 1 - max_exponent_bits = 0: no extra linear items.
    data.push_back(0.0);
    data.push_back(1.0);
    while (data.size() < 256) data.push_back(0.0);
    QuantCode code{};
    for (std::size_t i = 0; i < code.size(); ++i) code[i] = static_cast<float>(data[i]);
    std::sort(code.begin(), code.end());
    return code;
}

}  // namespace

const QuantCode& dynamic_map(bool is_signed) {
    static const QuantCode signed_map = make_dynamic_map(true);
    static const QuantCode unsigned_map = make_dynamic_map(false);
    return is_signed ? signed_map : unsigned_map;
}

}  // namespace pd
