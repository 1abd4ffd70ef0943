// libFuzzer target: a deck file through the study app's one loader and validator, strict and
// lenient; a deck that loads writes back out (deckToJson) and loads again to the same deck.
#include <QByteArray>
#include <QString>
#include <cstddef>
#include <cstdint>

#include "study/deck.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    const QByteArray bytes(reinterpret_cast<const char*>(data), static_cast<qsizetype>(size));
    for (const bool lenient : {false, true}) {
        pd::study::DeckLoadOptions options;
        options.lenient = lenient;
        const auto loaded = pd::study::parseDeck(bytes, QStringLiteral("fuzz.json"), options);
        if (!loaded.deck) continue;
        const auto again = pd::study::parseDeck(pd::study::deckToJson(*loaded.deck),
                                                QStringLiteral("again.json"), options);
        if (!again.deck || again.deck->cards.size() != loaded.deck->cards.size()) __builtin_trap();
    }
    return 0;
}
