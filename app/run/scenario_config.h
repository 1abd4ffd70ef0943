// A card's scenario (JSON text in the run's scenario form) turned into a run config by the
// engine's own parser and rules.
#pragma once

#include <QString>
#include <optional>

#include "pd/run_config.h"

namespace pd::app {

// Returns the config, or nullopt with `error` naming the key and the reason.
std::optional<pd::RunConfig> scenarioConfig(const QString& json, const QString& origin,
                                            QString* error);

}  // namespace pd::app
