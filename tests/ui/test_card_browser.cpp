// The card browser's models (checked by QAbstractItemModelTester) and its filters.
#include <QAbstractItemModelTester>
#include <QLineEdit>
#include <QTemporaryDir>
#include <QtTest>

#include "app/study_test_support.h"
#include "browser_page.h"
#include "card_table_model.h"

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
        library_->addBundled(QStringLiteral(PD_DECK_DIR "/distributed-training.json")).isEmpty());
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
             library_->deck(QStringLiteral("distributed-training"))->cards.size() + 4);
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

QTEST_MAIN(TestCardBrowser)
#include "test_card_browser.moc"
