// Scenario files: the same keys as the CLI flags, in JSON (snake_case; "bucket-bytes" is also
// accepted). Unknown keys and wrong types are errors that name the key.
#pragma once

#include <string>
#include <string_view>

#include "pd/run_config.h"

namespace pd {

// Applies the keys of a JSON object text onto `config`. `origin` names the file in messages.
// Throws BadInput. Records each key's spelling in `sources`.
void apply_scenario_json(std::string_view json_text, std::string_view origin, RunConfig& config,
                         ConfigSources& sources);

// Reads a file and applies it. Throws BadInput if it cannot be read or parsed.
void apply_scenario_file(const std::string& path, RunConfig& config, ConfigSources& sources);

// The scenario form of a config (what a deck card stores), for exports and round trips.
std::string scenario_json(const RunConfig& config);

}  // namespace pd
