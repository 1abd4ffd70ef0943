// Decks of multiple-choice cards and their loader. The format is specified in
// resources/decks/README.md; scenarios are judged by the engine's own parser and validation,
// and each problem is reported as "file: cards[i] (id).field: message".
#pragma once

#include <QByteArray>
#include <QList>
#include <QString>
#include <QStringList>
#include <optional>

#include "numeric_answer.h"

namespace pd::study {

// Numeric: "predict, then run" (numeric_answer.h): no options; the answer is measured on the
// card's scenario run.
enum class CardType { Single, Multiple, Numeric };
enum class Difficulty { Foundation = 0, Application = 1, Expert = 2 };

struct Option {
    QString text;
    bool correct = false;
    QString explanation;
};

// Where a card's facts can be checked: a docs page, a paper or a source file, and where on it.
struct Source {
    QString title;
    QString url;
    QString locator;  // "Section 2.1", "Table 3", "init_device_mesh"
    bool operator==(const Source&) const = default;
};

struct Card {
    QString id;
    QString prompt;
    CardType type = CardType::Single;
    QList<Option> options;
    Difficulty difficulty = Difficulty::Foundation;
    QStringList tags;
    // The scenario object as compact JSON text (what the engine's apply_scenario_json reads,
    // expectations included); empty when the card has none.
    QString scenarioJson;
    QString scenarioNote;
    QList<Source> sources;
    std::optional<NumericAnswer> numeric;  // Numeric cards only

    bool isNumeric() const { return type == CardType::Numeric; }
    bool hasScenario() const { return !scenarioJson.isEmpty(); }
    int correctCount() const;
    // The names of the card's concept:: tags, without the namespace.
    QStringList concepts() const;
    // Whether exactly the correct options are among `chosen` (indices into options).
    bool isCorrectAnswer(const QList<int>& chosen) const;
};

struct Deck {
    QString id;
    QString title;
    QString description;
    QList<Card> cards;

    const Card* card(const QString& cardId) const;
};

// One problem found in a deck. `where` is "deck", "file", "cards[3] (some-id)" or
// "cards[3] (some-id).options[1]", "cards[3] (some-id).scenario", or "line 12" for imports.
struct DeckIssue {
    QString file;
    QString where;
    QString message;
    QString toString() const;
};

struct DeckLoadResult {
    std::optional<Deck> deck;  // set only when there are no errors
    QList<DeckIssue> errors;
    QList<DeckIssue> warnings;
    QString errorText() const;  // one line per error
};

struct DeckLoadOptions {
    // Deck-wide rules (cards per concept, scenario share) become warnings, for drafts, imports
    // and small test decks.
    bool lenient = false;
};

// Parses and validates a deck. `origin` names the file in messages.
DeckLoadResult parseDeck(const QByteArray& json, const QString& origin,
                         DeckLoadOptions options = {});
// Reads a file (or a Qt resource path) and parses it.
DeckLoadResult loadDeckFile(const QString& path, DeckLoadOptions options = {});

// The deck in its JSON file form (round-trips through parseDeck).
QByteArray deckToJson(const Deck& deck);

QString difficultyName(Difficulty difficulty);  // "foundation", ...
std::optional<Difficulty> difficultyFromName(const QString& name);
QString difficultyDisplayName(Difficulty difficulty);  // "Foundation", ...

// The closed list of concept names (without "concept::"), in syllabus order.
const QStringList& conceptNames();
// "Pipeline parallelism" for "pipeline-parallelism" or "concept::pipeline-parallelism"; other
// tags become "Name (namespace)"-style readable text.
QString tagDisplayName(const QString& tag);

// Kebab-case check used for deck and card ids.
bool isKebabId(const QString& id);

}  // namespace pd::study
