#include "visualizer/time_mapping.h"

#include <algorithm>
#include <cmath>

namespace pd::vis {

void TimeMapping::zoom(double factor, double anchor_x_px) {
    if (!(factor > 0.0) || !std::isfinite(factor)) return;
    const double anchor_t = t_of(anchor_x_px);
    ns_per_px = std::clamp(ns_per_px / factor, kMinNsPerPx, kMaxNsPerPx);
    start_ns = anchor_t - (anchor_x_px - left_px) * ns_per_px;
}

void TimeMapping::pan_px(double dx_px) {
    start_ns -= dx_px * ns_per_px;
}

void TimeMapping::fit(double t0_ns, double t1_ns, double plot_width_px) {
    if (t1_ns < t0_ns) std::swap(t0_ns, t1_ns);
    if (t1_ns - t0_ns < 1e3) {
        const double mid = 0.5 * (t0_ns + t1_ns);
        t0_ns = mid - 500.0;
        t1_ns = mid + 500.0;
    }
    const double width = std::max(plot_width_px, 1.0);
    ns_per_px = std::clamp((t1_ns - t0_ns) / width, kMinNsPerPx, kMaxNsPerPx);
    start_ns = t0_ns;
}

double ruler_tick_ns(double ns_per_px, double min_px) {
    const double wanted = std::max(ns_per_px * min_px, 1.0);
    double decade = std::pow(10.0, std::floor(std::log10(wanted)));
    for (;;) {
        for (double m : {1.0, 2.0, 5.0})
            if (m * decade >= wanted) return m * decade;
        decade *= 10.0;
    }
}

}  // namespace pd::vis
