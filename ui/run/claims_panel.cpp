#include "claims_panel.h"

#include <QLabel>
#include <QListWidget>
#include <QScrollBar>
#include <QStyle>
#include <QStyledItemDelegate>
#include <QVBoxLayout>
#include <algorithm>

namespace pd::ui {

namespace {

// Each claim as tall as its wrapped text at the list's width: Qt's own guess used another
// width and cut the last line short.
class WrappedItemDelegate : public QStyledItemDelegate {
  public:
    explicit WrappedItemDelegate(QListWidget* list) : QStyledItemDelegate(list), list_(list) {}

    QSize sizeHint(const QStyleOptionViewItem& option, const QModelIndex& index) const override {
        QStyleOptionViewItem o = option;
        initStyleOption(&o, index);
        const int width = std::max(80, list_->viewport()->width() - 2 * list_->spacing());
        // The text's room inside the item: the style's margins on both sides, and room for a
        // vertical scroll bar that may come (it narrows the viewport, not the list).
        const int margin =
            2 * (list_->style()->pixelMetric(QStyle::PM_FocusFrameHMargin, &o, list_) + 1) +
            (list_->verticalScrollBar()->isVisible()
                 ? 0
                 : list_->style()->pixelMetric(QStyle::PM_ScrollBarExtent, &o, list_)) +
            4;
        const QRect text = QFontMetrics(o.font).boundingRect(QRect(0, 0, width - margin, 100000),
                                                             Qt::TextWordWrap, o.text);
        return {width, text.height() + 8};
    }

  private:
    QListWidget* list_;
};

}  // namespace

QString claimText(const pd::ClaimOutcome& o) {
    QString text = QString::fromStdString(o.plain.empty() ? o.description : o.plain);
    text +=
        QObject::tr("\nmeasured: %1")
            .arg(QString::fromStdString(o.measured_words.empty() ? o.measured : o.measured_words));
    if (!o.spread.empty()) text += QStringLiteral("\n") + QString::fromStdString(o.spread);
    return text;
}

ClaimsPanel::ClaimsPanel(QWidget* parent)
    : QWidget(parent), headline_(new QLabel(this)), list_(new QListWidget(this)) {
    auto* layout = new QVBoxLayout(this);
    layout->setContentsMargins(6, 6, 6, 6);
    headline_->setWordWrap(true);
    headline_->setObjectName(QStringLiteral("claimsHeadline"));
    list_->setObjectName(QStringLiteral("claimsList"));
    list_->setWordWrap(true);
    list_->setUniformItemSizes(false);
    list_->setTextElideMode(Qt::ElideNone);
    list_->setHorizontalScrollBarPolicy(Qt::ScrollBarAlwaysOff);
    list_->setVerticalScrollMode(QAbstractItemView::ScrollPerPixel);
    list_->setSpacing(2);
    list_->setResizeMode(QListView::Adjust);  // heights follow the width
    list_->setItemDelegate(new WrappedItemDelegate(list_));
    list_->setToolTip(tr("Choose a claim to bring what it measured into view"));
    layout->addWidget(headline_);
    layout->addWidget(list_, 1);
    connect(list_, &QListWidget::currentRowChanged, this, [this](int row) {
        if (row >= 0 && row < count()) emit claimChosen(row);
    });
    // Clicking the claim already chosen shows its evidence again (the learner may have
    // scrolled or zoomed away).
    connect(list_, &QListWidget::itemClicked, this,
            [this](QListWidgetItem* item) { emit claimChosen(list_->row(item)); });
    setWaiting(tr("The card's claims are checked when its run ends."));
}

void ClaimsPanel::setWaiting(const QString& text) {
    outcomes_.clear();
    list_->clear();
    headline_->setText(text);
}

void ClaimsPanel::setOutcomes(const std::vector<pd::ClaimOutcome>& outcomes) {
    outcomes_ = outcomes;
    const QSignalBlocker block(list_);  // filling the list chooses nothing
    list_->clear();
    int held = 0;
    for (const pd::ClaimOutcome& o : outcomes_) {
        held += o.passed ? 1 : 0;
        auto* item = new QListWidgetItem(
            (o.passed ? QStringLiteral("\u2714 ") : QStringLiteral("\u2718 ")) + claimText(o),
            list_);
        item->setData(Qt::UserRole, o.passed);
        item->setToolTip(tr("%1 — %2\nChecked as: %3")
                             .arg(o.passed ? tr("holds on this run") : tr("does not hold"),
                                  QString::fromStdString(o.measured),
                                  QString::fromStdString(o.description)));
        if (!o.passed) {
            QFont f = item->font();
            f.setBold(true);
            item->setFont(f);
        }
    }
    headline_->setText(tr("<b>What this run shows</b>: %1 of %n claim(s) hold. Choose one to see "
                          "its evidence.",
                          nullptr, count())
                           .arg(held));
}

int ClaimsPanel::current() const {
    return list_->currentRow();
}

void ClaimsPanel::choose(int index) {
    if (index < 0 || index >= count()) return;
    if (list_->currentRow() == index)
        emit claimChosen(index);
    else
        list_->setCurrentRow(index);
}

QString ClaimsPanel::headline() const {
    return headline_->text();
}

}  // namespace pd::ui
