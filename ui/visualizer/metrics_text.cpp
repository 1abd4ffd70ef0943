#include "visualizer/metrics_text.h"

#include <QStringList>

#include <algorithm>
#include <cmath>
#include "pd/flops.h"

#include "pd/topology.h"
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
    if (config.accumulate > 1)
        parts << (config.reduce_every_microstep
                      ? QStringLiteral("%1 micro-steps, reduced every one")
                      : QStringLiteral("%1 micro-steps (no_sync)"))
                     .arg(config.accumulate);
    if (config.precision == pd::Precision::bf16_mixed && config.fp32_reduce &&
        config.strategy == pd::StrategyKind::zero3)
        parts << QStringLiteral("MixedPrecisionPolicy (bf16 params, fp32 reduce and shards)");
    else if (config.precision != pd::Precision::fp32)
        parts << (config.master_weights ? QStringLiteral("%1 (fp32 master weights)")
                                        : QStringLiteral("%1 (no master weights)"))
                     .arg(qs(pd::name_of(config.precision)));
    if (config.precision == pd::Precision::fp16_mixed)
        parts << (config.loss_scaling.dynamic ? QStringLiteral("dynamic loss scale from %1")
                                              : QStringLiteral("loss scale %1"))
                     .arg(config.loss_scaling.init, 0, 'g', 6);
    if (config.clip_grad_norm > 0)
        parts << QStringLiteral("clip norm %1").arg(config.clip_grad_norm, 0, 'g', 4);
    if (config.strategy == pd::StrategyKind::dp && config.loss_replica_mean)
        parts << QStringLiteral("per-replica loss means, summed");
    if (config.strategy == pd::StrategyKind::cp && config.cp_ulysses)
        parts << QStringLiteral("Ulysses all-to-alls");
    if (config.tf32) parts << QStringLiteral("TF32 products");
    if (config.bf16_products)
        parts << QStringLiteral("bf16 product inputs (matmul precision medium)");
    if (config.fp8.enabled())
        parts << QStringLiteral("FP8 %1 (amax history %2, %3)")
                     .arg(config.fp8.format == pd::Fp8Format::hybrid ? QStringLiteral("HYBRID")
                                                                     : QStringLiteral("E4M3"))
                     .arg(config.fp8.amax_history_len)
                     .arg(qs(pd::name_of(config.fp8.amax_compute_algo)));
    if (config.comm_hook != pd::DType::fp32)
        parts << QStringLiteral("%1_compress_hook").arg(qs(pd::name_of(config.comm_hook)));
    if (config.powersgd.rank > 0)
        parts << QStringLiteral("PowerSGD rank %1 from step %2")
                     .arg(config.powersgd.rank)
                     .arg(config.powersgd.start_iter + 1);
    if (config.optimizer == pd::OptimizerKind::lamb) parts << QStringLiteral("LAMB");
    if (config.optimizer == pd::OptimizerKind::adamw8bit)
        parts << QStringLiteral("AdamW8bit, blocks of %1").arg(config.optimizer_blocksize);
    if (config.strategy == pd::StrategyKind::zero3 && !config.reshard_after_forward)
        parts << QStringLiteral("no reshard after forward");
    if (config.strategy == pd::StrategyKind::zero3 && config.quantized_weights)
        parts << QStringLiteral("int8 weight all-gathers (qwZ)");
    if (config.strategy == pd::StrategyKind::zero3 && config.quantized_gradients)
        parts << QStringLiteral("int8 gradient all-to-alls (qgZ)");
    if (config.strategy == pd::StrategyKind::zero3 && config.reshard_to > 0)
        parts << QStringLiteral("reshard to %1 devices after forward (hpZ)").arg(config.reshard_to);
    if (config.recompute != pd::RecomputeMode::none)
        parts << QStringLiteral("%1 recompute").arg(qs(pd::name_of(config.recompute)));
    if (config.strategy == pd::StrategyKind::ps && config.async_updates)
        parts << QStringLiteral("async, staleness ≤ %1").arg(config.max_staleness);
    return parts.join(QStringLiteral(" · "));
}

QString run_title(const pd::RunConfig& config, const pd::Trace& trace) {
    const pd::TraceOrigin& o = trace.origin;
    if (!o.imported) return run_title(config);
    QStringList parts;
    parts << QStringLiteral("Imported: %1").arg(qs(o.producer));
    if (o.world_size > trace.devices)
        parts << QStringLiteral("%1 of %2 ranks").arg(trace.devices).arg(o.world_size);
    else
        parts << (trace.devices == 1 ? QStringLiteral("1 rank")
                                     : QStringLiteral("%1 ranks").arg(trace.devices));
    if (!o.distributed_backend.empty()) parts << qs(o.distributed_backend);
    return parts.join(QStringLiteral(" · "));
}

namespace {

// The device (or rank) the others waited for, found from the trace alone.
MetricLine straggler_line(const pd::StragglerMetrics& s, const QString& label,
                          const QString& noun) {
    return {label,
            QStringLiteral("%1 %2 arrived last at %3% of %4 collectives where someone waited · "
                           "the others waited %5 a step each")
                .arg(noun)
                .arg(s.device)
                .arg(s.last_fraction * 100, 0, 'f', 0)
                .arg(s.calls)
                .arg(duration_text(s.wait_s_per_step * 1e9)),
            QStringLiteral("From the trace alone: in each collective where someone waited at "
                           "least a fifth of it, the one whose call was the shortest arrived last "
                           "(a straggler arrives last most of the time)")};
}

// An imported trace's lines: what its events record, and what they do not, said as unknown.
std::vector<MetricLine> imported_lines(const pd::RunResult& result, const pd::RunMetrics& m) {
    const pd::TraceOrigin& o = result.trace.origin;
    std::vector<MetricLine> out;
    out.push_back({QStringLiteral("Source"),
                   QStringLiteral("%1 file%2, %3 events read")
                       .arg(o.files.size())
                       .arg(o.files.size() == 1 ? QString() : QStringLiteral("s"))
                       .arg(o.raw_events),
                   QStringLiteral("One device row per file (rank), in rank order")});
    out.push_back({QStringLiteral("Clock"), qs(o.clock_alignment),
                   QStringLiteral("How the ranks' times were put on one axis")});
    if (m.steps.empty()) {
        out.push_back({QStringLiteral("Steps"), QStringLiteral("unknown: no ProfilerStep# marks"),
                       QStringLiteral("Step time needs the profiler's step marks")});
    } else {
        QStringList numbers;
        const auto& ps = o.profiler_steps;
        bool consecutive = ps.size() > 3;
        for (std::size_t i = 1; consecutive && i < ps.size(); ++i)
            consecutive = ps[i] == ps[i - 1] + 1;
        if (consecutive)
            numbers << QStringLiteral("%1–%2").arg(ps.front()).arg(ps.back());
        else
            for (int s : ps) numbers << QString::number(s);
        const QString steps = figure_steps_text(m);
        out.push_back({QStringLiteral("Steps"),
                       QStringLiteral("%1 (ProfilerStep# %2)%3")
                           .arg(m.steps.size())
                           .arg(numbers.join(QStringLiteral(", ")),
                                steps.isEmpty() ? QString()
                                                : QStringLiteral(" · figures over %1").arg(steps)),
                       QStringLiteral("Busy and communication figures leave the first step out "
                                      "when there are more, as for the engine's runs")});
        out.push_back({QStringLiteral("Step time"), duration_text(m.median_step_time_s * 1e9),
                       QStringLiteral("Median over the steps: from the first to the last device "
                                      "event of each step")});
    }
    out.push_back({QStringLiteral("Throughput"), QStringLiteral("unknown"),
                   QStringLiteral("A profiler trace does not record the batch size")});
    if (!m.devices.empty()) {
        double busy = 0;
        for (const auto& d : m.devices) busy += d.busy_fraction;
        out.push_back({QStringLiteral("Busy (mean)"),
                       percent_text(busy / static_cast<double>(m.devices.size())),
                       QStringLiteral("Compute-lane time over the figure steps, averaged over "
                                      "ranks")});
    }
    out.push_back(
        {QStringLiteral("Communication"),
         QStringLiteral("exposed %1 · overlapped %2, summed over %3 ranks")
             .arg(duration_text(m.exposed_comm_s * 1e9), duration_text(m.overlapped_comm_s * 1e9))
             .arg(m.devices.size()),
         QStringLiteral("HTA's definition: collective time not hidden behind compute "
                        "kernels (or, in a CPU trace, the training thread's ops)")});
    for (const auto& c : counted_collectives(m)) {
        const QString size =
            c.bytes ? bytes_text(static_cast<double>(c.bytes)) : QStringLiteral("size unknown");
        const QString group = c.ranks > 0 ? QStringLiteral("on %1 ranks").arg(c.ranks)
                                          : QStringLiteral("group unknown");
        QString bw = QStringLiteral("mean %1").arg(duration_text(c.mean_time_s * 1e9));
        if (c.bytes) bw += QStringLiteral(" · algbw %1").arg(gbps_text(c.algbw_gbps));
        if (c.bytes && c.ranks > 0)
            bw += QStringLiteral(" · busbw %1").arg(gbps_text(c.busbw_gbps));
        out.push_back({qs(c.op),
                       QStringLiteral("%1 × %2, %3: %4").arg(c.count).arg(size, group, bw),
                       QStringLiteral("Per rank; sizes from the trace's own message sizes, where "
                                      "the profiler recorded them")});
    }
    for (const auto& u : o.unknown) {
        const auto colon = u.find(':');
        out.push_back({qs(u.substr(0, colon)).replace(0, 1, qs(u.substr(0, 1)).toUpper()),
                       QStringLiteral("unknown") +
                           (colon == std::string::npos ? QString() : qs(u.substr(colon))),
                       QStringLiteral("Not in the trace, so not guessed")});
    }
    if (m.cluster.straggler.calls > 0)
        out.push_back(straggler_line(m.cluster.straggler, QStringLiteral("Last to arrive"),
                                     QStringLiteral("rank")));
    return out;
}

}  // namespace

QString out_of_memory_text(const pd::RunResult& result) {
    if (result.ooms.size() < 2) return result.oom ? qs(result.oom->describe()) : qs(result.error);
    QStringList devices;
    for (const auto& o : result.ooms) devices << QString::number(o.device);
    const QString last = devices.takeLast();
    return QStringLiteral("devices %1 and %2 all ran out of memory; the lowest, %3")
        .arg(devices.join(QStringLiteral(", ")), last, qs(result.ooms.front().describe()));
}

const std::vector<pd::CollectiveMetrics>& counted_collectives(const pd::RunMetrics& m) {
    return m.figure_steps.empty() ? m.collectives : m.figure_collectives;
}

QString figure_steps_text(const pd::RunMetrics& m) {
    if (m.figure_steps.empty()) return {};
    if (m.figure_steps.count() == 1) return QStringLiteral("step %1").arg(m.figure_steps.first + 1);
    return QStringLiteral("steps %1–%2").arg(m.figure_steps.first + 1).arg(m.figure_steps.last + 1);
}

QString bubble_causes_text(const pd::BubbleCauses& c, pd::PipelineSchedule schedule) {
    const std::vector<pd::NamedBubbleCause> shown = pd::named_bubble_causes(c, schedule);
    QStringList parts;
    for (std::size_t i = 0; i < shown.size(); ++i) {
        const double pts = shown[i].fraction * 100.0;
        // A true minus sign; the first cause carries the unit.
        const QString number = (pts < 0 ? QStringLiteral("−") : QStringLiteral("+")) +
                               QString::number(std::abs(pts), 'f', 1);
        parts << (i == 0 ? QStringLiteral("%1 pts %2") : QStringLiteral("%1 %2"))
                     .arg(number, QString::fromStdString(shown[i].name));
    }
    return parts.join(QStringLiteral(", "));
}

QString bubble_note(const pd::RunMetrics& m) {
    if (!m.bubble) return {};
    const pd::BubbleMetrics& b = *m.bubble;
    auto pct = [](double f) { return QStringLiteral("%1%").arg(f * 100.0, 0, 'f', 0); };
    QString text = QStringLiteral("Bubble %1 measured").arg(pct(b.measured));
    const QString steps = figure_steps_text(m);
    if (!steps.isEmpty()) text += QStringLiteral(" (%1)").arg(steps);
    if (b.predicted)
        text += QStringLiteral(", %1 predicted from this run's stage times")
                    .arg(pct(b.predicted->fraction));
    text += QStringLiteral(", %1 textbook").arg(pct(b.theoretical));
    if (b.predicted) {
        const QString causes = bubble_causes_text(b.predicted->causes, b.schedule);
        if (!causes.isEmpty()) text += QStringLiteral(": ") + causes;
    }
    return text;
}

// " · steps 11.9–13.1 ms": how far a headline figure moved over the steps it covers (the
// noise beside it); empty with fewer than two steps.
template <typename Format>
QString step_range_text(const std::vector<double>& samples, Format format) {
    const pd::Spread s = pd::spread_of(samples);
    if (s.samples < 2) return {};
    return QStringLiteral(" · %1 steps %2–%3").arg(s.samples).arg(format(s.min), format(s.max));
}

std::vector<double> step_samples_of(const pd::RunMetrics& m,
                                    double (*read)(const pd::StepFigures&)) {
    std::vector<double> v;
    for (const pd::StepFigures& f : m.figure_step_samples) v.push_back(read(f));
    return v;
}

std::vector<MetricLine> summary_lines(const pd::RunConfig& config, const pd::RunResult& result,
                                      const pd::RunMetrics& m) {
    if (result.trace.origin.imported) return imported_lines(result, m);
    std::vector<MetricLine> out;
    QString status =
        result.partial ? QStringLiteral("running, drawn so far") : qs(pd::name_of(result.status));
    if (result.status == pd::RunStatus::out_of_memory)
        status += QStringLiteral(": ") + out_of_memory_text(result);
    else if (result.status != pd::RunStatus::ok && !result.error.empty())
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
        const QString steps = figure_steps_text(m);
        if (!steps.isEmpty())
            out.push_back(
                {QStringLiteral("Figures over"),
                 (m.figure_steps.first > 0
                      ? QStringLiteral("%1 (step 1 left out: cold start)").arg(steps)
                      : steps) +
                     (m.runs_pooled > 1 ? QStringLiteral(" of each of %1 runs (the card's repeats; "
                                                         "the timeline shows the first)")
                                              .arg(m.runs_pooled)
                                        : QString()),
                 QStringLiteral("Busy, communication and bubble figures cover these "
                                "steps; the first pays for page faults and cold "
                                "caches, so it is left out when there are more")});
        const auto ns = [](double seconds) { return duration_text(seconds * 1e9); };
        out.push_back(
            {QStringLiteral("Step time"),
             QStringLiteral("%1 median%2")
                 .arg(duration_text(m.median_step_time_s * 1e9),
                      step_range_text(
                          step_samples_of(m, [](const pd::StepFigures& f) { return f.time_s; }),
                          ns)),
             QStringLiteral("Median over the run's training steps; the range is the fastest and "
                            "slowest figure step, the machine's noise: a difference smaller "
                            "than it shows nothing")});
        out.push_back({QStringLiteral("Throughput"),
                       QStringLiteral("%1 samples/s").arg(m.samples_per_s, 0, 'f', 0),
                       QStringLiteral("Global batch / median step time")});
        if (result.trace.backend == pd::BackendKind::cpu) {
            const int threads = result.trace.intra_op_threads;
            out.push_back({QStringLiteral("Threads"),
                           QStringLiteral("%1 intra-op thread%2 per device%3")
                               .arg(threads)
                               .arg(threads == 1 ? QString() : QStringLiteral("s"))
                               .arg(result.trace.clock == pd::ClockMode::device
                                        ? QStringLiteral(" (the device clock times one thread)")
                                        : QString()),
                           QStringLiteral("Matrix products and element-wise kernels are split over "
                                          "these threads (--threads, scenario key threads)")});
        }
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
                 QStringLiteral("%1 · idle %2 per device%3")
                     .arg(percent_text(busy / static_cast<double>(m.devices.size())),
                          duration_text(idle / static_cast<double>(m.devices.size()) * 1e9),
                          step_range_text(step_samples_of(m,
                                                          [](const pd::StepFigures& f) {
                                                              return f.mean_busy_fraction();
                                                          }),
                                          percent_text)),
                 QStringLiteral("Per device, averaged over devices: compute-stream time in "
                                "forward, backward and optimizer work over the figure steps")});
        }
        out.push_back(
            {QStringLiteral("Communication"),
             QStringLiteral("exposed %1 · overlapped %2, summed over %3 devices%4")
                 .arg(duration_text(m.exposed_comm_s * 1e9),
                      duration_text(m.overlapped_comm_s * 1e9))
                 .arg(m.devices.size())
                 .arg(step_range_text(
                     step_samples_of(m, [](const pd::StepFigures& f) { return f.exposed_comm_s; }),
                     [](double seconds) {
                         return QStringLiteral("exposed ") + duration_text(seconds * 1e9);
                     })),
             QStringLiteral("Summed over devices (each device's own figures are in the table), "
                            "over the figure steps. Exposed: communication not hidden behind "
                            "compute (HTA's definition); overlapped: running while compute "
                            "runs.")});
    }
    if (m.bubble) {
        const pd::BubbleMetrics& b = *m.bubble;
        std::vector<double> per_step;
        for (const pd::StepFigures& f : m.figure_step_samples)
            if (f.bubble) per_step.push_back(*f.bubble);
        const QString measured = percent_text(b.measured) + QStringLiteral(" median") +
                                 step_range_text(per_step, percent_text)
                                     .replace(QStringLiteral(" · "), QStringLiteral(", "));
        out.push_back(
            {QStringLiteral("Pipeline bubble"),
             b.predicted
                 ? QStringLiteral("measured %1 · predicted %2 from this run's stage times · "
                                  "theoretical %3")
                       .arg(measured, percent_text(b.predicted->fraction),
                            percent_text(b.theoretical))
                 : QStringLiteral("measured %1 · theoretical %2")
                       .arg(measured, percent_text(b.theoretical)),
             QStringLiteral("Measured 1 − Σbusy/(p·T), median over the figure steps; predicted: "
                            "the schedule replayed with this run's own forward, backward, "
                            "transfer and optimizer times, its critical path as T; theoretical "
                            "(p−1)/(m+p−1), interleaved (p−1)/(v·m+p−1), zero-bubble: the "
                            "schedule's own order replayed with equal F, B and W times (ZB-H1: "
                            "(p−1)/(3m+p−1))")});
        if (b.predicted) {
            const QString causes = bubble_causes_text(b.predicted->causes, b.schedule);
            out.push_back(
                {QStringLiteral("Bubble vs formula"),
                 causes.isEmpty() ? QStringLiteral("none: the run keeps to the formula") : causes,
                 QStringLiteral("Predicted − theoretical, added one effect at a time: each "
                                "stage's own times (imbalance), transfers and collectives, "
                                "untraced launch gaps between tasks, the optimizer after the "
                                "last backward (it is busy time, so it can lower the bubble), "
                                "micro-batch 0's cold times, the other micro-batches' spread")});
        }
    }
    // FLOPs counted from the model's products; utilisation only where this process has
    // measured the FMA peak already (a card's MFU claim does), since measuring takes a moment.
    if (const auto f = pd::step_flops(config); f && !result.trace.origin.imported) {
        const auto gflop = [](double flops) {
            return QString::number(flops / 1e9, 'g', 4) + QStringLiteral(" GFLOP");
        };
        QString text = QStringLiteral("model %1 · ran %2 · 6ND %3")
                           .arg(gflop(f->model), gflop(f->hardware), gflop(f->six_nd));
        const auto peak = pd::known_fma_peak(std::max(1, result.trace.intra_op_threads));
        if (peak && peak->gflops > 0 && m.median_step_time_s > 0)
            text +=
                QStringLiteral(" · MFU %1, HFU %2 of %3 GFLOP/s a device (%4)")
                    .arg(percent_text(pd::utilisation(f->model, m.median_step_time_s,
                                                      config.devices, peak->gflops)),
                         percent_text(pd::utilisation(f->hardware, m.median_step_time_s,
                                                      config.devices, peak->gflops)),
                         QString::number(peak->gflops, 'f', 0), QString::fromStdString(peak->isa));
        out.push_back({QStringLiteral("FLOPs per step"), text,
                       QStringLiteral("Every matrix product of the step counted (2 per "
                                      "multiply-add; element-wise work left out, as PaLM does): "
                                      "model = forward and backward; ran = with recomputation; "
                                      "6ND = 6 x parameters x tokens. MFU and HFU: those over "
                                      "the median step time x devices x the measured FMA peak")});
    }
    // 8-bit optimizer states: what their quantisation loses, measured at every update.
    const auto m_error = pd::state_quantization_error(result.trace.steps, true);
    const auto v_error = pd::state_quantization_error(result.trace.steps, false);
    if (m_error && v_error)
        out.push_back(
            {QStringLiteral("8-bit states"),
             QStringLiteral("m stored within %1 · v within %2 (RMS) · blocks of %3")
                 .arg(percent_text(*m_error), percent_text(*v_error))
                 .arg(config.optimizer_blocksize),
             QStringLiteral("AdamW8bit: each update's new m and v, quantized to 8-bit codes of "
                            "bitsandbytes' dynamic maps with one fp32 absmax per block, against "
                            "their fp32 values: ||dequantized − fp32|| / ||fp32|| over the 8-bit "
                            "tensors, mean over the updates")});
    // TF32 or bf16 product inputs: their rounding, measured at every product.
    {
        double sum = 0;
        int n = 0;
        for (const pd::StepRecord& s : result.trace.steps)
            if (s.product_input_error >= 0) {
                sum += s.product_input_error;
                ++n;
            }
        if (n > 0)
            out.push_back(
                {QStringLiteral("Product inputs"),
                 QStringLiteral("rounded to %1: error %2 (relative RMS)")
                     .arg(config.bf16_products ? QStringLiteral("bf16 (8 significant bits)")
                                               : QStringLiteral("TF32 (11 significant bits)"))
                     .arg(sum / n, 0, 'g', 2),
                 QStringLiteral("Every matrix product's two inputs rounded before the product "
                                "(its sums stay fp32): ||x − round(x)|| / ||x|| over the inputs, "
                                "mean over the steps; the tensors themselves stay float32")});
    }
    // FP8: what the blocks' casts did, measured at every cast.
    if (const auto f = pd::fp8_run_summary(result.trace.steps)) {
        const QString grad = config.fp8.format == pd::Fp8Format::hybrid ? QStringLiteral("E5M2")
                                                                        : QStringLiteral("E4M3");
        QString text =
            QStringLiteral("error %1 forward (E4M3)").arg(percent_text(f->forward_error));
        if (f->first_flushed >= 0)
            text += QStringLiteral(
                        " · gradients (%1): error %2 in the last step; flushed to 0: "
                        "%3 before any history, %4 in the last step")
                        .arg(grad, percent_text(f->last_gradient_error),
                             percent_text(f->first_flushed), percent_text(f->last_flushed));
        text += QStringLiteral(" · %1 saturated · scales ×%2 apart")
                    .arg(f->saturated)
                    .arg(f->scale_spread, 0, 'g', 3);
        out.push_back(
            {QStringLiteral("FP8 casts"), text,
             QStringLiteral("Device 0's casts of the blocks' product operands: relative RMS error "
                            "||x·s − fp8(x·s)|| / ||x·s|| (forward: mean over the steps); "
                            "gradient values not zero that became zero, in the first step with "
                            "any (scale 1: no amax history yet) and in the last; values clamped at "
                            "the largest FP8 number; the "
                            "last step's largest per-tensor scale over its smallest")});
    }
    if (!m.staleness_histogram.empty()) {
        QStringList counts;
        int most = 0;
        for (const auto& [staleness, count] : m.staleness_histogram) {
            counts << QStringLiteral("%1 × %2").arg(count).arg(staleness);
            most = std::max(most, staleness);
        }
        out.push_back(
            {QStringLiteral("Staleness"),
             QStringLiteral("gradients applied %1 versions late · at most %2")
                 .arg(counts.join(QStringLiteral(", ")))
                 .arg(most),
             QStringLiteral("Parameter server: each applied gradient's server version minus the "
                            "version its worker computed on (0 for a synchronous server; an "
                            "asynchronous one computes step k on version k − max staleness)")});
    }
    // The cluster: where the run's devices sit, what crossed each link tier, which all-reduce
    // algorithms ran, and the device the others waited for.
    const int nodes = config.cluster.node_count(config.devices);
    if (nodes > 1 || !config.cluster.preset.empty() || config.cluster.nvls) {
        const pd::Topology topology(config.cluster, config.link, config.devices);
        QString where =
            QStringLiteral("%1 node%2 × %3 devices · inside %4 %5")
                .arg(nodes)
                .arg(nodes == 1 ? QString() : QStringLiteral("s"))
                .arg(config.devices / std::max(1, nodes))
                .arg(QString::fromLatin1(topology.transport_name(pd::LinkTier::intra_node)))
                .arg(gbps_text(config.link.bytes_per_ns));
        if (nodes > 1)
            where +=
                QStringLiteral(" · between %1 %2 per NIC, %3 device%4 per NIC")
                    .arg(QString::fromLatin1(topology.transport_name(pd::LinkTier::inter_node)))
                    .arg(gbps_text(config.cluster.inter_link().bytes_per_ns))
                    .arg(config.cluster.devices_per_nic)
                    .arg(config.cluster.devices_per_nic == 1 ? QString() : QStringLiteral("s"));
        if (config.cluster.nvls) where += QStringLiteral(" · NVLS");
        if (config.cluster.sharp) where += QStringLiteral(" · SHARP");
        if (config.cluster.reducers > 0)
            where += QStringLiteral(" · %1 reducer node%2")
                         .arg(config.cluster.reducers)
                         .arg(config.cluster.reducers == 1 ? QString() : QStringLiteral("s"));
        out.push_back({config.cluster.preset.empty()
                           ? QStringLiteral("Cluster")
                           : QStringLiteral("Cluster (%1)").arg(qs(config.cluster.preset)),
                       where,
                       QStringLiteral("The device clock times each transfer by the tier it "
                                      "crosses: latency + bytes × sharing / bandwidth")});
    }
    for (int t = 1; t < pd::kLinkTierCount; ++t) {
        const pd::TierMetrics& tm = m.cluster.tiers[static_cast<std::size_t>(t)];
        if (tm.transfers == 0) continue;
        // On one node every transfer is inside it: the line is then what the devices sent.
        const bool one_node = nodes < 2 && !config.cluster.nvls;
        static const char* const names[] = {"",
                                            "Inside nodes",
                                            "Between nodes",
                                            "Through NVLS",
                                            "Through SHARP",
                                            "PCIe to and from host",
                                            "NVMe reads and writes"};
        static_assert(std::size(names) == pd::kLinkTierCount);
        const bool host =
            t == static_cast<int>(pd::LinkTier::host) || t == static_cast<int>(pd::LinkTier::nvme);
        out.push_back(
            {one_node && !host ? QStringLiteral("Bytes sent") : QString::fromLatin1(names[t]),
             QStringLiteral("%1 a step · transfers %2 a step (all devices)")
                 .arg(bytes_text(tm.bytes_per_step))
                 .arg(duration_text(tm.busy_s_per_step * 1e9)),
             QStringLiteral("Bytes that crossed this tier per figure step, all devices "
                            "together, and the time of those transfers on the "
                            "device clock summed over devices")});
    }
    if (config.allreduce_algorithm != pd::CollectiveAlgorithm::ring &&
        !m.cluster.allreduce_calls_per_step.empty()) {
        QStringList used;
        for (const auto& [algorithm, calls] : m.cluster.allreduce_calls_per_step)
            used << QStringLiteral("%1 × %2").arg(calls, 0, 'g', 3).arg(qs(algorithm));
        out.push_back({QStringLiteral("All-reduce by"),
                       used.join(QStringLiteral(", ")) + QStringLiteral(" a step per device"),
                       QStringLiteral("allreduce_algorithm %1: the tuner's choice per call "
                                      "(paralleldeck-run --comm-log prints each with its reason)")
                           .arg(qs(pd::name_of(config.allreduce_algorithm)))});
    }
    if (m.cluster.straggler.calls > 0 &&
        (config.straggler.active() || m.cluster.straggler.last_fraction >= 0.75))
        out.push_back(straggler_line(m.cluster.straggler, QStringLiteral("Straggler"),
                                     QStringLiteral("device")));
    for (const auto& c : counted_collectives(m))
        out.push_back({qs(c.op),
                       QStringLiteral("%1 × %2 on %3 ranks: algbw %4 · busbw %5, per device")
                           .arg(c.count)
                           .arg(bytes_text(static_cast<double>(c.bytes)))
                           .arg(c.ranks)
                           .arg(gbps_text(c.algbw_gbps), gbps_text(c.busbw_gbps)),
                       QStringLiteral("Per device; busbw = algbw × nccl-tests' factor (all-reduce "
                                      "2(n−1)/n, reduce-scatter and all-gather (n−1)/n)")});
    const pd::Trace& trace = result.trace;
    for (const auto& r : trace.restarts) {
        const int kept = result.steps_completed;
        const int ran = static_cast<int>(trace.trained_step.size());
        out.push_back(
            {QStringLiteral("Restart"),
             QStringLiteral("%1 at step %2; every worker restarted on %3 device(s), %4; "
                            "%5 of %6 steps run were kept (goodput %7%)")
                 .arg(qs(r.why))
                 .arg(r.failed_at < ran ? trace.trained_step[static_cast<std::size_t>(r.failed_at)]
                                        : r.failed_at)
                 .arg(r.devices_after)
                 .arg(r.resumed_from >= 0
                          ? QStringLiteral("resuming from the checkpoint after step %1")
                                .arg(r.resumed_from)
                          : qs(r.checkpoint))
                 .arg(kept)
                 .arg(ran)
                 .arg(ran > 0 ? QString::number(100.0 * kept / ran, 'f', 0) : QStringLiteral("—")),
             QStringLiteral("torchrun's agent stops every worker when one fails and starts them "
                            "all again; the script loads the newest checkpoint, and the steps "
                            "after it are run again")});
    }
    if (trace.resumed_from.step >= 0 && trace.restarts.empty())
        out.push_back({QStringLiteral("Resumed from"),
                       QStringLiteral("a checkpoint after step %1, written by %2 on %3 device(s)")
                           .arg(trace.resumed_from.step)
                           .arg(qs(trace.resumed_from.strategy))
                           .arg(trace.resumed_from.devices),
                       QStringLiteral("The loader assembled the checkpoint's slices and each "
                                      "device took its own part: parameters and optimizer state")});
    if (const pd::CheckpointSummary c = pd::last_checkpoint(trace); c.step >= 0) {
        out.push_back({QStringLiteral("Checkpoint"),
                       QStringLiteral("after step %1: %2 file(s), %3 in all (each device writes "
                                      "what it owns, on its host lane)")
                           .arg(c.step)
                           .arg(c.files)
                           .arg(bytes_text(static_cast<double>(c.bytes))),
                       QStringLiteral("A sharded checkpoint: one file per device plus "
                                      "metadata.json naming each file's slice of the model")});
    }
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
        if (s.host_total() > 0)
            out.push_back(
                {QStringLiteral("Host memory (device 0)"),
                 QStringLiteral("%1 measured · %2 analytic · optimizer state %3")
                     .arg(bytes_text(static_cast<double>(s.host_total())),
                          bytes_text(s.analytic_host),
                          bytes_text(static_cast<double>(s.host_optimizer_state))),
                 QStringLiteral("ZeRO-Offload: the device's optimizer state, its shard's "
                                "parameters and its fp32 gradients, kept in host memory")});
        if (s.nvme_total() > 0)
            out.push_back(
                {QStringLiteral("NVMe (device 0)"),
                 QStringLiteral("%1 measured · %2 analytic · optimizer state %3 · parameters %4")
                     .arg(bytes_text(static_cast<double>(s.nvme_total())),
                          bytes_text(s.analytic_nvme),
                          bytes_text(static_cast<double>(s.nvme_optimizer_state)),
                          bytes_text(static_cast<double>(s.nvme_parameters))),
                 QStringLiteral("ZeRO-Infinity: what the device keeps in its NVMe share, swapped "
                                "through host memory a unit at a time for the update")});
    }
    if (!m.stage_activations.empty() &&
        m.stage_activations.front().analytic_activation_bytes >= 0) {
        const auto& a = m.stage_activations.front();
        out.push_back(
            {QStringLiteral("Activations (device 0)"),
             QStringLiteral("%1 peak · %2 analytic")
                 .arg(bytes_text(static_cast<double>(a.peak_activation_bytes)),
                      bytes_text(a.analytic_activation_bytes)),
             QStringLiteral("The most activation bytes held, beside Korthikanti et al.'s count "
                            "for one micro-batch in fp32 without dropout: s·b·h·(16 + 48/t + "
                            "4·a·s/(h·t)) + 16·s·b a block (all over t with sequence "
                            "parallelism), plus the inputs, the head's input and its gradient")});
    }
    if (const pd::ExpertRouting& r = result.trace.routing; r.experts > 0) {
        QStringList kept;
        for (long long t : r.tokens_per_expert) kept << QString::number(t);
        out.push_back({QStringLiteral("Tokens per expert"), kept.join(QStringLiteral(" · ")),
                       QStringLiteral("Token choices each expert kept, expert 0 first, over every "
                                      "step's forward and every MoE block")});
        const double share =
            r.assignments ? static_cast<double>(r.dropped) / static_cast<double>(r.assignments)
                          : 0.0;
        out.push_back({QStringLiteral("Dropped"),
                       QStringLiteral("%1 of %2 choices (%3%) · room for %4 of a sequence's "
                                      "tokens per expert")
                           .arg(r.dropped)
                           .arg(r.assignments)
                           .arg(100.0 * share, 0, 'f', 1)
                           .arg(r.capacity),
                       QStringLiteral("A choice is dropped when its expert already holds "
                                      "capacity factor × top-k × sequence length / experts "
                                      "tokens of that sequence (top-%1, factor %2); the token "
                                      "then keeps only the residual")
                           .arg(r.top_k)
                           .arg(r.capacity_factor, 0, 'f', 2)});
        if (!r.aux_loss.empty())
            out.push_back(
                {QStringLiteral("Load-balancing loss"),
                 QStringLiteral("%1 → %2")
                     .arg(r.aux_loss.front(), 0, 'f', 4)
                     .arg(r.aux_loss.back(), 0, 'f', 4),
                 QStringLiteral("First and last step: weight × experts × Σ f·P per MoE block, "
                                "averaged over the sequences (Switch Transformer); it is the "
                                "weight per block when routing is even")});
    }
    return out;
}

}  // namespace pd::vis
