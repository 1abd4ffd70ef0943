// The house style of every Qt Charts chart in the visualizer (memory bars, loss chart): the
// palette's background, text and grid colours and the pixel font sizes, so screen and exports
// of both charts read alike in light and dark.
#pragma once

#include <QtCharts/QChart>

#include "visualizer/timeline_palette.h"

namespace pd::vis {

void apply_chart_style(QChart& chart, const TimelinePalette& palette);

}  // namespace pd::vis
