// The human-readable summary table `paralleldeck-run` prints.
#pragma once

#include <ostream>

#include "pd/metrics.h"
#include "pd/run.h"

namespace pd::cli {

void print_report(std::ostream& out, const RunConfig& config, const RunResult& result,
                  const RunMetrics& metrics);

}  // namespace pd::cli
