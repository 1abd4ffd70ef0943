#include "search_highlight_delegate.h"

#include <QApplication>
#include <QPainter>
#include <QTextLayout>
#include <algorithm>

#include "theme.h"

namespace pd::ui {

QList<TextRange> matchRanges(const QString& text, const QStringList& words) {
    QList<TextRange> found;
    for (const QString& w : words) {
        if (w.isEmpty()) continue;
        for (qsizetype at = text.indexOf(w, 0, Qt::CaseInsensitive); at >= 0;
             at = text.indexOf(w, at + w.size(), Qt::CaseInsensitive))
            found.append({static_cast<int>(at), static_cast<int>(w.size())});
    }
    std::sort(found.begin(), found.end(),
              [](const TextRange& a, const TextRange& b) { return a.start < b.start; });
    QList<TextRange> merged;
    for (const TextRange& r : found) {
        if (!merged.isEmpty() && r.start <= merged.last().start + merged.last().length) {
            TextRange& last = merged.last();
            last.length = std::max(last.start + last.length, r.start + r.length) - last.start;
        } else {
            merged.append(r);
        }
    }
    return merged;
}

void SearchHighlightDelegate::paint(QPainter* painter, const QStyleOptionViewItem& option,
                                    const QModelIndex& index) const {
    QStyleOptionViewItem opt = option;
    initStyleOption(&opt, index);
    const QList<TextRange> ranges = matchRanges(opt.text, words_);
    if (ranges.isEmpty()) {
        QStyledItemDelegate::paint(painter, option, index);
        return;
    }
    // The view draws background, selection and focus; the text is ours.
    const QString text = opt.text;
    opt.text.clear();
    const QWidget* widget = opt.widget;
    QStyle* style = widget ? widget->style() : QApplication::style();
    style->drawControl(QStyle::CE_ItemViewItem, &opt, painter, widget);
    const int margin = style->pixelMetric(QStyle::PM_FocusFrameHMargin, nullptr, widget) + 1;
    const QRect rect = style->subElementRect(QStyle::SE_ItemViewItemText, &opt, widget)
                           .adjusted(margin, 0, -margin, 0);
    // Elide as if all of it were bold, so the bold runs never push text past the cell.
    QFont bold = opt.font;
    bold.setBold(true);
    const QString shown = QFontMetrics(bold).elidedText(text, Qt::ElideRight, rect.width());

    const bool selected = opt.state & QStyle::State_Selected;
    const QColor ink =
        opt.palette.color(QPalette::Active, selected ? QPalette::HighlightedText : QPalette::Text);
    QColor marker = isDarkPalette() ? QColor(0xe6, 0xb4, 0x00) : QColor(0xff, 0xd8, 0x4d);
    marker.setAlpha(selected ? 90 : 150);
    // Marks stop before the ellipsis of elided text.
    const int visible = static_cast<int>(shown.size()) - (shown == text ? 0 : 1);
    QList<QTextLayout::FormatRange> formats;
    for (const TextRange& r : ranges) {
        if (r.start >= visible) break;
        QTextLayout::FormatRange f;
        f.start = r.start;
        f.length = std::min(r.length, visible - r.start);
        f.format.setFontWeight(QFont::Bold);
        f.format.setBackground(marker);
        formats.append(f);
    }
    QTextLayout layout(shown, opt.font);
    layout.setFormats(formats);
    QTextOption textOption;
    textOption.setWrapMode(QTextOption::NoWrap);
    layout.setTextOption(textOption);
    layout.beginLayout();
    QTextLine line = layout.createLine();
    if (line.isValid()) line.setLineWidth(rect.width());
    layout.endLayout();
    painter->save();
    painter->setClipRect(rect);
    painter->setPen(ink);
    const qreal top = rect.top() + (rect.height() - (line.isValid() ? line.height() : 0)) / 2.0;
    layout.draw(painter, QPointF(rect.left(), top));
    painter->restore();
}

}  // namespace pd::ui
