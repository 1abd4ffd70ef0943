// The order in which one pipeline stage runs its forward and backward micro-batch work, for
// GPipe, 1F1B and Megatron's interleaved 1F1B. Pure functions: tested directly, and the
// strategy just walks the list.
#pragma once

#include <vector>

#include "pd/run_config.h"

namespace pd {

struct PipelineOp {
    bool forward = true;
    int chunk = 0;  // the stage's local model chunk (0..v-1); global chunk = chunk * p + stage
    int microbatch = 0;
};

// Ops of `stage` (0..p-1) for m micro-batches and v chunks per stage (v > 1 only for
// interleaved, which needs m to be a multiple of p).
std::vector<PipelineOp> pipeline_ops(PipelineSchedule schedule, int stage, int p, int m, int v);

// Splits units (weights = parameter counts) into `parts` contiguous, non-empty ranges that
// minimise the largest part. Returns the first unit of each part plus a final end marker.
std::vector<int> balanced_partition(const std::vector<std::size_t>& weights, int parts);

}  // namespace pd
