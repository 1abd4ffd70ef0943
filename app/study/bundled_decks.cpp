#include "bundled_decks.h"

#include <QDir>

#include "deck_library.h"
#include "review_store.h"

namespace pd::study {

const QStringList& bundledDeckFiles() {
    static const QStringList files = {QStringLiteral("ml-systems-parallelism.json"),
                                      QStringLiteral("cloud-ml-engineer.json")};
    return files;
}

QStringList addBundledDecks(DeckLibrary& library, const QString& folder) {
    QStringList problems;
    for (const QString& file : bundledDeckFiles()) {
        const QString problem = library.addBundled(QDir(folder).filePath(file));
        if (!problem.isEmpty()) problems.append(problem);
    }
    return problems;
}

const QList<RetiredDeck>& retiredBundledDecks() {
    // Until 0.x the bank was one deck; its cards live on, by id, in the two audience decks.
    static const QList<RetiredDeck> retired = {
        {QStringLiteral("distributed-training"),
         {QStringLiteral("ml-systems-parallelism"), QStringLiteral("cloud-ml-engineer")}}};
    return retired;
}

QString carryOverRetiredHistory(ReviewStore& store, const DeckLibrary& library) {
    for (const RetiredDeck& retired : retiredBundledDecks()) {
        // An imported deck may carry the old id (an export of it, re-imported): its history
        // is its own.
        if (library.deck(retired.id) ||
            (store.deckReviewCount(retired.id) == 0 && store.schedules(retired.id).isEmpty()))
            continue;
        QList<ReviewStore::DeckCards> targets;
        for (const QString& id : retired.into) {
            const Deck* deck = library.deck(id);
            if (!deck || !library.isBundled(id)) continue;
            ReviewStore::DeckCards target{id, {}};
            for (const Card& card : deck->cards) target.cardIds.append(card.id);
            targets.append(target);
        }
        QString error;
        if (!targets.isEmpty() && !store.moveHistory(retired.id, targets, &error))
            return QStringLiteral("could not carry over the review history of '%1': %2")
                .arg(retired.id, error);
    }
    return {};
}

}  // namespace pd::study
