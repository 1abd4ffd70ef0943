// The card browser's models (checked by QAbstractItemModelTester) and its filters.
#include <QAbstractItemModelTester>
#include <QComboBox>
#include <QHeaderView>
#include <QLineEdit>
#include <QMessageBox>
#include <QPainter>
#include <QPushButton>
#include <QTableView>
#include <QTableWidget>
#include <QTemporaryDir>
#include <QTimer>
#include <QtTest>

#include "app/study_test_support.h"
#include "browser_page.h"
#include "card_dialog.h"
#include "card_table_model.h"
#include "deck_actions.h"
#include "main_window.h"
#include "search_highlight_delegate.h"
#include "show_me_window.h"

using namespace pd::study;
using pd::ui::CardFilterModel;
using pd::ui::CardTableModel;

class TestCardBrowser : public QObject {
    Q_OBJECT
  private slots:
    void init();
    void cleanup();
    void modelIsConsistent();
    void filters_data();
    void filters();
    void dueStateFollowsReviews();
    void browserPageSearch();
    void cardIdColumn();
    void matchRangesMerge();
    void searchMatchesAreMarked();
    void showMeFromBrowse();
    void cardDialogHistoryAndShowMe();
    void deckActionTexts();
    void reimportUpdatesAndKeepsHistory();
    void deleteRemovesDeckAndHistory();
    void mainWindowRunsShowMeFromBrowse();
    void questionColumnIsTheWidest();
    void searchLeadsToTheResults();

  private:
    std::unique_ptr<QTemporaryDir> dir_;
    std::unique_ptr<ReviewStore> store_;
    std::unique_ptr<DeckLibrary> library_;
    std::unique_ptr<pd::ui::AppContext> context_;
};

void TestCardBrowser::init() {
    dir_ = std::make_unique<QTemporaryDir>();
    store_ = std::make_unique<ReviewStore>();
    QVERIFY(store_->open(dir_->filePath(QStringLiteral("b.sqlite")), nullptr));
    library_ = std::make_unique<DeckLibrary>();
    QVERIFY(
        library_->addBundled(QStringLiteral(PD_DECK_DIR "/ml-systems-parallelism.json")).isEmpty());
    library_->loadUserDecks(dir_->filePath(QStringLiteral("decks")));
    QVERIFY(library_->importDeck(pd::test::smallDeck(), nullptr));
    context_ = std::make_unique<pd::ui::AppContext>();
    context_->library = library_.get();
    context_->store = store_.get();
    context_->now = [] { return pd::test::startTime(); };
}

void TestCardBrowser::cleanup() {
    context_.reset();
    library_.reset();
    store_.reset();
    dir_.reset();
}

void TestCardBrowser::modelIsConsistent() {
    CardTableModel model(*context_);
    QAbstractItemModelTester tester(&model, QAbstractItemModelTester::FailureReportingMode::QtTest);
    CardFilterModel filter;
    filter.setSourceModel(&model);
    QAbstractItemModelTester filterTester(&filter,
                                          QAbstractItemModelTester::FailureReportingMode::QtTest);
    QCOMPARE(model.rowCount(),
             library_->deck(QStringLiteral("ml-systems-parallelism"))->cards.size() + 4);
    filter.setSearchText(QStringLiteral("all-reduce"));
    filter.setTag(QStringLiteral("concept::gradient-sync"));
    filter.sort(CardTableModel::DifficultyColumn);
    model.reload();
    filter.setSearchText(QString());
    filter.setTag(QString());
    QCOMPARE(filter.rowCount(), model.rowCount());
}

void TestCardBrowser::filters_data() {
    QTest::addColumn<QString>("search");
    QTest::addColumn<QString>("tag");
    QTest::addColumn<int>("difficulty");
    QTest::addColumn<int>("rows");
    QTest::newRow("search matches explanations")
        << QStringLiteral("because c is wrong, which this explanation") << QString() << -1 << 4;
    QTest::newRow("words in any order")
        << QStringLiteral("card-three hold") << QString() << -1 << 1;
    QTest::newRow("tag") << QString() << QStringLiteral("topic::demo") << -1 << 1;
    QTest::newRow("difficulty within search")
        << QStringLiteral("Question card-f") << QString() << int(Difficulty::Application) << 1;
    QTest::newRow("nothing") << QStringLiteral("zzzz-not-there") << QString() << -1 << 0;
}

void TestCardBrowser::filters() {
    QFETCH(QString, search);
    QFETCH(QString, tag);
    QFETCH(int, difficulty);
    QFETCH(int, rows);
    CardTableModel model(*context_);
    CardFilterModel filter;
    filter.setSourceModel(&model);
    filter.setSearchText(search);
    filter.setTag(tag);
    filter.setDifficulty(difficulty);
    QCOMPARE(filter.rowCount(), rows);
}

void TestCardBrowser::dueStateFollowsReviews() {
    StudySession session(*library_->deck(QStringLiteral("test-deck")), *store_, StudySettings{}, {},
                         pd::test::startTime());
    QVERIFY(
        session.answer({0}, std::nullopt, std::nullopt, 10, pd::test::startTime()));  // card-one
    CardTableModel model(*context_);
    CardFilterModel filter;
    filter.setSourceModel(&model);
    filter.setDueState(int(pd::ui::DueState::Scheduled));
    QCOMPARE(filter.rowCount(), 1);
    QCOMPARE(filter.index(0, 0).data(CardTableModel::CardIdRole).toString(),
             QStringLiteral("card-one"));
    QCOMPARE(filter.index(0, CardTableModel::DueColumn).data().toString(),
             QStringLiteral("in 10m"));
    filter.setDueState(int(pd::ui::DueState::New));
    QCOMPARE(filter.rowCount(), model.rowCount() - 1);
}

void TestCardBrowser::browserPageSearch() {
    pd::ui::BrowserPage page(*context_);
    QAbstractItemModelTester tester(page.filterModel(),
                                    QAbstractItemModelTester::FailureReportingMode::QtTest);
    page.show();
    QTest::keyClicks(page.searchEdit(), QStringLiteral("card-two"));
    QTRY_COMPARE(page.filterModel()->rowCount(), 1);
    page.refresh();
    QCOMPARE(page.filterModel()->rowCount(), 1);
}

// The question is what a learner reads: at a laptop's width it gets the most room, and
// the card id (which used to be widest) gives way.
void TestCardBrowser::questionColumnIsTheWidest() {
    pd::ui::BrowserPage page(*context_);
    for (const int width : {1000, 1400, 760}) {
        page.resize(width, 600);
        page.show();
        QVERIFY(QTest::qWaitForWindowExposed(&page));
        QCoreApplication::sendPostedEvents(nullptr, QEvent::LayoutRequest);
        QTableView* view = page.view();
        const int question = view->columnWidth(CardTableModel::PromptColumn);
        for (int c = 0; c < CardTableModel::ColumnCount; ++c) {
            if (c == CardTableModel::PromptColumn) continue;
            QVERIFY2(question > view->columnWidth(c),
                     qPrintable(QStringLiteral("at %1 px: question %2, column %3 %4")
                                    .arg(width)
                                    .arg(question)
                                    .arg(c)
                                    .arg(view->columnWidth(c))));
        }
        QVERIFY2(question * 2 >= view->viewport()->width() - 2,  // at least half
                 qPrintable(QStringLiteral("at %1 px: question %2 of %3")
                                .arg(width)
                                .arg(question)
                                .arg(view->viewport()->width())));
        QCOMPARE(view->horizontalHeader()->sectionResizeMode(CardTableModel::PromptColumn),
                 QHeaderView::Stretch);
    }
}

// Enter in the search goes to the results with the first row selected; Tab from the search
// reaches the results next (before the filters), and Tab leaves the table.
void TestCardBrowser::searchLeadsToTheResults() {
    pd::ui::BrowserPage page(*context_);
    page.resize(1000, 600);
    page.show();
    QVERIFY(QTest::qWaitForWindowActive(&page));
    page.focusSearch();
    QCOMPARE(QApplication::focusWidget(), page.searchEdit());
    QTest::keyClick(page.searchEdit(), Qt::Key_Tab);
    QCOMPARE(QApplication::focusWidget(), page.view());
    QTest::keyClick(page.view(), Qt::Key_Tab);
    QVERIFY(QApplication::focusWidget() != page.view());  // on to the tag filter
    QVERIFY(qobject_cast<QComboBox*>(QApplication::focusWidget()));

    page.focusSearch();
    QTest::keyClicks(page.searchEdit(), QStringLiteral("card-two"));
    QCOMPARE(page.filterModel()->rowCount(), 1);
    QTest::keyClick(page.searchEdit(), Qt::Key_Return);
    QCOMPARE(QApplication::focusWidget(), page.view());
    QCOMPARE(page.view()->currentIndex().row(), 0);
    QVERIFY(page.view()->selectionModel()->isRowSelected(0, QModelIndex()));
    QCOMPARE(page.view()->currentIndex().data(CardTableModel::CardIdRole).toString(),
             QStringLiteral("card-two"));
    QVERIFY(page.showMeButton()->toolTip() != QStringLiteral("Select a card first"));
    // A wider search: Enter selects its first row again.
    page.focusSearch();
    QTest::keyClicks(page.searchEdit(), QStringLiteral("card"));
    QVERIFY(page.filterModel()->rowCount() > 1);
    QTest::keyClick(page.searchEdit(), Qt::Key_Enter);
    QCOMPARE(QApplication::focusWidget(), page.view());
    QCOMPARE(page.view()->currentIndex().row(), 0);
}

void TestCardBrowser::cardIdColumn() {
    CardTableModel model(*context_);
    QCOMPARE(model.headerData(CardTableModel::IdColumn, Qt::Horizontal).toString(),
             QStringLiteral("Card id"));
    for (int row = 0; row < model.rowCount(); ++row) {
        const QModelIndex id = model.index(row, CardTableModel::IdColumn);
        QCOMPARE(id.data().toString(), id.data(CardTableModel::CardIdRole).toString());
    }
    // Sortable like the other columns.
    CardFilterModel filter;
    filter.setSourceModel(&model);
    filter.setSortRole(CardTableModel::SortRole);
    filter.sort(CardTableModel::IdColumn);
    QVERIFY(filter.index(0, CardTableModel::IdColumn).data().toString() <
            filter.index(1, CardTableModel::IdColumn).data().toString());
}

void TestCardBrowser::matchRangesMerge() {
    using pd::ui::TextRange;
    QCOMPARE(
        pd::ui::matchRanges(QStringLiteral("All-reduce and all-gather"), {QStringLiteral("all")}),
        (QList<TextRange>{{0, 3}, {15, 3}}));
    // Overlapping words become one marked run; no word, no run.
    QCOMPARE(pd::ui::matchRanges(QStringLiteral("All-reduce"),
                                 {QStringLiteral("ll-r"), QStringLiteral("all")}),
             (QList<TextRange>{{0, 5}}));  // "All-r"
    QVERIFY(pd::ui::matchRanges(QStringLiteral("All-reduce"), {}).isEmpty());
}

void TestCardBrowser::searchMatchesAreMarked() {
    pd::ui::BrowserPage page(*context_);
    page.resize(1200, 600);
    page.show();
    QVERIFY(QTest::qWaitForWindowExposed(&page));
    QTest::keyClicks(page.searchEdit(), QStringLiteral("card-TWO"));
    QCOMPARE(page.highlightDelegate()->words(), QStringList{QStringLiteral("card-TWO")});
    QCOMPARE(page.filterModel()->rowCount(), 1);
    const QModelIndex cell = page.filterModel()->index(0, CardTableModel::IdColumn);
    // The cell drawn with the search word differs from the same cell drawn without it.
    const auto render = [&](const QStringList& words) {
        page.highlightDelegate()->setWords(words);
        QImage image(220, 30, QImage::Format_ARGB32);
        image.fill(Qt::white);
        QPainter painter(&image);
        QStyleOptionViewItem option;
        option.initFrom(page.view());
        option.rect = image.rect();
        option.widget = page.view();
        page.highlightDelegate()->paint(&painter, option, cell);
        return image;
    };
    const QImage plain = render({});
    const QImage marked = render({QStringLiteral("two")});
    QVERIFY(plain != marked);
    QCOMPARE(render({QStringLiteral("no-such-word")}), plain);
}

void TestCardBrowser::showMeFromBrowse() {
    pd::ui::BrowserPage page(*context_);
    page.show();
    QVERIFY(QTest::qWaitForWindowExposed(&page));
    QSignalSpy spy(&page, &pd::ui::BrowserPage::showMeRequested);
    QVERIFY(!page.showMeButton()->isEnabled());  // nothing selected

    // A card without a scenario: Show me stays off and M does nothing.
    QTest::keyClicks(page.searchEdit(), QStringLiteral("card-one"));
    QCOMPARE(page.filterModel()->rowCount(), 1);
    page.view()->setCurrentIndex(page.filterModel()->index(0, 0));
    QVERIFY(!page.showMeButton()->isEnabled());
    QTest::keyClick(page.view(), Qt::Key_M);
    QCOMPARE(spy.count(), 0);

    // A bundled card with one: M and the button both ask for it.
    page.searchEdit()->clear();
    QTest::keyClicks(page.searchEdit(), QStringLiteral("wmp-model-state-bytes"));
    QCOMPARE(page.filterModel()->rowCount(), 1);
    page.view()->setCurrentIndex(page.filterModel()->index(0, 0));
    QVERIFY(page.showMeButton()->isEnabled());
    page.view()->setFocus();
    QTest::keyClick(page.view(), Qt::Key_M);
    QCOMPARE(spy.count(), 1);
    QCOMPARE(spy.at(0).at(0).toString(), QStringLiteral("ml-systems-parallelism"));
    QCOMPARE(spy.at(0).at(1).toString(), QStringLiteral("wmp-model-state-bytes"));
    QTest::mouseClick(page.showMeButton(), Qt::LeftButton);
    QCOMPARE(spy.count(), 2);

    // Enter opens the card dialog; its Show me closes it and asks the page's listeners.
    QTest::keyClick(page.view(), Qt::Key_Return);
    auto* dialog = page.findChild<pd::ui::CardDialog*>();
    QVERIFY(dialog);
    QVERIFY(dialog->isVisible());
    QVERIFY(dialog->showMeButton());
    QTest::mouseClick(dialog->showMeButton(), Qt::LeftButton);
    QCOMPARE(spy.count(), 3);
    QCOMPARE(spy.at(2).at(1).toString(), QStringLiteral("wmp-model-state-bytes"));
    QVERIFY(!dialog->isVisible());
}

void TestCardBrowser::cardDialogHistoryAndShowMe() {
    const QDateTime t0 = pd::test::startTime();
    {
        StudySession review(*library_->deck(QStringLiteral("test-deck")), *store_, StudySettings{},
                            {}, t0);
        QVERIFY(review.answer({0}, std::nullopt, 3, 10, t0));  // card-one, right, sure
    }
    ReviewEntry practice;  // a wrong, guessed practice answer an hour later
    practice.card = {QStringLiteral("test-deck"), QStringLiteral("card-one")};
    practice.reviewedAt = t0.addSecs(3600);
    practice.grade = Rating::Again;
    practice.chosen = {1};
    practice.confidence = 1;
    practice.mode = StudyMode::Practice;
    QVERIFY(store_->recordReview(practice) > 0);
    const CardKey key{QStringLiteral("test-deck"), QStringLiteral("card-one")};
    const QList<ReviewEntry> history = store_->cardReviews(key);
    QCOMPARE(history.size(), 2);
    QCOMPARE(store_->cardReviews({QStringLiteral("test-deck"), QStringLiteral("card-two")}).size(),
             0);
    QCOMPARE(store_->deckReviewCount(QStringLiteral("test-deck")), 2);

    const Deck& deck = *library_->deck(QStringLiteral("test-deck"));
    pd::ui::CardDialog dialog(deck, *deck.card(QStringLiteral("card-one")), store_->schedule(key),
                              history, t0, nullptr);
    QTableWidget* table = dialog.historyTable();
    QCOMPARE(table->rowCount(), 2);
    const auto cell = [&](int row, int col) { return table->item(row, col)->text(); };
    // Newest first: the practice answer, then the review that scheduled the card.
    QCOMPARE(cell(0, 1), QStringLiteral("Practice"));
    QCOMPARE(cell(0, 2), QStringLiteral("Again"));
    QCOMPARE(cell(0, 3), QStringLiteral("Guessing"));
    QCOMPARE(cell(0, 4), QStringLiteral("\u2717 wrong"));
    QCOMPARE(cell(0, 5), QStringLiteral("\u2014"));
    QCOMPARE(cell(1, 1), QStringLiteral("Review"));
    QCOMPARE(cell(1, 2), QStringLiteral("Good"));
    QCOMPARE(cell(1, 3), QStringLiteral("Sure"));
    QCOMPARE(cell(1, 4), QStringLiteral("\u2713 right"));
    QCOMPARE(cell(1, 5), QStringLiteral("10m"));
    QCOMPARE(cell(1, 0), t0.toLocalTime().toString(QStringLiteral("d MMM yyyy HH:mm")));
    QVERIFY(!dialog.showMeButton());  // card-one has no scenario
}

void TestCardBrowser::deckActionTexts() {
    DeckLibrary& library = *library_;
    Deck incoming = *library.deck(QStringLiteral("test-deck"));
    incoming.id = QStringLiteral("renamed-file");
    incoming.cards[0].prompt = QStringLiteral("Edited?");
    incoming.cards.removeLast();
    const ImportPlan plan = library.planImport(incoming);
    const pd::ui::ImportQuestion q = pd::ui::describeImport(plan, QStringLiteral("Test deck"), 3);
    QCOMPARE(q.text, QStringLiteral("'Test deck' already has 3 of the 3 cards in the file."));
    QCOMPARE(q.details, QStringLiteral("Updating it replaces 1 changed card with the file's "
                                       "version, adds 0 new cards and leaves 2 cards as they "
                                       "are. Cards of the deck that are not in the file (1) are "
                                       "kept. Every card keeps its review history."));
    QCOMPARE(q.acceptLabel, QStringLiteral("Update 'Test deck'"));

    // The bundled deck's own cards, unchanged: nothing to do, and no button that imports.
    Deck copy = *library.deck(QStringLiteral("ml-systems-parallelism"));
    copy.id = QStringLiteral("copy");
    const ImportPlan same = library.planImport(copy);
    const pd::ui::ImportQuestion none =
        pd::ui::describeImport(same, QStringLiteral("Bundled"), int(copy.cards.size()));
    QVERIFY(none.acceptLabel.isEmpty() && none.separateLabel.isEmpty());
    QVERIFY(none.text.contains(QStringLiteral("Nothing was imported")));
    // One new card on top of the bundled ones: only that card, as a deck of its own.
    Card extra = copy.cards.first();
    extra.id = QStringLiteral("my-own-card");
    copy.cards.append(extra);
    const pd::ui::ImportQuestion one = pd::ui::describeImport(
        library.planImport(copy), QStringLiteral("Bundled"), int(copy.cards.size()));
    QVERIFY(one.acceptLabel.isEmpty());
    QCOMPARE(one.separateLabel, QStringLiteral("Import 1 card as a new deck"));

    QCOMPARE(pd::ui::deleteQuestion(*library.deck(QStringLiteral("test-deck")), 2),
             QStringLiteral("Delete 'Test deck' and its 4 cards? The review history of its "
                            "cards (2 answers) is deleted with it, so schedules and statistics "
                            "no longer count them. Importing the file again starts the cards as "
                            "new. This cannot be undone."));
}

namespace {

// Clicks the button labelled `label` in the message box the next call opens, as a learner would.
void answerNextBox(const QString& label, QString* seenText) {
    QTimer::singleShot(0, [label, seenText] {
        auto* box = qobject_cast<QMessageBox*>(QApplication::activeModalWidget());
        QVERIFY(box);
        *seenText = box->text() + QLatin1Char(' ') + box->informativeText();
        for (QAbstractButton* b : box->buttons()) {
            if (b->text() == label) {
                QTest::mouseClick(b, Qt::LeftButton);
                return;
            }
        }
        box->reject();
        QFAIL(qPrintable(QStringLiteral("no button '%1'").arg(label)));
    });
}

}  // namespace

void TestCardBrowser::reimportUpdatesAndKeepsHistory() {
    const QDateTime t0 = pd::test::startTime();
    StudySession review(*library_->deck(QStringLiteral("test-deck")), *store_, StudySettings{}, {},
                        t0);
    QVERIFY(review.answer({0}, std::nullopt, std::nullopt, 10, t0));  // card-one
    Deck exported = *library_->deck(QStringLiteral("test-deck"));
    exported.id = QStringLiteral("test-deck-export");  // saved under another file name
    exported.cards[0].prompt = QStringLiteral("Edited question one?");
    QString seen;
    answerNextBox(QStringLiteral("Update 'Test deck'"), &seen);
    const QString status = pd::ui::importWithConfirmation(*context_, exported, nullptr);
    QVERIFY2(seen.contains(QStringLiteral("already has 4 of the 4 cards")), qPrintable(seen));
    QCOMPARE(status, QStringLiteral("Updated 'Test deck': 1 changed, 0 added."));
    QVERIFY(!library_->deck(QStringLiteral("test-deck-export")));  // no duplicate
    QCOMPARE(library_->deck(QStringLiteral("test-deck"))->cards.first().prompt,
             QStringLiteral("Edited question one?"));
    QVERIFY(store_->schedule({QStringLiteral("test-deck"), QStringLiteral("card-one")}));
    QCOMPARE(store_->deckReviewCount(QStringLiteral("test-deck")), 1);
}

void TestCardBrowser::deleteRemovesDeckAndHistory() {
    const QDateTime t0 = pd::test::startTime();
    StudySession review(*library_->deck(QStringLiteral("test-deck")), *store_, StudySettings{}, {},
                        t0);
    QVERIFY(review.answer({0}, std::nullopt, std::nullopt, 10, t0));
    // An open session on the deck keeps it, and says why.
    QString seen;
    answerNextBox(QStringLiteral("OK"), &seen);
    QVERIFY(
        pd::ui::deleteDeckInteractively(*context_, QStringLiteral("test-deck"), nullptr).isEmpty());
    QVERIFY2(seen.contains(QStringLiteral("A study session on 'Test deck' is open")),
             qPrintable(seen));
    QVERIFY(library_->deck(QStringLiteral("test-deck")));
    // Cancel keeps everything.
    answerNextBox(QStringLiteral("Cancel"), &seen);
    QVERIFY(pd::ui::deleteDeckInteractively(*context_, QString(), nullptr).isEmpty());
    QVERIFY2(seen.contains(QStringLiteral("(1 answer) is deleted with it")), qPrintable(seen));
    QVERIFY(library_->deck(QStringLiteral("test-deck")));
    // Delete: the deck, its file and its history go; the bundled deck stays.
    answerNextBox(QStringLiteral("Delete 'Test deck'"), &seen);
    QCOMPARE(pd::ui::deleteDeckInteractively(*context_, QString(), nullptr),
             QStringLiteral("Deleted 'Test deck'."));
    QVERIFY(!library_->deck(QStringLiteral("test-deck")));
    QVERIFY(library_->deck(QStringLiteral("ml-systems-parallelism")));
    QCOMPARE(store_->deckReviewCount(QStringLiteral("test-deck")), 0);
    QVERIFY(!store_->schedule({QStringLiteral("test-deck"), QStringLiteral("card-one")}));
    // The browser no longer lists its cards.
    CardTableModel model(*context_);
    QCOMPARE(model.rowCount(),
             library_->deck(QStringLiteral("ml-systems-parallelism"))->cards.size());
}

void TestCardBrowser::mainWindowRunsShowMeFromBrowse() {
    pd::ui::MainWindow window(*context_);
    window.show();
    window.showPage(pd::ui::MainWindow::Page::Browser);
    auto* browser = window.findChild<pd::ui::BrowserPage*>();
    QVERIFY(browser);
    QTest::keyClicks(browser->searchEdit(), QStringLiteral("wmp-model-state-bytes"));
    browser->view()->setCurrentIndex(browser->filterModel()->index(0, 0));
    QVERIFY(!window.showMeWindow());
    // The File menu offers the deck actions.
    QStringList actions;
    for (const QAction* a : window.findChildren<QAction*>()) actions.append(a->text());
    QVERIFY(actions.contains(QStringLiteral("Re&name Deck\u2026")));
    QVERIFY(actions.contains(QStringLiteral("&Delete Deck\u2026")));
    QTest::keyClick(browser->view(), Qt::Key_M);
    QVERIFY(window.showMeWindow());
    QVERIFY(window.showMeWindow()->isVisible());
    window.showMeWindow()->close();
}

QTEST_MAIN(TestCardBrowser)
#include "test_card_browser.moc"
