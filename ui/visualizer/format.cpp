#include "visualizer/format.h"

#include <cmath>

namespace pd::vis {

QString duration_text(double ns) {
    const double a = std::fabs(ns);
    if (a < 1e3) return QStringLiteral("%1 ns").arg(ns, 0, 'f', 0);
    if (a < 1e6) return QStringLiteral("%1 µs").arg(ns / 1e3, 0, 'f', a < 1e4 ? 2 : 1);
    if (a < 1e9) return QStringLiteral("%1 ms").arg(ns / 1e6, 0, 'f', a < 1e7 ? 2 : 1);
    return QStringLiteral("%1 s").arg(ns / 1e9, 0, 'f', 3);
}

QString bytes_text(double bytes) {
    static const char* const units[] = {"B", "KiB", "MiB", "GiB", "TiB"};
    int u = 0;
    while (std::fabs(bytes) >= 1024.0 && u < 4) {
        bytes /= 1024.0;
        ++u;
    }
    if (u == 0) return QStringLiteral("%1 B").arg(bytes, 0, 'f', 0);
    return QStringLiteral("%1 %2").arg(bytes, 0, 'f', 1).arg(QLatin1String(units[u]));
}

QString percent_text(double fraction) {
    return QStringLiteral("%1%").arg(fraction * 100.0, 0, 'f', 1);
}

QString gbps_text(double gigabytes_per_s) {
    return QStringLiteral("%1 GB/s").arg(gigabytes_per_s, 0, 'f', gigabytes_per_s < 10 ? 2 : 1);
}

QString link_speed_text(double gigabits_per_s) {
    return QStringLiteral("%1 GB/s = %2 Gb/s")
        .arg(gigabits_per_s / 8, 0, 'g', 4)
        .arg(gigabits_per_s, 0, 'g', 4);
}

}  // namespace pd::vis
