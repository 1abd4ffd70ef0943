#include "visualizer/timeline_palette.h"

namespace pd::vis {

TimelinePalette TimelinePalette::light_theme() {
    TimelinePalette p;
    p.dark = false;
    p.background = QColor(0xff, 0xff, 0xff);
    p.text = QColor(0x1f, 0x23, 0x28);
    p.muted = QColor(0x5c, 0x64, 0x6e);
    p.grid = QColor(0xc8, 0xcd, 0xd4);
    p.idle = QColor(0xdc, 0xdf, 0xe3);
    p.comm_lane = QColor(0xf3, 0xf4, 0xf6);
    p.forward = QColor(0x00, 0x9e, 0x73);
    p.backward = QColor(0xcc, 0x79, 0xa7);
    p.backward_weight = QColor(0x33, 0x22, 0x88);
    p.recompute = QColor(0x99, 0x99, 0x33);
    p.optimizer = QColor(0xe6, 0x9f, 0x00);
    p.reduce_scatter = QColor(0xd5, 0x5e, 0x00);
    p.all_gather = QColor(0x00, 0x72, 0xb2);
    p.p2p = QColor(0x56, 0xb4, 0xe9);
    p.broadcast = QColor(0xf0, 0xe4, 0x42);
    p.all_to_all = QColor(0x88, 0x22, 0x55);
    p.copy = QColor(0x8c, 0x96, 0xa3);
    p.kernel = QColor(0x44, 0x77, 0xaa);
    p.oom = QColor(0xc0, 0x1c, 0x00);
    p.flow = QColor(0x1f, 0x23, 0x28, 120);
    p.cursor = QColor(0xc0, 0x1c, 0x00);
    p.highlight = QColor(0x1f, 0x23, 0x28);
    return p;
}

TimelinePalette TimelinePalette::dark_theme() {
    TimelinePalette p;
    p.dark = true;
    p.background = QColor(0x1d, 0x20, 0x25);
    p.text = QColor(0xe6, 0xe8, 0xeb);
    p.muted = QColor(0xa0, 0xa8, 0xb2);
    p.grid = QColor(0x45, 0x4b, 0x55);
    p.idle = QColor(0x3a, 0x3f, 0x47);
    p.comm_lane = QColor(0x26, 0x2a, 0x30);
    // Brightened where the light-theme colour would sink into a dark background.
    p.forward = QColor(0x1f, 0xb8, 0x8c);
    p.backward = QColor(0xdd, 0x8e, 0xbb);
    p.backward_weight = QColor(0x8c, 0x7c, 0xe6);
    p.recompute = QColor(0xc4, 0xc4, 0x55);
    p.optimizer = QColor(0xf0, 0xb0, 0x30);
    p.reduce_scatter = QColor(0xf0, 0x7a, 0x2a);
    p.all_gather = QColor(0x3f, 0x9a, 0xdc);
    p.p2p = QColor(0x80, 0xc8, 0xf0);
    p.broadcast = QColor(0xf0, 0xe4, 0x42);
    p.all_to_all = QColor(0xc0, 0x55, 0x88);
    p.copy = QColor(0x7d, 0x87, 0x94);
    p.kernel = QColor(0x6f, 0x9f, 0xd0);
    p.oom = QColor(0xff, 0x5a, 0x36);
    p.flow = QColor(0xe6, 0xe8, 0xeb, 130);
    p.cursor = QColor(0xff, 0x5a, 0x36);
    p.highlight = QColor(0xff, 0xff, 0xff);
    return p;
}

TimelinePalette TimelinePalette::from_palette(const QPalette& palette) {
    const bool dark = palette.color(QPalette::Window).lightness() < 128;
    TimelinePalette p = dark ? dark_theme() : light_theme();
    p.background = palette.color(QPalette::Base);
    p.text = palette.color(QPalette::Text);
    return p;
}

TimelinePalette TimelinePalette::choose(ThemeChoice choice, const QPalette& palette) {
    switch (choice) {
        case ThemeChoice::light:
            return light_theme();
        case ThemeChoice::dark:
            return dark_theme();
        case ThemeChoice::follow_palette:
            break;
    }
    return from_palette(palette);
}

QColor TimelinePalette::color_of(pd::EventKind kind, pd::CollectivePhase phase) const {
    using pd::EventKind;
    switch (kind) {
        case EventKind::forward:
            return forward;
        case EventKind::backward:
            return backward;
        case EventKind::backward_weight:
            return backward_weight;
        case EventKind::recompute:
            return recompute;
        case EventKind::optimizer:
            return optimizer;
        case EventKind::reduce_scatter_step:
            return reduce_scatter;
        case EventKind::all_gather_step:
            return all_gather;
        case EventKind::broadcast:
        case EventKind::collective:  // a whole library collective: no phase to colour by
            return broadcast;
        case EventKind::all_to_all_step:
            return all_to_all;
        case EventKind::send:
        case EventKind::recv:
            // A send or recv inside a collective takes the collective's phase colour.
            if (phase == pd::CollectivePhase::reduce_scatter) return reduce_scatter;
            if (phase == pd::CollectivePhase::all_gather) return all_gather;
            return p2p;
        case EventKind::wait:
            return idle;
        case EventKind::oom:
            return oom;
        case EventKind::copy:
            return copy;
        case EventKind::kernel:
            return kernel;
    }
    return copy;
}

QColor TimelinePalette::color_of(const pd::TraceEvent& e) const {
    return color_of(e.kind, e.phase);
}

QColor TimelinePalette::memory_color(pd::MemoryCategory c) const {
    switch (c) {
        // Parameters take the all-gather blue (ZeRO gathers them); communication buffers the
        // yellow, far from every blue, so the two never read as one category.
        case pd::MemoryCategory::parameters:
            return all_gather;
        case pd::MemoryCategory::gradients:
            return backward;
        case pd::MemoryCategory::optimizer_state:
            return optimizer;
        case pd::MemoryCategory::gathered_parameters:
            // The parameters' hue, lighter: the same weights, held only for one layer's work.
            return dark ? QColor(0x9c, 0xcf, 0xf2) : QColor(0x7f, 0xbf, 0xe6);
        case pd::MemoryCategory::activations:
            return forward;
        case pd::MemoryCategory::communication:
            return broadcast;
        case pd::MemoryCategory::workspace:
            return copy;
    }
    return copy;
}

QColor TimelinePalette::text_on(const QColor& fill) const {
    // Relative luminance (sRGB weights); the threshold favours dark text on mid tones.
    const double l = 0.2126 * fill.redF() + 0.7152 * fill.greenF() + 0.0722 * fill.blueF();
    return l > 0.45 ? QColor(0x10, 0x12, 0x14) : QColor(0xff, 0xff, 0xff);
}

}  // namespace pd::vis
