// The child of test_crash_safety: writes through the app's own ReviewStore (SQLite, WAL) or
// DeckLibrary in a loop, and reports each write on stdout only after the call returned, i.e.
// after its transaction committed or its file was renamed into place, until it is killed.
//   crash_safety_child review DB       one review after another       -> "R <id>"
//   crash_safety_child undo DB         reviews, every third undone     -> "R <id>", "U <id>"
//   crash_safety_child import DIR      a CSV import into the same deck -> "I <cards>"
#include <QCoreApplication>
#include <QDateTime>
#include <QStringList>
#include <cstdio>

#include "study/card_import.h"
#include "study/deck_library.h"
#include "study/review_store.h"

using namespace pd::study;

namespace {

int fail(const QString& what) {
    std::fprintf(stderr, "crash_safety_child: %s\n", qPrintable(what));
    return 1;
}

void report(const char* kind, qint64 value) {
    std::printf("%s %lld\n", kind, static_cast<long long>(value));
    std::fflush(stdout);
}

int reviews(const QString& path, bool undo) {
    ReviewStore store;
    QString error;
    if (!store.open(path, &error)) return fail(error);
    for (qint64 i = 0;; ++i) {
        ReviewEntry e;
        e.card = {QStringLiteral("crash-deck"), QStringLiteral("card-%1").arg(i % 7)};
        e.reviewedAt = QDateTime::currentDateTimeUtc();
        e.grade = Rating::Good;
        e.chosen = {0};
        e.correct = true;
        e.mode = StudyMode::Review;
        e.before = store.schedule(e.card);
        CardSchedule after;
        after.reps = e.before ? e.before->reps + 1 : 1;
        after.fsrs = makeNewFsrsCard(FsrsClock::now());
        after.fsrs.stability = static_cast<double>(i) + 0.5;  // tells every review apart
        e.after = after;
        const qint64 id = store.recordReview(e, &error);
        if (id == 0) return fail(error);
        report("R", id);
        if (undo && i % 3 == 2) {
            const auto undone = store.undoLastReview(&error);
            if (!undone) return fail(error);
            report("U", undone->id);
        }
    }
}

// A tab-separated file of `cards` cards, all valid by the deck rules.
QByteArray csv(int cards) {
    const QString expl =
        QStringLiteral("This explanation says exactly why and runs past forty characters.");
    QStringList lines{QStringLiteral("#separator:tab"),
                      QStringLiteral("#columns:id\tprompt\tcorrect\toption1\texplanation1\toption2"
                                     "\texplanation2\toption3\texplanation3\ttags")};
    for (int c = 0; c < cards; ++c)
        lines << QStringList{QStringLiteral("crash-card-%1").arg(c),
                             QStringLiteral("Crash-safety question number %1?").arg(c),
                             QStringLiteral("1"),
                             QStringLiteral("A"),
                             expl,
                             QStringLiteral("B"),
                             expl,
                             QStringLiteral("C"),
                             expl,
                             QStringLiteral("concept::gradient-sync")}
                     .join(QLatin1Char('\t'));
    return lines.join(QLatin1Char('\n')).toUtf8() + '\n';
}

int imports(const QString& dir) {
    DeckLibrary library;
    const QStringList problems = library.loadUserDecks(dir);
    if (!problems.isEmpty()) return fail(problems.join(QLatin1Char('\n')));
    // Two versions of the same deck, alternately: the file on disk must always be one of them.
    const QByteArray versions[] = {csv(40), csv(400)};
    for (int i = 0;; ++i) {
        ImportResult r = importDelimited(versions[i % 2], QStringLiteral("crash.tsv"));
        if (!r.deck) return fail(r.errorText());
        QString error;
        if (!library.importDeck(*r.deck, &error)) return fail(error);
        report("I", r.deck->cards.size());
    }
}

}  // namespace

int main(int argc, char** argv) {
    QCoreApplication app(argc, argv);
    const QStringList args = app.arguments();
    if (args.size() != 3) return fail(QStringLiteral("usage: review|undo DB, or import DIR"));
    if (args[1] == QLatin1String("review")) return reviews(args[2], false);
    if (args[1] == QLatin1String("undo")) return reviews(args[2], true);
    if (args[1] == QLatin1String("import")) return imports(args[2]);
    return fail(QStringLiteral("unknown mode ") + args[1]);
}
