// Light, dark and system themes, and the colours every page uses for right and wrong answers
// (Okabe-Ito blue and vermillion: distinguishable with the common colour-vision deficiencies,
// and always paired with an icon and words).
#pragma once

#include <QColor>
#include <QString>

class QApplication;
class QWidget;

namespace pd::ui {

struct ThemeColors {
    QColor right;
    QColor rightBackground;
    QColor wrong;
    QColor wrongBackground;
    QColor muted;    // secondary text
    QColor border;   // card outlines
    QColor surface;  // card background
    QColor accent;   // primary buttons, selection
};

// Applies "light", "dark" or "system" (the platform's palette) to the application.
void applyTheme(QApplication& app, const QString& theme);
bool isDarkPalette();
ThemeColors themeColors();
// "1 card", "3 cards": English plurals without a translation file.
QString counted(int n, const QString& one, const QString& many);

// CSS colour text for style sheets: "#rrggbb" or "rgba(r,g,b,a)".
QString css(const QColor& color);

}  // namespace pd::ui
