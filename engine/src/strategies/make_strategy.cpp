#include "strategies/data_parallel.h"
#include "strategies/parameter_server.h"
#include "strategies/single_device.h"

namespace pd {

std::unique_ptr<Strategy> make_strategy(RunEnvironment& env) {
    switch (env.config.strategy) {
        case StrategyKind::single:
            return std::make_unique<SingleDevice>(env);
        case StrategyKind::dp:
            return std::make_unique<DataParallel>(env);
        case StrategyKind::ps:
            return std::make_unique<ParameterServer>(env);
    }
    return nullptr;
}

}  // namespace pd
