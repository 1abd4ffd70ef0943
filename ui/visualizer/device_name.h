// What a row of the pictures is called, in one place so the timeline, the tables and the
// charts agree: "device N" for the engine's own runs, "rank R" for an imported trace (the
// rank each file is in the PyTorch job, which need not be its row's index).
#pragma once

#include <QString>
#include <cstddef>

#include "pd/trace.h"

namespace pd::vis {

// The job's rank of row `device` of an imported trace (its index where not recorded).
inline int rank_of(const pd::TraceOrigin& origin, int device) {
    const auto d = static_cast<std::size_t>(device);
    return device >= 0 && d < origin.ranks.size() && origin.ranks[d] >= 0 ? origin.ranks[d]
                                                                          : device;
}

// "rank 3" (imported) or "device 3".
inline QString device_name(const pd::TraceOrigin& origin, int device) {
    return origin.imported ? QStringLiteral("rank %1").arg(rank_of(origin, device))
                           : QStringLiteral("device %1").arg(device);
}

// The column heading over those names: "Rank" or "Device".
inline QString device_noun(const pd::TraceOrigin& origin) {
    return origin.imported ? QStringLiteral("Rank") : QStringLiteral("Device");
}

}  // namespace pd::vis
