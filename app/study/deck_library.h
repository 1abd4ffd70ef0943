// The decks the app offers: the bundled ones (read-only) and those the learner imported, which
// are kept as deck JSON files in a user folder.
#pragma once

#include <QList>
#include <QString>
#include <QStringList>

#include "deck.h"

namespace pd::study {

class DeckLibrary {
  public:
    // Loads a bundled deck (a file or a Qt resource path). Returns the error text, or empty.
    QString addBundled(const QString& path);
    // Loads every *.json deck in `dir` (the import folder) and remembers the folder for
    // importDeck. Returns one message per deck that could not be loaded.
    QStringList loadUserDecks(const QString& dir);
    // Saves `deck` as <userDir>/<id>.json and adds (or replaces) it. A bundled deck's id is
    // refused. Returns false with *error on failure.
    bool importDeck(const Deck& deck, QString* error);

    const QList<Deck>& decks() const { return decks_; }
    const Deck* deck(const QString& id) const;
    bool isBundled(const QString& id) const { return bundled_.contains(id); }
    QString userDir() const { return userDir_; }

  private:
    QList<Deck> decks_;
    QStringList bundled_;
    QString userDir_;
};

}  // namespace pd::study
