#include "visualizer/metrics_text.h"

#include <QStringList>

#include "visualizer/format.h"

namespace pd::vis {

QString run_title(const pd::RunConfig& config) {
    QStringList parts;
    QString strategy = qs(pd::name_of(config.strategy));
    const bool pipelined = config.strategy == pd::StrategyKind::pipeline ||
                           (config.strategy == pd::StrategyKind::hybrid && config.mesh.pp > 1);
    if (pipelined) strategy += QStringLiteral(" ") + qs(pd::name_of(config.schedule));
    parts << strategy
          << (config.devices == 1 ? QStringLiteral("1 device")
                                  : QStringLiteral("%1 devices").arg(config.devices));
    if (config.strategy == pd::StrategyKind::hybrid)
        parts << QStringLiteral("dp %1 × pp %2 × tp %3")
                     .arg(config.mesh.dp)
                     .arg(config.mesh.pp)
                     .arg(config.mesh.tp);
    if (pipelined) parts << QStringLiteral("%1 micro-batches").arg(config.effective_microbatches());
    if (config.strategy == pd::StrategyKind::dp && !config.overlap)
        parts << QStringLiteral("no overlap");
    return parts.join(QStringLiteral(" · "));
}

std::vector<MetricLine> summary_lines(const pd::RunConfig& config, const pd::RunResult& result,
                                      const pd::RunMetrics& m) {
    std::vector<MetricLine> out;
    QString status = qs(pd::name_of(result.status));
    if (result.status != pd::RunStatus::ok && !result.error.empty())
        status += QStringLiteral(": ") + qs(result.error);
    out.push_back({QStringLiteral("Status"),
                   QStringLiteral("%1 (%2 of %3 steps)")
                       .arg(status)
                       .arg(result.steps_completed)
                       .arg(config.steps),
                   {}});
    if (m.steps.empty()) {
        // Nothing completed, nothing to time: say so instead of printing zeros.
        out.push_back({QStringLiteral("Measured"), QStringLiteral("no training step completed"),
                       QStringLiteral("Step time, throughput and busy time need a finished step")});
    } else {
        out.push_back({QStringLiteral("Step time"), duration_text(m.median_step_time_s * 1e9),
                       QStringLiteral("Median over the run's training steps")});
        out.push_back({QStringLiteral("Throughput"),
                       QStringLiteral("%1 samples/s").arg(m.samples_per_s, 0, 'f', 0),
                       QStringLiteral("Global batch / median step time")});
        if (!m.steps.empty())
            out.push_back({QStringLiteral("Loss"),
                           QStringLiteral("%1 → %2")
                               .arg(m.steps.front().loss, 0, 'f', 3)
                               .arg(m.final_loss, 0, 'f', 3),
                           QStringLiteral("First step → last step")});
        if (!m.devices.empty()) {
            double busy = 0, idle = 0;
            for (const auto& d : m.devices) {
                busy += d.busy_fraction;
                idle += d.idle_s;
            }
            out.push_back(
                {QStringLiteral("Busy (mean)"),
                 QStringLiteral("%1 · idle %2 per device")
                     .arg(percent_text(busy / static_cast<double>(m.devices.size())),
                          duration_text(idle / static_cast<double>(m.devices.size()) * 1e9)),
                 QStringLiteral("Compute-stream time in forward, backward and optimizer work")});
        }
        out.push_back(
            {QStringLiteral("Communication"),
             QStringLiteral("exposed %1 · overlapped %2")
                 .arg(duration_text(m.exposed_comm_s * 1e9),
                      duration_text(m.overlapped_comm_s * 1e9)),
             QStringLiteral("Summed over devices. Exposed: communication not hidden behind compute "
                            "(HTA's definition); overlapped: running while compute runs.")});
    }
    if (m.bubble)
        out.push_back(
            {QStringLiteral("Pipeline bubble"),
             QStringLiteral("measured %1 · theoretical %2")
                 .arg(percent_text(m.bubble->measured), percent_text(m.bubble->theoretical)),
             QStringLiteral("Measured 1 − Σbusy/(p·T); theoretical (p−1)/(m+p−1), interleaved "
                            "(p−1)/(v·m+p−1)")});
    for (const auto& c : m.collectives)
        out.push_back({qs(c.op),
                       QStringLiteral("%1 × %2 on %3 ranks: algbw %4 · busbw %5")
                           .arg(c.count)
                           .arg(bytes_text(static_cast<double>(c.bytes)))
                           .arg(c.ranks)
                           .arg(gbps_text(c.algbw_gbps), gbps_text(c.busbw_gbps)),
                       QStringLiteral("Per device; busbw = algbw × nccl-tests' factor (all-reduce "
                                      "2(n−1)/n, reduce-scatter and all-gather (n−1)/n)")});
    if (!m.model_state.empty()) {
        const auto& s = m.model_state.front();
        const double measured = static_cast<double>(s.parameters + s.gradients + s.optimizer_state);
        const double analytic =
            s.analytic_parameters + s.analytic_gradients + s.analytic_optimizer_state;
        out.push_back(
            {QStringLiteral("Model state (device 0)"),
             QStringLiteral("%1 measured · %2 analytic")
                 .arg(bytes_text(measured), bytes_text(analytic)),
             QStringLiteral("Parameters + gradients + optimizer state beside the ZeRO paper's "
                            "formula for this strategy (fp32)")});
    }
    return out;
}

}  // namespace pd::vis
