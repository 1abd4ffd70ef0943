// The review store: cards' scheduling state, an append-only review log and settings in one
// SQLite database through Qt SQL (QSQLITE). WAL journal, every write in a transaction, and a
// schema version (PRAGMA user_version) with step-by-step migrations.
#pragma once

#include <QDateTime>
#include <QHash>
#include <QList>
#include <QString>
#include <optional>

#include "fsrs.h"

namespace pd::study {

// Where reviews happened: only Review changes a card's schedule; practice and mock-exam answers
// are logged for statistics but leave schedules untouched.
enum class StudyMode { Review, Practice, MockExam };
QString studyModeName(StudyMode mode);  // "review", "practice", "mock-exam"

struct CardKey {
    QString deckId;
    QString cardId;
    bool operator==(const CardKey&) const = default;
};
inline size_t qHash(const CardKey& key, size_t seed = 0) {
    return ::qHash(key.deckId, seed) ^ ::qHash(key.cardId, seed + 1);
}

struct CardSchedule {
    FsrsCard fsrs;
    int reps = 0;
    int lapses = 0;
    bool operator==(const CardSchedule&) const = default;
};

struct ReviewEntry {
    qint64 id = 0;
    CardKey card;
    QDateTime reviewedAt;  // UTC
    Rating grade = Rating::Good;
    QList<int> chosen;  // option indices as in the deck file
    bool correct = false;
    std::optional<int> confidence;  // 1 guess, 2 unsure, 3 sure
    qint64 durationMs = 0;
    StudyMode mode = StudyMode::Review;
    bool hinted = false;  // Show me ran before the answer was checked
    // Review mode only: the schedule before (empty for a new card) and after this review.
    std::optional<CardSchedule> before;
    std::optional<CardSchedule> after;
};

// A schedule as the store keeps it in a row (compact JSON), and back. A row that does not parse
// into a usable FSRS state (damaged, hand-edited) reads as absent: the card starts over as new.
QString scheduleToJson(const std::optional<CardSchedule>& schedule);
std::optional<CardSchedule> scheduleFromJson(const QString& text);

class ReviewStore {
  public:
    static constexpr int kSchemaVersion = 3;
    // PRAGMA application_id of ParallelDeck's databases ("PDck"), set on creation.
    static constexpr int kApplicationId = 0x5044636B;

    ReviewStore() = default;
    ~ReviewStore();
    ReviewStore(const ReviewStore&) = delete;
    ReviewStore& operator=(const ReviewStore&) = delete;

    // Opens (creating if needed) the database at `path` and migrates it to kSchemaVersion.
    // Returns false and sets *error on failure. Before anything is written, an existing file
    // is read (read-only) and must be ParallelDeck's: its application_id, or, for databases
    // that predate it, exactly the tables of one of ParallelDeck's schema versions (it then
    // gets the application_id). Any other file (an Anki collection, another program's SQLite
    // database, not SQLite at all) and a database of a newer ParallelDeck are refused by name
    // and left byte-identical. A database another process holds locked is named as such.
    bool open(const QString& path, QString* error);
    bool isOpen() const { return !connection_.isEmpty(); }
    QString path() const { return path_; }
    // The default location: <AppDataLocation>/paralleldeck.sqlite.
    static QString defaultPath();

    int schemaVersion() const;
    int applicationId() const;
    // "PATH is locked by another process ..." for SQLite's busy and locked errors, else
    // `message`: how the store names a failed write.
    static QString describeFailure(const QString& path, const QString& message);
    QString journalMode() const;

    std::optional<CardSchedule> schedule(const CardKey& key) const;
    QHash<QString, CardSchedule> schedules(const QString& deckId) const;  // by card id

    // Appends `entry` to the log and, in review mode, stores entry.after as the card's schedule,
    // both in one transaction. Returns the new log id, or 0 on failure.
    qint64 recordReview(const ReviewEntry& entry, QString* error = nullptr);
    // Removes the most recent log entry and restores the schedule it replaced (one transaction).
    // The log is otherwise never modified (moveHistory only relabels its deck). Returns the
    // undone entry.
    std::optional<ReviewEntry> undoLastReview(QString* error = nullptr);
    std::optional<ReviewEntry> lastReview() const;

    // Log entries with reviewedAt in [from, to), oldest first (all when both are invalid).
    QList<ReviewEntry> reviews(const QDateTime& from = {}, const QDateTime& to = {}) const;
    int reviewCount() const;
    // One card's log entries, oldest first (its history for the card dialog).
    QList<ReviewEntry> cardReviews(const CardKey& key) const;
    // How many log entries a deck has (what removing its history would remove).
    int deckReviewCount(const QString& deckId) const;

    QString setting(const QString& key, const QString& fallback = {}) const;
    bool setSetting(const QString& key, const QString& value);
    // Stores every (key, value) in one transaction: all of them or, on failure (false with
    // *error), none, so settings saved together are never read back half old, half new.
    bool setSettings(const QList<std::pair<QString, QString>>& values, QString* error = nullptr);

    // Appends `entries` to the log and stores `schedules`, all in one transaction (a review
    // history import). Returns false with *error, writing nothing, on failure.
    bool addReviews(const QList<ReviewEntry>& entries,
                    const QList<std::pair<CardKey, CardSchedule>>& schedules,
                    QString* error = nullptr);

    // Removes every schedule and log entry of a deck (e.g. when re-importing it).
    bool resetDeck(const QString& deckId);

    // A deck split into others: each card's schedule under `fromDeck` is copied to every
    // target deck that holds the card (a schedule it already has there is kept), its review
    // log moves to the first such target, and the old rows go; a card no target holds keeps
    // its rows under `fromDeck`. One transaction: all of it or nothing. Returns how many card ids
    // the targets took over.
    struct DeckCards {
        QString deckId;
        QStringList cardIds;
    };
    std::optional<int> moveHistory(const QString& fromDeck, const QList<DeckCards>& targets,
                                   QString* error = nullptr);

  private:
    bool migrate(QString* error);

    QString connection_;
    QString path_;
};

QDateTime toDateTime(FsrsTimePoint t);
FsrsTimePoint toTimePoint(const QDateTime& t);

}  // namespace pd::study
