// The order in which one pipeline stage runs its forward and backward micro-batch work, for
// GPipe, 1F1B, Megatron's interleaved 1F1B and the zero-bubble schedules ZB-H1 and ZB-V
// (Qi et al., ICLR 2024), which split a backward into B (input gradient) and W (weight
// gradient). Pure functions: tested directly, and the strategy just walks the list.
#pragma once

#include <vector>

#include "pd/run_config.h"

namespace pd {

enum class PipelinePass {
    forward,
    backward,     // the whole backward (B and W together)
    input_grad,   // B: the input gradient only, which the previous stage waits for
    weight_grad,  // W: the weight gradient of a micro-batch whose B has run
};

struct PipelineOp {
    PipelinePass pass = PipelinePass::forward;
    int chunk = 0;  // the stage's local model chunk (0..v-1); see global_chunk
    int microbatch = 0;
    bool forward() const { return pass == PipelinePass::forward; }
    bool operator==(const PipelineOp&) const = default;
};

// The model chunk (0..p*v-1, in model order) a stage's local chunk holds. Interleaved: chunk
// c of stage s is c * p + s. ZB-V: local chunk 0 is s and local chunk 1 is 2p - 1 - s, so the
// model runs down the stages and back up, and the last stage holds two neighbouring chunks.
int global_chunk(PipelineSchedule schedule, int local, int stage, int p);
int stage_of_chunk(PipelineSchedule schedule, int global, int p);
int local_chunk_of(PipelineSchedule schedule, int global, int p);
bool splits_backward(PipelineSchedule schedule);

// Ops of `stage` (0..p-1) for m micro-batches and v chunks per stage (v > 1 only for
// interleaved, which needs m to be a multiple of p).
std::vector<PipelineOp> pipeline_ops(PipelineSchedule schedule, int stage, int p, int m, int v);
// Every stage's ops at once: ZB-V's order is found for all stages together, so a caller that
// needs them all (the strategy, once per run) asks for them here.
std::vector<std::vector<PipelineOp>> pipeline_program(PipelineSchedule schedule, int p, int m,
                                                      int v);

// A schedule's own bubble when every forward, B and W (or whole backward = 2 forwards) of a
// chunk takes one unit of time and transfers take none: its `ops` replayed with their
// dependencies. GPipe and 1F1B give (p-1)/(m+p-1), ZB-H1 (p-1)/(3m+p-1).
double unit_time_bubble(PipelineSchedule schedule, int p, int m, int v);

// Per stage, the most micro-batches its own order holds at once (a forward begun, its last
// backward or W not yet run): the schedule's activation memory in micro-batches, whatever the
// ops' times, since a stage runs its ops in this order.
std::vector<int> order_max_microbatches_alive(PipelineSchedule schedule, int p, int m, int v);

// Splits units (weights = parameter counts) into `parts` contiguous, non-empty ranges that
// minimise the largest part. Returns the first unit of each part plus a final end marker.
std::vector<int> balanced_partition(const std::vector<std::size_t>& weights, int parts);

}  // namespace pd
