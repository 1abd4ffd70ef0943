#include "screen_fit.h"

#include <algorithm>

namespace pd::ui {

QRect fitRectInto(const QRect& window, const QRect& available) {
    if (!available.isValid()) return window;
    QRect r(window.topLeft(), window.size().boundedTo(available.size()));
    r.moveLeft(std::clamp(r.left(), available.left(), available.right() - r.width() + 1));
    r.moveTop(std::clamp(r.top(), available.top(), available.bottom() - r.height() + 1));
    return r;
}

}  // namespace pd::ui
