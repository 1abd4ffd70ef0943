#include "browser_page.h"

#include <QComboBox>
#include <QHBoxLayout>
#include <QHeaderView>
#include <QKeyEvent>
#include <QLabel>
#include <QLineEdit>
#include <QPushButton>
#include <QTableView>
#include <QVBoxLayout>
#include <algorithm>
#include <array>

#include "card_dialog.h"
#include "card_table_model.h"
#include "search_highlight_delegate.h"
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
    // Long concept names must not set the page's minimum width: the boxes elide.
    for (QComboBox* c : {tag_, difficulty_, due_}) {
        c->setSizeAdjustPolicy(QComboBox::AdjustToMinimumContentsLengthWithIcon);
        c->setMinimumContentsLength(12);
    }
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
    view_->setTabKeyNavigation(false);  // Tab leaves the table; the arrows move in it
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
    fitColumns();  // and again whenever the view's viewport is resized (eventFilter)
    highlight_ = new SearchHighlightDelegate(view_);
    view_->setItemDelegate(highlight_);
    view_->installEventFilter(this);
    view_->viewport()->installEventFilter(this);
    layout->addWidget(view_, 1);
    auto* bottom = new QHBoxLayout;
    count_ = new QLabel(this);
    count_->setWordWrap(true);  // a long hint wraps rather than widening the window
    bottom->addWidget(count_, 1);
    showMe_ = new QPushButton(tr("Show me"), this);
    showMe_->setEnabled(false);
    bottom->addWidget(showMe_);
    layout->addLayout(bottom);

    connect(search_, &QLineEdit::textChanged, this, [this](const QString& text) {
        highlight_->setWords(searchWords(text));
        filter_->setSearchText(text);
        view_->viewport()->update();
    });
    connect(showMe_, &QPushButton::clicked, this, &BrowserPage::requestShowMe);
    connect(view_->selectionModel(), &QItemSelectionModel::currentChanged, this,
            &BrowserPage::updateShowMe);
    connect(filter_, &QAbstractItemModel::modelReset, this, &BrowserPage::updateShowMe);
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
    // Enter in the search goes to what it found: the results, first row selected.
    connect(search_, &QLineEdit::returnPressed, this, &BrowserPage::focusResults);
    // Tab from the search reaches the results next, then the filters and Show me.
    setTabOrder(search_, view_);
    setTabOrder(view_, tag_);
    setTabOrder(tag_, difficulty_);
    setTabOrder(difficulty_, due_);
    setTabOrder(due_, showMe_);
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

void BrowserPage::focusResults() {
    view_->setFocus(Qt::OtherFocusReason);
    if (filter_->rowCount() == 0) return;
    const QModelIndex first = filter_->index(0, CardTableModel::PromptColumn);
    view_->selectionModel()->setCurrentIndex(
        first, QItemSelectionModel::ClearAndSelect | QItemSelectionModel::Rows);
    view_->scrollTo(first);
}

// The question is what a learner reads: it takes the stretch, and the other columns give up
// width (in proportion, down to a floor) so that it keeps at least half of the view (unless
// the view is too narrow for the floors).
void BrowserPage::fitColumns() {
    struct Preferred {
        int column;
        int width;
    };
    static constexpr std::array<Preferred, 5> preferred = {{{CardTableModel::ConceptColumn, 210},
                                                            {CardTableModel::DifficultyColumn, 110},
                                                            {CardTableModel::DueColumn, 100},
                                                            {CardTableModel::DeckColumn, 160},
                                                            {CardTableModel::IdColumn, 160}}};
    static constexpr int kFloor = 56;  // a column narrower than this shows nothing useful
    const int room = view_->viewport()->width() / 2;
    const auto widthAt = [](const Preferred& p, double scale) {
        return std::max(kFloor, static_cast<int>(p.width * scale));
    };
    const auto total = [&](double scale) {
        int sum = 0;
        for (const Preferred& p : preferred) sum += widthAt(p, scale);
        return sum;
    };
    // The largest scale (at most 1) whose widths, floors included, fit in the room.
    double scale = 1.0;
    while (scale > 0.05 && total(scale) > room) scale *= 0.95;
    for (const Preferred& p : preferred) view_->setColumnWidth(p.column, widthAt(p, scale));
}

void BrowserPage::updateCount() {
    count_->setText(tr("%1 of %2 shown. Enter or double-click opens a card; M shows a card's "
                       "scenario.")
                        .arg(filter_->rowCount())
                        .arg(counted(model_->rowCount(), tr("card"), tr("cards"))));
}

const study::Card* BrowserPage::cardAt(const QModelIndex& proxyIndex,
                                       const study::Deck** deckOut) const {
    if (!proxyIndex.isValid() || !context_.library) return nullptr;
    const study::Deck* deck =
        context_.library->deck(proxyIndex.data(CardTableModel::DeckIdRole).toString());
    if (deckOut) *deckOut = deck;
    return deck ? deck->card(proxyIndex.data(CardTableModel::CardIdRole).toString()) : nullptr;
}

void BrowserPage::openCard(const QModelIndex& proxyIndex) {
    const study::Deck* deck = nullptr;
    const study::Card* card = cardAt(proxyIndex, &deck);
    if (!card) return;
    const study::CardKey key{deck->id, card->id};
    auto* dialog = new CardDialog(*deck, *card, context_.store->schedule(key),
                                  context_.store->cardReviews(key), context_.now(), this);
    dialog->setAttribute(Qt::WA_DeleteOnClose);
    connect(dialog, &CardDialog::showMeRequested, this, &BrowserPage::showMeRequested);
    dialog->open();
}

void BrowserPage::requestShowMe() {
    const study::Deck* deck = nullptr;
    const study::Card* card = cardAt(view_->currentIndex(), &deck);
    if (card && card->hasScenario()) emit showMeRequested(deck->id, card->id);
}

void BrowserPage::updateShowMe() {
    const study::Card* card = cardAt(view_->currentIndex(), nullptr);
    showMe_->setEnabled(card && card->hasScenario());
    showMe_->setToolTip(!card                 ? tr("Select a card first")
                        : card->hasScenario() ? tr("Run this card's scenario in the visualizer (M)")
                                              : tr("This card has no scenario to run"));
}

bool BrowserPage::eventFilter(QObject* watched, QEvent* event) {
    if (watched == view_->viewport() && event->type() == QEvent::Resize) fitColumns();
    // M runs the selected card's scenario, as it does while studying.
    if (watched == view_ && event->type() == QEvent::KeyPress) {
        const auto* key = static_cast<QKeyEvent*>(event);
        if (key->key() == Qt::Key_M && key->modifiers() == Qt::NoModifier) {
            requestShowMe();
            return true;
        }
    }
    return QWidget::eventFilter(watched, event);
}

}  // namespace pd::ui
