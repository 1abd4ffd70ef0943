// The decks that ship with the app, and the history of bundled decks that were split: the
// one bank of cards is published as decks by audience, cards shared by id where they serve
// both, so a learner picks the exam deck or the ML-systems deck.
#pragma once

#include <QString>
#include <QStringList>

namespace pd::study {

class DeckLibrary;
class ReviewStore;

// File names under the bundled decks' folder (":/decks" in the app), in the order the home
// page lists them.
const QStringList& bundledDeckFiles();

// Loads every bundled deck from `folder`. Returns one message per deck that failed.
QStringList addBundledDecks(DeckLibrary& library, const QString& folder);

// A bundled deck that was split into the current ones (its cards kept their ids).
struct RetiredDeck {
    QString id;
    QStringList into;  // the decks that took its cards, the first taking each card's log
};
const QList<RetiredDeck>& retiredBundledDecks();

// Carries each retired deck's review history over to the loaded decks that now hold its
// cards (ReviewStore::moveHistory): a card keeps its schedule in every deck holding it and its
// log in the first. A no-op once done. Returns the error text, or empty.
QString carryOverRetiredHistory(ReviewStore& store, const DeckLibrary& library);

}  // namespace pd::study
