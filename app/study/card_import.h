// Anki-style delimited text (CSV/TSV) import and export of cards.
//
// The file may start with Anki's header lines:
//   #separator:tab            (Comma, Semicolon, Tab, Space, Pipe, Colon, or one character)
//   #html:false               (accepted and ignored: text is always plain)
//   #columns:id<TAB>prompt<TAB>...   (names of the columns, in order)
//   #tags column:N            (1-based column holding space-separated tags)
// Columns: id, prompt, type, difficulty, correct (option numbers such as "2" or "1,3"),
// option1..option6 with explanation1..explanation6, tags, scenario (JSON), scenario_note.
// Required: prompt, correct, and at least three optionN/explanationN pairs. Without #columns
// the columns are those exportDelimited writes. Fields follow RFC 4180 quoting ("" inside a
// quoted field), so fields may hold separators and line breaks. The file is UTF-8 text (a
// byte-order mark allowed) without NUL bytes. Every card is validated with the deck rules; a
// file with any problem imports nothing, and each problem names its line.
#pragma once

#include <QByteArray>
#include <QChar>
#include <QList>
#include <QString>
#include <optional>

#include "deck.h"

namespace pd::study {

struct ImportResult {
    std::optional<Deck> deck;  // set only when the whole file is valid
    QList<DeckIssue> errors;   // where = "line N"
    QString errorText() const;
};

// `origin` names the file in messages and gives the deck its id and title.
ImportResult importDelimited(const QByteArray& bytes, const QString& origin);
// Reads a .csv/.tsv/.txt file (delimited) or a .json file (the deck format).
ImportResult importFile(const QString& path);

// Writes Anki-style headers and one line per card. `separator` is ',' or '\t'.
// Numeric cards have no options to put in the columns: they are left out, counted in
// `numericLeftOut` when given.
QByteArray exportDelimited(const Deck& deck, QChar separator, int* numericLeftOut = nullptr);

// A kebab-case deck id derived from a file name ("My Cards (v2).csv" -> "my-cards-v2").
QString deckIdFromFileName(const QString& fileName);

}  // namespace pd::study
