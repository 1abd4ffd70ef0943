// The headline numbers of a run as label/value lines, shared by the metrics panel and the
// exported picture so both say the same thing in the same words.
#pragma once

#include <QString>
#include <vector>

#include "pd/metrics.h"
#include "pd/run.h"

namespace pd::vis {

struct MetricLine {
    QString label;
    QString value;
    QString tip;  // how the number is defined
};

// "pipeline 1F1B · 4 devices · 8 micro-batches"
QString run_title(const pd::RunConfig& config);
std::vector<MetricLine> summary_lines(const pd::RunConfig& config, const pd::RunResult& result,
                                      const pd::RunMetrics& metrics);

}  // namespace pd::vis
