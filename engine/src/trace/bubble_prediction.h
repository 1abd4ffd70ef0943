// The pipeline bubble a run's own durations imply: the schedule's tasks on each device's
// compute and comm streams, in the order the pipeline strategy enqueues them, replayed with
// the durations the trace measured, and again with effects taken out one at a time to name
// why the prediction differs from the textbook formula.
#pragma once

#include <optional>

#include "pd/metrics.h"
#include "pd/run_config.h"
#include "pd/trace.h"

namespace pd {

// `steps`: the steps replayed, each with its own durations (the median step is reported).
// fraction the causes are measured from. Empty when the trace lacks a task of the schedule.
std::optional<BubblePrediction> predict_bubble(const Trace& trace, const RunConfig& config,
                                               StepRange steps, double theoretical);

}  // namespace pd
