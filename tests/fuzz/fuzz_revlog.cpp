// libFuzzer target: a review history (fsrs-optimizer's revlog.csv) through the import, with
// the schedule rebuild it does for every touched card, into a review store (SQLite in memory)
// whose library holds the test deck (test-deck: card-one .. card-four). A refused file writes
// nothing; an accepted one stores every row and one schedule per card, due no earlier than the
// card's last review (a row of 2300 once overflowed the clock and stored one due in 1715);
// its export imports again as duplicates only. The store is emptied after each input.
#include <QByteArray>
#include <QCoreApplication>
#include <QString>
#include <QTemporaryDir>
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <limits>

#include "../app/study_test_support.h"
#include "study/deck_library.h"
#include "study/review_store.h"
#include "study/revlog_csv.h"
#include "study/study_session.h"

namespace {

using namespace pd::study;

struct Harness {
    QTemporaryDir dir;
    DeckLibrary library;
    ReviewStore store;
    StudySettings settings;  // the defaults: fuzz on, Anki's days
};

Harness* harness = nullptr;

[[noreturn]] void fatal(const QString& why) {
    std::fprintf(stderr, "fuzz_revlog: %s\n", qPrintable(why));
    std::abort();
}

}  // namespace

extern "C" int LLVMFuzzerInitialize(int* argc, char*** argv) {
    // QSqlDatabase loads its driver as a plugin, which wants an application object.
    new QCoreApplication(*argc, *argv);
    harness = new Harness;
    harness->library.loadUserDecks(harness->dir.filePath(QStringLiteral("decks")));
    QString error;
    if (!harness->library.importDeck(pd::test::smallDeck(), &error)) fatal(error);
    if (!harness->store.open(QStringLiteral(":memory:"), &error)) fatal(error);
    return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    const QByteArray bytes(reinterpret_cast<const char*>(data), static_cast<qsizetype>(size));
    Harness& h = *harness;
    const RevlogImport r =
        importRevlogCsv(bytes, QStringLiteral("fuzz.csv"), h.store, h.library, h.settings);
    if (!r.errors.isEmpty()) {
        if (h.store.reviewCount() != 0) __builtin_trap();  // refused, yet something written
        return 0;
    }
    if (h.store.reviewCount() != r.added) __builtin_trap();
    const Deck* deck = h.library.deck(QStringLiteral("test-deck"));
    const QHash<QString, CardSchedule> schedules = h.store.schedules(deck->id);
    if (schedules.size() != r.cards) __builtin_trap();  // a schedule did not read back
    for (auto it = schedules.begin(); it != schedules.end(); ++it) {
        // The replay ends at the card's latest review, and the card falls due after it.
        const FsrsCard& card = it.value().fsrs;
        qint64 latest = std::numeric_limits<qint64>::min();
        for (const ReviewEntry& e : h.store.cardReviews({deck->id, it.key()}))
            latest = std::max(latest, e.reviewedAt.toMSecsSinceEpoch());
        if (!card.lastReview || toDateTime(*card.lastReview).toMSecsSinceEpoch() != latest)
            __builtin_trap();
        if (card.due < *card.lastReview) __builtin_trap();
    }
    if (r.added > 0) {
        const RevlogImport again = importRevlogCsv(
            exportRevlogCsv(h.store), QStringLiteral("again.csv"), h.store, h.library, h.settings);
        if (!again.errors.isEmpty() || again.added != 0 || again.duplicates != r.added)
            __builtin_trap();
    }
    if (!h.store.resetDeck(deck->id)) __builtin_trap();
    return 0;
}
