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
// The same for what `trace` holds: an imported trace is titled by what it came from
// ("Imported PyTorch profiler (Kineto) · 2 of 128 ranks · nccl"), the engine's runs by config.
QString run_title(const pd::RunConfig& config, const pd::Trace& trace);
// "steps 2–4" (1-based, as the CLI counts): the steps busy, communication and bubble figures
// cover; empty when no step recorded work.
QString figure_steps_text(const pd::RunMetrics& metrics);
// What ran out of memory: the run's error, or where several devices ran out (every replica
// of data parallelism at the same allocation) all of them, the first described in full:
// "devices 0, 1, 2 and 3 all ran out of memory; the first, device 0 out of memory: ...".
QString out_of_memory_text(const pd::RunResult& result);
// The collectives the tables and lines count: those of the figure steps (the steps the
// "Figures over" line names), or the whole run's when no step recorded work.
const std::vector<pd::CollectiveMetrics>& counted_collectives(const pd::RunMetrics& metrics);
// "+2.1 pts stage imbalance, +1.0 transfers, −3.3 optimizer tail": the causes that moved the
// prediction at least 0.05 points from the formula, largest first.
QString bubble_causes_text(const pd::BubbleCauses& causes, pd::PipelineSchedule schedule);
// One line for the Show me note area: "Bubble 31% measured (steps 2–2), 30% predicted from
// this run's stage times, 27% textbook: +2.1 pts stage imbalance, ...". Empty without a
// pipeline bubble.
QString bubble_note(const pd::RunMetrics& metrics);
std::vector<MetricLine> summary_lines(const pd::RunConfig& config, const pd::RunResult& result,
                                      const pd::RunMetrics& metrics);

}  // namespace pd::vis
