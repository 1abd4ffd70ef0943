#pragma once
// What every paralleldeck-bench figure shares: the steps a timed run leaves out and the median
// it reports.

#include <algorithm>
#include <cstddef>
#include <vector>

namespace pd::cli {

// Steps of a timed training run left out of its figures: the first pays page faults and cold
// caches.
inline constexpr int kWarmupSteps = 2;

// The median (the mean of the middle two for an even count); 0 for no samples.
inline double median(std::vector<double> v) {
    if (v.empty()) return 0.0;
    std::sort(v.begin(), v.end());
    const std::size_t n = v.size();
    return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

}  // namespace pd::cli
