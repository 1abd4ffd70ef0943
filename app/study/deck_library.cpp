#include "deck_library.h"

#include <QDir>
#include <QFile>
#include <QSaveFile>

namespace pd::study {

QString DeckLibrary::addBundled(const QString& path) {
    DeckLoadResult result = loadDeckFile(path);
    if (!result.deck) return result.errorText();
    if (deck(result.deck->id))
        return QStringLiteral("%1: deck id '%2' is already loaded").arg(path, result.deck->id);
    bundled_.append(result.deck->id);
    decks_.append(std::move(*result.deck));
    return {};
}

QStringList DeckLibrary::loadUserDecks(const QString& dir) {
    userDir_ = dir;
    QStringList problems;
    const QDir folder(dir);
    for (const QString& name :
         folder.entryList({QStringLiteral("*.json")}, QDir::Files, QDir::Name)) {
        DeckLoadResult result = loadDeckFile(folder.filePath(name), {true});
        if (!result.deck) {
            problems.append(result.errorText());
        } else if (deck(result.deck->id)) {
            problems.append(QStringLiteral("%1: deck id '%2' is already loaded")
                                .arg(folder.filePath(name), result.deck->id));
        } else {
            decks_.append(std::move(*result.deck));
        }
    }
    return problems;
}

bool DeckLibrary::importDeck(const Deck& deck, QString* error) {
    if (isBundled(deck.id)) {
        if (error)
            *error = QStringLiteral(
                         "'%1' is the id of a bundled deck; rename the file and import it again")
                         .arg(deck.id);
        return false;
    }
    if (userDir_.isEmpty() || !QDir().mkpath(userDir_)) {
        if (error) *error = QStringLiteral("no folder to keep imported decks in");
        return false;
    }
    QSaveFile file(QDir(userDir_).filePath(deck.id + QStringLiteral(".json")));
    if (!file.open(QIODevice::WriteOnly) || file.write(deckToJson(deck)) < 0 || !file.commit()) {
        if (error) *error = file.errorString();
        return false;
    }
    for (Deck& d : decks_) {
        if (d.id == deck.id) {
            d = deck;
            return true;
        }
    }
    decks_.append(deck);
    return true;
}

const Deck* DeckLibrary::deck(const QString& id) const {
    for (const Deck& d : decks_) {
        if (d.id == id) return &d;
    }
    return nullptr;
}

}  // namespace pd::study
