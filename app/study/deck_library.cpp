#include "deck_library.h"

#include <QCollator>
#include <QDir>
#include <QFile>
#include <QHash>
#include <QSaveFile>
#include <algorithm>

namespace pd::study {

namespace {

bool sameOption(const Option& a, const Option& b) {
    return a.text == b.text && a.correct == b.correct && a.explanation == b.explanation;
}

bool sameCard(const Card& a, const Card& b) {
    return a.id == b.id && a.prompt == b.prompt && a.type == b.type &&
           a.difficulty == b.difficulty && a.tags == b.tags && a.scenarioJson == b.scenarioJson &&
           a.scenarioNote == b.scenarioNote && a.sources == b.sources &&
           a.options.size() == b.options.size() &&
           std::equal(a.options.begin(), a.options.end(), b.options.begin(), sameOption);
}

int sharedCardIds(const Deck& a, const Deck& b) {
    int n = 0;
    for (const Card& c : a.cards) n += b.card(c.id) ? 1 : 0;
    return n;
}

}  // namespace

QString DeckLibrary::addBundled(const QString& path) {
    DeckLoadResult result = loadDeckFile(path);
    if (!result.deck) return result.errorText();
    if (deck(result.deck->id))
        return QStringLiteral("%1: deck id '%2' is already loaded").arg(path, result.deck->id);
    bundled_.append(result.deck->id);
    // Bundled decks stay ahead of the imported ones.
    const auto firstUser = std::find_if(decks_.begin(), decks_.end(),
                                        [this](const auto& d) { return !isBundled(d->id); });
    decks_.insert(firstUser, std::make_unique<Deck>(std::move(*result.deck)));
    sortUserDecks();
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
            decks_.push_back(std::make_unique<Deck>(std::move(*result.deck)));
        }
    }
    sortUserDecks();
    return problems;
}

void DeckLibrary::sortUserDecks() {
    const auto firstUser = std::find_if(decks_.begin(), decks_.end(),
                                        [this](const auto& d) { return !isBundled(d->id); });
    // A collator of our own: QString::localeAwareCompare keeps a per-thread default one
    // that Qt 6.4 never frees (LeakSanitizer reports it).
    QCollator collator;
    collator.setCaseSensitivity(Qt::CaseInsensitive);
    std::stable_sort(firstUser, decks_.end(), [&collator](const auto& a, const auto& b) {
        const int byTitle = collator.compare(a->title, b->title);
        return byTitle != 0 ? byTitle < 0 : a->id < b->id;
    });
    view_.clear();
    for (const auto& d : decks_) view_.append(*d);
}

bool DeckLibrary::save(const Deck& deck, QString* error) const {
    if (userDir_.isEmpty() || !QDir().mkpath(userDir_)) {
        if (error) *error = QStringLiteral("no folder to keep imported decks in");
        return false;
    }
    QSaveFile file(QDir(userDir_).filePath(deck.id + QStringLiteral(".json")));
    if (!file.open(QIODevice::WriteOnly) || file.write(deckToJson(deck)) < 0 || !file.commit()) {
        if (error) *error = file.errorString();
        return false;
    }
    return true;
}

bool DeckLibrary::importDeck(const Deck& deck, QString* error) {
    if (isBundled(deck.id)) {
        if (error)
            *error = QStringLiteral(
                         "'%1' is the id of a bundled deck; rename the file and import it again")
                         .arg(deck.id);
        return false;
    }
    if (!save(deck, error)) return false;
    if (Deck* existing = find(deck.id)) {
        *existing = deck;
    } else {
        decks_.push_back(std::make_unique<Deck>(deck));
    }
    sortUserDecks();
    return true;
}

ImportPlan DeckLibrary::planImport(const Deck& incoming) const {
    ImportPlan plan;
    const Deck* target = deck(incoming.id);
    if (!target) {
        int best = 0;
        for (const auto& d : decks_) {
            const int shared = sharedCardIds(incoming, *d);
            if (shared > best) {
                best = shared;
                target = d.get();
            }
        }
    }
    if (!target) {
        plan.added = static_cast<int>(incoming.cards.size());
        for (const Card& c : incoming.cards) plan.newOrChangedIds.append(c.id);
        return plan;
    }
    plan.targetId = target->id;
    plan.targetIsBundled = isBundled(target->id);
    for (const Card& c : incoming.cards) {
        const Card* known = target->card(c.id);
        if (known && sameCard(*known, c)) {
            ++plan.unchanged;
            continue;
        }
        ++(known ? plan.changed : plan.added);
        plan.newOrChangedIds.append(c.id);
    }
    plan.kept = static_cast<int>(target->cards.size()) - plan.changed - plan.unchanged;
    return plan;
}

bool DeckLibrary::mergeInto(const QString& targetId, const Deck& incoming, QString* error) {
    const Deck* target = deck(targetId);
    if (!target || isBundled(targetId)) {
        if (error)
            *error = target
                         ? QStringLiteral("the bundled deck '%1' cannot be changed").arg(targetId)
                         : QStringLiteral("no deck '%1'").arg(targetId);
        return false;
    }
    Deck merged = *target;
    for (const Card& c : incoming.cards) {
        const auto it = std::find_if(merged.cards.begin(), merged.cards.end(),
                                     [&c](const Card& k) { return k.id == c.id; });
        if (it != merged.cards.end())
            *it = c;
        else
            merged.cards.append(c);
    }
    return importDeck(merged, error);
}

QString DeckLibrary::unusedId(const QString& base) const {
    if (!deck(base)) return base;
    for (int n = 2;; ++n) {
        const QString id = QStringLiteral("%1-%2").arg(base).arg(n);
        if (!deck(id)) return id;
    }
}

bool DeckLibrary::renameDeck(const QString& id, const QString& title, QString* error) {
    Deck* d = find(id);
    const QString clean = title.simplified();
    if (!d || isBundled(id) || clean.isEmpty()) {
        if (error)
            *error = !d              ? QStringLiteral("no deck '%1'").arg(id)
                     : isBundled(id) ? QStringLiteral("the bundled deck cannot be renamed")
                                     : QStringLiteral("the title must not be empty");
        return false;
    }
    Deck renamed = *d;
    renamed.title = clean;
    if (!save(renamed, error)) return false;
    d->title = clean;
    sortUserDecks();
    return true;
}

bool DeckLibrary::removeDeck(const QString& id, QString* error) {
    const auto it =
        std::find_if(decks_.begin(), decks_.end(), [&id](const auto& d) { return d->id == id; });
    if (it == decks_.end() || isBundled(id)) {
        if (error)
            *error = it == decks_.end() ? QStringLiteral("no deck '%1'").arg(id)
                                        : QStringLiteral("the bundled deck cannot be deleted");
        return false;
    }
    QFile file(QDir(userDir_).filePath(id + QStringLiteral(".json")));
    if (file.exists() && !file.remove()) {
        if (error) *error = file.errorString();
        return false;
    }
    removed_.push_back(std::move(*it));
    decks_.erase(it);
    sortUserDecks();
    return true;
}

const Deck* DeckLibrary::deck(const QString& id) const {
    for (const auto& d : decks_) {
        if (d->id == id) return d.get();
    }
    return nullptr;
}

Deck* DeckLibrary::find(const QString& id) {
    return const_cast<Deck*>(std::as_const(*this).deck(id));
}

}  // namespace pd::study
