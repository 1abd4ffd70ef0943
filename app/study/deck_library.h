// The decks the app offers: the bundled ones (read-only) and those the learner imported, which
// are kept as deck JSON files in a user folder. The order is stable across restarts: bundled
// decks first (as added), then imported decks by title. Deck addresses stay valid while the
// library lives (a study session keeps a pointer), also after a deck is removed.
#pragma once

#include <QList>
#include <QString>
#include <QStringList>
#include <memory>
#include <vector>

#include "deck.h"

namespace pd::study {

// What importing a deck would do, worked out before anything changes so the learner can be
// told with counts. The target is the deck with the same id or, failing that, the deck that
// shares the most card ids with the file.
struct ImportPlan {
    QString targetId;  // empty: no deck shares the id or any card id
    bool targetIsBundled = false;
    int changed = 0;    // in both, different content
    int unchanged = 0;  // in both, same content
    int added = 0;      // in the file only
    int kept = 0;       // in the target only (an update keeps them)
    QStringList newOrChangedIds;
    bool hasTarget() const { return !targetId.isEmpty(); }
    bool changesNothing() const { return changed == 0 && added == 0; }
};

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

    ImportPlan planImport(const Deck& incoming) const;
    // Updates the imported deck `targetId` from `incoming`: cards with a known id are replaced
    // where they changed (their position, so their review history, stays), new cards are
    // appended, and the deck's other cards, title and description are kept.
    bool mergeInto(const QString& targetId, const Deck& incoming, QString* error);
    // An id no loaded deck uses: `base`, else base-2, base-3, ...
    QString unusedId(const QString& base) const;

    // Imported decks only. The id (which keys the review history) never changes.
    bool renameDeck(const QString& id, const QString& title, QString* error);
    // Deletes the deck's file and takes it out of decks(); the review history is the caller's.
    bool removeDeck(const QString& id, QString* error);

    // In order. The list is rebuilt when decks change; use deck() for a lasting pointer.
    const QList<Deck>& decks() const { return view_; }
    const Deck* deck(const QString& id) const;
    bool isBundled(const QString& id) const { return bundled_.contains(id); }
    QString userDir() const { return userDir_; }

  private:
    Deck* find(const QString& id);
    bool save(const Deck& deck, QString* error) const;
    // Puts the imported decks in order and rebuilds decks().
    void sortUserDecks();

    std::vector<std::unique_ptr<Deck>> decks_;
    std::vector<std::unique_ptr<Deck>> removed_;  // kept alive for pointers still held
    QList<Deck> view_;  // copies (the card lists are shared) of decks_, for decks()
    QStringList bundled_;
    QString userDir_;
};

}  // namespace pd::study
