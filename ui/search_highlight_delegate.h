// Marks the search box's words in the card browser's cells: matched text is bold on a marker
// background, the rest is drawn as the view would.
#pragma once

#include <QList>
#include <QStringList>
#include <QStyledItemDelegate>

namespace pd::ui {

struct TextRange {
    int start = 0;
    int length = 0;
    bool operator==(const TextRange&) const = default;
};

// Where any of `words` occurs in `text` (case-insensitive), sorted, overlaps merged.
QList<TextRange> matchRanges(const QString& text, const QStringList& words);

class SearchHighlightDelegate : public QStyledItemDelegate {
    Q_OBJECT
  public:
    using QStyledItemDelegate::QStyledItemDelegate;
    void setWords(const QStringList& words) { words_ = words; }
    const QStringList& words() const { return words_; }
    void paint(QPainter* painter, const QStyleOptionViewItem& option,
               const QModelIndex& index) const override;

  private:
    QStringList words_;
};

}  // namespace pd::ui
