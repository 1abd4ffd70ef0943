// The review log as CSV in the layout of the FSRS ecosystem's tools (fsrs-optimizer's
// revlog.csv): card_id, review_time (ms since the epoch, UTC; on import, a file whose times
// are all below 10^11 is read as seconds, as some exporters write them: 10^11 ms is 1973,
// 10^11 s the year 5138; a file mixing the two is refused at the first line that differs),
// review_rating (1 Again .. 4 Easy), review_state (the card's state before the review: 0 new, 1
// learning, 2 review, 3 relearning), review_duration (ms). Two more columns, deck_id and card_key,
// name the card for ParallelDeck; card_id is a stable 62-bit number of (deck_id, card_key), so a
// file without them still imports for the cards the library holds. Only reviews that scheduled a
// card (review mode) are exported: practice and mock-exam answers change no schedule.
#pragma once

#include <QByteArray>
#include <QString>
#include <QStringList>

namespace pd::study {

class DeckLibrary;
class ReviewStore;
struct StudySettings;

// The number card_id holds for a card: FNV-1a of "deck_id\ncard_key", top bits cleared.
qint64 revlogCardNumber(const QString& deckId, const QString& cardId);

QByteArray exportRevlogCsv(const ReviewStore& store);

struct RevlogImport {
    int added = 0;       // log rows added
    int duplicates = 0;  // rows the log already had (same card and time)
    int cards = 0;       // cards whose schedule was rebuilt from their whole log
    QStringList errors;  // "line N: message"; nothing is written when there are any
};
// Adds the file's reviews to the log (one transaction) and rebuilds each touched card's
// schedule by replaying its review-mode log, oldest first, with `settings`' scheduler (fuzz
// seeded by the card, so the same log gives the same schedule). `origin` names the file.
RevlogImport importRevlogCsv(const QByteArray& csv, const QString& origin, ReviewStore& store,
                             const DeckLibrary& library, const StudySettings& settings);

}  // namespace pd::study
