// Numbers as a learner reads them: durations with ns/µs/ms/s, bytes in KiB/MiB/GiB,
// fractions as percentages. One place so the timeline, tooltips and metrics agree.
#pragma once

#include <QString>
#include <string_view>

namespace pd::vis {

QString duration_text(double ns);
QString bytes_text(double bytes);
QString percent_text(double fraction);
QString gbps_text(double gigabytes_per_s);
// A link speed in both units people quote: "12.5 GB/s = 100 Gb/s".
QString link_speed_text(double gigabits_per_s);
inline QString qs(std::string_view s) {
    return QString::fromUtf8(s.data(), static_cast<qsizetype>(s.size()));
}

}  // namespace pd::vis
