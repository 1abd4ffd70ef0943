// libFuzzer target: a scenario file (JSON keys of a run, with its card's expectations) through
// the engine's reader and validator. Any input must end in a config or a BadInput, never a
// crash, a hang, a leak or undefined behaviour.
#include <cstddef>
#include <cstdint>
#include <string>

#include "pd/error.h"
#include "pd/run_config.h"
#include "pd/scenario.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    const std::string text(reinterpret_cast<const char*>(data), size);
    pd::RunConfig config;
    pd::ConfigSources sources;
    try {
        pd::apply_scenario_json(text, "fuzz.json", config, sources);
        pd::validate(config, sources);
        // A valid config writes back out and reads again to the same settings.
        pd::RunConfig again;
        pd::ConfigSources again_sources;
        pd::apply_scenario_json(pd::scenario_json(config), "round-trip.json", again, again_sources);
        pd::validate(again);
        if (pd::scenario_json(again) != pd::scenario_json(config)) __builtin_trap();
    } catch (const pd::BadInput&) {
    }
    return 0;
}
