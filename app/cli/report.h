// The human-readable summary table `paralleldeck-run` prints.
#pragma once

#include <ostream>

#include <vector>

#include "pd/device_group.h"
#include "pd/metrics.h"
#include "pd/run.h"

namespace pd::cli {

void print_report(std::ostream& out, const RunConfig& config, const RunResult& result,
                  const RunMetrics& metrics);

// --comm-log: each all-reduce's algorithm and why, one line per call (the group's first member
// logs it), as NCCL_DEBUG=INFO does.
void print_comm_log(std::ostream& out, const Trace& trace);

// --verbose: each product shape the run ran, its kernel, GFLOP/s and the fraction of the FMA
// peak of the threads a device runs (measured here, bench_fma_peak.h).
void print_products(std::ostream& out, const std::vector<CpuProductClass>& products,
                    int intra_op_threads, int devices);

}  // namespace pd::cli
