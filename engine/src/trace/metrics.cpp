#include "pd/metrics.h"

#include <algorithm>
#include <map>
#include <set>
#include <tuple>
#include <utility>

namespace pd {

namespace {

using Interval = std::pair<std::int64_t, std::int64_t>;

// Sorted, non-overlapping union of intervals.
std::vector<Interval> merge(std::vector<Interval> v) {
    std::sort(v.begin(), v.end());
    std::vector<Interval> out;
    for (const auto& iv : v) {
        if (iv.second <= iv.first) continue;
        if (!out.empty() && iv.first <= out.back().second)
            out.back().second = std::max(out.back().second, iv.second);
        else
            out.push_back(iv);
    }
    return out;
}

std::int64_t length(const std::vector<Interval>& v) {
    std::int64_t total = 0;
    for (const auto& iv : v) total += iv.second - iv.first;
    return total;
}

std::int64_t intersection(const std::vector<Interval>& a, const std::vector<Interval>& b) {
    std::int64_t total = 0;
    std::size_t i = 0, j = 0;
    while (i < a.size() && j < b.size()) {
        const std::int64_t lo = std::max(a[i].first, b[j].first);
        const std::int64_t hi = std::min(a[i].second, b[j].second);
        if (hi > lo) total += hi - lo;
        if (a[i].second < b[j].second)
            ++i;
        else
            ++j;
    }
    return total;
}

// From the earliest start to the latest end of the work tagged with each step. Waits are left
// out: a stream idling into the step from before it began is not the step's time.
std::map<int, Interval> step_spans(const Trace& trace) {
    std::map<int, Interval> spans;
    for (const auto& e : trace.events) {
        if (e.step < 0 || e.kind == EventKind::wait) continue;
        auto [it, inserted] = spans.try_emplace(e.step, Interval{e.start_ns, e.end_ns});
        if (!inserted) {
            it->second.first = std::min(it->second.first, e.start_ns);
            it->second.second = std::max(it->second.second, e.end_ns);
        }
    }
    return spans;
}

struct DeviceTimes {
    double busy_s = 0.0;  // compute-stream forward, backward and optimizer work
    double comm_s = 0.0;  // covered by communication
    double overlapped_comm_s = 0.0;
};

// Each device's events and memory samples, in the trace's order. Every per-device figure
// reads its device's own list, so a run of 100,000 ranks costs what its events do, not the
// events times the devices.
struct ByDevice {
    std::vector<std::vector<const TraceEvent*>> events;
    std::vector<std::vector<const MemorySample*>> memory;
};

ByDevice group_by_device(const Trace& trace) {
    ByDevice by;
    const auto devices = static_cast<std::size_t>(std::max(0, trace.devices));
    by.events.resize(devices);
    by.memory.resize(devices);
    for (const auto& e : trace.events)
        if (e.device >= 0 && static_cast<std::size_t>(e.device) < devices)
            by.events[static_cast<std::size_t>(e.device)].push_back(&e);
    for (const auto& s : trace.memory)
        if (s.device >= 0 && static_cast<std::size_t>(s.device) < devices)
            by.memory[static_cast<std::size_t>(s.device)].push_back(&s);
    return by;
}

// One device's busy and communication time in its events tagged with `steps`.
DeviceTimes device_times(const std::vector<const TraceEvent*>& events, StepRange steps) {
    constexpr double kNs = 1e-9;
    std::vector<Interval> compute, comm;
    for (const TraceEvent* e : events) {
        if (e->step < 0 || !steps.contains(e->step)) continue;
        if (is_compute(e->kind) && e->stream == StreamKind::compute)
            compute.push_back({e->start_ns, e->end_ns});
        if (is_communication(e->kind)) comm.push_back({e->start_ns, e->end_ns});
    }
    compute = merge(std::move(compute));
    comm = merge(std::move(comm));
    return {static_cast<double>(length(compute)) * kNs, static_cast<double>(length(comm)) * kNs,
            static_cast<double>(intersection(comm, compute)) * kNs};
}

// Each figure step's figures on their own, over the step's own span.
std::vector<StepFigures> step_figures(const Trace& trace, const ByDevice& by,
                                      const std::map<int, Interval>& spans, StepRange steps) {
    std::vector<StepFigures> out;
    std::map<int, std::vector<const TraceEvent*>> per_step;  // one device's events by step
    for (const auto& [step, span] : spans) {
        if (!steps.contains(step)) continue;
        StepFigures f;
        f.step = step;
        f.time_s = static_cast<double>(span.second - span.first) * 1e-9;
        out.push_back(std::move(f));
        per_step[step];
    }
    for (int d = 0; d < trace.devices; ++d) {
        for (auto& [step, events] : per_step) events.clear();
        for (const TraceEvent* e : by.events[static_cast<std::size_t>(d)])
            if (auto it = per_step.find(e->step); it != per_step.end()) it->second.push_back(e);
        for (StepFigures& f : out) {
            const DeviceTimes t = device_times(per_step[f.step], StepRange{f.step, f.step});
            f.busy_fraction.push_back(f.time_s > 0 ? t.busy_s / f.time_s : 0.0);
            f.exposed_comm_device_s.push_back(t.comm_s - t.overlapped_comm_s);
            f.comm_device_s.push_back(t.comm_s);
            f.exposed_comm_s += t.comm_s - t.overlapped_comm_s;
        }
    }
    return out;
}

}  // namespace

double StepFigures::mean_busy_fraction() const {
    if (busy_fraction.empty()) return 0.0;
    double sum = 0.0;
    for (const double b : busy_fraction) sum += b;
    return sum / static_cast<double>(busy_fraction.size());
}

Spread spread_of(std::vector<double> samples) {
    Spread s;
    if (samples.empty()) return s;
    std::sort(samples.begin(), samples.end());
    const std::size_t n = samples.size();
    s.samples = static_cast<int>(n);
    s.min = samples.front();
    s.max = samples.back();
    s.median = n % 2 ? samples[n / 2] : 0.5 * (samples[n / 2 - 1] + samples[n / 2]);
    return s;
}

void pool_repeats(RunMetrics& m, const std::vector<RunMetrics>& repeats) {
    for (const RunMetrics& r : repeats) {
        m.figure_step_samples.insert(m.figure_step_samples.end(), r.figure_step_samples.begin(),
                                     r.figure_step_samples.end());
        ++m.runs_pooled;
    }
    std::vector<double> times, bubbles;
    for (const StepFigures& f : m.figure_step_samples) {
        times.push_back(f.time_s);
        if (f.bubble) bubbles.push_back(*f.bubble);
    }
    if (!times.empty()) {
        const double before = m.median_step_time_s;
        m.median_step_time_s = spread_of(times).median;
        // Throughput is the batch over the median step: the same batch, the new median.
        if (before > 0 && m.median_step_time_s > 0)
            m.samples_per_s *= before / m.median_step_time_s;
    }
    if (m.bubble && !bubbles.empty()) m.bubble->measured = spread_of(bubbles).median;
}

StepRange figure_steps(const Trace& trace) {
    const std::map<int, Interval> spans = step_spans(trace);
    if (spans.empty()) return {};
    const int first = spans.begin()->first, last = spans.rbegin()->first;
    // The first step pays for page faults and cold caches; leave it out when there is more.
    return StepRange{last > first ? first + 1 : first, last};
}

double bus_bandwidth_factor(const std::string& op, int ranks) {
    const double n = ranks;
    if (ranks <= 1) return op == "broadcast" ? 1.0 : 0.0;
    if (op == "all_reduce") return 2.0 * (n - 1) / n;
    // NCCL tests' factors; an all-to-all keeps 1/n of its buffer at home.
    if (op == "reduce_scatter" || op == "all_gather" || op == "all_to_all") return (n - 1) / n;
    return 1.0;
}

RunMetrics compute_metrics(const Trace& trace, int global_batch) {
    RunMetrics m;
    constexpr double kNs = 1e-9;

    const std::map<int, Interval> spans = step_spans(trace);
    for (const auto& s : trace.steps) {
        StepMetrics sm;
        sm.step = s.step;
        sm.loss = s.loss;
        if (auto it = spans.find(s.step); it != spans.end())
            sm.time_s = static_cast<double>(it->second.second - it->second.first) * kNs;
        m.steps.push_back(sm);
    }
    if (!m.steps.empty()) {
        m.final_loss = m.steps.back().loss;
        std::vector<double> times;
        for (const auto& s : m.steps) times.push_back(s.time_s);
        std::sort(times.begin(), times.end());
        const std::size_t n = times.size();
        m.median_step_time_s = n % 2 ? times[n / 2] : 0.5 * (times[n / 2 - 1] + times[n / 2]);
        if (m.median_step_time_s > 0) m.samples_per_s = global_batch / m.median_step_time_s;
    }

    for (const auto& u : trace.gradient_updates) ++m.staleness_histogram[u.staleness()];

    // Busy and communication figures cover the steady steps only, so a re-run agrees with
    // the first run instead of with how cold its first step happened to be.
    m.figure_steps = figure_steps(trace);
    m.cluster = cluster_metrics(
        trace, m.figure_steps.empty() ? std::nullopt : std::optional<StepRange>(m.figure_steps));
    std::int64_t window_begin = 0, window_end = 0;
    bool first_span = true;
    for (const auto& [step, span] : spans) {
        if (!m.figure_steps.contains(step)) continue;
        window_begin = first_span ? span.first : std::min(window_begin, span.first);
        window_end = first_span ? span.second : std::max(window_end, span.second);
        first_span = false;
    }
    const double window_s = static_cast<double>(window_end - window_begin) * kNs;

    const ByDevice by = group_by_device(trace);
    for (int d = 0; d < trace.devices; ++d) {
        DeviceMetrics dm;
        dm.device = d;
        const DeviceTimes times =
            device_times(by.events[static_cast<std::size_t>(d)], m.figure_steps);
        dm.busy_s = times.busy_s;
        dm.idle_s = std::max(0.0, window_s - dm.busy_s);
        dm.busy_fraction = window_s > 0 ? dm.busy_s / window_s : 0.0;
        dm.comm_s = times.comm_s;
        dm.overlapped_comm_s = times.overlapped_comm_s;
        dm.exposed_comm_s = dm.comm_s - dm.overlapped_comm_s;
        m.exposed_comm_s += dm.exposed_comm_s;
        m.overlapped_comm_s += dm.overlapped_comm_s;

        // Peak per category and of the total, replaying the samples in time order.
        std::array<std::size_t, kMemoryCategoryCount> live{};
        std::size_t total = 0;
        for (const MemorySample* s : by.memory[static_cast<std::size_t>(d)]) {
            const auto c = static_cast<std::size_t>(s->category);
            total = total - live[c] + s->bytes;
            live[c] = s->bytes;
            dm.peak_bytes[c] = std::max(dm.peak_bytes[c], s->bytes);
            dm.peak_total_bytes = std::max(dm.peak_total_bytes, total);
        }
        if (static_cast<std::size_t>(d) < trace.peak_reserved_bytes.size())
            dm.peak_reserved_bytes = trace.peak_reserved_bytes[static_cast<std::size_t>(d)];
        m.devices.push_back(dm);
    }

    m.figure_step_samples = step_figures(trace, by, spans, m.figure_steps);

    m.collectives = collective_metrics(trace);
    if (!m.figure_steps.empty()) m.figure_collectives = collective_metrics(trace, m.figure_steps);
    return m;
}

std::vector<CollectiveMetrics> collective_metrics(const Trace& trace,
                                                  std::optional<StepRange> steps) {
    constexpr double kNs = 1e-9;
    std::vector<CollectiveMetrics> out;
    // Collectives grouped by operation, size and group size.
    struct Acc {
        std::int64_t total_ns = 0;
        int records = 0;
        std::set<int> devices;
    };
    std::map<std::tuple<std::string, std::size_t, int>, Acc> groups;
    for (const auto& c : trace.collectives) {
        if (steps && (c.step < 0 || !steps->contains(c.step))) continue;
        Acc& a = groups[{c.op, c.bytes, c.ranks}];
        a.total_ns += c.end_ns - c.start_ns;
        a.records += 1;
        a.devices.insert(c.device);
    }
    for (const auto& [key, a] : groups) {
        CollectiveMetrics cm;
        cm.op = std::get<0>(key);
        cm.bytes = std::get<1>(key);
        cm.ranks = std::get<2>(key);
        cm.count = a.records / std::max<int>(1, static_cast<int>(a.devices.size()));
        cm.mean_time_s = static_cast<double>(a.total_ns) * kNs / a.records;
        if (cm.mean_time_s > 0) {
            cm.algbw_gbps = static_cast<double>(cm.bytes) / cm.mean_time_s / 1e9;
            cm.busbw_gbps = cm.algbw_gbps * bus_bandwidth_factor(cm.op, cm.ranks);
        }
        out.push_back(cm);
    }
    return out;
}

std::optional<double> gradient_zero_fraction(const std::vector<StepRecord>& steps) {
    double sum = 0;
    int n = 0;
    bool first_applied = true;
    for (const StepRecord& s : steps) {
        if (s.grad_zero_fraction < 0 || s.skipped) continue;
        if (std::exchange(first_applied, false)) continue;
        sum += s.grad_zero_fraction;
        ++n;
    }
    if (n == 0) return std::nullopt;
    return sum / n;
}

std::optional<Fp8RunSummary> fp8_run_summary(const std::vector<StepRecord>& steps) {
    Fp8RunSummary out;
    int forward_steps = 0;
    for (const StepRecord& s : steps) {
        if (s.fp8_max_scale <= 0) continue;
        out.saturated += s.fp8_forward.saturated + s.fp8_gradients.saturated;
        out.scale_spread = s.fp8_max_scale / s.fp8_min_scale;
        if (s.fp8_forward.relative_error >= 0) {
            out.forward_error += s.fp8_forward.relative_error;
            ++forward_steps;
        }
        if (s.fp8_gradients.nonzero == 0) continue;
        const double flushed = static_cast<double>(s.fp8_gradients.flushed) /
                               static_cast<double>(s.fp8_gradients.nonzero);
        if (out.first_flushed < 0) out.first_flushed = flushed;
        out.last_flushed = flushed;
        out.last_gradient_error = s.fp8_gradients.relative_error;
    }
    if (forward_steps == 0) return std::nullopt;
    out.forward_error /= forward_steps;
    return out;
}

std::optional<double> state_quantization_error(const std::vector<StepRecord>& steps,
                                               bool first_moment) {
    double sum = 0;
    int n = 0;
    for (const StepRecord& s : steps) {
        const double e = first_moment ? s.state_error_m : s.state_error_v;
        if (e < 0) continue;
        sum += e;
        ++n;
    }
    if (n == 0) return std::nullopt;
    return sum / n;
}

}  // namespace pd
