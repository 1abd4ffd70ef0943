#include "scenario_config.h"

#include "pd/error.h"
#include "pd/expectations.h"
#include "pd/scenario.h"

namespace pd::app {

std::optional<pd::RunConfig> scenarioConfig(const QString& json, const QString& origin,
                                            QString* error, pd::Expectations* expectations) {
    pd::RunConfig config;
    pd::ConfigSources sources;
    try {
        pd::apply_scenario_json(json.toStdString(), origin.toStdString(), config, sources,
                                expectations);
        pd::validate(config, sources);
    } catch (const pd::BadInput& e) {
        if (error) *error = QString::fromStdString(e.what());
        return std::nullopt;
    }
    return config;
}

}  // namespace pd::app
