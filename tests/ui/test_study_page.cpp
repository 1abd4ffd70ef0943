// The study page driven by the keyboard, offscreen: answer, reveal, grade, undo; multiple
// answers; practice and mock exam.
#include <QLabel>
#include <QPushButton>
#include <QSignalSpy>
#include <QTemporaryDir>
#include <QtTest>

#include "app/study_test_support.h"
#include "study_page.h"

using namespace pd::study;
using pd::ui::StudyPage;

class TestStudyPage : public QObject {
    Q_OBJECT
  private slots:
    void init();
    void cleanup();
    void answerRevealGradeUndo();
    void wrongAnswerOffersOnlyAgain();
    void multipleAnswersNeedEveryRightOption();
    void enterWithoutAnswerDoesNothing();
    void practiceRevealsWithoutGrades();
    void mockExamGivesNoFeedbackThenScores();
    void escapeAsksToClose();
    void showMeOnScenarioCards();

  private:
    // The display position (0-based) of the card's option `index`.
    int positionOf(int index) const;
    void press(int key, Qt::KeyboardModifiers modifiers = Qt::NoModifier);
    QPushButton* buttonStartingWith(const QString& text) const;

    std::unique_ptr<QTemporaryDir> dir_;
    std::unique_ptr<ReviewStore> store_;
    std::unique_ptr<DeckLibrary> library_;
    std::unique_ptr<pd::ui::AppContext> context_;
    std::unique_ptr<StudyPage> page_;
    QDateTime now_;
};

void TestStudyPage::init() {
    dir_ = std::make_unique<QTemporaryDir>();
    store_ = std::make_unique<ReviewStore>();
    QVERIFY(store_->open(dir_->filePath(QStringLiteral("ui.sqlite")), nullptr));
    library_ = std::make_unique<DeckLibrary>();
    library_->loadUserDecks(dir_->filePath(QStringLiteral("decks")));
    QVERIFY(library_->importDeck(pd::test::smallDeck(), nullptr));
    context_ = std::make_unique<pd::ui::AppContext>();
    context_->library = library_.get();
    context_->store = store_.get();
    context_->settings.fuzz = false;
    now_ = pd::test::startTime();
    context_->now = [this] { return now_; };
    page_ = std::make_unique<StudyPage>(*context_);
    page_->resize(900, 700);
    page_->show();
}

void TestStudyPage::cleanup() {
    page_.reset();
    context_.reset();
    library_.reset();
    store_.reset();
    dir_.reset();
}

int TestStudyPage::positionOf(int index) const {
    return static_cast<int>(page_->session()->optionOrder().indexOf(index));
}

void TestStudyPage::press(int key, Qt::KeyboardModifiers modifiers) {
    QTest::keyClick(page_.get(), static_cast<Qt::Key>(key), modifiers);
}

QPushButton* TestStudyPage::buttonStartingWith(const QString& text) const {
    for (QPushButton* b : page_->findChildren<QPushButton*>()) {
        if (b->text().startsWith(text) && b->isVisible()) return b;
    }
    return nullptr;
}

void TestStudyPage::answerRevealGradeUndo() {
    QSignalSpy answered(page_.get(), &StudyPage::answered);
    QVERIFY(page_->start(QStringLiteral("test-deck"), SessionOptions{}));
    QCOMPARE(page_->session()->current()->id, QStringLiteral("card-one"));

    // Option "A" (index 0) is right; press its number, then a confidence, then Enter.
    press(Qt::Key_1 + positionOf(0));
    QCOMPARE(page_->selectedOptions(), QList<int>{0});
    press(Qt::Key_S);
    press(Qt::Key_Return);
    QVERIFY(page_->isRevealed());
    // Every option shows its verdict and explanation.
    int explanations = 0;
    for (QLabel* l : page_->findChildren<QLabel*>()) {
        if (l->isVisible() && l->text().startsWith(QStringLiteral("Because "))) ++explanations;
    }
    QCOMPARE(explanations, 3);
    // The grade buttons carry their intervals: Hard 5.5 minutes, Good 10 minutes, Easy 8 days.
    QPushButton* good = buttonStartingWith(QStringLiteral("3  Good"));
    QVERIFY(good);
    QVERIFY(good->text().endsWith(QStringLiteral("10m")));
    QVERIFY(buttonStartingWith(QStringLiteral("4  Easy"))->text().endsWith(QStringLiteral("8d")));
    QVERIFY(!buttonStartingWith(QStringLiteral("1  Again"))->isEnabled());

    // Key 4 grades Easy.
    press(Qt::Key_4);
    QCOMPARE(answered.count(), 1);
    QVERIFY(!page_->isRevealed());
    QCOMPARE(page_->session()->current()->id, QStringLiteral("card-two"));
    const auto log = store_->reviews();
    QCOMPARE(log.size(), 1);
    QCOMPARE(log.first().grade, Rating::Easy);
    QCOMPARE(log.first().confidence, std::optional<int>(3));
    QCOMPARE(
        store_->schedule({QStringLiteral("test-deck"), QStringLiteral("card-one")})->fsrs.state,
        CardState::Review);

    // Ctrl+Z brings card-one back, unanswered, and forgets the review.
    press(Qt::Key_Z, Qt::ControlModifier);
    QCOMPARE(answered.count(), 2);
    QCOMPARE(page_->session()->current()->id, QStringLiteral("card-one"));
    QVERIFY(page_->selectedOptions().isEmpty());
    QCOMPARE(store_->reviewCount(), 0);
    QVERIFY(!store_->schedule({QStringLiteral("test-deck"), QStringLiteral("card-one")}));

    // Space checks as well as Enter; Enter after the reveal accepts Good.
    press(Qt::Key_1 + positionOf(0));
    press(Qt::Key_Space);
    QVERIFY(page_->isRevealed());
    press(Qt::Key_Enter);
    QCOMPARE(store_->lastReview()->grade, Rating::Good);
}

void TestStudyPage::wrongAnswerOffersOnlyAgain() {
    QVERIFY(page_->start(QStringLiteral("test-deck"), SessionOptions{}));
    press(Qt::Key_1 + positionOf(2));  // "C" is wrong
    press(Qt::Key_Return);
    QVERIFY(page_->isRevealed());
    QVERIFY(buttonStartingWith(QStringLiteral("1  Again"))->isEnabled());
    QVERIFY(!buttonStartingWith(QStringLiteral("3  Good"))->isEnabled());
    press(Qt::Key_3);  // not offered: nothing happens
    QVERIFY(page_->isRevealed());
    QCOMPARE(store_->reviewCount(), 0);
    press(Qt::Key_Return);  // Enter accepts Again
    QCOMPARE(store_->lastReview()->grade, Rating::Again);
    QVERIFY(!store_->lastReview()->correct);
}

void TestStudyPage::multipleAnswersNeedEveryRightOption() {
    SessionOptions options;
    options.mode = StudyMode::Practice;
    options.filter.difficulty = Difficulty::Expert;  // only card-three, two right answers
    QVERIFY(page_->start(QStringLiteral("test-deck"), options));
    QCOMPARE(page_->session()->current()->id, QStringLiteral("card-three"));
    press(Qt::Key_1 + positionOf(0));
    press(Qt::Key_1 + positionOf(1));
    press(Qt::Key_1 + positionOf(2));
    press(Qt::Key_1 + positionOf(2));  // toggled off again
    QCOMPARE(page_->selectedOptions(), (QList<int>{0, 1}));
    // The page says how many answers to choose.
    bool saysTwo = false;
    for (QLabel* l : page_->findChildren<QLabel*>())
        saysTwo = saysTwo || l->text().startsWith(QStringLiteral("Select two answers"));
    QVERIFY(saysTwo);
    press(Qt::Key_Return);
    press(Qt::Key_Return);
    QVERIFY(store_->lastReview()->correct);
    QCOMPARE(store_->lastReview()->chosen, (QList<int>{0, 1}));
}

void TestStudyPage::enterWithoutAnswerDoesNothing() {
    QVERIFY(page_->start(QStringLiteral("test-deck"), SessionOptions{}));
    press(Qt::Key_Return);
    QVERIFY(!page_->isRevealed());
    press(Qt::Key_9);  // no such option
    QVERIFY(page_->selectedOptions().isEmpty());
}

void TestStudyPage::practiceRevealsWithoutGrades() {
    SessionOptions options;
    options.mode = StudyMode::Practice;
    options.filter.tag = QStringLiteral("concept::pipeline-parallelism");
    QVERIFY(page_->start(QStringLiteral("test-deck"), options));
    press(Qt::Key_1 + positionOf(0));
    press(Qt::Key_Return);
    QVERIFY(page_->isRevealed());
    QVERIFY(!buttonStartingWith(QStringLiteral("3  Good")));  // no grades in practice
    QVERIFY(buttonStartingWith(QStringLiteral("Next card")));
    press(Qt::Key_Return);
    press(Qt::Key_1 + positionOf(1));
    press(Qt::Key_Return);
    press(Qt::Key_Return);
    QVERIFY(page_->isShowingResults());
    QCOMPARE(store_->reviewCount(), 2);
    QVERIFY(store_->schedules(QStringLiteral("test-deck")).isEmpty());
}

void TestStudyPage::mockExamGivesNoFeedbackThenScores() {
    SessionOptions options;
    options.mode = StudyMode::MockExam;
    QVERIFY(page_->start(QStringLiteral("test-deck"), options));
    for (int i = 0; i < 4; ++i) {
        QVERIFY(!page_->isShowingResults());
        press(Qt::Key_1 + positionOf(0));
        press(Qt::Key_Return);
        QVERIFY(!page_->isRevealed());  // straight to the next question
    }
    QVERIFY(page_->isShowingResults());
    QCOMPARE(page_->session()->answered(), 4);
    QCOMPARE(page_->session()->correctAnswers(), 3);  // the two-answer card needed both
    bool scored = false;
    for (QLabel* l : page_->findChildren<QLabel*>())
        scored = scored || l->text().contains(QStringLiteral("Mock exam: 3 of 4 right"));
    QVERIFY(scored);
}

void TestStudyPage::escapeAsksToClose() {
    QSignalSpy closed(page_.get(), &StudyPage::closeRequested);
    QVERIFY(page_->start(QStringLiteral("test-deck"), SessionOptions{}));
    press(Qt::Key_Escape);
    QCOMPARE(closed.count(), 1);
    QVERIFY(!page_->start(QStringLiteral("no-such-deck"), SessionOptions{}));
}

void TestStudyPage::showMeOnScenarioCards() {
    // One card with a scenario, one without.
    QString withScenario =
        pd::test::singleCard(QStringLiteral("has-run"), QStringLiteral("pipeline-parallelism"));
    withScenario.chop(1);
    withScenario += QStringLiteral(
        R"(, "scenario": {"strategy": "pipeline", "devices": 2, "microbatches": 4, "batch": 8},
        "scenario_note": "Look at the bubble."})");
    const QString without =
        pd::test::singleCard(QStringLiteral("no-run"), QStringLiteral("data-parallelism"));
    QVERIFY(library_->importDeck(
        *parseDeck(pd::test::deckJson({withScenario, without}, QStringLiteral("show-deck")),
                   QStringLiteral("show.json"), {true})
             .deck,
        nullptr));
    QVERIFY(page_->start(QStringLiteral("show-deck"), SessionOptions{}));
    QSignalSpy requested(page_.get(), &StudyPage::showMeRequested);
    for (int i = 0; i < 2; ++i) {
        const QString id = page_->session()->current()->id;
        auto* button = page_->findChild<QPushButton*>(QStringLiteral("showMe"));
        QVERIFY(button);
        QCOMPARE(button->isVisible(), id == QStringLiteral("has-run"));
        press(Qt::Key_M);
        if (id == QStringLiteral("has-run")) {
            QCOMPARE(requested.count(), 1);
            QCOMPARE(requested.first().at(0).toString(), QStringLiteral("show-deck"));
            QCOMPARE(requested.first().at(1).toString(), QStringLiteral("has-run"));
        }
        press(Qt::Key_1);
        press(Qt::Key_Return);
        press(Qt::Key_Return);
    }
    QCOMPARE(requested.count(), 1);  // the card without a scenario asked for nothing
}

QTEST_MAIN(TestStudyPage)
#include "test_study_page.moc"
