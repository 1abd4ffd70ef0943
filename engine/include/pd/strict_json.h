// The one rule for reading a user's JSON file (a scenario, a deck): RFC 8259, and each key at
// most once in an object. nlohmann's own parser keeps the last of two equal keys silently, so a
// file would run with a value its author may not have meant; here both parsers refuse it, with
// the same message. Includes nlohmann/json.hpp: a target using this header links
// nlohmann_json itself (the engine links it privately).
#pragma once

#include <nlohmann/json.hpp>

#include <string>
#include <string_view>

namespace pd {

// The document in `text`; on failure a null value, with *error set to why: nlohmann's message
// for a syntax error ("[json.exception.parse_error.101] parse error at line 1, column 12: ..."),
// or "duplicate key 'devices' in the top-level object" / "duplicate key 'type' in cards[0]"
// (the first key given twice, and where). *error is cleared on success.
nlohmann::json parse_strict_json(std::string_view text, std::string* error);

}  // namespace pd
