#include "pd/units.h"

#include <cctype>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <string>

namespace pd {

std::optional<std::size_t> parse_byte_size(std::string_view text) {
    std::size_t i = 0;
    while (i < text.size() && std::isspace(static_cast<unsigned char>(text[i]))) ++i;
    const std::size_t number_begin = i;
    bool seen_digit = false, seen_dot = false;
    while (i < text.size() &&
           (std::isdigit(static_cast<unsigned char>(text[i])) || (text[i] == '.' && !seen_dot))) {
        if (text[i] == '.')
            seen_dot = true;
        else
            seen_digit = true;
        ++i;
    }
    if (!seen_digit) return std::nullopt;
    const double value = std::stod(std::string(text.substr(number_begin, i - number_begin)));
    while (i < text.size() && std::isspace(static_cast<unsigned char>(text[i]))) ++i;
    std::string unit;
    for (; i < text.size(); ++i) {
        if (std::isspace(static_cast<unsigned char>(text[i]))) break;
        unit += static_cast<char>(std::tolower(static_cast<unsigned char>(text[i])));
    }
    double factor = 0;
    if (unit.empty() || unit == "b")
        factor = 1;
    else if (unit == "k" || unit == "kib")
        factor = 1024.0;
    else if (unit == "m" || unit == "mib")
        factor = 1024.0 * 1024;
    else if (unit == "g" || unit == "gib")
        factor = 1024.0 * 1024 * 1024;
    else if (unit == "kb")
        factor = 1e3;
    else if (unit == "mb")
        factor = 1e6;
    else if (unit == "gb")
        factor = 1e9;
    else
        return std::nullopt;
    const double bytes = value * factor;
    if (!std::isfinite(bytes) || bytes < 0 || bytes > 1e18) return std::nullopt;
    return static_cast<std::size_t>(std::llround(bytes));
}

std::optional<double> parse_link_speed_gbit(std::string_view text) {
    auto space = [](char ch) { return std::isspace(static_cast<unsigned char>(ch)) != 0; };
    std::size_t i = 0;
    while (i < text.size() && space(text[i])) ++i;
    const std::size_t number_begin = i;
    bool seen_digit = false, seen_dot = false, seen_exponent = false;
    while (i < text.size()) {
        const char ch = text[i];
        if (std::isdigit(static_cast<unsigned char>(ch))) {
            seen_digit = true;
        } else if (ch == '.' && !seen_dot && !seen_exponent) {
            seen_dot = true;
        } else if ((ch == 'e' || ch == 'E') && seen_digit && !seen_exponent &&
                   i + 1 < text.size() &&
                   (std::isdigit(static_cast<unsigned char>(text[i + 1])) || text[i + 1] == '-' ||
                    text[i + 1] == '+')) {
            seen_exponent = true;
            if (text[i + 1] == '-' || text[i + 1] == '+') ++i;
        } else {
            break;
        }
        ++i;
    }
    if (!seen_digit) return std::nullopt;
    const double value =
        std::strtod(std::string(text.substr(number_begin, i - number_begin)).c_str(), nullptr);
    while (i < text.size() && space(text[i])) ++i;
    std::size_t end = text.size();
    while (end > i && space(text[end - 1])) --end;
    const std::string_view unit = text.substr(i, end - i);
    // Gigabits per second per unit; the prefix is the first letter, then bits or bytes.
    double factor = 0;
    if (unit.empty()) {
        factor = 1;
    } else {
        double prefix = 0;
        switch (unit.front()) {
            case 'M':
                prefix = 1e-3;
                break;
            case 'G':
                prefix = 1;
                break;
            case 'T':
                prefix = 1e3;
                break;
            default:
                return std::nullopt;
        }
        const std::string_view rest = unit.substr(1);
        if (rest == "b/s" || rest == "bit/s" || rest == "bps")
            factor = prefix;
        else if (rest == "B/s" || rest == "Byte/s" || rest == "Bps")
            factor = prefix * 8;
        else
            return std::nullopt;
    }
    const double gbit = value * factor;
    if (!std::isfinite(gbit) || gbit < 0) return std::nullopt;  // 0: validate() says why
    return gbit;
}

std::string format_link_speed(double gigabits_per_s) {
    char out[64];
    std::snprintf(out, sizeof out, "%.4g Gb/s (%.4g GB/s)", gigabits_per_s, gigabits_per_s / 8);
    return out;
}

std::string format_bytes(double bytes) {
    static const char* units[] = {"B", "KiB", "MiB", "GiB", "TiB"};
    int u = 0;
    while (std::fabs(bytes) >= 1024.0 && u < 4) {
        bytes /= 1024.0;
        ++u;
    }
    char out[32];
    if (u == 0)
        std::snprintf(out, sizeof out, "%.0f %s", bytes, units[u]);
    else
        std::snprintf(out, sizeof out, "%.1f %s", bytes, units[u]);
    return out;
}

std::string format_duration_ns(double ns) {
    char out[32];
    if (ns < 1e3)
        std::snprintf(out, sizeof out, "%.0f ns", ns);
    else if (ns < 1e6)
        std::snprintf(out, sizeof out, "%.1f us", ns / 1e3);
    else if (ns < 1e9)
        std::snprintf(out, sizeof out, "%.2f ms", ns / 1e6);
    else
        std::snprintf(out, sizeof out, "%.3f s", ns / 1e9);
    return out;
}

}  // namespace pd
