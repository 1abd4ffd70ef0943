#include "pd/flops.h"

#include "pd/model.h"

namespace pd {

std::optional<StepFlops> step_flops(const RunConfig& config) {
    const ModelShape shape = model_shape(config);
    if (shape.moe() || (config.strategy == StrategyKind::ps && config.async_updates))
        return std::nullopt;
    const double h = shape.width, in = shape.input_dim, classes = shape.classes;
    const double t = shape.seq_len;
    double forward = 0, backward = 0, recomputed = 0;  // per token
    for (int unit = 0; unit < shape.units(); ++unit) {
        double f = 0;
        switch (shape.unit_kind(unit)) {
            case UnitKind::input:
                f = 2 * in * h;
                backward += f;  // the weight gradient alone
                break;
            case UnitKind::mlp:
                f = 16 * h * h;
                backward += 2 * f;
                if (config.recompute == RecomputeMode::full) recomputed += 8 * h * h;
                break;
            case UnitKind::attention:
                f = 8 * h * h + 4 * h * t;
                backward += 2 * f;
                break;
            case UnitKind::head:
                f = 2 * h * classes;
                backward += 2 * f;
                break;
            case UnitKind::moe:
                return std::nullopt;
        }
        forward += f;
    }
    StepFlops s;
    s.tokens = static_cast<double>(config.batch) * t;
    s.model = (forward + backward) * s.tokens;
    s.hardware = s.model + recomputed * s.tokens;
    s.parameters = static_cast<double>(ParamLayout::build(shape).total);
    s.six_nd = 6 * s.parameters * s.tokens;
    return s;
}

double utilisation(double flops, double step_time_s, int devices, double peak_gflops) {
    const double possible = step_time_s * devices * peak_gflops * 1e9;
    return possible > 0 ? flops / possible : 0.0;
}

}  // namespace pd
