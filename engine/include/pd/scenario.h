// Scenario files: the same keys as the CLI flags, in JSON (snake_case; "bucket-bytes" is also
// accepted). Unknown keys and wrong types are errors that name the key.
#pragma once

#include <string>
#include <string_view>

#include "pd/run_config.h"

namespace pd {

struct Expectations;

// Applies the keys of a JSON object text onto `config`. `origin` names the file in messages.
// Throws BadInput. Records each key's spelling in `sources`. The `expect` key (claims about the
// run, pd/expectations.h) is parsed, so a bad claim is an error either way, and stored in
// `expectations` when given.
void apply_scenario_json(std::string_view json_text, std::string_view origin, RunConfig& config,
                         ConfigSources& sources, Expectations* expectations = nullptr);

// Reads a file and applies it. Throws BadInput if it cannot be read or parsed.
void apply_scenario_file(const std::string& path, RunConfig& config, ConfigSources& sources);

// The scenario form of a config (what a deck card stores), for exports and round trips.
std::string scenario_json(const RunConfig& config);

}  // namespace pd
