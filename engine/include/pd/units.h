// Parsing and printing of byte sizes ("64MiB"), link speeds ("100Gb/s") and durations for
// humans.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace pd {

// Accepts "123", "64KiB", "64MiB", "1GiB", "64KB", "1.5GB" (decimal), "64M" (binary).
std::optional<std::size_t> parse_byte_size(std::string_view text);
std::string format_bytes(double bytes);

// A link speed in gigabits per second, the unit NICs and links are quoted in. A bare number
// is Gb/s; a unit may follow, with or without a space: bits "Mb/s", "Gb/s", "Tb/s" (also
// "Gbit/s", "Gbps"), bytes "MB/s", "GB/s", "TB/s" (also "GByte/s", "GBps"). Case tells bits
// (b) from bytes (B); prefixes are decimal. Nothing for anything else (no sign, no other
// unit); zero parses, and validate() rejects it as a speed.
std::optional<double> parse_link_speed_gbit(std::string_view text);
// The accepted forms, for error messages.
inline constexpr const char* kLinkSpeedForms =
    "a number of Gb/s (e.g. 100) or a string with a unit: \"100Gb/s\", \"400 Gbit/s\", "
    "\"100Gbps\", \"12.5GB/s\", \"50 GB/s\" (also Mb/s, Tb/s, MB/s, TB/s)";
// "100 Gb/s (12.5 GB/s)".
std::string format_link_speed(double gigabits_per_s);
std::string format_duration_ns(double ns);

}  // namespace pd
