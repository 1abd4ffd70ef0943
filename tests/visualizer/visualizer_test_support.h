// Real engine runs for the visualizer tests: small, deterministic settings so a test stays
// fast and its picture is known (pipeline p=2, m=4, GPipe, device clock).
#pragma once

#include <memory>

#include "pd/run.h"

namespace pd::vis::test {

inline pd::RunConfig small_pipeline(pd::PipelineSchedule schedule = pd::PipelineSchedule::gpipe) {
    pd::RunConfig c;
    c.strategy = pd::StrategyKind::pipeline;
    c.devices = 2;
    c.microbatches = 4;
    c.schedule = schedule;
    c.clock = pd::ClockMode::device;
    c.layers = 2;
    c.width = 64;
    c.batch = 16;
    c.steps = 2;
    return c;
}

inline pd::RunConfig small_dp() {
    pd::RunConfig c;
    c.strategy = pd::StrategyKind::dp;
    c.devices = 3;
    c.clock = pd::ClockMode::device;
    c.layers = 2;
    c.width = 64;
    c.batch = 12;
    c.steps = 2;
    c.bucket_bytes = 16 * 1024;
    return c;
}

inline std::shared_ptr<const pd::RunResult> run_engine(const pd::RunConfig& config) {
    pd::Run run(config);
    return std::make_shared<const pd::RunResult>(run.execute());
}

}  // namespace pd::vis::test
