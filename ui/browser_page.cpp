#include "browser_page.h"

#include <QComboBox>
#include <QDialog>
#include <QDialogButtonBox>
#include <QHBoxLayout>
#include <QHeaderView>
#include <QKeyEvent>
#include <QLabel>
#include <QLineEdit>
#include <QScrollArea>
#include <QTableView>
#include <QTextBrowser>
#include <QVBoxLayout>

#include "card_table_model.h"
#include "theme.h"

namespace pd::ui {

BrowserPage::BrowserPage(AppContext& context, QWidget* parent)
    : QWidget(parent), context_(context) {
    auto* layout = new QVBoxLayout(this);
    layout->setContentsMargins(28, 20, 28, 20);
    layout->setSpacing(12);
    auto* title = new QLabel(tr("Browse cards"), this);
    QFont tf = title->font();
    tf.setPointSizeF(tf.pointSizeF() * 1.5);
    tf.setBold(true);
    title->setFont(tf);
    layout->addWidget(title);

    auto* filters = new QHBoxLayout;
    filters->setSpacing(8);
    search_ = new QLineEdit(this);
    search_->setPlaceholderText(tr("Search questions, answers and explanations (Ctrl+F)"));
    search_->setClearButtonEnabled(true);
    tag_ = new QComboBox(this);
    difficulty_ = new QComboBox(this);
    difficulty_->addItem(tr("Any difficulty"), -1);
    for (auto d :
         {study::Difficulty::Foundation, study::Difficulty::Application, study::Difficulty::Expert})
        difficulty_->addItem(study::difficultyDisplayName(d), static_cast<int>(d));
    due_ = new QComboBox(this);
    due_->addItem(tr("Any state"), -1);
    due_->addItem(tr("New"), static_cast<int>(DueState::New));
    due_->addItem(tr("Due now"), static_cast<int>(DueState::Due));
    due_->addItem(tr("Scheduled later"), static_cast<int>(DueState::Scheduled));
    filters->addWidget(search_, 1);
    filters->addWidget(tag_);
    filters->addWidget(difficulty_);
    filters->addWidget(due_);
    layout->addLayout(filters);

    model_ = new CardTableModel(context_, this);
    filter_ = new CardFilterModel(this);
    filter_->setSourceModel(model_);
    filter_->setSortRole(CardTableModel::SortRole);
    view_ = new QTableView(this);
    view_->setModel(filter_);
    view_->setSelectionBehavior(QAbstractItemView::SelectRows);
    view_->setSelectionMode(QAbstractItemView::SingleSelection);
    view_->setSortingEnabled(true);
    view_->sortByColumn(-1, Qt::AscendingOrder);
    view_->setAlternatingRowColors(true);
    view_->setWordWrap(false);
    view_->verticalHeader()->setVisible(false);
    view_->verticalHeader()->setDefaultSectionSize(view_->fontMetrics().height() + 14);
    view_->horizontalHeader()->setSectionResizeMode(CardTableModel::PromptColumn,
                                                    QHeaderView::Stretch);
    view_->horizontalHeader()->setHighlightSections(false);
    view_->setShowGrid(false);
    view_->setColumnWidth(CardTableModel::ConceptColumn, 210);
    view_->setColumnWidth(CardTableModel::DifficultyColumn, 110);
    view_->setColumnWidth(CardTableModel::DueColumn, 100);
    view_->setColumnWidth(CardTableModel::DeckColumn, 160);
    layout->addWidget(view_, 1);
    count_ = new QLabel(this);
    layout->addWidget(count_);

    connect(search_, &QLineEdit::textChanged, filter_, &CardFilterModel::setSearchText);
    connect(tag_, &QComboBox::currentIndexChanged, this,
            [this] { filter_->setTag(tag_->currentData().toString()); });
    connect(difficulty_, &QComboBox::currentIndexChanged, this,
            [this] { filter_->setDifficulty(difficulty_->currentData().toInt()); });
    connect(due_, &QComboBox::currentIndexChanged, this,
            [this] { filter_->setDueState(due_->currentData().toInt()); });
    connect(filter_, &QAbstractItemModel::rowsInserted, this, &BrowserPage::updateCount);
    connect(filter_, &QAbstractItemModel::rowsRemoved, this, &BrowserPage::updateCount);
    connect(filter_, &QAbstractItemModel::modelReset, this, &BrowserPage::updateCount);
    connect(filter_, &QAbstractItemModel::layoutChanged, this, &BrowserPage::updateCount);
    connect(view_, &QTableView::activated, this, &BrowserPage::openCard);
    rebuildTagFilter();
    updateCount();
}

void BrowserPage::rebuildTagFilter() {
    const QString current = tag_->currentData().toString();
    tag_->blockSignals(true);
    tag_->clear();
    tag_->addItem(tr("Any tag"), QString());
    QStringList tags;
    if (context_.library) {
        for (const study::Deck& d : context_.library->decks()) {
            for (const study::Card& c : d.cards) {
                for (const QString& t : c.tags) {
                    if (!tags.contains(t)) tags.append(t);
                }
            }
        }
    }
    // Concepts first in syllabus order, then the other tags alphabetically.
    QStringList concepts;
    for (const QString& n : study::conceptNames()) {
        if (tags.contains(QStringLiteral("concept::") + n))
            concepts.append(QStringLiteral("concept::") + n);
    }
    QStringList others;
    for (const QString& t : tags) {
        if (!t.startsWith(QStringLiteral("concept::"))) others.append(t);
    }
    others.sort();
    for (const QString& t : concepts) tag_->addItem(study::tagDisplayName(t), t);
    if (!others.isEmpty()) tag_->insertSeparator(tag_->count());
    for (const QString& t : others) {
        const QString ns = t.section(QStringLiteral("::"), 0, 0);
        tag_->addItem(QStringLiteral("%1 (%2)").arg(study::tagDisplayName(t), ns), t);
    }
    const int restored = tag_->findData(current);
    tag_->setCurrentIndex(restored >= 0 ? restored : 0);
    tag_->blockSignals(false);
    filter_->setTag(tag_->currentData().toString());
}

void BrowserPage::refresh() {
    model_->reload();
    rebuildTagFilter();
    updateCount();
}

void BrowserPage::focusSearch() {
    search_->setFocus();
    search_->selectAll();
}

void BrowserPage::updateCount() {
    count_->setText(tr("%1 of %2 shown. Enter or double-click opens a card.")
                        .arg(filter_->rowCount())
                        .arg(counted(model_->rowCount(), tr("card"), tr("cards"))));
}

void BrowserPage::openCard(const QModelIndex& proxyIndex) {
    if (!proxyIndex.isValid() || !context_.library) return;
    const QString deckId = proxyIndex.data(CardTableModel::DeckIdRole).toString();
    const QString cardId = proxyIndex.data(CardTableModel::CardIdRole).toString();
    const study::Deck* deck = context_.library->deck(deckId);
    const study::Card* card = deck ? deck->card(cardId) : nullptr;
    if (!card) return;
    showCardDialog(*deck, *card, context_.store->schedule({deckId, cardId}), context_.now(), this);
}

void showCardDialog(const study::Deck& deck, const study::Card& card,
                    const std::optional<study::CardSchedule>& schedule, const QDateTime& now,
                    QWidget* parent) {
    const ThemeColors c = themeColors();
    QDialog dialog(parent);
    dialog.setWindowTitle(QObject::tr("Card %1").arg(card.id));
    dialog.resize(760, 640);
    auto* layout = new QVBoxLayout(&dialog);
    auto* text = new QTextBrowser(&dialog);
    text->setOpenLinks(false);
    text->document()->setDocumentMargin(16);
    QString html;
    QStringList chips;
    for (const QString& t : card.concepts()) chips.append(study::tagDisplayName(t));
    chips.append(study::difficultyDisplayName(card.difficulty));
    chips.append(card.type == study::CardType::Single
                     ? QObject::tr("one answer")
                     : QObject::tr("%1 answers").arg(card.correctCount()));
    html += QStringLiteral("<p style='color:%1'><b>%2</b></p>")
                .arg(css(c.muted), chips.join(QStringLiteral(" \u00b7 ")).toHtmlEscaped());
    html += QStringLiteral("<p style='font-size:large'>%1</p>").arg(card.prompt.toHtmlEscaped());
    for (int i = 0; i < card.options.size(); ++i) {
        const study::Option& o = card.options[i];
        const QColor color = o.correct ? c.right : c.wrong;
        html +=
            QStringLiteral(
                "<p><span style='color:%1'><b>%2 %3</b></span> %4<br>"
                "<span style='color:%5'>%6</span></p>")
                .arg(css(color), o.correct ? QStringLiteral("\u2713") : QStringLiteral("\u2717"),
                     o.correct ? QObject::tr("Right:") : QObject::tr("Wrong:"),
                     o.text.toHtmlEscaped(), css(c.muted), o.explanation.toHtmlEscaped());
    }
    html += QStringLiteral("<p style='color:%1'>%2: %3<br>%4</p>")
                .arg(css(c.muted), QObject::tr("Tags"),
                     card.tags.join(QStringLiteral(", ")).toHtmlEscaped(),
                     QObject::tr("Deck: %1").arg(deck.title.toHtmlEscaped()));
    if (schedule) {
        const QDateTime due = study::toDateTime(schedule->fsrs.due);
        html +=
            QStringLiteral("<p style='color:%1'>%2</p>")
                .arg(
                    css(c.muted),
                    QObject::tr("Reviewed %1, %2. Stability %3 days, difficulty %4. Due %5.")
                        .arg(counted(schedule->reps, QObject::tr("time"), QObject::tr("times")))
                        .arg(counted(schedule->lapses, QObject::tr("lapse"), QObject::tr("lapses")))
                        .arg(QString::number(schedule->fsrs.stability.value_or(0.0), 'f', 1))
                        .arg(QString::number(schedule->fsrs.difficulty.value_or(0.0), 'f', 1))
                        .arg(due <= now
                                 ? QObject::tr("now")
                                 : due.toLocalTime().toString(QStringLiteral("d MMM yyyy HH:mm"))));
    } else {
        html += QStringLiteral("<p style='color:%1'>%2</p>")
                    .arg(css(c.muted), QObject::tr("Not studied yet."));
    }
    text->setHtml(html);
    layout->addWidget(text);
    auto* buttons = new QDialogButtonBox(QDialogButtonBox::Close, &dialog);
    QObject::connect(buttons, &QDialogButtonBox::rejected, &dialog, &QDialog::reject);
    layout->addWidget(buttons);
    dialog.exec();
}

}  // namespace pd::ui
