#include "trace/bubble_prediction.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <map>
#include <numeric>
#include <tuple>

#include "strategies/pipeline_schedule.h"

namespace pd {

namespace {

enum class TaskKind { forward, backward, weight_grad, recv, send, dp_sync, optimizer };

// Which compute a forward, backward or W task holds: an index into per-pass figures.
enum Pass { pass_forward, pass_backward, pass_weight, pass_count };

// One piece of work on one stream, as the pipeline strategy (MeshParallel::enqueue_step)
// enqueues it: a receive, a forward or backward of one (chunk, micro-batch), a send, the
// data-parallel gradient all-reduce, the optimizer. Zero-bubble schedules split a backward
// into B (a `backward` task: the input gradient the previous stage waits for) and W (a
// `weight_grad` task: no transfer, placed to fill the bubble); with recomputation a
// backward's time holds the forward it re-runs first.
struct Task {
    TaskKind kind = TaskKind::forward;
    int device = 0;
    StreamKind stream = StreamKind::compute;
    int chunk = -1;  // global chunk
    int microbatch = -1;
    int after = -1;   // the task on the device's other stream this one waits for
    int sender = -1;  // recv: the send whose start releases the data
    // Measured per figure step (ns), then their medians. compute: forward, backward or
    // optimizer work; comm: a transfer's own time, or the tensor-parallel collectives inside
    // a forward or backward (the stream waits for them between its units).
    // latency: a receive's time in flight, which does not hold its stream (the link model's
    // latency + bytes / bandwidth on the device clock; on the wall clock it is inside comm).
    // Stream time no event records (launching, recording events, freeing buffers), split by
    // when it happened: pre, before the task's wait (overlaps the wait in the replay too);
    // post, after the wait and before the task's first event; inner, between its events.
    // lag: on the device clock a wait ends when the other stream records its event, which it
    // does after its own untraced tail (freeing the received buffer, bookkeeping): the time
    // from the awaited task's last event to the end of this task's wait.
    std::vector<double> compute_samples, comm_samples, latency_samples, pre_samples, post_samples,
        inner_samples, lag_samples;
    double compute = 0.0, comm = 0.0, latency = 0.0, pre = 0.0, post = 0.0, inner = 0.0, lag = 0.0;
};

Task make_task(TaskKind kind, int device, StreamKind stream, int chunk = -1, int microbatch = -1) {
    Task t;
    t.kind = kind;
    t.device = device;
    t.stream = stream;
    t.chunk = chunk;
    t.microbatch = microbatch;
    return t;
}

// The effects, added one at a time in this order (see BubbleCauses).
enum Level { uniform, imbalance, transfers, gaps, optimizer, cold, full, level_count };

double median(std::vector<double> v) {
    if (v.empty()) return 0.0;
    std::sort(v.begin(), v.end());
    const std::size_t n = v.size();
    return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

bool is_collective(EventKind k) {
    return k == EventKind::reduce_scatter_step || k == EventKind::all_gather_step ||
           k == EventKind::broadcast || k == EventKind::collective ||
           k == EventKind::all_to_all_step;
}

// A recomputed forward runs inside its backward, so its time is the backward's.
int pass_of(EventKind k) {
    switch (k) {
        case EventKind::forward:
            return pass_forward;
        case EventKind::backward:
        case EventKind::recompute:
            return pass_backward;
        case EventKind::backward_weight:
            return pass_weight;
        default:
            return pass_count;
    }
}
int pass_of(TaskKind k) {
    switch (k) {
        case TaskKind::forward:
            return pass_forward;
        case TaskKind::backward:
            return pass_backward;
        case TaskKind::weight_grad:
            return pass_weight;
        default:
            return pass_count;
    }
}

class Replay {
  public:
    Replay(const Trace& trace, const RunConfig& config) : devices_(trace.devices) {
        const Mesh mesh = config.effective_mesh();
        p_ = mesh.pp;
        v_ = p_ > 1 ? config.effective_chunks() : 1;
        m_ = config.effective_microbatches();
        for (const StageBoundary& b : stage_boundaries(config))
            for (int u = b.first_unit; u < b.end_unit; ++u) chunk_of_unit_[u] = b.chunk;
        streams_.resize(static_cast<std::size_t>(devices_));
        const auto program = pipeline_program(config.schedule, p_, m_, v_);
        for (int d = 0; d < devices_; ++d) build_program(config, mesh, program, d);
    }

    // Reads every task's durations from the steps in `steps` (their medians); false when one
    // is missing.
    bool measure(const Trace& trace, StepRange steps) {
        for (int step = steps.first; step <= steps.last; ++step)
            if (!measure_step(trace, step)) return false;
        for (Task& t : tasks_) {
            t.compute = median(t.compute_samples);
            t.comm = median(t.comm_samples);
            t.latency = median(t.latency_samples);
            t.pre = median(t.pre_samples);
            t.post = median(t.post_samples);
            t.inner = median(t.inner_samples);
            t.lag = median(t.lag_samples);
        }
        compute_means();
        return true;
    }

    // The replayed bubble at a level, and its critical path (ns); empty on a cycle.
    std::optional<std::pair<double, double>> bubble(Level level) const {
        const std::size_t n = tasks_.size();
        std::vector<double> start(n, -1.0), end(n, -1.0);
        std::vector<std::array<std::size_t, kStreamsPerDevice>> pos(streams_.size());
        // With the optimizer, each stream starts when the previous step really left it.
        std::vector<std::array<double, kStreamsPerDevice>> free(streams_.size());
        for (std::size_t d = 0; d < free.size(); ++d)
            free[d] = level >= optimizer ? busy_until_[d] : std::array<double, kStreamsPerDevice>{};
        for (auto& q : pos) q.fill(0);
        std::size_t done = 0;
        // When a stream's next task may start, or a negative value while it still waits.
        auto ready_at = [&](int t, double stream_free) {
            const Task& task = tasks_[static_cast<std::size_t>(t)];
            double ready = stream_free + (with_gaps(task, level) ? task.pre : 0.0);
            if (task.after >= 0) {
                if (end[static_cast<std::size_t>(task.after)] < 0) return -1.0;
                ready = std::max(ready, end[static_cast<std::size_t>(task.after)] +
                                            (with_gaps(task, level) ? task.lag : 0.0));
            }
            if (task.sender >= 0) {
                if (start[static_cast<std::size_t>(task.sender)] < 0) return -1.0;
                ready = std::max(ready, start[static_cast<std::size_t>(task.sender)] +
                                            (level >= transfers ? task.latency : 0.0));
            }
            return ready;
        };
        auto head = [&](std::size_t d, int s) -> int {
            const auto& q = streams_[d][static_cast<std::size_t>(s)];
            return pos[d][static_cast<std::size_t>(s)] < q.size()
                       ? q[pos[d][static_cast<std::size_t>(s)]]
                       : -1;
        };
        auto run = [&](int t, double at) {
            const Task& task = tasks_[static_cast<std::size_t>(t)];
            const auto d = static_cast<std::size_t>(task.device);
            const auto s = static_cast<std::size_t>(task.stream);
            if (with_gaps(task, level)) at += task.post;
            start[static_cast<std::size_t>(t)] = at;
            end[static_cast<std::size_t>(t)] = at + duration(task, level);
            free[d][s] = end[static_cast<std::size_t>(t)];
            ++pos[d][s];
            ++done;
        };
        while (done < n) {
            bool progress = false;
            for (std::size_t d = 0; d < streams_.size(); ++d)
                for (int s = 0; s < kStreamsPerDevice; ++s) {
                    const int t = head(d, s);
                    if (t < 0 || tasks_[static_cast<std::size_t>(t)].kind == TaskKind::dp_sync)
                        continue;
                    const double at = ready_at(t, free[d][static_cast<std::size_t>(s)]);
                    if (at < 0) continue;
                    run(t, at);
                    progress = true;
                }
            // A data-parallel all-reduce starts when every replica of the stage is ready.
            for (const auto& group : dp_groups_) {
                double at = 0.0;
                bool all_ready = true;
                for (int t : group) {
                    const auto d =
                        static_cast<std::size_t>(tasks_[static_cast<std::size_t>(t)].device);
                    const double r = head(d, 1) == t ? ready_at(t, free[d][1]) : -1.0;
                    all_ready = all_ready && r >= 0;
                    at = std::max(at, r);
                }
                if (!all_ready) continue;
                for (int t : group) run(t, at);
                progress = true;
            }
            if (!progress) return std::nullopt;
        }
        double makespan = 0.0, busy = 0.0;
        for (std::size_t t = 0; t < n; ++t) {
            makespan = std::max(makespan, end[t]);
            busy += compute_time(tasks_[t], level);
        }
        if (makespan <= 0) return std::nullopt;
        return std::make_pair(1.0 - busy / (devices_ * makespan), makespan);
    }

  private:
    int add(Task t) {
        const int id = static_cast<int>(tasks_.size());
        streams_[static_cast<std::size_t>(t.device)][static_cast<std::size_t>(t.stream)].push_back(
            id);
        tasks_.push_back(std::move(t));
        return id;
    }

    // The stream waits of MeshParallel: a receive is queued on the comm stream and the
    // compute stream waits for it; a send waits for the compute that made its tensor; the
    // gradient all-reduce waits for the last backward and the optimizer for the all-reduce.
    // A W task only computes: its B already received the gradient and sent its own. ZB-V's
    // two chunks on the last stage hand the activation (and its gradient) over on the device,
    // in the compute stream's order, without a transfer.
    void build_program(const RunConfig& config, const Mesh& mesh,
                       const std::vector<std::vector<PipelineOp>>& program, int d) {
        const int stage = d / (mesh.tp * mesh.dp);
        const int chunks = p_ * v_;
        auto remote = [&](int g) {
            return g >= 0 && g < chunks && stage_of_chunk(config.schedule, g, p_) != stage;
        };
        int last_comm = -1, last_compute = -1;
        for (const PipelineOp& op : program[static_cast<std::size_t>(stage)]) {
            const int g = global_chunk(config.schedule, op.chunk, stage, p_);
            if (op.pass == PipelinePass::weight_grad) {
                last_compute =
                    add(make_task(TaskKind::weight_grad, d, StreamKind::compute, g, op.microbatch));
                continue;
            }
            const bool receives = op.forward() ? remote(g - 1) : remote(g + 1);
            const bool sends = op.forward() ? remote(g + 1) : remote(g - 1);
            if (receives)
                last_comm = add(make_task(TaskKind::recv, d, StreamKind::comm, g, op.microbatch));
            Task work = make_task(op.forward() ? TaskKind::forward : TaskKind::backward, d,
                                  StreamKind::compute, g, op.microbatch);
            work.after = receives ? last_comm : -1;
            last_compute = add(std::move(work));
            if (sends) {
                Task send = make_task(TaskKind::send, d, StreamKind::comm, g, op.microbatch);
                send.after = last_compute;
                last_comm = add(std::move(send));
            }
        }
        Task opt = make_task(TaskKind::optimizer, d, StreamKind::compute);
        if (mesh.dp > 1) {
            Task sync = make_task(TaskKind::dp_sync, d, StreamKind::comm);
            sync.after = last_compute;
            last_comm = add(std::move(sync));
            dp_group_of_[{stage, d % mesh.tp}].push_back(last_comm);
            opt.after = last_comm;
        }
        add(std::move(opt));
        if (d == devices_ - 1)
            for (const auto& [key, group] : dp_group_of_) dp_groups_.push_back(group);
    }

    // On the device clock every stream keeps its own time across steps: a stage whose
    // previous optimizer ran long starts this step late. How long after the step's first
    // work each stream was still busy with earlier steps (zero on the wall clock, where the
    // host's synchronisation between steps lines the streams up).
    void measure_carry_over(const Trace& trace, int step) {
        busy_until_.assign(static_cast<std::size_t>(devices_), {});
        std::int64_t begin = 0;
        bool any = false;
        for (const TraceEvent& e : trace.events)
            if (e.step == step && e.kind != EventKind::wait) {
                begin = any ? std::min(begin, e.start_ns) : e.start_ns;
                any = true;
            }
        for (const TraceEvent& e : trace.events) {
            if (e.step < 0 || e.step >= step || e.device < 0 || e.device >= devices_) continue;
            double& until =
                busy_until_[static_cast<std::size_t>(e.device)][static_cast<std::size_t>(e.stream)];
            until = std::max(until, static_cast<double>(e.end_ns - begin));
        }
    }

    bool measure_step(const Trace& trace, int step) {
        measure_carry_over(trace, step);
        using Key = std::tuple<int, int, int, int>;  // device, Pass, micro-batch, chunk
        std::map<Key, std::pair<double, std::pair<std::int64_t, std::int64_t>>> work;
        std::map<Key, std::vector<const TraceEvent*>> work_events;
        std::vector<double> optimizer(static_cast<std::size_t>(devices_), 0.0);
        std::vector<std::vector<const TraceEvent*>> optimizer_events(
            static_cast<std::size_t>(devices_));
        std::vector<std::vector<const TraceEvent*>> p2p(static_cast<std::size_t>(devices_)),
            collectives(static_cast<std::size_t>(devices_));
        std::map<std::uint64_t, const TraceEvent*> sends;
        for (const TraceEvent& e : trace.events) {
            if (e.step != step || e.device < 0 || e.device >= devices_) continue;
            const auto d = static_cast<std::size_t>(e.device);
            if (e.stream == StreamKind::compute && pass_of(e.kind) < pass_count) {
                auto c = chunk_of_unit_.find(e.layer);
                if (c == chunk_of_unit_.end()) return false;
                auto [it, inserted] =
                    work.try_emplace(Key{e.device, pass_of(e.kind), e.microbatch, c->second}, 0.0,
                                     std::make_pair(e.start_ns, e.end_ns));
                it->second.first += static_cast<double>(e.duration_ns());
                work_events[it->first].push_back(&e);
                it->second.second.first = std::min(it->second.second.first, e.start_ns);
                it->second.second.second = std::max(it->second.second.second, e.end_ns);
            } else if (e.stream == StreamKind::compute && e.kind == EventKind::optimizer) {
                optimizer[d] += static_cast<double>(e.duration_ns());
                optimizer_events[d].push_back(&e);
            } else if (e.kind == EventKind::send || e.kind == EventKind::recv) {
                p2p[d].push_back(&e);
                if (e.kind == EventKind::send && e.flow_id) sends[e.flow_id] = &e;
            } else if (is_collective(e.kind)) {
                collectives[d].push_back(&e);
            }
        }
        auto by_start = [](const TraceEvent* a, const TraceEvent* b) {
            return a->start_ns < b->start_ns;
        };
        // Each event's untraced lead-in since the stream's previous event of this step: what
        // came before a wait (pre) and what came after it (post). The first event of a step
        // has none: the time before it is the host's, between steps.
        struct Gap {
            double pre = 0.0, post = 0.0;
            bool waited = false;  // the stream waited right before the event
        };
        std::map<const TraceEvent*, Gap> gap;
        {
            std::map<std::pair<int, int>, std::vector<const TraceEvent*>> per_stream;
            for (const TraceEvent& e : trace.events)
                if (e.step == step)
                    per_stream[{e.device, static_cast<int>(e.stream)}].push_back(&e);
            for (auto& [key, list] : per_stream) {
                std::stable_sort(list.begin(), list.end(), by_start);
                double before_wait = 0.0, since = 0.0;
                for (std::size_t i = 1; i < list.size(); ++i) {
                    since += static_cast<double>(
                        std::max<std::int64_t>(0, list[i]->start_ns - list[i - 1]->end_ns));
                    if (list[i]->kind == EventKind::wait) {
                        before_wait += since;
                        since = 0.0;
                        continue;
                    }
                    const bool waited = list[i - 1]->kind == EventKind::wait;
                    gap[list[i]] = waited ? Gap{before_wait, since, true}
                                          : Gap{before_wait + since, 0.0, false};
                    before_wait = since = 0.0;
                }
            }
        }
        auto gap_of = [&](const TraceEvent& e) {
            auto it = gap.find(&e);
            return it == gap.end() ? Gap{} : it->second;
        };
        // A task's lead-in is its first event's; the gaps between its own events lengthen it.
        // Whether it waited right before its first event.
        auto lead_in = [&](Task& task, std::vector<const TraceEvent*> events, double& inner) {
            std::stable_sort(events.begin(), events.end(), by_start);
            bool waited = false;
            for (std::size_t i = 0; i < events.size(); ++i) {
                const Gap g = gap_of(*events[i]);
                if (i == 0) {
                    waited = g.waited;
                    task.pre_samples.push_back(g.pre);
                    task.post_samples.push_back(g.post);
                } else {
                    // After a wait only what followed it holds the task up; what came before
                    // ran while the stream waited (a tensor-parallel sum on the comm stream).
                    inner += g.waited ? g.post : g.pre;
                }
            }
            if (events.empty()) {
                task.pre_samples.push_back(0.0);
                task.post_samples.push_back(0.0);
            }
            return waited;
        };
        std::vector<std::size_t> next_p2p(static_cast<std::size_t>(devices_), 0);
        std::vector<std::int64_t> last_work_end(static_cast<std::size_t>(devices_), 0);
        for (auto& v : p2p) std::stable_sort(v.begin(), v.end(), by_start);
        // Collectives inside a forward or backward are the tensor-parallel sums it waits for;
        // the comm stream's untraced time after it waited for the compute is the op's too.
        auto collectives_within = [&](int d, std::int64_t begin, std::int64_t end, double& inner) {
            double total = 0.0;
            for (const TraceEvent* e : collectives[static_cast<std::size_t>(d)])
                if (e->start_ns >= begin && e->end_ns <= end) {
                    total += static_cast<double>(e->duration_ns());
                    inner += gap_of(*e).post;
                }
            return total;
        };
        std::vector<std::pair<int, const TraceEvent*>> recvs;
        // Each task's first event start and last event end on this step (work and transfers).
        std::vector<std::pair<double, double>> span(tasks_.size(), {-1.0, -1.0});
        std::vector<char> waited(tasks_.size(), 0);
        for (std::size_t t = 0; t < tasks_.size(); ++t) {
            Task& task = tasks_[t];
            const auto d = static_cast<std::size_t>(task.device);
            switch (task.kind) {
                case TaskKind::forward:
                case TaskKind::backward:
                case TaskKind::weight_grad: {
                    auto it = work.find(
                        Key{task.device, pass_of(task.kind), task.microbatch, task.chunk});
                    if (it == work.end()) return false;
                    const auto [begin, end] = it->second.second;
                    span[t] = {static_cast<double>(begin), static_cast<double>(end)};
                    double inner = 0.0;
                    waited[t] = lead_in(task, work_events[it->first], inner);
                    task.comm_samples.push_back(collectives_within(task.device, begin, end, inner));
                    task.compute_samples.push_back(it->second.first);
                    task.inner_samples.push_back(inner);
                    last_work_end[d] = std::max(last_work_end[d], end);
                    break;
                }
                case TaskKind::send:
                case TaskKind::recv: {
                    // The comm stream runs its transfers in the order they were queued.
                    if (next_p2p[d] >= p2p[d].size()) return false;
                    const TraceEvent* e = p2p[d][next_p2p[d]++];
                    span[t] = {static_cast<double>(e->start_ns), static_cast<double>(e->end_ns)};
                    if ((e->kind == EventKind::send) != (task.kind == TaskKind::send)) return false;
                    double inner = 0.0;
                    waited[t] = lead_in(task, {e}, inner);
                    if (task.kind == TaskKind::send) {
                        task.comm_samples.push_back(static_cast<double>(e->duration_ns()));
                        send_task_[e->flow_id] = static_cast<int>(t);
                    } else {
                        recvs.push_back({static_cast<int>(t), e});
                    }
                    break;
                }
                case TaskKind::dp_sync: {
                    double total = 0.0, inner = 0.0;
                    std::vector<const TraceEvent*> events;
                    for (const TraceEvent* e : collectives[d])
                        if (e->start_ns >= last_work_end[d]) {
                            total += static_cast<double>(e->duration_ns());
                            events.push_back(e);
                        }
                    lead_in(task, events, inner);
                    task.comm_samples.push_back(total);
                    task.inner_samples.push_back(inner);
                    break;
                }
                case TaskKind::optimizer: {
                    task.compute_samples.push_back(optimizer[d]);
                    double inner = 0.0;
                    lead_in(task, optimizer_events[d], inner);
                    task.inner_samples.push_back(inner);
                    break;
                }
            }
        }
        for (std::size_t d = 0; d < p2p.size(); ++d)
            if (next_p2p[d] != p2p[d].size()) return false;
        // A forward, backward or send that waited for its receive or compute: how long after
        // that task's last event the wait ended (its first event's start less its lead-in).
        // One that did not wait (its stream was still busy) has none.
        for (std::size_t t = 0; t < tasks_.size(); ++t) {
            Task& task = tasks_[t];
            if (task.after < 0) continue;
            if (!waited[t]) {
                task.lag_samples.push_back(0.0);
                continue;
            }
            if (span[t].first < 0 || span[static_cast<std::size_t>(task.after)].second < 0 ||
                task.post_samples.empty())
                continue;
            task.lag_samples.push_back(
                std::max(0.0, span[t].first - task.post_samples.back() -
                                  span[static_cast<std::size_t>(task.after)].second));
        }
        // A receive ends at max(queued, sent + time in flight) + its copy, as the engine's
        // device clock charges it; on the wall clock the whole wait after the send is the
        // transfer.
        for (auto [t, e] : recvs) {
            Task& task = tasks_[static_cast<std::size_t>(t)];
            auto send = sends.find(e->flow_id);
            auto sender = send_task_.find(e->flow_id);
            if (!e->flow_id || send == sends.end() || sender == send_task_.end()) return false;
            if (task.sender >= 0 && task.sender != sender->second) return false;
            task.sender = sender->second;
            const double in_flight =
                trace.clock == ClockMode::device ? trace.link.transfer_ns(e->bytes) : 0.0;
            const double arrived =
                std::max(static_cast<double>(e->start_ns),
                         static_cast<double>(send->second->start_ns) + in_flight);
            task.latency_samples.push_back(in_flight);
            task.comm_samples.push_back(std::max(0.0, static_cast<double>(e->end_ns) - arrived));
        }
        send_task_.clear();
        return true;
    }

    // Per (device, chunk, direction): the mean over micro-batches after the first (which pays
    // for cold caches), and the mean of those over the whole pipeline.
    void compute_means() {
        std::map<std::tuple<int, int, int>, std::pair<double, int>> sums, all;
        for (const Task& t : tasks_) {
            if (pass_of(t.kind) == pass_count) continue;
            const auto key = std::make_tuple(t.device, t.chunk, pass_of(t.kind));
            auto& a = all[key];
            a.first += t.compute;
            a.second += 1;
            if (m_ >= 2 && t.microbatch == 0) continue;
            auto& s = sums[key];
            s.first += t.compute;
            s.second += 1;
        }
        std::array<std::pair<double, int>, pass_count> overall{};
        for (const auto& [key, a] : all) {
            const auto& s = sums.count(key) ? sums[key] : a;
            const double mean = s.first / s.second;
            stage_mean_[key] = mean;
            auto& o = overall[static_cast<std::size_t>(std::get<2>(key))];
            o.first += mean;
            o.second += 1;
        }
        for (std::size_t i = 0; i < overall.size(); ++i)
            uniform_mean_[i] = overall[i].second ? overall[i].first / overall[i].second : 0.0;
    }

    double compute_time(const Task& t, Level level) const {
        switch (t.kind) {
            case TaskKind::forward:
            case TaskKind::backward:
            case TaskKind::weight_grad: {
                if (level >= full || (level >= cold && t.microbatch == 0)) return t.compute;
                if (level >= imbalance)
                    return stage_mean_.at(std::make_tuple(t.device, t.chunk, pass_of(t.kind)));
                return uniform_mean_[static_cast<std::size_t>(pass_of(t.kind))];
            }
            case TaskKind::optimizer:
                return level >= optimizer ? t.compute : 0.0;
            default:
                return 0.0;
        }
    }

    double duration(const Task& t, Level level) const {
        return compute_time(t, level) + (level >= transfers ? t.comm : 0.0) +
               (with_gaps(t, level) ? t.inner : 0.0);
    }
    bool with_gaps(const Task& t, Level level) const {
        return level >= gaps && (t.kind != TaskKind::optimizer || level >= optimizer);
    }

    int devices_ = 0, p_ = 1, v_ = 1, m_ = 1;
    std::map<int, int> chunk_of_unit_;
    std::vector<Task> tasks_;
    std::vector<std::array<std::vector<int>, kStreamsPerDevice>> streams_;
    std::map<std::pair<int, int>, std::vector<int>> dp_group_of_;  // (stage, tp rank)
    std::vector<std::vector<int>> dp_groups_;
    std::map<std::uint64_t, int> send_task_;  // flow id -> send task, within one step
    std::vector<std::array<double, kStreamsPerDevice>> busy_until_;  // per device and stream
    std::map<std::tuple<int, int, int>, double> stage_mean_;         // device, chunk, Pass
    std::array<double, pass_count> uniform_mean_{};
};

}  // namespace

std::optional<BubblePrediction> predict_bubble(const Trace& trace, const RunConfig& config,
                                               StepRange steps, double theoretical) {
    const Mesh mesh = config.effective_mesh();
    if (steps.empty() || mesh.pp < 2 || trace.devices != mesh.size()) return std::nullopt;
    // Each step replayed with its own times, then the median step, as the measured bubble is
    // the median of the steps' bubbles: a step slowed by the machine slows both alike.
    using Levels = std::array<double, level_count + 1>;  // bubbles per level, then makespan
    std::vector<Levels> per_step;
    for (int step = steps.first; step <= steps.last; ++step) {
        Replay replay(trace, config);
        if (!replay.measure(trace, StepRange{step, step})) return std::nullopt;
        Levels b{};
        for (int level = uniform; level < level_count; ++level) {
            const auto r = replay.bubble(static_cast<Level>(level));
            if (!r) return std::nullopt;
            b[static_cast<std::size_t>(level)] = r->first;
            b[level_count] = r->second;
        }
        per_step.push_back(b);
    }
    std::sort(per_step.begin(), per_step.end(),
              [](const Levels& x, const Levels& y) { return x[full] < y[full]; });
    // An even count takes the mean of the middle two, level by level, so the causes still
    // add up to the prediction.
    const std::size_t n = per_step.size();
    Levels b = per_step[n / 2];
    if (n % 2 == 0)
        for (std::size_t i = 0; i < b.size(); ++i) b[i] = 0.5 * (b[i] + per_step[n / 2 - 1][i]);
    BubblePrediction out;
    out.fraction = b[full];
    out.step_time_s = b[level_count] * 1e-9;
    out.causes.schedule = b[uniform] - theoretical;
    out.causes.stage_imbalance = b[imbalance] - b[uniform];
    out.causes.transfers = b[transfers] - b[imbalance];
    out.causes.untraced_gaps = b[gaps] - b[transfers];
    out.causes.optimizer_tail = b[optimizer] - b[gaps];
    out.causes.cold_first_microbatch = b[cold] - b[optimizer];
    out.causes.microbatch_variation = b[full] - b[cold];
    return out;
}

std::vector<NamedBubbleCause> named_bubble_causes(const BubbleCauses& c,
                                                  PipelineSchedule schedule) {
    const bool split = schedule == PipelineSchedule::zb_h1 || schedule == PipelineSchedule::zb_v;
    std::vector<NamedBubbleCause> all = {
        {c.stage_imbalance, "stage imbalance"},
        {c.transfers, "transfers"},
        {c.untraced_gaps, "launch gaps"},
        {c.optimizer_tail, "optimizer tail"},
        {c.cold_first_microbatch, "cold first micro-batch"},
        {c.microbatch_variation, "micro-batch variation"},
        {c.schedule, split ? "this run's F:B:W times (W's share)" : "schedule"}};
    std::erase_if(all, [](const NamedBubbleCause& x) { return std::abs(x.fraction) < 0.0005; });
    std::stable_sort(all.begin(), all.end(), [](const auto& x, const auto& y) {
        return std::abs(x.fraction) > std::abs(y.fraction);
    });
    return all;
}

}  // namespace pd
