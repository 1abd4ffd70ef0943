// Study sessions: the review queue and daily limits, grading multiple-choice answers through
// FSRS, learning steps in a session, undo, practice and mock exams; intervals and statistics.
#include <QSqlDatabase>
#include <QSqlError>
#include <QSqlQuery>
#include <QTemporaryDir>
#include <QtTest>

#include "app/study_test_support.h"
#include "study/statistics.h"
#include "study/study_session.h"

using namespace pd::study;

class TestStudySession : public QObject {
    Q_OBJECT
  private slots:
    void init();
    void reviewQueueRespectsNewLimit();
    void gradesFollowTheAnswer();
    void learningCardComesBackInSession();
    void dueCardsComeFirstNextDay();
    void undoRestoresCardAndSchedule();
    void practiceLeavesSchedulesUntouched();
    void mockExamInterleavesAndScores();
    void mockExamTimeUp();
    void mockExamLeftEarlyScoresWhatWasAnswered();
    void returningCardsAndDistinctCardsAreCounted();
    void guessesAndHintsSuggestHard();
    void settingsRoundTrip();
    void settingsSaveIsAllOrNothing();
    void formatInterval_data();
    void formatInterval();
    void statistics();
    void streak_data();
    void streak();
    void calibrationAndHintedAnswers();
    void countAxisHasRoundTicks_data();
    void countAxisHasRoundTicks();

  private:
    std::unique_ptr<QTemporaryDir> dir_;
    std::unique_ptr<ReviewStore> store_;
    Deck deck_;
    StudySettings settings_;
};

namespace {
const QList<int> kRight = {0};  // option "A" of a single card
const QList<int> kWrong = {1};
}  // namespace

void TestStudySession::init() {
    dir_ = std::make_unique<QTemporaryDir>();
    store_ = std::make_unique<ReviewStore>();
    QVERIFY(store_->open(dir_->filePath(QStringLiteral("s.sqlite")), nullptr));
    deck_ = pd::test::smallDeck();
    settings_ = StudySettings{};
    settings_.fuzz = false;
}

void TestStudySession::reviewQueueRespectsNewLimit() {
    settings_.newPerDay = 3;
    SessionOptions options;
    options.shuffleOptions = false;
    StudySession session(deck_, *store_, settings_, options, pd::test::startTime());
    QCOMPARE(session.remaining(), 3);
    QCOMPARE(session.current()->id, QStringLiteral("card-one"));  // new cards in deck order
    QCOMPARE(session.optionOrder(), (QList<int>{0, 1, 2}));
    QCOMPARE(countDeck(deck_, *store_, pd::test::startTime()).newCards, 4);
}

void TestStudySession::gradesFollowTheAnswer() {
    SessionOptions options;
    options.seed = 7;
    const QDateTime now = pd::test::startTime();
    StudySession session(deck_, *store_, settings_, options, now);
    // Right with no grade picked: Good. Right with Easy: Easy. Wrong with no grade: Again.
    // Wrong with Hard picked: Hard (the learner's own grade wins, as in Anki).
    QVERIFY(session.answer(kRight, std::nullopt, 3, 1500, now));
    QVERIFY(session.answer(kRight, Rating::Easy, std::nullopt, 800, now));
    QVERIFY(session.answer({0}, std::nullopt, 1, 2000, now));  // card-three needs {0, 1}
    QVERIFY(session.answer(kWrong, Rating::Hard, std::nullopt, 900, now));  // card-four
    const QList<ReviewEntry> log = store_->reviews();
    QCOMPARE(log.size(), 4);
    QCOMPARE(log[0].grade, Rating::Good);
    QCOMPARE(log[0].confidence, std::optional<int>(3));
    QCOMPARE(log[1].grade, Rating::Easy);
    QCOMPARE(log[2].grade, Rating::Again);
    QVERIFY(!log[2].correct);
    QCOMPARE(log[3].grade, Rating::Hard);
    QVERIFY(!log[3].correct);
    // The stored schedules are FSRS's: Good on a new card is the 10-minute step, Easy graduates
    // with w3 = 8.2956 days of stability (8 days), Again is the 1-minute step.
    const auto good = store_->schedule({deck_.id, QStringLiteral("card-one")});
    QCOMPARE(good->fsrs.state, CardState::Learning);
    QCOMPARE(toDateTime(good->fsrs.due), now.addSecs(600));
    const auto easy = store_->schedule({deck_.id, QStringLiteral("card-two")});
    QCOMPARE(easy->fsrs.state, CardState::Review);
    QCOMPARE(toDateTime(easy->fsrs.due), now.addDays(8));
    const auto again = store_->schedule({deck_.id, QStringLiteral("card-three")});
    QCOMPARE(toDateTime(again->fsrs.due), now.addSecs(60));
    QCOMPARE(again->reps, 1);
}

void TestStudySession::learningCardComesBackInSession() {
    settings_.newPerDay = 1;
    const QDateTime now = pd::test::startTime();
    StudySession session(deck_, *store_, settings_, {}, now);
    QCOMPARE(session.current()->id, QStringLiteral("card-one"));
    // The grade buttons' preview: Again 1 minute, Hard 5.5, Good 10, Easy 8 days.
    const auto due = session.previewDue(now);
    QCOMPARE(now.secsTo(due[0]), 60);
    QCOMPARE(now.secsTo(due[1]), 330);
    QCOMPARE(now.secsTo(due[2]), 600);
    QCOMPARE(now.daysTo(due[3]), 8);
    QVERIFY(session.answer(kWrong, std::nullopt, std::nullopt, 100, now));
    // Nothing else is left, and the card is due again within the learn-ahead window.
    QVERIFY(!session.finished());
    QCOMPARE(session.current()->id, QStringLiteral("card-one"));
    QVERIFY(session.answer(kRight, std::nullopt, std::nullopt, 100, now.addSecs(60)));
    QVERIFY(session.answer(kRight, std::nullopt, std::nullopt, 100, now.addSecs(660)));
    QVERIFY(session.finished());  // graduated: due in days
    QCOMPARE(store_->schedule({deck_.id, QStringLiteral("card-one")})->fsrs.state,
             CardState::Review);
    QCOMPARE(session.answered(), 3);
    QCOMPARE(session.correctAnswers(), 2);
}

void TestStudySession::dueCardsComeFirstNextDay() {
    const QDateTime now = pd::test::startTime();
    {
        StudySession session(deck_, *store_, settings_, {}, now);
        QVERIFY(session.answer(kRight, Rating::Easy, std::nullopt, 100, now));  // card-one: 8 days
    }
    const QDateTime later = now.addDays(9);
    const DeckCounts counts = countDeck(deck_, *store_, later);
    QCOMPARE(counts.due, 1);
    QCOMPARE(counts.learned, 1);
    QCOMPARE(counts.newCards, 3);
    StudySession session(deck_, *store_, settings_, {}, later);
    QCOMPARE(session.current()->id, QStringLiteral("card-one"));
    QCOMPARE(session.remaining(), 4);
}

void TestStudySession::undoRestoresCardAndSchedule() {
    const QDateTime now = pd::test::startTime();
    StudySession session(deck_, *store_, settings_, {}, now);
    QVERIFY(!session.canUndo());
    QVERIFY(session.answer(kRight, std::nullopt, std::nullopt, 100, now));
    QCOMPARE(session.current()->id, QStringLiteral("card-two"));
    QVERIFY(session.canUndo());
    QVERIFY(session.undo());
    QCOMPARE(session.current()->id, QStringLiteral("card-one"));
    QCOMPARE(session.answered(), 0);
    QCOMPARE(store_->reviewCount(), 0);
    QVERIFY(!store_->schedule({deck_.id, QStringLiteral("card-one")}));
    QCOMPARE(session.remaining(), 4);  // card-two is back in the queue, not lost
    QVERIFY(!session.undo());
}

void TestStudySession::practiceLeavesSchedulesUntouched() {
    SessionOptions options;
    options.mode = StudyMode::Practice;
    options.filter.tag = QStringLiteral("concept::pipeline-parallelism");
    options.seed = 3;
    StudySession session(deck_, *store_, settings_, options, pd::test::startTime());
    QCOMPARE(session.total(), 2);
    while (!session.finished())
        QVERIFY(session.answer(kRight, std::nullopt, std::nullopt, 10, pd::test::startTime()));
    QCOMPARE(store_->reviewCount(), 2);
    QVERIFY(store_->schedules(deck_.id).isEmpty());

    options.filter = {};
    options.filter.difficulty = Difficulty::Expert;
    StudySession experts(deck_, *store_, settings_, options, pd::test::startTime());
    QCOMPARE(experts.total(), 1);
    QCOMPARE(experts.current()->id, QStringLiteral("card-three"));
}

void TestStudySession::mockExamInterleavesAndScores() {
    SessionOptions options;
    options.mode = StudyMode::MockExam;
    options.seed = 11;
    StudySession session(deck_, *store_, settings_, options, pd::test::startTime());
    QCOMPARE(session.total(), 4);
    // Concepts alternate: two per concept, interleaved round-robin.
    QStringList concepts;
    while (!session.finished()) {
        const Card* card = session.current();
        concepts.append(card->concepts().first());
        const bool answerRight = card->concepts().first() == QStringLiteral("data-parallelism");
        const QList<int> chosen = card->type == CardType::Multiple ? QList<int>{0, 1} : kRight;
        QVERIFY(session.answer(answerRight ? chosen : kWrong, std::nullopt, std::nullopt, 10,
                               pd::test::startTime()));
    }
    QVERIFY(concepts[0] != concepts[1]);
    QVERIFY(concepts[2] != concepts[3]);
    const QList<ConceptScore> scores = session.conceptScores();
    QCOMPARE(scores.size(), 2);
    QCOMPARE(scores[0].name, QStringLiteral("data-parallelism"));
    QCOMPARE(scores[0].correct, 2);
    QCOMPARE(scores[0].total, 2);
    QCOMPARE(scores[1].name, QStringLiteral("pipeline-parallelism"));
    QCOMPARE(scores[1].correct, 0);
    QVERIFY(store_->schedules(deck_.id).isEmpty());
}

void TestStudySession::mockExamTimeUp() {
    SessionOptions options;
    options.mode = StudyMode::MockExam;
    options.examQuestions = 3;
    StudySession session(deck_, *store_, settings_, options, pd::test::startTime());
    QCOMPARE(session.total(), 3);
    QVERIFY(session.answer(kRight, std::nullopt, std::nullopt, 10, pd::test::startTime()));
    session.finishNow();
    QVERIFY(session.finished());
    QCOMPARE(session.unanswered(), 2);
    int total = 0;
    for (const ConceptScore& s : session.conceptScores()) total += s.total;
    QCOMPARE(total, 3);
}

void TestStudySession::mockExamLeftEarlyScoresWhatWasAnswered() {
    SessionOptions options;
    options.mode = StudyMode::MockExam;
    options.examQuestions = 3;
    StudySession session(deck_, *store_, settings_, options, pd::test::startTime());
    const Card* first = session.current();
    const QList<int> right = first->type == CardType::Multiple ? QList<int>{0, 1} : kRight;
    QVERIFY(session.answer(right, std::nullopt, std::nullopt, 10, pd::test::startTime()));
    session.finishNow(StudySession::Unanswered::LeaveOut);
    QVERIFY(session.finished());
    QVERIFY(session.endedEarly());
    QCOMPARE(session.unanswered(), 2);
    // Only the answered question is scored; the answer is in the log.
    int total = 0;
    int correct = 0;
    for (const ConceptScore& s : session.conceptScores()) {
        total += s.total;
        correct += s.correct;
    }
    QCOMPARE(total, 1);
    QCOMPARE(correct, 1);
    QCOMPARE(store_->reviewCount(), 1);
}

void TestStudySession::returningCardsAndDistinctCardsAreCounted() {
    settings_.newPerDay = 2;
    const QDateTime now = pd::test::startTime();
    StudySession session(deck_, *store_, settings_, {}, now);
    QCOMPARE(session.remaining(), 2);
    QCOMPARE(session.returning(), 0);
    QVERIFY(session.answer(kWrong, std::nullopt, std::nullopt, 100, now));  // card-one: 1 min
    // card-two is next; card-one comes back, so it is still to do, but as a return.
    QCOMPARE(session.current()->id, QStringLiteral("card-two"));
    QCOMPARE(session.remaining(), 2);
    QCOMPARE(session.returning(), 1);
    QVERIFY(session.answer(kRight, Rating::Easy, std::nullopt, 100, now));  // card-two graduates
    QCOMPARE(session.current()->id, QStringLiteral("card-one"));
    QCOMPARE(session.remaining(), 1);
    QCOMPARE(session.returning(), 1);  // the card shown now is a return
    QVERIFY(session.answer(kRight, Rating::Easy, std::nullopt, 100, now.addSecs(60)));
    QVERIFY(session.finished());
    QCOMPARE(session.answered(), 3);
    QCOMPARE(session.distinctAnswered(), 2);
    // Undo of a card's second answer keeps it counted; undo of its first answer does not.
    QVERIFY(session.undo());
    QCOMPARE(session.distinctAnswered(), 2);
    QVERIFY(session.undo());
    QCOMPARE(session.distinctAnswered(), 1);
}

void TestStudySession::guessesAndHintsSuggestHard() {
    QCOMPARE(suggestedGrade(false, kConfidenceSure, false), Rating::Again);
    QCOMPARE(suggestedGrade(true, std::nullopt, false), Rating::Good);
    QCOMPARE(suggestedGrade(true, kConfidenceSure, false), Rating::Good);
    QCOMPARE(suggestedGrade(true, kConfidenceGuessing, false), Rating::Hard);
    QCOMPARE(suggestedGrade(true, kConfidenceSure, true), Rating::Hard);
    QCOMPARE(suggestedGrade(false, std::nullopt, true), Rating::Again);

    const QDateTime now = pd::test::startTime();
    StudySession session(deck_, *store_, settings_, {}, now);
    // A right guess with no grade picked is recorded as Hard.
    QVERIFY(session.answer(kRight, std::nullopt, kConfidenceGuessing, 100, now));
    QCOMPARE(store_->lastReview()->grade, Rating::Hard);
    QVERIFY(!store_->lastReview()->hinted);
    // Show me before checking marks only the current card as hinted.
    QVERIFY(!session.currentHinted());
    session.markCurrentHinted();
    QVERIFY(session.currentHinted());
    QCOMPARE(session.suggestedGradeFor(kRight, std::nullopt), Rating::Hard);
    QVERIFY(session.answer(kRight, std::nullopt, std::nullopt, 100, now));
    QCOMPARE(store_->lastReview()->grade, Rating::Hard);
    QVERIFY(store_->lastReview()->hinted);
    QVERIFY(!session.currentHinted());
}

void TestStudySession::settingsRoundTrip() {
    StudySettings s;
    s.showMeBeforeCheck = true;
    s.desiredRetention = 0.85;
    s.newPerDay = 7;
    s.reviewsPerDay = 70;
    s.fuzz = false;
    s.theme = QStringLiteral("dark");
    QVERIFY(s.save(*store_));
    QCOMPARE(StudySettings::load(*store_), s);
    QCOMPARE(s.fsrsParams().desiredRetention, 0.85);
    QVERIFY(!s.fsrsParams().enableFuzzing);
}

// A save that fails part-way (here: the database refuses the theme row, through a trigger a
// second connection adds) leaves every setting as it was: the settings are one transaction,
// never half the old save and half the new. Nine separate transactions left the rows before
// the failing one new and the rest old (a kill -9 during a save did the same).
void TestStudySession::settingsSaveIsAllOrNothing() {
    StudySettings before;
    before.desiredRetention = 0.85;
    before.newPerDay = 7;
    QVERIFY(before.save(*store_));
    StudySettings after;
    after.desiredRetention = 0.95;
    after.newPerDay = 30;
    after.reviewsPerDay = 300;
    after.fuzz = false;
    after.showMeBeforeCheck = true;
    after.theme = QStringLiteral("dark");
    after.ankiScheduling = false;
    after.nextDayStartsAt = 6;
    after.weights = kFsrsDefaultWeights;
    {
        QSqlDatabase db =
            QSqlDatabase::addDatabase(QStringLiteral("QSQLITE"), QStringLiteral("inject"));
        db.setDatabaseName(store_->path());
        QVERIFY(db.open());
        QSqlQuery q(db);
        QVERIFY2(q.exec(QStringLiteral(
                     "CREATE TRIGGER refuse_theme BEFORE INSERT ON settings "
                     "WHEN NEW.key = 'theme' BEGIN SELECT RAISE(ABORT, 'injected'); END")),
                 qPrintable(q.lastError().text()));
        db.close();
    }
    QSqlDatabase::removeDatabase(QStringLiteral("inject"));
    QVERIFY(!after.save(*store_));
    QCOMPARE(StudySettings::load(*store_), before);
    QCOMPARE(store_->setting(QStringLiteral("desired_retention")), QStringLiteral("0.85"));
    QCOMPARE(store_->setting(QStringLiteral("new_per_day")), QStringLiteral("7"));
    QCOMPARE(store_->setting(QStringLiteral("fsrs_weights")), QString());
    // Without the fault the same save writes every row.
    {
        QSqlDatabase db =
            QSqlDatabase::addDatabase(QStringLiteral("QSQLITE"), QStringLiteral("inject"));
        db.setDatabaseName(store_->path());
        QVERIFY(db.open());
        QSqlQuery q(db);
        QVERIFY(q.exec(QStringLiteral("DROP TRIGGER refuse_theme")));
        db.close();
    }
    QSqlDatabase::removeDatabase(QStringLiteral("inject"));
    QVERIFY(after.save(*store_));
    QCOMPARE(StudySettings::load(*store_), after);
}

void TestStudySession::formatInterval_data() {
    QTest::addColumn<qint64>("seconds");
    QTest::addColumn<QString>("text");
    QTest::newRow("now") << qint64(0) << QStringLiteral("<1m");
    QTest::newRow("1 minute") << qint64(60) << QStringLiteral("1m");
    QTest::newRow("5.5 minutes") << qint64(330) << QStringLiteral("6m");
    QTest::newRow("10 minutes") << qint64(600) << QStringLiteral("10m");
    QTest::newRow("3 hours") << qint64(3 * 3600) << QStringLiteral("3h");
    QTest::newRow("2 days") << qint64(2 * 86400) << QStringLiteral("2d");
    QTest::newRow("46 days") << qint64(46 * 86400) << QStringLiteral("1.5mo");
    QTest::newRow("498 days") << qint64(498 * 86400) << QStringLiteral("1.4y");
}

void TestStudySession::formatInterval() {
    QFETCH(qint64, seconds);
    QFETCH(QString, text);
    QCOMPARE(pd::study::formatInterval(seconds), text);
}

void TestStudySession::statistics() {
    const QDateTime now = pd::test::startTime();  // noon: nothing here crosses midnight
    {
        StudySession session(deck_, *store_, settings_, {}, now.addDays(-10));
        QVERIFY(
            session.answer(kRight, Rating::Easy, std::nullopt, 10, now.addDays(-10)));  // 8 days
    }
    {
        StudySession session(deck_, *store_, settings_, {}, now);
        QCOMPARE(session.current()->id, QStringLiteral("card-one"));           // overdue
        QVERIFY(session.answer(kWrong, std::nullopt, std::nullopt, 10, now));  // a lapse
    }
    const StudyStatistics s = computeStatistics({deck_}, *store_, 0.9, now);
    QCOMPARE(s.totalReviews, 2);
    QCOMPARE(s.reviewsPerDay.size(), 30);
    QCOMPARE(s.reviewsPerDay.last(), 1);
    QCOMPARE(s.reviewsPerDay[19], 1);
    QCOMPARE(s.retentionReviews, 1);  // only the review of a graduated card counts
    QCOMPARE(s.trueRetention, 0.0);
    QCOMPARE(s.dueForecast.size(), 30);
    QCOMPARE(s.dueForecast[0], 1);  // relearning in 10 minutes
    QCOMPARE(s.streak, 1);
    QCOMPARE(s.mastery.size(), 2);
    QCOMPARE(s.mastery[0].name, QStringLiteral("data-parallelism"));
    QCOMPARE(s.mastery[0].cards, 2);
    QCOMPARE(s.mastery[0].learned, 1);
    QVERIFY(s.mastery[0].mastery > 0.0 && s.mastery[0].mastery <= 0.5);
    QCOMPARE(s.mastery[1].mastery, 0.0);
}

void TestStudySession::streak_data() {
    QTest::addColumn<QList<int>>("daysAgo");
    QTest::addColumn<int>("streak");
    QTest::newRow("none") << QList<int>{} << 0;
    QTest::newRow("today only") << QList<int>{0} << 1;
    QTest::newRow("yesterday counts until today ends") << QList<int>{1, 2} << 2;
    QTest::newRow("gap breaks it") << QList<int>{0, 1, 3, 4} << 2;
    QTest::newRow("two days ago is over") << QList<int>{2, 3} << 0;
}

void TestStudySession::streak() {
    QFETCH(QList<int>, daysAgo);
    QFETCH(int, streak);
    const QDate today(2024, 3, 1);
    QMap<QDate, int> counts;
    for (int d : daysAgo) counts[today.addDays(-d)] = 3;
    QCOMPARE(studyStreak(counts, today), streak);
}

void TestStudySession::calibrationAndHintedAnswers() {
    const QDateTime now = pd::test::startTime();
    SessionOptions options;
    options.mode = StudyMode::Practice;
    options.shuffleOptions = false;
    StudySession session(deck_, *store_, settings_, options, now);
    // Two guesses (one right), one "sure" right, one without confidence; one hinted.
    const auto rightFor = [&session] {
        return session.current()->type == CardType::Multiple ? QList<int>{0, 1} : kRight;
    };
    QVERIFY(session.answer(rightFor(), std::nullopt, kConfidenceGuessing, 10, now));
    QVERIFY(session.answer(kWrong, std::nullopt, kConfidenceGuessing, 10, now));
    session.markCurrentHinted();
    QVERIFY(session.answer(rightFor(), std::nullopt, kConfidenceSure, 10, now));
    QVERIFY(session.answer(rightFor(), std::nullopt, std::nullopt, 10, now));
    const StudyStatistics s = computeStatistics({deck_}, *store_, 0.9, now);
    QCOMPARE(s.calibration[0].answers, 2);
    QCOMPARE(s.calibration[0].correct, 1);
    QCOMPARE(s.calibration[1].answers, 0);
    QCOMPARE(s.calibration[2].answers, 1);
    QCOMPARE(s.calibration[2].correct, 1);
    QCOMPARE(s.hintedAnswers, 1);
}

void TestStudySession::countAxisHasRoundTicks_data() {
    QTest::addColumn<int>("maxValue");
    QTest::addColumn<int>("top");
    QTest::addColumn<int>("step");
    QTest::newRow("nothing") << 0 << 1 << 1;
    QTest::newRow("3") << 3 << 3 << 1;
    QTest::newRow("7") << 7 << 8 << 2;
    QTest::newRow("20") << 20 << 20 << 5;
    QTest::newRow("145 (the walk's 0/29/58/...)") << 145 << 150 << 50;
    QTest::newRow("1234") << 1234 << 1500 << 500;
}

void TestStudySession::countAxisHasRoundTicks() {
    QFETCH(int, maxValue);
    QFETCH(int, top);
    QFETCH(int, step);
    const CountAxis axis = countAxis(maxValue);
    QCOMPARE(axis.top, top);
    QCOMPARE(axis.step, step);
    QVERIFY(axis.tickCount() <= 6);
    QCOMPARE(axis.top % axis.step, 0);
}

QTEST_GUILESS_MAIN(TestStudySession)
#include "test_study_session.moc"
