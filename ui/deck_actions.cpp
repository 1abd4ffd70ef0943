#include "deck_actions.h"

#include <QInputDialog>
#include <QMessageBox>
#include <QPushButton>

#include "theme.h"

namespace pd::ui {

namespace {

QString cards(int n) {
    return counted(n, QObject::tr("card"), QObject::tr("cards"));
}

// The imported decks' titles and ids, for a chooser.
QList<study::Deck> importedDecks(const study::DeckLibrary& library) {
    QList<study::Deck> out;
    for (const study::Deck& d : library.decks()) {
        if (!library.isBundled(d.id)) out.append(d);
    }
    return out;
}

const study::Deck* chooseImportedDeck(AppContext& context, const QString& title, QWidget* parent) {
    const QList<study::Deck> decks = importedDecks(*context.library);
    if (decks.isEmpty()) {
        QMessageBox::information(parent, title,
                                 QObject::tr("Only imported decks can be renamed or deleted, "
                                             "and no deck has been imported yet."));
        return nullptr;
    }
    if (decks.size() == 1) return context.library->deck(decks.first().id);
    QStringList titles;
    for (const study::Deck& d : decks) titles.append(QStringLiteral("%1 (%2)").arg(d.title, d.id));
    bool ok = false;
    const QString chosen =
        QInputDialog::getItem(parent, title, QObject::tr("Imported deck:"), titles, 0, false, &ok);
    if (!ok) return nullptr;
    return context.library->deck(decks[titles.indexOf(chosen)].id);
}

}  // namespace

ImportQuestion describeImport(const study::ImportPlan& plan, const QString& targetTitle,
                              int fileCards) {
    ImportQuestion q;
    const int shared = plan.changed + plan.unchanged;
    if (plan.changesNothing()) {
        q.text = QObject::tr(
                     "All %1 in the file are already in '%2', unchanged. Nothing was "
                     "imported.")
                     .arg(cards(fileCards), targetTitle);
        return q;
    }
    if (plan.targetIsBundled) {
        const int taken = plan.changed + plan.added;
        q.text = QObject::tr(
                     "%1 of the %2 in the file are cards of the bundled deck '%3', which "
                     "cannot be changed.")
                     .arg(shared)
                     .arg(cards(fileCards), targetTitle);
        q.details = QObject::tr(
                        "Importing makes a deck of its own from the %1 that are new (%2) "
                        "or changed (%3). The %4 unchanged stay only in '%5', with their "
                        "review history.")
                        .arg(cards(taken))
                        .arg(plan.added)
                        .arg(plan.changed)
                        .arg(plan.unchanged)
                        .arg(targetTitle);
        q.separateLabel = QObject::tr("Import %1 as a new deck").arg(cards(taken));
        return q;
    }
    q.text = QObject::tr("'%1' already has %2 of the %3 in the file.")
                 .arg(targetTitle)
                 .arg(shared)
                 .arg(cards(fileCards));
    QString details =
        QObject::tr(
            "Updating it replaces %1 with the file's version, adds %2 and "
            "leaves %3 as they are.")
            .arg(counted(plan.changed, QObject::tr("changed card"), QObject::tr("changed cards")),
                 counted(plan.added, QObject::tr("new card"), QObject::tr("new cards")),
                 cards(plan.unchanged));
    if (plan.kept > 0)
        details +=
            QLatin1Char(' ') +
            QObject::tr("Cards of the deck that are not in the file (%1) are kept.").arg(plan.kept);
    details += QLatin1Char(' ') + QObject::tr("Every card keeps its review history.");
    q.details = details;
    q.acceptLabel = QObject::tr("Update '%1'").arg(targetTitle);
    return q;
}

QString importWithConfirmation(AppContext& context, const study::Deck& incoming, QWidget* parent) {
    study::DeckLibrary& library = *context.library;
    const study::ImportPlan plan = library.planImport(incoming);
    const int fileCards = static_cast<int>(incoming.cards.size());
    QString error;
    const auto fail = [&] {
        QMessageBox::warning(parent, QObject::tr("Nothing imported"), error);
        return QString();
    };
    if (!plan.hasTarget()) {
        if (!library.importDeck(incoming, &error)) return fail();
        return QObject::tr("Imported %1 into '%2'.").arg(cards(fileCards), incoming.title);
    }
    const study::Deck* target = library.deck(plan.targetId);
    const QString targetTitle = target->title;
    const ImportQuestion q = describeImport(plan, targetTitle, fileCards);
    QMessageBox box(QMessageBox::Question, QObject::tr("Import Cards"), q.text,
                    QMessageBox::NoButton, parent);
    box.setInformativeText(q.details);
    QPushButton* accept =
        q.acceptLabel.isEmpty() ? nullptr : box.addButton(q.acceptLabel, QMessageBox::AcceptRole);
    QPushButton* separate = q.separateLabel.isEmpty()
                                ? nullptr
                                : box.addButton(q.separateLabel, QMessageBox::AcceptRole);
    if (!accept && !separate) {
        box.setIcon(QMessageBox::Information);
        box.addButton(QMessageBox::Ok);
    } else {
        box.addButton(QMessageBox::Cancel);
    }
    box.setDefaultButton(accept ? accept : separate);
    box.exec();
    if (accept && box.clickedButton() == accept) {
        if (!library.mergeInto(plan.targetId, incoming, &error)) return fail();
        return QObject::tr("Updated '%1': %2 changed, %3 added.")
            .arg(targetTitle)
            .arg(plan.changed)
            .arg(plan.added);
    }
    if (separate && box.clickedButton() == separate) {
        study::Deck own = incoming;
        own.cards.clear();
        for (const study::Card& c : incoming.cards) {
            if (plan.newOrChangedIds.contains(c.id)) own.cards.append(c);
        }
        own.id = library.unusedId(library.isBundled(incoming.id)
                                      ? incoming.id + QStringLiteral("-imported")
                                      : incoming.id);
        if (own.title == targetTitle) own.title += QObject::tr(" (imported)");
        if (!library.importDeck(own, &error)) return fail();
        return QObject::tr("Imported %1 into '%2'.")
            .arg(cards(static_cast<int>(own.cards.size())), own.title);
    }
    return {};
}

QString renameDeckInteractively(AppContext& context, QWidget* parent) {
    const study::Deck* deck = chooseImportedDeck(context, QObject::tr("Rename Deck"), parent);
    if (!deck) return {};
    const QString id = deck->id;
    const QString old = deck->title;
    bool ok = false;
    const QString title = QInputDialog::getText(parent, QObject::tr("Rename Deck"),
                                                QObject::tr("New title for '%1':").arg(old),
                                                QLineEdit::Normal, old, &ok);
    if (!ok || title.simplified() == old) return {};
    QString error;
    if (!context.library->renameDeck(id, title, &error)) {
        QMessageBox::warning(parent, QObject::tr("Rename Deck"),
                             QObject::tr("'%1' was not renamed: %2").arg(old, error));
        return {};
    }
    return QObject::tr("Renamed '%1' to '%2'.").arg(old, context.library->deck(id)->title);
}

QString deleteQuestion(const study::Deck& deck, int answers) {
    return QObject::tr(
               "Delete '%1' and its %2? The review history of its cards (%3) is "
               "deleted with it, so schedules and statistics no longer count them. "
               "Importing the file again starts the cards as new. This cannot be undone.")
        .arg(deck.title, cards(static_cast<int>(deck.cards.size())),
             counted(answers, QObject::tr("answer"), QObject::tr("answers")));
}

QString deleteDeckInteractively(AppContext& context, const QString& busyDeckId, QWidget* parent) {
    const study::Deck* deck = chooseImportedDeck(context, QObject::tr("Delete Deck"), parent);
    if (!deck) return {};
    const QString id = deck->id;
    const QString title = deck->title;
    if (id == busyDeckId) {
        QMessageBox::information(parent, QObject::tr("Delete Deck"),
                                 QObject::tr("A study session on '%1' is open. Finish or leave "
                                             "it first (Esc), then delete the deck.")
                                     .arg(title));
        return {};
    }
    const QString question = deleteQuestion(*deck, context.store->deckReviewCount(id));
    QMessageBox box(QMessageBox::Warning, QObject::tr("Delete Deck"), question, QMessageBox::Cancel,
                    parent);
    QPushButton* remove =
        box.addButton(QObject::tr("Delete '%1'").arg(title), QMessageBox::DestructiveRole);
    box.setDefaultButton(QMessageBox::Cancel);
    box.exec();
    if (box.clickedButton() != remove) return {};
    QString error;
    if (!context.library->removeDeck(id, &error)) {
        QMessageBox::warning(parent, QObject::tr("Delete Deck"),
                             QObject::tr("'%1' was not deleted: %2").arg(title, error));
        return {};
    }
    // The deck file is gone; its history follows so no schedule or answer points at nothing.
    if (!context.store->resetDeck(id)) {
        QMessageBox::warning(parent, QObject::tr("Delete Deck"),
                             QObject::tr("'%1' was deleted, but its review history could not be "
                                         "removed; it comes back if the deck is imported again.")
                                 .arg(title));
    }
    return QObject::tr("Deleted '%1'.").arg(title);
}

}  // namespace pd::ui
