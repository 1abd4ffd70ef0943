// The study page driven by the keyboard, offscreen: answer, reveal, grade, undo; multiple
// answers; practice and mock exam.
#include <QDesktopServices>
#include <QLabel>
#include <QLineEdit>
#include <QPushButton>
#include <QRadioButton>
#include <QScrollArea>
#include <QScrollBar>
#include <QSignalSpy>
#include <QStyleOptionButton>
#include <QTemporaryDir>
#include <QtTest>
#include <cmath>

#include "app/study_test_support.h"
#include "message_box_clicker.h"
#include "numeric_answer_panel.h"
#include "pd/expectations.h"
#include "pd/scenario.h"
#include "study_page.h"
#include "theme.h"

using namespace pd::study;
using pd::ui::StudyPage;

class TestStudyPage : public QObject {
    Q_OBJECT
  private slots:
    void init();
    void cleanup();
    void answerRevealGradeUndo();
    void wrongAnswerSuggestsAgainButAnyGradeIsAllowed();
    void guessSuggestsHard();
    void multipleAnswersNeedEveryRightOption();
    void chooseTwoCannotBeCheckedWithOneOrThree();
    void enterWithoutAnswerDoesNothing();
    void practiceRevealsWithoutGrades();
    void mockExamGivesNoFeedbackThenScores();
    void escapeAsksToClose();
    void escapeAsksBeforeLeavingASession();
    void escapeInMockExamShowsResultsSoFar();
    void progressCountsReturningCards();
    void summarySaysAnswersAndCards();
    void showMeOnScenarioCards();
    void showMeBeforeCheckingIsAnOptInHint();
    void keysScrollTheCardAndRevealScrollsToTheAnswer();
    void sourcesAppearAfterTheAnswerAsLinks();
    void verdictBannerFollowsTheTheme();
    void darkThemeRadioCirclesStandOut();
    void numericCardIsGradedByItsRun();
    void numericCardRightAnswerAndNoExamQuestion();
    void practiceAnswerIsSavedWhenChecked();
    void undoKeepsTheOptionOrder();
    void mockExamResultsListTheMissedQuestions();

  private:
    // The display position (0-based) of the card's option `index`.
    int positionOf(int index) const;
    void press(int key, Qt::KeyboardModifiers modifiers = Qt::NoModifier);
    QPushButton* buttonStartingWith(const QString& text) const;
    bool anyLabelContains(const QString& text) const;
    QString scenarioDeck();
    QString numericDeck();

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

bool TestStudyPage::anyLabelContains(const QString& text) const {
    for (QLabel* l : page_->findChildren<QLabel*>()) {
        if (l->isVisible() && l->text().contains(text)) return true;
    }
    return false;
}

// A deck of one card with a scenario and one without; returns its id.
QString TestStudyPage::scenarioDeck() {
    QString withScenario =
        pd::test::singleCard(QStringLiteral("has-run"), QStringLiteral("pipeline-parallelism"));
    withScenario.chop(1);
    withScenario += QStringLiteral(
        R"(, "scenario": {"strategy": "pipeline", "devices": 2, "microbatches": 4, "batch": 8},
        "scenario_note": "Look at the bubble."})");
    const QString without =
        pd::test::singleCard(QStringLiteral("no-run"), QStringLiteral("data-parallelism"));
    const auto parsed =
        parseDeck(pd::test::deckJson({withScenario, without}, QStringLiteral("show-deck")),
                  QStringLiteral("show.json"), {true});
    if (!parsed.deck || !library_->importDeck(*parsed.deck, nullptr)) return {};
    return QStringLiteral("show-deck");
}

QString TestStudyPage::numericDeck() {
    const auto parsed = parseDeck(
        pd::test::deckJson(
            {pd::test::numericCard(QStringLiteral("predict-grads")),
             pd::test::singleCard(QStringLiteral("plain"), QStringLiteral("data-parallelism"))},
            QStringLiteral("numeric-deck")),
        QStringLiteral("numeric.json"), {true});
    if (!parsed.deck || !library_->importDeck(*parsed.deck, nullptr)) return {};
    return QStringLiteral("numeric-deck");
}

// Practice saves each answer as it is checked: leaving with the last one revealed (before
// "Next card") keeps it, and the dialog counts every checked answer.
void TestStudyPage::practiceAnswerIsSavedWhenChecked() {
    SessionOptions options;
    options.mode = StudyMode::Practice;
    QVERIFY(page_->start(QStringLiteral("test-deck"), options));
    for (int i = 0; i < 4; ++i) {
        const Card* card = page_->session()->current();
        press(Qt::Key_1 + positionOf(0));
        if (card->type == CardType::Multiple) press(Qt::Key_1 + positionOf(1));
        press(Qt::Key_Return);  // check
        QVERIFY(page_->isRevealed());
        QCOMPARE(store_->reviewCount(), i + 1);  // saved now, not on Next
        QCOMPARE(store_->lastReview()->card.cardId, card->id);
        QVERIFY(store_->lastReview()->correct);
        QVERIFY(anyLabelContains(QStringLiteral("%1 answered").arg(i + 1)));
        if (i < 3) press(Qt::Key_Return);  // Next card
    }
    // The fourth is revealed, not moved on from: leaving keeps it and says four.
    auto leave = pd::test::answerNextMessageBox(QStringLiteral("Leave"));
    press(Qt::Key_Escape);
    QVERIFY(leave->opened && leave->clicked);
    QVERIFY2(leave->text.contains(QStringLiteral("4 answers are saved")), qPrintable(leave->text));
    QCOMPARE(store_->reviewCount(), 4);
    QCOMPARE(page_->session()->answered(), 4);
    // Next after the last one ends the session, with nothing recorded twice.
    press(Qt::Key_Return);
    QVERIFY(page_->isShowingResults());
    QCOMPARE(store_->reviewCount(), 4);
    QVERIFY(anyLabelContains(QStringLiteral("You gave <b>4 answers</b> on <b>4 cards</b>")));
}

// Undo brings the answered card back with its options where they were, and the card that was
// on screen keeps its order too when it comes again.
void TestStudyPage::undoKeepsTheOptionOrder() {
    QVERIFY(page_->start(QStringLiteral("test-deck"), SessionOptions{}));
    const auto rowTexts = [this] {
        QStringList texts;
        for (QWidget* row : page_->findChildren<QWidget*>(QStringLiteral("optionRow")))
            texts.append(row->findChildren<QLabel*>().value(1)->text());  // badge, then text
        return texts;
    };
    const QString firstId = page_->session()->current()->id;
    const QList<int> firstOrder = page_->session()->optionOrder();
    const QStringList firstRows = rowTexts();
    QCOMPARE(firstRows.size(), 3);
    for (int round = 0; round < 6; ++round) {
        press(Qt::Key_1 + positionOf(0));
        press(Qt::Key_Return);
        press(Qt::Key_Return);  // Good
        QVERIFY(page_->session()->current()->id != firstId);
        const QString secondId = page_->session()->current()->id;
        const QList<int> secondOrder = page_->session()->optionOrder();
        press(Qt::Key_Z, Qt::ControlModifier);
        QCOMPARE(page_->session()->current()->id, firstId);
        QCOMPARE(page_->session()->optionOrder(), firstOrder);
        QCOMPARE(rowTexts(), firstRows);
        // Answer it again: the second card comes back in the order it had.
        press(Qt::Key_1 + positionOf(0));
        press(Qt::Key_Return);
        press(Qt::Key_Return);
        QCOMPARE(page_->session()->current()->id, secondId);
        QCOMPARE(page_->session()->optionOrder(), secondOrder);
        press(Qt::Key_Z, Qt::ControlModifier);
    }
}

// The exam's results list every question answered wrong, with the learner's answer and the
// right one; a question answered right is not listed.
void TestStudyPage::mockExamResultsListTheMissedQuestions() {
    SessionOptions options;
    options.mode = StudyMode::MockExam;
    QVERIFY(page_->start(QStringLiteral("test-deck"), options));
    while (!page_->isShowingResults()) {
        const Card* card = page_->session()->current();
        if (card->id == QStringLiteral("card-one")) {
            press(Qt::Key_1 + positionOf(0));  // right
        } else {
            press(Qt::Key_1 + positionOf(2));                                        // "C": wrong
            if (card->type == CardType::Multiple) press(Qt::Key_1 + positionOf(3));  // and "D"
        }
        press(Qt::Key_Return);
    }
    QVERIFY(anyLabelContains(QStringLiteral("Mock exam: 1 of 4 right")));
    QVERIFY(anyLabelContains(QStringLiteral("Missed questions (3)")));
    QString results;
    for (QLabel* l : page_->findChildren<QLabel*>())
        if (l->isVisible() && l->text().contains(QStringLiteral("Missed questions")))
            results = l->text();
    for (const QString& prompt :
         {QStringLiteral("Question card-two?"), QStringLiteral("Question card-four?"),
          QStringLiteral("Which two hold for card-three? (Choose two.)")})
        QVERIFY2(results.contains(prompt), qPrintable(prompt));
    QVERIFY(!results.contains(QStringLiteral("Question card-one?")));
    // Each with the answer given and the right one: "C" for "A" on the single cards,
    // "C" and "D" for "A" and "B" on the two-answer card.
    QCOMPARE(results.count(QStringLiteral("Your answer: C<")), 2);
    QCOMPARE(results.count(QStringLiteral("Right answer: A<")), 2);
    QCOMPARE(results.count(QStringLiteral("Your answers: C<br>D<")), 1);
    QCOMPARE(results.count(QStringLiteral("Right answers: A<br>B<")), 1);
}

// Opened links land here instead of in a browser (QDesktopServices' handler for https).
class LinkCatcher : public QObject {
    Q_OBJECT
  public:
    QList<QUrl> opened;
  public slots:
    void open(const QUrl& url) { opened.append(url); }
};

// A card's sources are hidden while the learner thinks, then listed as links after the
// answer; activating one opens it through QDesktopServices.
void TestStudyPage::sourcesAppearAfterTheAnswerAsLinks() {
    QString card = pd::test::singleCard(QStringLiteral("cited"), QStringLiteral("gradient-sync"));
    card.replace(QStringLiteral("\"tags\""),
                 QStringLiteral("\"sources\": [{\"title\": \"ZeRO paper\", \"url\": "
                                "\"https://arxiv.org/abs/1910.02054\", \"locator\": \"Section "
                                "5\"}], \"tags\""));
    const auto parsed = parseDeck(pd::test::deckJson({card}, QStringLiteral("cited-deck")),
                                  QStringLiteral("cited.json"), {true});
    QVERIFY2(parsed.deck, qPrintable(parsed.errorText()));
    QVERIFY(library_->importDeck(*parsed.deck, nullptr));
    QVERIFY(page_->start(QStringLiteral("cited-deck"), SessionOptions{}));
    auto* sources = page_->findChild<QLabel*>(QStringLiteral("sources"));
    QVERIFY(sources);
    QVERIFY(!sources->isVisible());
    press(Qt::Key_1 + positionOf(0));
    press(Qt::Key_Return);
    QVERIFY(page_->isRevealed());
    QVERIFY(sources->isVisible());
    QVERIFY(sources->text().contains(QStringLiteral("href=\"https://arxiv.org/abs/1910.02054\"")));
    QVERIFY(sources->text().contains(QStringLiteral("ZeRO paper")));
    QVERIFY(sources->text().contains(QStringLiteral("Section 5")));
    LinkCatcher catcher;
    QDesktopServices::setUrlHandler(QStringLiteral("https"), &catcher, "open");
    emit sources->linkActivated(QStringLiteral("https://arxiv.org/abs/1910.02054"));
    QDesktopServices::unsetUrlHandler(QStringLiteral("https"));
    QCOMPARE(catcher.opened, QList<QUrl>{QUrl(QStringLiteral("https://arxiv.org/abs/1910.02054"))});
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
    // Every grade is the learner's to pick; the suggested one (Good) is preselected.
    QVERIFY(buttonStartingWith(QStringLiteral("1  Again"))->isEnabled());
    QCOMPARE(good->objectName(), QStringLiteral("primary"));

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

void TestStudyPage::wrongAnswerSuggestsAgainButAnyGradeIsAllowed() {
    QVERIFY(page_->start(QStringLiteral("test-deck"), SessionOptions{}));
    press(Qt::Key_1 + positionOf(2));  // "C" is wrong
    press(Qt::Key_Return);
    QVERIFY(page_->isRevealed());
    QPushButton* again = buttonStartingWith(QStringLiteral("1  Again"));
    QVERIFY(again->isEnabled());
    QCOMPARE(again->objectName(), QStringLiteral("primary"));  // suggested
    QVERIFY(buttonStartingWith(QStringLiteral("2  Hard"))->isEnabled());
    QVERIFY(buttonStartingWith(QStringLiteral("3  Good"))->isEnabled());
    press(Qt::Key_Return);  // Enter accepts the suggestion, Again
    QCOMPARE(store_->lastReview()->grade, Rating::Again);
    QVERIFY(!store_->lastReview()->correct);
    // On the next card a wrong answer graded Hard by the learner is stored as Hard.
    press(Qt::Key_1 + positionOf(2));
    press(Qt::Key_Return);
    press(Qt::Key_2);
    QCOMPARE(store_->reviewCount(), 2);
    QCOMPARE(store_->lastReview()->grade, Rating::Hard);
    QVERIFY(!store_->lastReview()->correct);
}

void TestStudyPage::guessSuggestsHard() {
    QVERIFY(page_->start(QStringLiteral("test-deck"), SessionOptions{}));
    press(Qt::Key_1 + positionOf(0));  // right
    press(Qt::Key_G);                  // but a guess
    press(Qt::Key_Return);
    QCOMPARE(buttonStartingWith(QStringLiteral("2  Hard"))->objectName(),
             QStringLiteral("primary"));
    QVERIFY(anyLabelContains(QStringLiteral("marked this a guess")));
    press(Qt::Key_Return);
    QCOMPARE(store_->lastReview()->grade, Rating::Hard);
    QCOMPARE(store_->lastReview()->confidence, std::optional<int>(kConfidenceGuessing));
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
    QVERIFY(anyLabelContains(QStringLiteral("(2 of 2 chosen)")));
    press(Qt::Key_Return);
    press(Qt::Key_Return);
    QVERIFY(store_->lastReview()->correct);
    QCOMPARE(store_->lastReview()->chosen, (QList<int>{0, 1}));
}

void TestStudyPage::chooseTwoCannotBeCheckedWithOneOrThree() {
    SessionOptions options;
    options.mode = StudyMode::Practice;
    options.filter.difficulty = Difficulty::Expert;  // card-three: choose two
    QVERIFY(page_->start(QStringLiteral("test-deck"), options));
    QPushButton* check = buttonStartingWith(QStringLiteral("Check answer"));
    QVERIFY(check);
    press(Qt::Key_1 + positionOf(0));
    QVERIFY(!check->isEnabled());
    QVERIFY(anyLabelContains(QStringLiteral("(1 of 2 chosen)")));
    press(Qt::Key_Return);  // one box: not checked, and the page says why
    QVERIFY(!page_->isRevealed());
    QVERIFY(anyLabelContains(QStringLiteral("Choose exactly two answers: 1 chosen now")));
    press(Qt::Key_1 + positionOf(2));
    press(Qt::Key_1 + positionOf(3));
    QVERIFY(!check->isEnabled());
    press(Qt::Key_Return);  // three boxes: not checked either
    QVERIFY(!page_->isRevealed());
    QVERIFY(anyLabelContains(QStringLiteral("3 chosen now")));
    press(Qt::Key_1 + positionOf(3));  // back to two
    QVERIFY(check->isEnabled());
    press(Qt::Key_Return);
    QVERIFY(page_->isRevealed());
    QCOMPARE(store_->reviewCount(), 1);  // practice records the answer as it is checked
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
        // The two-answer card takes two boxes: one right ("A"), one wrong ("C").
        if (page_->session()->current()->type == CardType::Multiple)
            press(Qt::Key_1 + positionOf(2));
        press(Qt::Key_Return);
        QVERIFY(!page_->isRevealed());  // straight to the next question
    }
    QVERIFY(page_->isShowingResults());
    QCOMPARE(page_->session()->answered(), 4);
    QCOMPARE(page_->session()->correctAnswers(), 3);  // the two-answer card was wrong
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

void TestStudyPage::escapeAsksBeforeLeavingASession() {
    QSignalSpy closed(page_.get(), &StudyPage::closeRequested);
    QVERIFY(page_->start(QStringLiteral("test-deck"), SessionOptions{}));
    press(Qt::Key_1 + positionOf(0));
    press(Qt::Key_Return);
    press(Qt::Key_Return);
    QCOMPARE(store_->reviewCount(), 1);  // saved as soon as it was graded
    QVERIFY(page_->inProgress());
    // "Keep studying" is the default: the session stays.
    auto stay = pd::test::answerNextMessageBox(QStringLiteral("Keep studying"));
    press(Qt::Key_Escape);
    QVERIFY(stay->opened && stay->clicked);
    QCOMPARE(stay->defaultButton, QStringLiteral("Keep studying"));
    QVERIFY(stay->text.contains(QStringLiteral("1 answer is saved")));
    QCOMPARE(closed.count(), 0);
    QCOMPARE(page_->session()->current()->id, QStringLiteral("card-two"));
    auto leave = pd::test::answerNextMessageBox(QStringLiteral("Leave"));
    press(Qt::Key_Escape);
    QVERIFY(leave->clicked);
    QCOMPARE(closed.count(), 1);
    QCOMPARE(store_->reviewCount(), 1);  // nothing lost
}

void TestStudyPage::escapeInMockExamShowsResultsSoFar() {
    SessionOptions options;
    options.mode = StudyMode::MockExam;
    QVERIFY(page_->start(QStringLiteral("test-deck"), options));
    QSignalSpy closed(page_.get(), &StudyPage::closeRequested);
    // Answer one question right, then Esc: the exam asks, then shows that one's score.
    const Card* card = page_->session()->current();
    for (int i = 0; i < card->options.size(); ++i) {
        if (card->options[i].correct) press(Qt::Key_1 + positionOf(i));
    }
    press(Qt::Key_Return);
    QCOMPARE(store_->reviewCount(), 1);
    auto keep = pd::test::answerNextMessageBox(QStringLiteral("Keep going"));
    press(Qt::Key_Escape);
    QVERIFY(keep->opened && keep->clicked);
    QVERIFY(!page_->isShowingResults());
    auto end = pd::test::answerNextMessageBox(QStringLiteral("End exam"));
    press(Qt::Key_Escape);
    QVERIFY(end->clicked);
    QVERIFY(page_->isShowingResults());
    QCOMPARE(closed.count(), 0);
    QVERIFY(anyLabelContains(QStringLiteral("Mock exam ended early: 1 of 1 answered right")));
    QVERIFY(anyLabelContains(QStringLiteral("3 questions unanswered; they are not scored")));
    QVERIFY(!anyLabelContains(QStringLiteral("Study \u2192 Practice")));
    QCOMPARE(store_->reviewCount(), 1);
}

void TestStudyPage::progressCountsReturningCards() {
    context_->settings.newPerDay = 2;
    QVERIFY(page_->start(QStringLiteral("test-deck"), SessionOptions{}));
    QVERIFY(anyLabelContains(QStringLiteral("0 answered  \u00b7  2 to go")));
    press(Qt::Key_1 + positionOf(2));  // wrong: card-one comes back
    press(Qt::Key_Return);
    press(Qt::Key_Return);
    QVERIFY(anyLabelContains(QStringLiteral("1 answered  \u00b7  1 to go + 1 coming back")));
}

void TestStudyPage::summarySaysAnswersAndCards() {
    context_->settings.newPerDay = 1;
    QVERIFY(page_->start(QStringLiteral("test-deck"), SessionOptions{}));
    press(Qt::Key_1 + positionOf(2));  // wrong
    press(Qt::Key_Return);
    press(Qt::Key_Return);
    now_ = now_.addSecs(60);  // the one-minute step is due
    press(Qt::Key_1 + positionOf(0));
    press(Qt::Key_Return);
    press(Qt::Key_4);  // Easy: graduates, the session ends
    QVERIFY(page_->isShowingResults());
    QVERIFY(anyLabelContains(QStringLiteral("You gave <b>2 answers</b> on <b>1 card</b>")));
}

void TestStudyPage::showMeOnScenarioCards() {
    const QString deck = scenarioDeck();
    QVERIFY(!deck.isEmpty());
    QVERIFY(page_->start(deck, SessionOptions{}));
    QSignalSpy requested(page_.get(), &StudyPage::showMeRequested);
    auto* button = page_->findChild<QPushButton*>(QStringLiteral("showMe"));
    QVERIFY(button);
    for (int i = 0; i < 2; ++i) {
        const QString id = page_->session()->current()->id;
        // Before checking, the run would give the answer away: not offered, M does nothing.
        QVERIFY(!button->isVisible());
        press(Qt::Key_M);
        QCOMPARE(requested.count(), i == 0 ? 0 : 1);
        press(Qt::Key_1 + positionOf(0));
        press(Qt::Key_Return);
        QCOMPARE(button->isVisible(), id == QStringLiteral("has-run"));
        press(Qt::Key_M);
        if (id == QStringLiteral("has-run")) {
            QCOMPARE(requested.count(), 1);
            QCOMPARE(requested.first().at(0).toString(), QStringLiteral("show-deck"));
            QCOMPARE(requested.first().at(1).toString(), QStringLiteral("has-run"));
        }
        press(Qt::Key_Return);
    }
    QCOMPARE(requested.count(), 1);  // the card without a scenario asked for nothing
    for (const ReviewEntry& e : store_->reviews()) QVERIFY(!e.hinted);  // all after checking
}

void TestStudyPage::showMeBeforeCheckingIsAnOptInHint() {
    context_->settings.showMeBeforeCheck = true;
    const QString deck = scenarioDeck();
    QVERIFY(!deck.isEmpty());
    QVERIFY(page_->start(deck, SessionOptions{}));
    QCOMPARE(page_->session()->current()->id, QStringLiteral("has-run"));
    QSignalSpy requested(page_.get(), &StudyPage::showMeRequested);
    auto* button = page_->findChild<QPushButton*>(QStringLiteral("showMe"));
    QVERIFY(button->isVisible());
    QVERIFY(button->text().contains(QStringLiteral("hint")));
    press(Qt::Key_M);
    QCOMPARE(requested.count(), 1);
    QVERIFY(anyLabelContains(QStringLiteral("Hinted")));
    press(Qt::Key_1 + positionOf(0));  // right, but hinted: Hard is suggested and said why
    press(Qt::Key_Return);
    QCOMPARE(buttonStartingWith(QStringLiteral("2  Hard"))->objectName(),
             QStringLiteral("primary"));
    QVERIFY(anyLabelContains(QStringLiteral("recorded as hinted")));
    press(Qt::Key_Return);
    QVERIFY(store_->lastReview()->hinted);
    QCOMPARE(store_->lastReview()->grade, Rating::Hard);
    // The next card (no scenario) is not hinted.
    QCOMPARE(page_->session()->current()->id, QStringLiteral("no-run"));
    press(Qt::Key_1 + positionOf(0));
    press(Qt::Key_Return);
    press(Qt::Key_Return);
    QVERIFY(!store_->lastReview()->hinted);
    QCOMPARE(store_->lastReview()->grade, Rating::Good);
}

void TestStudyPage::keysScrollTheCardAndRevealScrollsToTheAnswer() {
    // A card with long options in a short window: the answers run below the fold.
    const QString longText =
        QStringLiteral("a long option text that wraps over many lines ").repeated(12).trimmed();
    QString card =
        QString::fromUtf8(
            R"json({"id": "long", "prompt": "Which one?", "type": "single", "options": [%1, %2, %3, %4],
        "difficulty": "foundation", "tags": ["concept::data-parallelism"]})json")
            .arg(pd::test::option(longText + QStringLiteral(" 1"), false),
                 pd::test::option(longText + QStringLiteral(" 2"), false),
                 pd::test::option(longText + QStringLiteral(" 3"), false),
                 pd::test::option(longText + QStringLiteral(" 4"), true));
    const auto parsed = parseDeck(pd::test::deckJson({card}, QStringLiteral("long-deck")),
                                  QStringLiteral("long.json"), {true});
    QVERIFY(parsed.deck);
    QVERIFY(library_->importDeck(*parsed.deck, nullptr));
    page_->resize(700, 420);
    SessionOptions options;
    options.shuffleOptions = false;  // the right option is the last one
    QVERIFY(page_->start(QStringLiteral("long-deck"), options));
    QCoreApplication::sendPostedEvents(nullptr, QEvent::LayoutRequest);
    auto* scroll = page_->findChild<QScrollArea*>(QStringLiteral("questionScroll"));
    QVERIFY(scroll);
    QScrollBar* bar = scroll->verticalScrollBar();
    QVERIFY(bar->maximum() > 0);
    QCOMPARE(bar->value(), 0);
    press(Qt::Key_PageDown);
    const int afterPage = bar->value();
    QVERIFY(afterPage > 0);
    press(Qt::Key_Up);
    QVERIFY(bar->value() < afterPage);
    press(Qt::Key_Down);
    QCOMPARE(bar->value(), afterPage);
    press(Qt::Key_PageUp);
    QCOMPARE(bar->value(), 0);
    // The number keys still choose: pick option 1 (wrong) and check.
    press(Qt::Key_1);
    QCOMPARE(page_->selectedOptions(), QList<int>{0});
    press(Qt::Key_Return);
    QVERIFY(page_->isRevealed());
    // The missed right answer (the last option) is scrolled into view.
    QWidget* rightRow = nullptr;
    for (QWidget* w : scroll->widget()->findChildren<QWidget*>(QStringLiteral("optionRow")))
        rightRow = w;  // the rows are created in display order
    QVERIFY(rightRow);
    const QRect inViewport(rightRow->mapTo(scroll->viewport(), QPoint(0, 0)), rightRow->size());
    QVERIFY2(scroll->viewport()->rect().intersects(inViewport),
             qPrintable(QStringLiteral("row at %1..%2, viewport 0..%3")
                            .arg(inViewport.top())
                            .arg(inViewport.bottom())
                            .arg(scroll->viewport()->height())));
    QVERIFY(bar->value() > 0);
}

// Predict, then run: a number typed in the field (the number keys type, they choose no
// option), Enter runs the card's scenario, the verdict compares with the measured figure, and
// the review is recorded as wrong with Again suggested.
void TestStudyPage::numericCardIsGradedByItsRun() {
    const QString deck = numericDeck();
    QVERIFY(!deck.isEmpty());
    SessionOptions options;
    options.filter.tag = QStringLiteral("concept::data-parallelism");
    QVERIFY(page_->start(deck, options));
    while (!page_->session()->current()->isNumeric()) {  // the plain card may come first
        press(Qt::Key_1 + positionOf(0));
        press(Qt::Key_Return);
        press(Qt::Key_Return);
    }
    auto* panel = page_->numericPanel();
    QVERIFY(panel->isVisible());
    auto* showMe = page_->findChild<QPushButton*>(QStringLiteral("showMe"));
    QVERIFY(!showMe->isVisible());  // the run is the answer: not before the prediction
    QLineEdit* input = panel->input();
    QCOMPARE(page_->focusWidget(), input);  // the keys type the number
    QTest::keyClicks(input, QStringLiteral("abc"));
    QTest::keyClick(input, Qt::Key_Return);
    QVERIFY(!page_->isRevealed());
    QVERIFY2(panel->statusText().contains(QStringLiteral("not a number")),
             qPrintable(panel->statusText()));
    input->clear();
    QTest::keyClicks(input, QStringLiteral("1 GiB"));  // far too many gradient bytes
    QTest::keyClick(input, Qt::Key_Return);
    QVERIFY(panel->measuring());
    QTRY_VERIFY_WITH_TIMEOUT(page_->isRevealed(), 60000);
    QVERIFY2(page_->verdictText().contains(QStringLiteral("Not quite")),
             qPrintable(page_->verdictText()));
    QVERIFY(page_->numericResultText().contains(QStringLiteral("Measured on this run")));
    QVERIFY(page_->numericResultText().contains(QStringLiteral("too high")));
    QVERIFY(page_->numericResultText().contains(QStringLiteral("Textbook")));
    QVERIFY(showMe->isVisible());
    QVERIFY(buttonStartingWith(QStringLiteral("1  Again"))->objectName() ==
            QStringLiteral("primary"));
    const int before = store_->reviewCount();
    press(Qt::Key_Return);  // accepts Again
    QCOMPARE(store_->reviewCount(), before + 1);
    const auto last = store_->lastReview();
    QVERIFY(last);
    QCOMPARE(last->card.cardId, QStringLiteral("predict-grads"));
    QVERIFY(!last->correct);
    QCOMPARE(last->grade, Rating::Again);
    QVERIFY(last->chosen.isEmpty());
}

// The value the run measures, typed in another unit, is right; and a mock exam holds only
// the multiple-choice card.
void TestStudyPage::numericCardRightAnswerAndNoExamQuestion() {
    const QString deck = numericDeck();
    QVERIFY(!deck.isEmpty());
    const Card& card = *library_->deck(deck)->card(QStringLiteral("predict-grads"));
    pd::RunConfig config;
    pd::ConfigSources sources;
    pd::apply_scenario_json(card.scenarioJson.toStdString(), "test", config, sources);
    pd::validate(config, sources);
    const auto measured = pd::read_metric(card.numeric->metric.toStdString(),
                                          pd::run_for_evidence(config), card.numeric->device);
    QVERIFY(measured);
    SessionOptions practice;
    practice.mode = StudyMode::Practice;
    practice.filter.tag = QStringLiteral("concept::data-parallelism");
    QVERIFY(page_->start(deck, practice));
    while (!page_->session()->current()->isNumeric()) {
        press(Qt::Key_1 + positionOf(0));
        press(Qt::Key_Return);
        press(Qt::Key_Return);
    }
    QTest::keyClicks(page_->numericPanel()->input(),
                     QStringLiteral("%1 bytes").arg(static_cast<qint64>(*measured)));
    QTest::keyClick(page_->numericPanel()->input(), Qt::Key_Return);
    QTRY_VERIFY_WITH_TIMEOUT(page_->isRevealed(), 60000);
    QVERIFY2(page_->verdictText().contains(QStringLiteral("Right")),
             qPrintable(page_->verdictText()));
    QVERIFY(page_->numericResultText().contains(QStringLiteral("within the tolerance")));
    press(Qt::Key_Return);  // next
    const auto last = store_->lastReview();
    QVERIFY(last && last->correct);

    SessionOptions exam;
    exam.mode = StudyMode::MockExam;
    QVERIFY(page_->start(deck, exam));
    QCOMPARE(page_->session()->total(), 1);
    QVERIFY(!page_->session()->current()->isNumeric());
}

namespace {

// WCAG's contrast ratio of two colours (1 to 21).
double contrastRatio(const QColor& a, const QColor& b) {
    auto luminance = [](const QColor& c) {
        auto channel = [](double v) {
            return v <= 0.03928 ? v / 12.92 : std::pow((v + 0.055) / 1.055, 2.4);
        };
        return 0.2126 * channel(c.redF()) + 0.7152 * channel(c.greenF()) +
               0.0722 * channel(c.blueF());
    };
    const double la = luminance(a), lb = luminance(b);
    return (std::max(la, lb) + 0.05) / (std::min(la, lb) + 0.05);
}

// Back to the palette and style sheet the other tests run with.
void restoreDefaultTheme(const QPalette& palette) {
    qApp->setStyleSheet(QString());
    QApplication::setPalette(palette);
}

}  // namespace

// Issue 40: the verdict banner kept the light theme's colours when the theme was switched
// while it was shown.
void TestStudyPage::verdictBannerFollowsTheTheme() {
    const QPalette saved = QApplication::palette();
    pd::ui::applyTheme(*qApp, QStringLiteral("light"));
    QVERIFY(page_->start(QStringLiteral("test-deck"), SessionOptions{}));
    press(Qt::Key_1 + positionOf(0));  // right
    press(Qt::Key_Return);
    auto* banner = page_->findChild<QFrame*>(QStringLiteral("verdictBanner"));
    QVERIFY(banner && banner->isVisible());
    // Inside the 2 px border, left of the label's 16 px margin: the banner's own fill.
    auto fill = [banner] {
        const QImage image = banner->grab().toImage();
        return image.pixelColor(8, image.height() / 2);
    };
    QVERIFY2(fill().lightness() > 200, qPrintable(fill().name()));
    pd::ui::applyTheme(*qApp, QStringLiteral("dark"));
    const QColor dark = fill();
    const QColor expected = pd::ui::themeColors().rightBackground;
    restoreDefaultTheme(saved);
    QVERIFY2(dark.lightness() < 100, qPrintable(dark.name()));
    QCOMPARE(dark.name(), expected.name());
}

// Issue 40: in the dark theme the option rows' radio circles were faint (Fusion draws their
// outline darker than the window, on a dark surface): the outline must stand out from what
// is around it (WCAG's 3:1 for parts of controls).
void TestStudyPage::darkThemeRadioCirclesStandOut() {
    const QPalette saved = QApplication::palette();
    pd::ui::applyTheme(*qApp, QStringLiteral("dark"));
    QVERIFY(page_->start(QStringLiteral("test-deck"), SessionOptions{}));
    QRadioButton* radio = nullptr;
    for (QRadioButton* r : page_->findChildren<QRadioButton*>())
        if (r->isVisible() && !r->isChecked()) radio = r;
    QVERIFY(radio);
    const QImage image = radio->grab().toImage();
    QStyleOptionButton option;
    option.initFrom(radio);
    const QRect indicator =
        radio->style()->subElementRect(QStyle::SE_RadioButtonIndicator, &option, radio);
    // The background is what lies just outside the circle; the outline, the pixel of the
    // circle's box that differs most from it.
    const QColor background = image.pixelColor(indicator.topLeft());
    double best = 1;
    for (int y = indicator.top(); y <= indicator.bottom(); ++y)
        for (int x = indicator.left(); x <= indicator.right(); ++x)
            best = std::max(best, contrastRatio(image.pixelColor(x, y), background));
    restoreDefaultTheme(saved);
    QVERIFY2(best >= 3.0, qPrintable(QStringLiteral("outline contrast %1:1 against %2")
                                         .arg(best, 0, 'f', 2)
                                         .arg(background.name())));
}

QTEST_MAIN(TestStudyPage)
#include "test_study_page.moc"
