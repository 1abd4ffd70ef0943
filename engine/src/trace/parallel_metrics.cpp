// Metrics that need the run's settings as well as its trace.
#include <algorithm>
#include <map>

#include "model/shard_layout.h"
#include "pd/memory_plan.h"
#include "pd/metrics.h"
#include "pd/model.h"
#include "pd/optimizer.h"
#include "strategies/pipeline_schedule.h"
#include "trace/bubble_prediction.h"

namespace pd {

namespace {

BubbleMetrics measure_bubble(const Trace& trace, const RunConfig& config, StepRange steps) {
    BubbleMetrics b;
    const Mesh mesh = config.effective_mesh();
    b.stages = mesh.pp;
    b.microbatches = config.effective_microbatches();
    b.chunks = mesh.pp > 1 ? config.effective_chunks() : 1;
    b.schedule = config.schedule;
    const double p = b.stages, m = b.microbatches, v = b.chunks;
    // The textbook figure: (p-1)/(v m + p-1) for GPipe, 1F1B and interleaved; for the
    // zero-bubble schedules their own order replayed with equal F, B and W times (ZB-H1's is
    // then the paper's (p-1)(F+B-W) over the step, (p-1)/(3m+p-1)).
    b.theoretical = splits_backward(config.schedule) && b.stages > 1
                        ? unit_time_bubble(config.schedule, b.stages, b.microbatches, b.chunks)
                        : (p - 1) / (v * m + p - 1);
    // Per step: the span of its work, and every device's busy compute inside it.
    std::map<int, std::pair<std::int64_t, std::int64_t>> spans;
    std::map<int, std::int64_t> busy;
    for (const auto& e : trace.events) {
        if (!steps.contains(e.step) || e.kind == EventKind::wait) continue;
        auto [it, inserted] = spans.try_emplace(e.step, e.start_ns, e.end_ns);
        if (!inserted) {
            it->second.first = std::min(it->second.first, e.start_ns);
            it->second.second = std::max(it->second.second, e.end_ns);
        }
        if (e.stream == StreamKind::compute && is_compute(e.kind))
            busy[e.step] += e.end_ns - e.start_ns;
    }
    // The median over the steady steps, so one step disturbed by the machine does not decide.
    std::vector<double> per_step;
    for (const auto& [step, span] : spans) {
        const double t = static_cast<double>(span.second - span.first);
        if (t <= 0) continue;
        per_step.push_back(1.0 - static_cast<double>(busy[step]) / (trace.devices * t));
        b.measured_by_step[step] = per_step.back();
    }
    if (!per_step.empty()) {
        std::sort(per_step.begin(), per_step.end());
        const std::size_t n = per_step.size();
        b.measured = n % 2 ? per_step[n / 2] : 0.5 * (per_step[n / 2 - 1] + per_step[n / 2]);
    }
    b.predicted = predict_bubble(trace, config, steps, b.theoretical);
    return b;
}

// For each device: when each (micro-batch, chunk) became alive (first forward starts) and
// died (its last backward ends), from the compute stream's events.
std::vector<StageActivationMetrics> measure_activations(const Trace& trace,
                                                        const RunConfig& config) {
    std::vector<StageActivationMetrics> out;
    const Mesh mesh = config.effective_mesh();
    const std::vector<int> textbook =
        mesh.pp > 1 && config.strategy != StrategyKind::ps
            ? order_max_microbatches_alive(config.schedule, mesh.pp,
                                           config.effective_microbatches(),
                                           config.effective_chunks())
            : std::vector<int>{};
    // One micro-batch alive at a time when nothing is pipelined: its estimate is the peak's.
    double analytic = -1;
    // (Ring attention keeps no probabilities, and a mixture of experts keeps its dispatch
    // buffers: their counts are others, left unknown here.)
    if (config.model == ModelKind::transformer && mesh.pp == 1 &&
        config.strategy != StrategyKind::cp && config.experts == 0) {
        const int samples = config.batch / std::max(1, config.data_parallel_replicas()) /
                            std::max(1, config.accumulate);
        analytic = transformer_activation_bytes(model_shape(config), samples, mesh.tp,
                                                config.sequence_parallel)
                       .total(config.layers);
    }
    for (int d = 0; d < trace.devices; ++d) {
        StageActivationMetrics s;
        s.device = d;
        // A parameter server (device 0) keeps no activations.
        if (!(config.strategy == StrategyKind::ps && d == 0))
            s.analytic_activation_bytes = analytic;
        // A parameter server's devices (server + workers) outnumber its replicas: no stages.
        s.stage = mesh.pp > 1 ? d / (mesh.tp * mesh.dp) : 0;
        if (!textbook.empty())
            s.textbook_max_microbatches_alive = textbook[static_cast<std::size_t>(s.stage)];
        // Peak activation bytes (during steps) and when it happened.
        std::int64_t peak_t = -1;
        for (const auto& sample : trace.memory) {
            if (sample.device != d || sample.category != MemoryCategory::activations) continue;
            if (sample.bytes > s.peak_activation_bytes) {
                s.peak_activation_bytes = sample.bytes;
                peak_t = sample.t_ns;
            }
        }
        // Alive intervals per (step, micro-batch): forward start .. last backward end.
        std::map<std::pair<int, int>, std::pair<std::int64_t, std::int64_t>> alive;
        for (const auto& e : trace.events) {
            if (e.device != d || e.step < 0 || e.microbatch < 0 || e.stream != StreamKind::compute)
                continue;
            auto key = std::make_pair(e.step, e.microbatch);
            auto it = alive.find(key);
            if (e.kind == EventKind::forward) {
                if (it == alive.end()) alive[key] = {e.start_ns, e.end_ns};
            } else if ((e.kind == EventKind::backward || e.kind == EventKind::backward_weight) &&
                       it != alive.end()) {
                it->second.second = std::max(it->second.second, e.end_ns);
            }
        }
        std::vector<std::pair<std::int64_t, int>> edges;
        for (const auto& [key, iv] : alive) {
            edges.push_back({iv.first, +1});
            edges.push_back({iv.second, -1});
            if (peak_t >= iv.first && peak_t < iv.second) ++s.microbatches_alive_at_peak;
        }
        std::sort(edges.begin(), edges.end());  // ends (-1) sort before starts at equal times
        int now = 0;
        for (const auto& [t, delta] : edges) {
            now += delta;
            s.max_microbatches_alive = std::max(s.max_microbatches_alive, now);
        }
        out.push_back(s);
    }
    return out;
}

// Each device's live bytes of parameters, gradients and optimizer state at the run's end, beside
// their analytic figures (memory_plan.h).
std::vector<ModelStateMetrics> model_state(const Trace& trace, const RunConfig& config) {
    const std::vector<ModelStateBytes> analytic = analytic_model_state(config);
    const std::vector<ModelStateBytes> analytic_host = analytic_host_state(config);
    const std::vector<ModelStateBytes> analytic_nvme = analytic_nvme_state(config);
    std::vector<ModelStateMetrics> out;
    for (int d = 0; d < trace.devices; ++d) {
        ModelStateMetrics s;
        s.device = d;
        std::array<std::size_t, kMemoryCategoryCount> live{};
        for (const auto& sample : trace.memory)
            if (sample.device == d) live[static_cast<std::size_t>(sample.category)] = sample.bytes;
        s.parameters = live[static_cast<std::size_t>(MemoryCategory::parameters)];
        s.gradients = live[static_cast<std::size_t>(MemoryCategory::gradients)];
        s.optimizer_state = live[static_cast<std::size_t>(MemoryCategory::optimizer_state)];
        if (d < static_cast<int>(analytic.size())) {
            const ModelStateBytes& a = analytic[static_cast<std::size_t>(d)];
            s.analytic_parameters = a.parameters;
            s.analytic_gradients = a.gradients;
            s.analytic_optimizer_state = a.optimizer_state;
        }
        // What each category holds at the end (its last sample).
        const auto at_end = [d](const std::vector<MemorySample>& samples) {
            std::array<std::size_t, kMemoryCategoryCount> bytes{};
            for (const auto& sample : samples)
                if (sample.device == d)
                    bytes[static_cast<std::size_t>(sample.category)] = sample.bytes;
            return bytes;
        };
        constexpr auto kParams = static_cast<std::size_t>(MemoryCategory::parameters);
        constexpr auto kState = static_cast<std::size_t>(MemoryCategory::optimizer_state);
        const auto host = at_end(trace.host_memory);
        s.host_parameters = host[kParams];
        s.host_gradients = host[static_cast<std::size_t>(MemoryCategory::gradients)];
        s.host_optimizer_state = host[kState];
        if (d < static_cast<int>(analytic_host.size()))
            s.analytic_host = analytic_host[static_cast<std::size_t>(d)].total();
        const auto nvme = at_end(trace.nvme_memory);
        s.nvme_parameters = nvme[kParams];
        s.nvme_optimizer_state = nvme[kState];
        if (d < static_cast<int>(analytic_nvme.size()))
            s.analytic_nvme = analytic_nvme[static_cast<std::size_t>(d)].total();
        out.push_back(s);
    }
    return out;
}

}  // namespace

std::vector<StageBoundary> stage_boundaries(const RunConfig& config) {
    const ModelShape shape = model_shape(config);
    const ParamLayout layout = ParamLayout::build(shape);
    const Mesh mesh = config.effective_mesh();
    const int v = mesh.pp > 1 ? config.effective_chunks() : 1;
    std::vector<std::size_t> weights;
    for (int u = 0; u < layout.units; ++u)
        weights.push_back(layout.unit_end(u) - layout.unit_begin(u));
    const std::vector<int> cuts = balanced_partition(weights, mesh.pp * v);
    std::vector<StageBoundary> out;
    for (int c = 0; c < mesh.pp * v; ++c)
        out.push_back({c, stage_of_chunk(config.schedule, c, mesh.pp),
                       cuts[static_cast<std::size_t>(c)], cuts[static_cast<std::size_t>(c) + 1]});
    return out;
}

CheckpointSummary last_checkpoint(const Trace& trace) {
    CheckpointSummary s;
    for (const auto& w : trace.checkpoints) s.step = std::max(s.step, w.step);
    if (s.step < 0) return s;
    s.device_bytes.assign(static_cast<std::size_t>(std::max(0, trace.devices)), 0);
    for (const auto& w : trace.checkpoints) {
        if (w.step != s.step) continue;
        ++s.files;
        s.bytes += w.bytes;
        if (w.device >= 0 && w.device < trace.devices)
            s.device_bytes[static_cast<std::size_t>(w.device)] += w.bytes;
    }
    return s;
}

RunMetrics compute_metrics(const Trace& trace, const RunConfig& config) {
    // An imported trace was not made by these settings: only what its events say holds.
    if (trace.origin.imported) return compute_metrics(trace, 0);
    RunMetrics m = compute_metrics(trace, config.batch);
    m.parameter_count = ParamLayout::build(model_shape(config)).total;
    const Mesh mesh = config.effective_mesh();
    if (config.strategy != StrategyKind::ps && mesh.pp > 1) {
        m.bubble = measure_bubble(trace, config, m.figure_steps);
        for (StepFigures& f : m.figure_step_samples)
            if (const auto it = m.bubble->measured_by_step.find(f.step);
                it != m.bubble->measured_by_step.end())
                f.bubble = it->second;
        m.stage_boundaries = stage_boundaries(config);
    }
    m.stage_activations = measure_activations(trace, config);
    m.model_state = model_state(trace, config);
    if (config.strategy == StrategyKind::ps && config.async_updates && config.max_staleness > 0) {
        // Workers run ahead of the server, so one step's events span several steps of time,
        // and the server's updates come in bursts once it falls behind: the step time is the
        // run's time per step, from the first step's start to the server's last update.
        std::int64_t begin = -1, end = -1;
        for (const auto& e : trace.events) {
            if (e.step < 0) continue;
            if (begin < 0 || e.start_ns < begin) begin = e.start_ns;
            if (e.device == 0 && e.kind == EventKind::optimizer) end = std::max(end, e.end_ns);
        }
        // No step has a span of its own, so no step has figures of its own either.
        m.figure_step_samples.clear();
        if (begin >= 0 && end > begin && !trace.steps.empty()) {
            m.median_step_time_s =
                static_cast<double>(end - begin) * 1e-9 / static_cast<double>(trace.steps.size());
            m.samples_per_s = config.batch / m.median_step_time_s;
        }
    }
    const double steps = std::max<std::size_t>(1, trace.steps.size());
    const double devices = std::max(1, trace.devices);
    for (const auto& c : trace.collectives)
        if (c.step >= 0)
            m.comm_bytes_per_step[c.op] += static_cast<double>(c.bytes) / (steps * devices);
    for (const auto& e : trace.events)
        if (e.step >= 0 && e.kind == EventKind::send)
            m.comm_bytes_per_step["send_recv"] += static_cast<double>(e.bytes) / (steps * devices);
    return m;
}

}  // namespace pd
