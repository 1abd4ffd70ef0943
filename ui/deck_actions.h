// The learner's deck actions behind the File menu: importing a deck that may already be here
// (update it, or import only what is new, with the counts said first), renaming and deleting
// imported decks. Each asks before it changes anything and reports what it did.
#pragma once

#include <QString>

#include "app_context.h"

class QWidget;

namespace pd::ui {

// What an import would do, in words, with counts ("'X' already has 18 of the 20 cards ...").
// `fileCards` is the number of cards in the file.
struct ImportQuestion {
    QString text;
    QString details;
    QString acceptLabel;    // the button that goes ahead; empty: nothing to do
    QString separateLabel;  // a second choice: import as a deck of its own; empty: not offered
};
ImportQuestion describeImport(const study::ImportPlan& plan, const QString& targetTitle,
                              int fileCards);

// Imports `incoming` after asking where the library already has its id or cards. Returns the
// status line to show (empty when nothing was imported).
QString importWithConfirmation(AppContext& context, const study::Deck& incoming, QWidget* parent);

// Let the learner pick an imported deck, then rename or delete it. `busyDeckId` is the deck of
// an open study session, which cannot be deleted under it. Return the status line.
QString renameDeckInteractively(AppContext& context, QWidget* parent);
QString deleteDeckInteractively(AppContext& context, const QString& busyDeckId, QWidget* parent);

// The confirmation text for deleting a deck: what goes (cards, review history) and what stays.
QString deleteQuestion(const study::Deck& deck, int answers);

}  // namespace pd::ui
