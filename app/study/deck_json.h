// Internal to pd_study: the JSON-level deck validator shared by the deck loader and the CSV/TSV
// importer, so both apply exactly the rules of resources/decks/README.md.
#pragma once

#include <QByteArray>
#include <QList>
#include <QString>
#include <nlohmann/json.hpp>
#include <optional>

#include "deck.h"
#include "pd/run_config.h"

namespace pd {
class BadInput;
}

namespace pd::study {

struct DeckValidator {
    QString file;
    bool lenient = false;
    // The deck's format version once checkDeck has read it. Cards checked on their own (CSV
    // imports) are held to version 1: their scenarios may lack expect.
    int version = 1;
    int scenariosWithoutExpect = 0;
    int cardsWithoutSources = 0;
    QList<DeckIssue> errors;
    QList<DeckIssue> warnings;

    std::optional<Deck> checkDeck(const nlohmann::json& deck);
    std::optional<Card> checkCard(const QString& where, const nlohmann::json& card);
    void checkScenario(const QString& where, const nlohmann::json& scenario);

  private:
    void err(const QString& where, const QString& message);
    void warn(const QString& where, const QString& message);
    void checkOptions(const QString& where, const nlohmann::json& options,
                      std::optional<CardType> type, std::optional<QString> prompt, Card& out);
    void checkTags(const QString& where, const nlohmann::json& tags, Card& out);
    void checkNumericAnswer(const QString& where, const nlohmann::json& answer, Card& out);
    void checkSources(const QString& where, const nlohmann::json& sources, Card& out);
    void engineError(const QString& where, const pd::BadInput& e);
    void checkShippedLimits(const QString& where, const pd::RunConfig& config,
                            bool withWarnings = true);
};

nlohmann::json cardToJson(const Card& card);
// Strict JSON (pd::parse_strict_json: duplicate keys rejected, as in scenario files); on
// failure sets *error and returns null.
nlohmann::json parseJsonText(const QByteArray& bytes, QString* error);

}  // namespace pd::study
