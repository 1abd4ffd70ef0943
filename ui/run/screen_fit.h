// One rule for every window the app places: no larger than the screen's free area, and
// entirely on it (a saved position from a larger or absent monitor comes back into view).
#pragma once

#include <QRect>

namespace pd::ui {

// `window` shrunk to fit `available` and moved inside it; unchanged if `available` is invalid.
QRect fitRectInto(const QRect& window, const QRect& available);

}  // namespace pd::ui
