// The time <-> pixel mapping of the timeline: a small pure struct so that zoom, pan and fit
// can be tested without a widget (hotspot keeps its mapping the same way).
#pragma once

#include <cstdint>

namespace pd::vis {

struct TimeMapping {
    // Limits keep zoom from collapsing to nothing or overflowing: 1 ns spans at most 100 px,
    // one pixel spans at most an hour.
    static constexpr double kMinNsPerPx = 0.01;
    static constexpr double kMaxNsPerPx = 3.6e12;

    double start_ns = 0.0;   // time at the left edge of the plot area
    double ns_per_px = 1e3;  // zoom level
    double left_px = 0.0;    // where the plot area begins (the device labels sit left of it)

    double x_of(double t_ns) const { return left_px + (t_ns - start_ns) / ns_per_px; }
    double t_of(double x_px) const { return start_ns + (x_px - left_px) * ns_per_px; }
    // Time at the right edge of a plot area `plot_width_px` wide.
    double end_ns(double plot_width_px) const { return start_ns + plot_width_px * ns_per_px; }

    // factor > 1 zooms in. The time under `anchor_x_px` stays under it (wheel zoom at the
    // cursor), unless the zoom limit is reached.
    void zoom(double factor, double anchor_x_px);
    // Moves the view by dx pixels: a drag to the right (dx > 0) shows earlier times.
    void pan_px(double dx_px);
    // Shows [t0, t1] across `plot_width_px`. An empty range is widened to 1 us.
    void fit(double t0_ns, double t1_ns, double plot_width_px);

    friend bool operator==(const TimeMapping&, const TimeMapping&) = default;
};

// Tick spacing for a ruler: the smallest 1, 2 or 5 x 10^k ns that leaves at least
// `min_px` pixels between ticks.
double ruler_tick_ns(double ns_per_px, double min_px);

}  // namespace pd::vis
