// libFuzzer target: Anki-style CSV/TSV through the import; a file that imports exports again
// (exportDelimited) and re-imports to as many cards.
#include <QByteArray>
#include <QString>
#include <cstddef>
#include <cstdint>

#include "study/card_import.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    const QByteArray bytes(reinterpret_cast<const char*>(data), static_cast<qsizetype>(size));
    const auto imported = pd::study::importDelimited(bytes, QStringLiteral("fuzz.tsv"));
    if (!imported.deck) return 0;
    for (const QChar separator : {QLatin1Char('\t'), QLatin1Char(',')}) {
        const auto again = pd::study::importDelimited(
            pd::study::exportDelimited(*imported.deck, separator), QStringLiteral("again.tsv"));
        if (!again.deck || again.deck->cards.size() != imported.deck->cards.size())
            __builtin_trap();
    }
    return 0;
}
