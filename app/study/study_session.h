// Study settings, deck counts and one study session (review, practice or mock exam): which card
// comes next, how an answer is graded, and undo. No widgets; the study page drives this.
#pragma once

#include <QDateTime>
#include <QList>
#include <QString>
#include <QStringList>
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
    QString theme = QStringLiteral("system");  // "light", "dark" or "system"

    static StudySettings load(const ReviewStore& store);
    bool save(ReviewStore& store) const;
    FsrsParams fsrsParams() const;
    bool operator==(const StudySettings&) const = default;
};

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
    CardFilter filter;       // practice and mock exam
    int examQuestions = 20;  // mock exam: at most this many questions
    quint64 seed = 0;        // shuffling of cards and options (0: from the clock)
    bool shuffleOptions = true;
};

struct ConceptScore {
    QString name;
    int correct = 0;
    int total = 0;
};

class StudySession {
  public:
    StudySession(const Deck& deck, ReviewStore& store, const StudySettings& settings,
                 SessionOptions options, const QDateTime& now);

    StudyMode mode() const { return options_.mode; }
    const Deck& deck() const { return *deck_; }
    bool finished() const { return current_ < 0; }
    const Card* current() const;
    // Display position -> option index in the card (the options may be shuffled).
    const QList<int>& optionOrder() const { return optionOrder_; }
    int answered() const { return answered_; }
    int correctAnswers() const { return correctAnswers_; }
    // Cards still to show, the current one included.
    int remaining() const;
    int total() const { return answered_ + remaining(); }

    // The due time each grade would give the current card (review mode).
    std::array<QDateTime, 4> previewDue(const QDateTime& now) const;

    // Records the learner's answer to the current card (option indices in the card) and moves
    // on. Review mode stores the new schedule for `grade` (which must be the grade
    // gradeMultipleChoice allows: Again when wrong, Hard/Good/Easy when right).
    bool answer(const QList<int>& chosen, std::optional<Rating> chosenGrade,
                std::optional<int> confidence, qint64 durationMs, const QDateTime& now,
                QString* error = nullptr);

    bool canUndo() const { return !history_.isEmpty(); }
    // Undoes this session's last answer in the store and shows that card again.
    bool undo(QString* error = nullptr);

    // Mock exam: ends the exam now; unanswered questions count as wrong.
    void finishNow();
    QList<ConceptScore> conceptScores() const;
    int unanswered() const { return unanswered_; }

  private:
    void advance(const QDateTime& now);
    void show(int cardIndex);

    struct Done {
        int cardIndex;
        qint64 logId;
        bool correct;
        bool requeued;
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
    QList<Done> history_;
    QHash<QString, QPair<int, int>> scores_;  // concept -> (correct, total)
    int answered_ = 0;
    int correctAnswers_ = 0;
    int unanswered_ = 0;
    quint64 rngState_;
};

}  // namespace pd::study
