// libFuzzer target: a review-store schedule row (what SQLite hands back, possibly damaged or
// hand-edited) through the store's reader; a row that reads writes back and reads the same.
#include <QByteArray>
#include <QString>
#include <cstddef>
#include <cstdint>

#include "study/review_store.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    const QString row =
        QString::fromUtf8(reinterpret_cast<const char*>(data), static_cast<qsizetype>(size));
    const auto schedule = pd::study::scheduleFromJson(row);
    if (!schedule) return 0;
    const auto again = pd::study::scheduleFromJson(pd::study::scheduleToJson(schedule));
    if (!again || !(*again == *schedule)) __builtin_trap();
    return 0;
}
