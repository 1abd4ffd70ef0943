// A card's scenario (JSON text in the run's scenario form) turned into a run config by the
// engine's own parser and rules.
#pragma once

#include <QString>
#include <optional>

#include "pd/run_config.h"

namespace pd {
struct Expectations;
}

namespace pd::app {

// Returns the config, or nullopt with `error` naming the key and the reason. The scenario's
// claims (its `expect` key) go to `expectations` when given.
std::optional<pd::RunConfig> scenarioConfig(const QString& json, const QString& origin,
                                            QString* error,
                                            pd::Expectations* expectations = nullptr);

}  // namespace pd::app
