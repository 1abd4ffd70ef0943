// The pipeline bubble a run's own durations imply: the schedule's tasks on each device's
// compute and comm streams, in the order the pipeline strategy enqueues them, replayed with
// the durations the trace measured, and again with effects taken out one at a time to name
// why the prediction differs from the textbook formula.
//
// Every schedule the engine runs is replayed: GPipe, 1F1B, interleaved, and the zero-bubble
// ZB-H1 and ZB-V, whose backwards are split into B (input gradient, on the critical path)
// and W (weight gradient, placed to fill the bubble); with activation recomputation the
// forward re-run inside each backward is part of that backward's time. Their textbook
// figure replays equal F, B and W (a whole backward: B + W), so for them the `schedule`
// cause is what this run's own proportions do to the same order: W's share of the backward
// (ZB-H1's bubble is (p - 1)(F + B - W): the shorter W is beside F and B, the less of the
// bubble it fills) and recomputation's extra forward in each B.
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
