#include "revlog_csv.h"

#include <QHash>
#include <QList>
#include <QSet>
#include <algorithm>
#include <chrono>

#include "deck_library.h"
#include "review_store.h"
#include "study_session.h"

namespace pd::study {

namespace {

const QStringList kColumns = {QStringLiteral("card_id"),         QStringLiteral("review_time"),
                              QStringLiteral("review_rating"),   QStringLiteral("review_state"),
                              QStringLiteral("review_duration"), QStringLiteral("deck_id"),
                              QStringLiteral("card_key")};
constexpr int kRequired = 5;  // fsrs-optimizer's columns; deck_id and card_key are ours

// How a card's card_id is made (revlogCardNumber), in the words of the import's errors.
const QString kCardIdRule = QStringLiteral(
    "the card's 64-bit FNV-1a hash of the UTF-8 text deck_id, a line feed, card_key (e.g. "
    "\"ml-systems-parallelism\\ncp-ring-attention\"), shifted right by 2 bits");

// The review times an import accepts: from 1973-03-03T09:46:40Z (10^11 ms: a smaller
// review_time is read as seconds, so an earlier time could not come back from an export as
// itself) to 2099-12-31. The schedule rebuilt from a review falls due up to FSRS's maximum
// interval (36,500 days, about 100 years) after it, and the scheduler's clock counts
// nanoseconds in 64 bits, which ends on 2262-04-11: a review in 2300 overflowed it and stored
// a schedule due in 1715.
// review_time below this is seconds: 1e11 ms is 1973-03-03T09:46:40Z, 1e11 s is in 5138.
constexpr qint64 kSecondsBelow = 100000000000;
constexpr qint64 kEarliestReviewMs = kSecondsBelow;
constexpr qint64 kLatestReviewMs = 4102444800000 - 1;  // 2099-12-31T23:59:59.999Z
constexpr qint64 kDayMs = 24LL * 3600 * 1000;
static_assert(
    kLatestReviewMs + 36500 * kDayMs <
        std::chrono::duration_cast<std::chrono::milliseconds>(FsrsClock::duration::max()).count(),
    "a review at the end of the range, plus the longest interval (fuzz included), "
    "must fit the scheduler's clock");

QString reviewTimeOutOfRange(qint64 ms) {
    const QDateTime when = QDateTime::fromMSecsSinceEpoch(ms, Qt::UTC);
    return QStringLiteral(
               "review_time %1%2 is outside the times this import accepts: from "
               "1973-03-03T09:46:40Z to 2099-12-31T23:59:59Z (%3 to %4 ms since the epoch; "
               "below 10^11 a time is read as seconds), so that the schedule's due dates, up "
               "to 100 years after a review, fit the scheduler's clock")
        .arg(ms)
        .arg(when.isValid() ? QStringLiteral(" (%1)").arg(when.toString(Qt::ISODate)) : QString())
        .arg(kEarliestReviewMs)
        .arg(kLatestReviewMs);
}

int stateNumber(const ReviewEntry& e) {
    return e.before ? static_cast<int>(e.before->fsrs.state) : 0;  // 0: new
}

bool isCardKey(const QString& s) {
    return isKebabId(s);
}

}  // namespace

qint64 revlogCardNumber(const QString& deckId, const QString& cardId) {
    quint64 h = 14695981039346656037ULL;  // FNV-1a, 64 bits
    for (const char c : (deckId + QLatin1Char('\n') + cardId).toUtf8()) {
        h ^= static_cast<unsigned char>(c);
        h *= 1099511628211ULL;
    }
    return static_cast<qint64>(h >> 2);  // 62 bits: positive in every int64 column
}

QByteArray exportRevlogCsv(const ReviewStore& store) {
    QByteArray out = kColumns.join(QLatin1Char(',')).toUtf8() + '\n';
    QList<ReviewEntry> log = store.reviews();
    std::stable_sort(log.begin(), log.end(), [](const ReviewEntry& a, const ReviewEntry& b) {
        return a.reviewedAt < b.reviewedAt;  // the optimizer's order, whatever the log's
    });
    for (const ReviewEntry& e : log) {
        if (e.mode != StudyMode::Review) continue;
        out += QStringLiteral("%1,%2,%3,%4,%5,%6,%7\n")
                   .arg(revlogCardNumber(e.card.deckId, e.card.cardId))
                   .arg(e.reviewedAt.toMSecsSinceEpoch())
                   .arg(static_cast<int>(e.grade))
                   .arg(stateNumber(e))
                   .arg(e.durationMs)
                   .arg(e.card.deckId, e.card.cardId)
                   .toUtf8();
    }
    return out;
}

RevlogImport importRevlogCsv(const QByteArray& csv, const QString& origin, ReviewStore& store,
                             const DeckLibrary& library, const StudySettings& settings) {
    RevlogImport result;
    auto fail = [&](int line, const QString& message) {
        result.errors.append(QStringLiteral("%1: line %2: %3").arg(origin).arg(line).arg(message));
    };
    // card_id numbers of the library's cards, for files without deck_id and card_key.
    QHash<qint64, CardKey> known;
    for (const Deck& deck : library.decks())
        for (const Card& card : deck.cards)
            known.insert(revlogCardNumber(deck.id, card.id), CardKey{deck.id, card.id});

    const QList<QByteArray> lines = csv.split('\n');
    if (lines.isEmpty() || lines.front().trimmed().isEmpty()) {
        fail(1, QStringLiteral("empty file: expected a header starting with %1")
                    .arg(kColumns.mid(0, kRequired).join(QLatin1Char(','))));
        return result;
    }
    QStringList header;
    for (const QByteArray& h : lines.front().trimmed().split(','))
        header.append(QString::fromUtf8(h.trimmed()));
    QList<int> column;
    for (const QString& name : kColumns) column.append(static_cast<int>(header.indexOf(name)));
    for (int i = 0; i < kRequired; ++i)
        if (column[i] < 0) fail(1, QStringLiteral("missing column '%1'").arg(kColumns[i]));
    if (!result.errors.isEmpty()) return result;

    QHash<CardKey, QList<ReviewEntry>> incoming;
    bool explainedUnknown = false;
    int timeUnitLine = 0;  // the first line with a time, whose unit the file keeps
    bool timeInSeconds = false;
    for (int n = 1; n < lines.size(); ++n) {
        const QByteArray line = lines[n].trimmed();
        if (line.isEmpty()) continue;
        const QList<QByteArray> f = line.split(',');
        if (f.size() != header.size()) {
            fail(n + 1,
                 QStringLiteral("%1 fields, the header has %2").arg(f.size()).arg(header.size()));
            continue;
        }
        auto field = [&](int c) { return QString::fromUtf8(f[column[c]].trimmed()); };
        bool ok[5];
        const qint64 number = field(0).toLongLong(&ok[0]);
        const qint64 rawTime = field(1).toLongLong(&ok[1]);
        const int rating = field(2).toInt(&ok[2]);
        const int state = field(3).toInt(&ok[3]);
        const qint64 duration = field(4).toLongLong(&ok[4]);
        for (int i = 0; i < 5; ++i)
            if (!ok[i]) fail(n + 1, QStringLiteral("%1 is not a whole number").arg(kColumns[i]));
        if (!ok[0] || !ok[1] || !ok[2] || !ok[3] || !ok[4]) continue;
        if (rating < 1 || rating > 4) {
            fail(n + 1, QStringLiteral("review_rating %1 is not 1 to 4").arg(rating));
            continue;
        }
        if (state < 0 || state > 3) {
            fail(n + 1, QStringLiteral("review_state %1 is not 0 to 3").arg(state));
            continue;
        }
        // Seconds or milliseconds, by magnitude: below kSecondsBelow a time is seconds (as
        // milliseconds it would fall before 1973-03-04, when no review log was kept; as
        // seconds it reaches past 5000 AD). One file gives every time in one unit.
        const bool seconds = rawTime >= 1 && rawTime < kSecondsBelow;
        if (rawTime >= 1) {
            if (!timeUnitLine) {
                timeUnitLine = n + 1;
                timeInSeconds = seconds;
            } else if (seconds != timeInSeconds) {
                fail(n + 1,
                     QStringLiteral("review_time %1 reads as %2 (%3 below %4) where line "
                                    "%5's reads as %6; a file gives every review_time "
                                    "in one unit")
                         .arg(rawTime)
                         .arg(seconds ? QStringLiteral("seconds") : QStringLiteral("milliseconds"))
                         .arg(seconds ? QStringLiteral("is") : QStringLiteral("is not"))
                         .arg(kSecondsBelow)
                         .arg(timeUnitLine)
                         .arg(timeInSeconds ? QStringLiteral("seconds")
                                            : QStringLiteral("milliseconds")));
                continue;
            }
        }
        const qint64 ms = seconds ? rawTime * 1000 : rawTime;
        if (ms < kEarliestReviewMs || ms > kLatestReviewMs) {
            fail(n + 1,
                 seconds
                     ? QStringLiteral("review_time %1 read as seconds (below %2) is "
                                      "%3, outside 1973-03-03T09:46:40Z to 2099-12-31")
                           .arg(rawTime)
                           .arg(kSecondsBelow)
                           .arg(QDateTime::fromMSecsSinceEpoch(ms, Qt::UTC).toString(Qt::ISODate))
                     : reviewTimeOutOfRange(ms));
            continue;
        }
        if (duration < 0) {
            fail(n + 1, QStringLiteral("review_duration %1 is negative").arg(duration));
            continue;
        }
        CardKey key;
        if (column[5] >= 0 && column[6] >= 0) {
            key = {field(5), field(6)};
            if (!isCardKey(key.deckId) || !isCardKey(key.cardId)) {
                fail(n + 1, QStringLiteral("deck_id and card_key must be kebab-case ids"));
                continue;
            }
            if (const qint64 expected = revlogCardNumber(key.deckId, key.cardId);
                expected != number) {
                fail(n + 1, QStringLiteral("card_id %1 is not the number of %2/%3, which is %4 "
                                           "(card_id is %5)")
                                .arg(number)
                                .arg(key.deckId, key.cardId)
                                .arg(expected)
                                .arg(kCardIdRule));
                continue;
            }
        } else if (known.contains(number)) {
            key = known.value(number);
        } else {
            // The rule once, in full; the rows after it refer to it.
            fail(n + 1,
                 explainedUnknown
                     ? QStringLiteral("card_id %1 is no card of the library either").arg(number)
                     : QStringLiteral("card_id %1 is no card of the library. Without "
                                      "deck_id and card_key columns, a row names its "
                                      "card by card_id alone, and card_id must be %2, "
                                      "as ParallelDeck's Export Review History writes "
                                      "it; add deck_id and card_key columns to name "
                                      "cards directly")
                           .arg(number)
                           .arg(kCardIdRule));
            explainedUnknown = true;
            continue;
        }
        const Deck* deck = library.deck(key.deckId);
        if (!deck || !deck->card(key.cardId)) {
            fail(n + 1, QStringLiteral("no deck holds card %1/%2").arg(key.deckId, key.cardId));
            continue;
        }
        ReviewEntry e;
        e.card = key;
        e.reviewedAt = QDateTime::fromMSecsSinceEpoch(ms, Qt::UTC);
        e.grade = static_cast<Rating>(rating);
        e.correct = rating > 1;
        e.durationMs = duration;
        e.mode = StudyMode::Review;
        incoming[key].append(e);
    }
    if (!result.errors.isEmpty()) return result;

    // Per card: its log with the new reviews, oldest first, replayed for the schedule.
    QList<ReviewEntry> added;
    QList<std::pair<CardKey, CardSchedule>> schedules;
    for (auto it = incoming.begin(); it != incoming.end(); ++it) {
        QList<ReviewEntry> log;
        QSet<qint64> times;
        for (const ReviewEntry& e : store.cardReviews(it.key()))
            if (e.mode == StudyMode::Review) {
                log.append(e);
                times.insert(e.reviewedAt.toMSecsSinceEpoch());
            }
        QList<ReviewEntry> fresh;
        for (const ReviewEntry& e : it.value()) {
            if (times.contains(e.reviewedAt.toMSecsSinceEpoch())) {
                ++result.duplicates;
                continue;
            }
            times.insert(e.reviewedAt.toMSecsSinceEpoch());
            fresh.append(e);
        }
        if (fresh.isEmpty()) continue;
        log += fresh;
        std::stable_sort(log.begin(), log.end(), [](const ReviewEntry& a, const ReviewEntry& b) {
            return a.reviewedAt < b.reviewedAt;
        });
        FsrsScheduler scheduler(settings.fsrsParams(), static_cast<std::uint64_t>(revlogCardNumber(
                                                           it.key().deckId, it.key().cardId)));
        scheduler.setDayCounter(settings.dayCounter());
        std::optional<CardSchedule> schedule;
        for (ReviewEntry& e : log) {
            CardSchedule next = schedule.value_or(CardSchedule{});
            if (!schedule) next.fsrs = makeNewFsrsCard(toTimePoint(e.reviewedAt));
            const bool lapse = schedule && schedule->fsrs.state == CardState::Review;
            next.fsrs = scheduler.review(next.fsrs, e.grade, toTimePoint(e.reviewedAt));
            next.reps += 1;
            if (e.grade == Rating::Again && lapse) next.lapses += 1;  // as StudySession counts
            e.before = schedule;
            e.after = next;
            schedule = next;
        }
        for (const ReviewEntry& e : log)
            if (e.id == 0) added.append(e);  // the new ones, with their replayed schedules
        schedules.append({it.key(), *schedule});
    }
    std::stable_sort(added.begin(), added.end(), [](const ReviewEntry& a, const ReviewEntry& b) {
        return a.reviewedAt < b.reviewedAt;
    });
    QString error;
    if (!store.addReviews(added, schedules, &error)) {
        result.errors.append(QStringLiteral("%1: %2").arg(origin, error));
        return result;
    }
    result.added = static_cast<int>(added.size());
    result.cards = static_cast<int>(schedules.size());
    return result;
}

}  // namespace pd::study
