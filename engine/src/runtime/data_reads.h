// A run's dataset as its trace records it: what the plan says each pipeline keeps and reads,
// which examples each device read in each step, and which devices left the loop when their
// pipeline ran out.
#pragma once

#include <string>
#include <vector>

#include "pd/dataset.h"
#include "pd/trace.h"

namespace pd {

// The plan's figures (policy, batches, shards, steps per epoch) into `out`.
void describe_data(const DataPlan& plan, Trace::DataReads& out);
// The devices (= replicas) whose pipeline has no batch for `step`.
std::vector<int> devices_without_batch(const DataPlan& plan, int step);
// Appends what each device with a batch reads in `step`.
void record_reads(const DataPlan& plan, int step, Trace::DataReads& out);
// "step 3: devices 6 and 7 (input pipeline 3, 2 batches an epoch) had no batch and left the
// training loop; the others went on into the step's collectives" (empty when none left).
std::string left_loop_words(const Trace::DataReads& data);

}  // namespace pd
