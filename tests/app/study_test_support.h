// Small decks and helpers shared by the study-domain and study-page tests.
#pragma once

#include <QByteArray>
#include <QCoreApplication>
#include <QCryptographicHash>
#include <QDateTime>
#include <QFile>
#include <QFileInfo>
#include <QString>
#include <QTimeZone>

#include "study/deck.h"

namespace pd::test {

// A file's SHA-256, to show it left byte-identical; empty when it cannot be read.
inline QByteArray fileHash(const QString& path) {
    QFile f(path);
    if (!f.open(QIODevice::ReadOnly)) return {};
    return QCryptographicHash::hash(f.readAll(), QCryptographicHash::Sha256);
}

// The app beside this test in the build tree (build/app/paralleldeck), if it was built.
inline QString appBinary() {
    const QString path =
        QCoreApplication::applicationDirPath() + QStringLiteral("/../app/paralleldeck");
    return QFileInfo(path).isExecutable() ? QFileInfo(path).canonicalFilePath() : QString();
}

// One option object; explanations are long enough for the 40-character rule.
inline QString option(const QString& text, bool correct) {
    return QString::fromUtf8(
               R"json({"text": "%1", "correct": %2, "explanation": "Because %1 is %3, which this explanation states at length."})json")
        .arg(text, correct ? QStringLiteral("true") : QStringLiteral("false"),
             correct ? QStringLiteral("right") : QStringLiteral("wrong"));
}

// A single-answer card whose option "A" is right and "B", "C" wrong.
inline QString singleCard(const QString& id, const QString& conceptName,
                          const QString& difficulty = QStringLiteral("foundation")) {
    return QString::fromUtf8(
               R"json({"id": "%1", "prompt": "Question %1?", "type": "single", "options": [%2, %3, %4],
        "difficulty": "%5", "tags": ["concept::%6"]})json")
        .arg(id, option(QStringLiteral("A"), true), option(QStringLiteral("B"), false),
             option(QStringLiteral("C"), false), difficulty, conceptName);
}

// A card with two right options, "A" and "B", and wrong "C" and "D".
inline QString multipleCard(const QString& id, const QString& conceptName) {
    return QString::fromUtf8(
               R"json({"id": "%1", "prompt": "Which two hold for %1? (Choose two.)", "type": "multiple",
        "options": [%2, %3, %4, %5], "difficulty": "expert", "tags": ["concept::%6", "topic::demo"]})json")
        .arg(id, option(QStringLiteral("A"), true), option(QStringLiteral("B"), true),
             option(QStringLiteral("C"), false), option(QStringLiteral("D"), false), conceptName);
}

// A numeric card on a small dp run: device 0's gradient bytes at the end, in KiB. `answer`
// replaces the answer object (for the validator's tests).
inline QString numericCard(const QString& id, const QString& answer = {}) {
    const QString a =
        !answer.isEmpty()
            ? answer
            : QStringLiteral(
                  R"json({"metric": "model_state.gradients", "device": 0, "unit": "KiB",
        "relative_tolerance": 0.05, "textbook": 49.5, "textbook_formula": "4 bytes x parameters",
        "explanation": "Data parallelism keeps a whole gradient on every device, 4 bytes a parameter."})json");
    return QString::fromUtf8(
               R"json({"id": "%1", "prompt": "How many KiB of gradients does device 0 hold? (Answer in KiB.)",
        "type": "numeric", "answer": %2, "difficulty": "application", "tags": ["concept::data-parallelism"],
        "scenario": {"strategy": "dp", "devices": 2, "layers": 2, "width": 32, "batch": 16, "steps": 2},
        "scenario_note": "Watch the gradients bar."})json")
        .arg(id, a);
}

inline QByteArray deckJson(const QStringList& cards,
                           const QString& id = QStringLiteral("test-deck")) {
    return QString::fromUtf8(
               R"json({"format": "paralleldeck-deck", "version": 1, "id": "%1", "title": "Test deck",
        "cards": [%2]})json")
        .arg(id, cards.join(QStringLiteral(",\n")))
        .toUtf8();
}

// Four cards over two concepts: two single, one multiple, one application-level single.
inline study::Deck smallDeck() {
    const QByteArray json =
        deckJson({singleCard(QStringLiteral("card-one"), QStringLiteral("data-parallelism")),
                  singleCard(QStringLiteral("card-two"), QStringLiteral("pipeline-parallelism")),
                  multipleCard(QStringLiteral("card-three"), QStringLiteral("data-parallelism")),
                  singleCard(QStringLiteral("card-four"), QStringLiteral("pipeline-parallelism"),
                             QStringLiteral("application"))});
    study::DeckLoadResult r = study::parseDeck(json, QStringLiteral("small.json"), {true});
    Q_ASSERT(r.deck);
    return *r.deck;
}

// The published FSRS start time, in UTC.
inline QDateTime startTime() {
    return QDateTime(QDate(2022, 11, 29), QTime(12, 30), Qt::UTC);
}

}  // namespace pd::test
