// Study settings, deck counts and one study session (review, practice or mock exam): which card
// comes next, how an answer is graded, and undo. No widgets; the study page drives this.
#pragma once

#include <QDateTime>
#include <QList>
#include <QSet>
#include <QString>
#include <QStringList>
#include <QTimeZone>
#include <array>
#include <optional>

#include "deck.h"
#include "fsrs.h"
#include "review_store.h"

namespace pd::study {

struct StudySettings {
    double desiredRetention = 0.9;
    int newPerDay = 20;
    int reviewsPerDay = 200;
    bool fuzz = true;
    // Show me before checking, as a hint (the review is then recorded as hinted).
    bool showMeBeforeCheck = false;
    QString theme = QStringLiteral("system");  // "light", "dark" or "system"
    // Anki's scheduling rules (the default): a day starts at `nextDayStartsAt` o'clock local
    // time, elapsed days count day rollovers, and review intervals keep good >= hard + 1 and
    // easy >= good + 1. Off: py-fsrs's whole 24-hour periods, midnight days and its order.
    bool ankiScheduling = true;
    int nextDayStartsAt = 4;  // hour, 0 to 23
    // Weights fitted to this learner's history (Optimize); empty: FSRS-6's defaults.
    std::optional<FsrsWeights> weights;

    static StudySettings load(const ReviewStore& store);
    // Sets *error (when given) on failure: a locked database is named as such.
    bool save(ReviewStore& store, QString* error = nullptr) const;
    FsrsParams fsrsParams() const;
    // How the scheduler numbers days in `zone` (empty: py-fsrs's 24-hour periods).
    FsrsDayCounter dayCounter(const QTimeZone& zone = QTimeZone::systemTimeZone()) const;
    // When the study day holding `now` began (Anki: the last `nextDayStartsAt` o'clock;
    // otherwise local midnight), for the daily limits.
    QDateTime startOfStudyDay(const QDateTime& now,
                              const QTimeZone& zone = QTimeZone::systemTimeZone()) const;
    bool operator==(const StudySettings&) const = default;
};

// Weights as the settings keep them: 21 numbers, space-separated (empty: the defaults).
QString weightsText(const std::optional<FsrsWeights>& weights);

// Anki's day number of a time point: its local date in `zone`, less one before `startHour`
// o'clock (wall-clock time, so a DST change moves no boundary).
FsrsDayCounter ankiDayCounter(int startHour, const QTimeZone& zone);

// A short, human interval for grade buttons: "1m", "10m", "3h", "2d", "1.5mo", "2.1y".
QString formatInterval(qint64 seconds);

struct DeckCounts {
    int due = 0;       // scheduled cards due now (including learning steps that are due)
    int newCards = 0;  // never reviewed
    int learned = 0;   // reviewed at least once
};
DeckCounts countDeck(const Deck& deck, const ReviewStore& store, const QDateTime& now);

// Which cards a practice session or mock exam draws from; empty means any.
struct CardFilter {
    QString tag;
    std::optional<Difficulty> difficulty;
    bool matches(const Card& card) const;
};

struct SessionOptions {
    StudyMode mode = StudyMode::Review;
    CardFilter filter;       // every mode: review keeps the due and new cards that match
    int examQuestions = 20;  // mock exam: at most this many questions
    quint64 seed = 0;        // shuffling of cards and options (0: from the clock)
    bool shuffleOptions = true;
};

// The grade offered first after checking: Again when wrong; Hard when right but guessed or
// helped by Show me before checking; Good otherwise. The learner may pick any other grade.
Rating suggestedGrade(bool correct, std::optional<int> confidence, bool hinted);

// Confidence levels stored with an answer (ReviewEntry::confidence).
constexpr int kConfidenceGuessing = 1;
constexpr int kConfidenceUnsure = 2;
constexpr int kConfidenceSure = 3;

struct ConceptScore {
    QString name;
    int correct = 0;
    int total = 0;
};

// A question a session scored wrong: the card, the options the learner chose (indices in the
// card; empty when the clock ran out before an answer) and whether it was answered at all.
struct MissedQuestion {
    const Card* card = nullptr;
    QList<int> chosen;
    bool answered = true;
};

class StudySession {
  public:
    StudySession(const Deck& deck, ReviewStore& store, const StudySettings& settings,
                 SessionOptions options, const QDateTime& now);

    StudyMode mode() const { return options_.mode; }
    const CardFilter& filter() const { return options_.filter; }
    const Deck& deck() const { return *deck_; }
    bool finished() const { return current_ < 0; }
    const Card* current() const;
    // Display position -> option index in the card (the options may be shuffled). A card keeps
    // the order it was first shown in for the whole session: undo and a card coming back show
    // its options where the learner saw them.
    const QList<int>& optionOrder() const { return optionOrder_; }
    int answered() const { return answered_; }
    int correctAnswers() const { return correctAnswers_; }
    // Cards still to show, the current one included: those not yet answered in this session
    // plus those answered wrong or still learning that come back (returning()).
    int remaining() const;
    int returning() const;
    int total() const { return answered_ + remaining(); }
    // Distinct cards answered at least once (answered() counts every answer).
    int distinctAnswered() const { return static_cast<int>(seen_.size()); }

    // The due time each grade would give the current card (review mode).
    std::array<QDateTime, 4> previewDue(const QDateTime& now) const;

    // After an answer is recorded: move on to the next card now, or keep the answered card
    // current (its reveal on screen) until next(). Practice saves an answer when it is checked,
    // so leaving before "Next card" loses nothing.
    enum class Then { Advance, Stay };

    // Records the learner's answer to the current card (option indices in the card) and moves
    // on (or stays, `then`). Review mode stores the new schedule for `chosenGrade`, the
    // learner's own grade, or, without one, suggestedGrade().
    bool answer(const QList<int>& chosen, std::optional<Rating> chosenGrade,
                std::optional<int> confidence, qint64 durationMs, const QDateTime& now,
                QString* error = nullptr, Then then = Then::Advance);

    // A numeric card's answer, graded against its run's measured figure (correct or not).
    bool answerNumeric(bool correct, std::optional<Rating> chosenGrade,
                       std::optional<int> confidence, qint64 durationMs, const QDateTime& now,
                       QString* error = nullptr, Then then = Then::Advance);

    // The current card's answer is recorded (Then::Stay) and the session waits for next().
    bool currentAnswered() const { return stayed_; }
    // Moves on from a card answered with Then::Stay (nothing otherwise).
    void next(const QDateTime& now);

    // Show me ran on the current card before it was checked: its answer is recorded as hinted.
    void markCurrentHinted() { currentHinted_ = current_ >= 0; }
    bool currentHinted() const { return currentHinted_; }
    // The grade the current card would get for `chosen` with no grade picked.
    Rating suggestedGradeFor(const QList<int>& chosen, std::optional<int> confidence) const;
    Rating suggestedGradeForNumeric(bool correct, std::optional<int> confidence) const;

    bool canUndo() const { return !history_.isEmpty(); }
    // Undoes this session's last answer in the store and shows that card again.
    bool undo(QString* error = nullptr);

    // Mock exam: ends the exam now. When time runs out unanswered questions count as wrong;
    // when the learner leaves early they are left out of the scores (endedEarly()).
    enum class Unanswered { CountAsWrong, LeaveOut };
    void finishNow(Unanswered unanswered = Unanswered::CountAsWrong);
    bool endedEarly() const { return endedEarly_; }
    QList<ConceptScore> conceptScores() const;
    int unanswered() const { return unanswered_; }
    // The questions scored wrong, in the order they were asked: each wrong answer still in the
    // log (undo takes one back), then the questions the clock left unanswered (counted wrong).
    QList<MissedQuestion> missedQuestions() const;

  private:
    bool record(const Card& card, bool correct, const QList<int>& chosen,
                std::optional<Rating> chosenGrade, std::optional<int> confidence, qint64 durationMs,
                const QDateTime& now, QString* error, Then then);
    void advance(const QDateTime& now);
    void show(int cardIndex);

    struct Done {
        int cardIndex;
        qint64 logId;
        bool correct;
        bool requeued;
        bool firstAnswer;   // the card's first answer in this session
        QList<int> chosen;  // option indices in the card, sorted
    };

    const Deck* deck_;
    ReviewStore* store_;
    StudySettings settings_;
    SessionOptions options_;
    FsrsScheduler scheduler_;
    QList<int> queue_;     // card indices still to show
    QList<int> learning_;  // review mode: cards in a learning step, shown again when due
    int current_ = -1;
    QList<int> optionOrder_;
    QHash<int, QList<int>> optionOrders_;  // card index -> the order it was first shown in
    bool stayed_ = false;                  // the current card is answered (Then::Stay)
    QList<Done> history_;
    QHash<QString, QPair<int, int>> scores_;  // concept -> (correct, total)
    int answered_ = 0;
    int correctAnswers_ = 0;
    int unanswered_ = 0;
    QList<int> timedOut_;  // finishNow(CountAsWrong): the cards left unanswered
    bool endedEarly_ = false;
    bool currentHinted_ = false;
    QSet<int> seen_;  // card indices answered at least once
    quint64 rngState_;
};

}  // namespace pd::study
