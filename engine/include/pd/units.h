// Parsing and printing of byte sizes ("64MiB") and durations for humans.
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
std::string format_duration_ns(double ns);

}  // namespace pd
