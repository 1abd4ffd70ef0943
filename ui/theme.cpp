#include "theme.h"

#include <algorithm>

#include <QApplication>
#include <QPainter>
#include <QPalette>
#include <QProxyStyle>
#include <QStyle>
#include <QStyleFactory>
#include <QStyleOption>

namespace pd::ui {

namespace {

QPalette lightPalette() {
    QPalette p;
    const QColor window(0xf6, 0xf7, 0xf9);
    const QColor base(0xff, 0xff, 0xff);
    const QColor text(0x1f, 0x23, 0x28);
    p.setColor(QPalette::Window, window);
    p.setColor(QPalette::WindowText, text);
    p.setColor(QPalette::Base, base);
    p.setColor(QPalette::AlternateBase, QColor(0xf0, 0xf2, 0xf5));
    p.setColor(QPalette::Text, text);
    p.setColor(QPalette::Button, QColor(0xfd, 0xfd, 0xfe));
    p.setColor(QPalette::ButtonText, text);
    p.setColor(QPalette::Highlight, QColor(0x1f, 0x5f, 0xae));
    p.setColor(QPalette::HighlightedText, Qt::white);
    p.setColor(QPalette::ToolTipBase, base);
    p.setColor(QPalette::ToolTipText, text);
    p.setColor(QPalette::PlaceholderText, QColor(0x6a, 0x72, 0x7c));
    p.setColor(QPalette::Link, QColor(0x1f, 0x5f, 0xae));
    p.setColor(QPalette::Mid, QColor(0xd0, 0xd5, 0xdc));
    for (auto role : {QPalette::WindowText, QPalette::Text, QPalette::ButtonText})
        p.setColor(QPalette::Disabled, role, QColor(0x9a, 0xa0, 0xa8));
    return p;
}

QPalette darkPalette() {
    QPalette p;
    const QColor window(0x1d, 0x20, 0x25);
    const QColor base(0x25, 0x29, 0x30);
    const QColor text(0xe6, 0xe8, 0xeb);
    p.setColor(QPalette::Window, window);
    p.setColor(QPalette::WindowText, text);
    p.setColor(QPalette::Base, base);
    p.setColor(QPalette::AlternateBase, QColor(0x2b, 0x30, 0x38));
    p.setColor(QPalette::Text, text);
    p.setColor(QPalette::Button, QColor(0x2d, 0x32, 0x3a));
    p.setColor(QPalette::ButtonText, text);
    p.setColor(QPalette::Highlight, QColor(0x4c, 0x8d, 0xd6));
    p.setColor(QPalette::HighlightedText, Qt::white);
    p.setColor(QPalette::ToolTipBase, base);
    p.setColor(QPalette::ToolTipText, text);
    p.setColor(QPalette::PlaceholderText, QColor(0x8b, 0x93, 0x9c));
    p.setColor(QPalette::Link, QColor(0x7a, 0xb4, 0xf0));
    p.setColor(QPalette::Mid, QColor(0x3a, 0x40, 0x49));
    p.setColor(QPalette::Light, QColor(0x3a, 0x40, 0x49));
    p.setColor(QPalette::Dark, QColor(0x15, 0x17, 0x1b));
    p.setColor(QPalette::Shadow, QColor(0x0e, 0x10, 0x12));
    for (auto role : {QPalette::WindowText, QPalette::Text, QPalette::ButtonText})
        p.setColor(QPalette::Disabled, role, QColor(0x6e, 0x75, 0x7e));
    p.setColor(QPalette::Disabled, QPalette::Button, QColor(0x26, 0x2a, 0x30));
    return p;
}

// Fusion with radio circles that are visible in the dark theme: Fusion draws their outline a
// little darker than the window, which on a dark window is near-black on near-black. In a
// dark palette the circle is drawn here instead, its outline in a grey that stands out from
// the dark surfaces (about 5:1 against the window and the base); light palettes keep Fusion's.
class ThemeStyle : public QProxyStyle {
  public:
    using QProxyStyle::QProxyStyle;

    void drawPrimitive(PrimitiveElement element, const QStyleOption* option, QPainter* painter,
                       const QWidget* widget) const override {
        if (element != PE_IndicatorRadioButton ||
            option->palette.color(QPalette::Window).lightness() >= 128)
            return QProxyStyle::drawPrimitive(element, option, painter, widget);
        const QPalette& pal = option->palette;
        const bool enabled = option->state & State_Enabled;
        const bool focus =
            (option->state & State_HasFocus) && (option->state & State_KeyboardFocusChange);
        QColor fill = pal.color(QPalette::Base);
        if (option->state & State_Sunken) {
            const QColor t = pal.color(QPalette::WindowText);
            fill = QColor((fill.red() * 3 + t.red()) / 4, (fill.green() * 3 + t.green()) / 4,
                          (fill.blue() * 3 + t.blue()) / 4);
        }
        const QColor outline = focus     ? pal.color(QPalette::Highlight)
                               : enabled ? kDarkIndicatorOutline
                                         : kDarkIndicatorOutlineDisabled;
        const QRectF box(option->rect);
        const QPointF centre = box.center();
        const qreal radius = std::min(box.width(), box.height()) / 2.0 - 1.0;
        painter->save();
        painter->setRenderHint(QPainter::Antialiasing, true);
        painter->setPen(QPen(outline, 1.2));
        painter->setBrush(fill);
        painter->drawEllipse(centre, radius, radius);
        if (option->state & State_On) {
            const qreal dot = radius / 2.2;
            painter->setPen(Qt::NoPen);
            painter->setBrush(
                pal.color(enabled ? QPalette::Active : QPalette::Disabled, QPalette::Text));
            painter->drawEllipse(centre, dot, dot);
        }
        painter->restore();
    }

  private:
    static inline const QColor kDarkIndicatorOutline{0x8b, 0x93, 0x9c};
    static inline const QColor kDarkIndicatorOutlineDisabled{0x55, 0x5c, 0x66};
};

}  // namespace

void applyTheme(QApplication& app, const QString& theme) {
    if (QStyle* fusion = QStyleFactory::create(QStringLiteral("Fusion")))
        QApplication::setStyle(new ThemeStyle(fusion));  // the proxy owns Fusion
    if (theme == QStringLiteral("dark")) {
        QApplication::setPalette(darkPalette());
    } else if (theme == QStringLiteral("light")) {
        QApplication::setPalette(lightPalette());
    } else {
        QPalette system = QApplication::style()->standardPalette();
        // Follow the platform when it is dark; otherwise use the calmer light palette.
        QApplication::setPalette(system.color(QPalette::Window).lightness() < 128 ? darkPalette()
                                                                                  : lightPalette());
    }
    const ThemeColors c = themeColors();
    const QPalette p = QApplication::palette();
    app.setStyleSheet(
        QStringLiteral(
            "QPushButton { border: 1px solid %1; border-radius: 8px; padding: 6px 14px; "
            "background: %2; color: %3; }"
            "QPushButton:hover { border-color: %4; }"
            "QPushButton:pressed, QPushButton:checked { background: %5; border-color: %4; }"
            "QPushButton:disabled { color: %6; background: %7; }"
            "QPushButton:flat { border: none; background: transparent; }"
            "QPushButton:flat:hover { background: %5; }"
            "QComboBox, QLineEdit, QSpinBox, QDoubleSpinBox { padding: 4px 8px; }"
            "QToolTip { padding: 4px; }"
            "QDialogButtonBox { dialogbuttonbox-buttons-have-icons: 0; }")
            .arg(css(c.border), css(p.color(QPalette::Button)), css(p.color(QPalette::ButtonText)),
                 css(c.accent), css(c.rightBackground),
                 css(p.color(QPalette::Disabled, QPalette::ButtonText)),
                 css(p.color(QPalette::Window))));
}

bool isDarkPalette() {
    return QApplication::palette().color(QPalette::Window).lightness() < 128;
}

ThemeColors themeColors() {
    const QPalette p = QApplication::palette();
    ThemeColors c;
    if (isDarkPalette()) {
        c.right = QColor(0x6c, 0xb8, 0xf0);  // sky blue
        c.rightBackground = QColor(0x1c, 0x33, 0x48);
        c.wrong = QColor(0xf2, 0x8c, 0x52);  // light vermillion
        c.wrongBackground = QColor(0x45, 0x2a, 0x1f);
        c.muted = QColor(0x9a, 0xa2, 0xac);
        c.border = QColor(0x3a, 0x40, 0x49);
        c.surface = QColor(0x25, 0x29, 0x30);
        c.accent = QColor(0x4c, 0x8d, 0xd6);
    } else {
        c.right = QColor(0x00, 0x62, 0x9c);  // Okabe-Ito blue, darkened for text contrast
        c.rightBackground = QColor(0xe4, 0xf0, 0xfa);
        c.wrong = QColor(0xb8, 0x4a, 0x00);  // Okabe-Ito vermillion, darkened
        c.wrongBackground = QColor(0xfc, 0xec, 0xe1);
        c.muted = QColor(0x5f, 0x67, 0x70);
        c.border = QColor(0xd6, 0xdb, 0xe1);
        c.surface = QColor(0xff, 0xff, 0xff);
        c.accent = QColor(0x1f, 0x5f, 0xae);
    }
    Q_UNUSED(p);
    return c;
}

QString counted(int n, const QString& one, const QString& many) {
    return QStringLiteral("%1 %2").arg(n).arg(n == 1 ? one : many);
}

QString css(const QColor& color) {
    if (color.alpha() == 255) return color.name();
    return QStringLiteral("rgba(%1,%2,%3,%4)")
        .arg(color.red())
        .arg(color.green())
        .arg(color.blue())
        .arg(color.alpha());
}

}  // namespace pd::ui
