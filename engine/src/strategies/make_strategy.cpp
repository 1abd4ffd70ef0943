#include "strategies/context_parallel.h"
#include "strategies/data_parallel.h"
#include "strategies/expert_parallel.h"
#include "strategies/mesh_parallel.h"
#include "strategies/parameter_server.h"
#include "strategies/single_device.h"
#include "strategies/zero.h"

namespace pd {

std::unique_ptr<Strategy> make_strategy(RunEnvironment& env) {
    switch (env.config.strategy) {
        case StrategyKind::single:
            return std::make_unique<SingleDevice>(env);
        case StrategyKind::dp:
            return std::make_unique<DataParallel>(env);
        case StrategyKind::ps:
            return std::make_unique<ParameterServer>(env);
        case StrategyKind::pipeline:
        case StrategyKind::tp:
        case StrategyKind::hybrid:
            return std::make_unique<MeshParallel>(env);
        case StrategyKind::zero1:
            return std::make_unique<Zero>(env, 1);
        case StrategyKind::zero2:
            return std::make_unique<Zero>(env, 2);
        case StrategyKind::zero3:
            return std::make_unique<Zero>(env, 3);
        case StrategyKind::cp:
            return std::make_unique<ContextParallel>(env);
        case StrategyKind::ep:
            return std::make_unique<ExpertParallel>(env);
    }
    return nullptr;
}

}  // namespace pd
