// Colours of the visualizer, from the Okabe-Ito palette (distinguishable with the common
// colour-vision deficiencies), with a light and a dark variant so every colour keeps its
// contrast against the background. Kinds also differ in lightness, which survives greyscale.
#pragma once

#include <QColor>
#include <QPalette>

#include "pd/memory_category.h"
#include "pd/trace.h"

namespace pd::vis {

enum class ThemeChoice { follow_palette, light, dark };

struct TimelinePalette {
    bool dark = false;
    QColor background;
    QColor text;
    QColor muted;            // secondary text, ruler
    QColor grid;             // ruler ticks, step separators
    QColor idle;             // compute lane with nothing running: idle, bubble, waits
    QColor comm_lane;        // comm lane background (an empty comm lane is not idleness)
    QColor forward;          // teal (Okabe-Ito bluish green)
    QColor backward;         // pink (Okabe-Ito reddish purple)
    QColor backward_weight;  // W of a zero-bubble schedule: indigo (Tol)
    QColor recompute;        // activation recomputation: olive (Tol)
    QColor optimizer;        // orange
    QColor reduce_scatter;   // vermillion
    QColor all_gather;       // blue
    QColor p2p;              // send / recv: sky blue
    QColor broadcast;        // yellow
    QColor all_to_all;       // expert dispatch / combine: wine (Tol)
    QColor copy;             // staging copies: neutral slate
    QColor kernel;           // imported compute of unknown phase: steel blue (Tol)
    QColor oom;              // the out-of-memory marker
    QColor flow;             // send -> recv arrows
    QColor cursor;           // playback cursor
    QColor highlight;        // hovered / selected event outline

    QColor color_of(const pd::TraceEvent& e) const;
    QColor color_of(pd::EventKind kind, pd::CollectivePhase phase) const;
    QColor memory_color(pd::MemoryCategory c) const;
    // Black or white, whichever reads better on `fill`.
    QColor text_on(const QColor& fill) const;

    static TimelinePalette light_theme();
    static TimelinePalette dark_theme();
    static TimelinePalette from_palette(const QPalette& palette);
    static TimelinePalette choose(ThemeChoice choice, const QPalette& palette);
};

}  // namespace pd::vis
