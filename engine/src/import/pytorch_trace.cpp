// PyTorch profiler traces as one rank's device row. Kineto's GPU traces: kernels on the
// compute lane, NCCL kernels on the comm lane as whole collectives (their sizes from the
// kernel's "In msg nelems"/"dtype" where the profiler recorded them), memcpy and memset as
// copies; a kernel's step and phase come from the CPU call that launched it (correlation id),
// since a GPU runs behind its host. The autograd profiler's CPU traces: the top-level ops of
// the training thread on the compute lane, collectives on the comm lane.
#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdlib>
#include <map>
#include <unordered_map>

#include "import/rank_trace.h"
#include "pd/error.h"

namespace pd::import {

namespace {

bool starts_with(std::string_view s, std::string_view prefix) {
    return s.substr(0, prefix.size()) == prefix;
}

std::string lower(std::string_view s) {
    std::string out(s);
    for (char& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    return out;
}

std::size_t dtype_bytes(std::string_view dtype) {
    const std::string d = lower(dtype);
    if (d == "float" || d == "float32" || d == "int" || d == "int32") return 4;
    if (d == "double" || d == "float64" || d == "long" || d == "int64") return 8;
    if (d == "half" || d == "float16" || d == "bfloat16" || d == "short" || d == "int16") return 2;
    if (d == "byte" || d == "char" || d == "bool" || d == "int8" || d == "uint8") return 1;
    return 0;
}

// Intervals of one CPU thread in which launched work belongs to a phase.
struct PhaseSpan {
    double start = 0, end = 0;
    EventKind kind = EventKind::kernel;
};

bool ends_with(std::string_view s, std::string_view suffix) {
    return s.size() >= suffix.size() && s.substr(s.size() - suffix.size()) == suffix;
}

EventKind phase_of_op(std::string_view name) {
    if (starts_with(name, "autograd::engine::evaluate_function")) return EventKind::backward;
    // A module's forward as PyTorch names it ("DistributedDataParallel.forward").
    if (ends_with(name, ".forward")) return EventKind::forward;
    if (starts_with(name, "Optimizer.step") || starts_with(name, "Optimizer.zero_grad"))
        return EventKind::optimizer;
    return EventKind::kernel;
}

struct StepWindow {
    double start = 0, end = 0;
    int number = 0;
};

// One collective call of this rank, from event `e` (already timed and stepped in `te`, which
// it moves to the comm lane): its bytes from the message size and dtype, its group size, or
// unknown (0, flagged) where the profiler recorded neither.
CollectiveRecord collective_record(const RawTraceFile& f, const RawEvent& e, const std::string& op,
                                   const std::string& name, TraceEvent& te, bool& sizes_missing,
                                   bool& ranks_missing) {
    const StringTable& S = f.strings;
    te.kind = EventKind::collective;
    te.stream = StreamKind::comm;
    CollectiveRecord r;
    r.device = 0;
    r.op = op;
    const std::size_t width = dtype_bytes(f.text(e, S.find("dtype")));
    const auto in = f.number(e, S.find("In msg nelems")),
               out = f.number(e, S.find("Out msg nelems"));
    if (width && (in || out))
        r.bytes = to_size(std::max(in.value_or(0), out.value_or(0))) * width;
    else
        sizes_missing = true;
    if (auto g = f.number(e, S.find("Group size")))
        r.ranks = to_int(*g);
    else {
        r.ranks = 0;
        ranks_missing = true;
    }
    r.label = name;
    r.step = te.step;
    r.start_ns = te.start_ns;
    r.end_ns = te.end_ns;
    te.bytes = r.bytes;
    te.label = r.op;
    return r;
}

}  // namespace

namespace {

// A collective the CPU issued: the outermost call naming one on its thread (c10d::allreduce_)
// with what it holds, record_param_comms (sizes, dtype, group size, the collective's name) and
// the backend's annotation (nccl:all_reduce).
struct CpuCollective {
    const RawEvent* call = nullptr;
    const RawEvent* params = nullptr;  // record_param_comms, where recorded
    std::string op;
};

std::vector<CpuCollective> cpu_issued_collectives(const RawTraceFile& f) {
    const int k_coll = f.strings.find("Collective name");
    std::map<int, std::vector<const RawEvent*>> threads;
    for (const RawEvent& e : f.events) {
        if (e.ph != 'X' || !e.has_ts) continue;
        const std::string& cat = f.str(e.cat);
        if (cat != "cpu_op" && cat != "user_annotation" && cat != "Operator" && !cat.empty())
            continue;
        if (!collective_op_of(f.str(e.name)).empty()) threads[e.tid].push_back(&e);
    }
    std::vector<CpuCollective> out;
    for (auto& [tid, list] : threads) {
        std::sort(list.begin(), list.end(), [](const RawEvent* a, const RawEvent* b) {
            return a->ts != b->ts ? a->ts < b->ts : a->dur > b->dur;
        });
        double open_end = -1;
        for (const RawEvent* e : list) {
            const std::string& name = f.str(e->name);
            const bool params = name == "record_param_comms";
            // c10d's wait on a work object records its params too ("Collective name": wait).
            const std::string named = params ? f.text(*e, k_coll) : std::string();
            if (params && (named == "wait" || named == "barrier")) continue;
            std::string op = collective_op_of(params && !named.empty() ? named : name);
            if (out.empty() || out.back().call->tid != e->tid || e->ts >= open_end) {
                out.push_back({e, nullptr, op});
                open_end = e->ts + e->dur;
            }
            CpuCollective& c = out.back();
            if (params && !c.params) c.params = e;
            // A specific name (the params' or the annotation's) over a generic one.
            if ((c.op.empty() || c.op == "collective") && !op.empty()) c.op = op;
        }
    }
    std::erase_if(out, [](const CpuCollective& c) { return c.op.empty() || c.op == "barrier"; });
    return out;
}

}  // namespace

std::string collective_op_of(std::string_view raw) {
    const std::string n = lower(raw);
    // Kernel names carry the collective after the prefix: ncclKernel_AllReduce_RING_LL_...
    auto has = [&](std::string_view s) { return n.find(s) != std::string::npos; };
    const bool comm_name =
        starts_with(n, "nccl") || starts_with(n, "gloo") || starts_with(n, "c10d::") ||
        n == "record_param_comms" || has("allreduce") || has("all_reduce") || has("allgather") ||
        has("all_gather") || has("reduce_scatter") || has("reducescatter") || has("alltoall") ||
        has("all_to_all") || has("broadcast") || has("sendrecv");
    if (!comm_name) return {};
    if (has("allreduce") || has("all_reduce")) return "all_reduce";
    if (has("reduce_scatter") || has("reducescatter") || has("_reduce_scatter_base"))
        return "reduce_scatter";
    if (has("allgather") || has("all_gather")) return "all_gather";
    if (has("alltoall") || has("all_to_all")) return "all_to_all";
    if (has("broadcast")) return "broadcast";
    if (has("sendrecv") || has("send") || has("recv")) return "send_recv";
    if (has("barrier")) return "barrier";
    if (n == "record_param_comms") return "collective";
    return starts_with(n, "nccl") || starts_with(n, "gloo") ? "collective" : "";
}

RankTrace read_pytorch_trace(const RawTraceFile& f) {
    RankTrace out;
    const StringTable& S = f.strings;
    auto key = [&](std::string_view k) { return S.find(k); };
    const int k_correlation = key("correlation"), k_name = key("name"), k_labels = key("labels"),
              k_coll = key("Collective name");
    const std::string& kineto_cat_kernel = "kernel";

    // Who is who: process labels ("CPU", "GPU 0") and thread names.
    std::map<int, std::string> process_label;
    std::map<std::pair<int, int>, std::string> thread_name;
    for (const RawEvent& e : f.events) {
        if (e.ph != 'M') continue;
        const std::string& what = f.str(e.name);
        if (what == "process_labels") process_label[e.pid] = f.text(e, k_labels);
        if (what == "thread_name") thread_name[{e.pid, e.tid}] = f.text(e, k_name);
    }

    const double base_us = f.base_time_ns ? *f.base_time_ns / 1000.0 : 0.0;
    auto t_ns = [&](double ts) { return ns_of_us(ts + base_us); };

    // Profiler steps, and the launches and phases of the CPU side.
    std::vector<StepWindow> windows;
    std::unordered_map<long long, std::pair<double, int>> launch;  // correlation -> (ts, tid)
    std::map<int, std::vector<PhaseSpan>> phases;                  // per CPU thread
    bool gpu = false;
    for (const RawEvent& e : f.events) {
        if (e.ph != 'X' || !e.has_ts) continue;
        const std::string& cat = f.str(e.cat);
        const std::string& name = f.str(e.name);
        if (cat == kineto_cat_kernel || cat == "gpu_memcpy" || cat == "gpu_memset") gpu = true;
        if (starts_with(name, "ProfilerStep#") && cat != "gpu_user_annotation") {
            StepWindow w;
            w.start = e.ts;
            w.end = e.ts + e.dur;
            w.number = to_int(std::strtod(name.c_str() + 13, nullptr));
            windows.push_back(w);
        } else if (cat == "cuda_runtime" || cat == "cuda_driver") {
            if (auto c = f.number(e, k_correlation))
                launch[static_cast<long long>(*c)] = {e.ts, e.tid};
        } else if (cat == "cpu_op" || cat.empty() || cat == "Operator" ||
                   cat == "user_annotation") {
            const EventKind k = phase_of_op(name);
            if (k != EventKind::kernel) phases[e.tid].push_back({e.ts, e.ts + e.dur, k});
        }
    }
    std::sort(windows.begin(), windows.end(),
              [](const StepWindow& a, const StepWindow& b) { return a.start < b.start; });
    for (auto& [tid, spans] : phases)
        std::sort(spans.begin(), spans.end(),
                  [](const PhaseSpan& a, const PhaseSpan& b) { return a.start < b.start; });
    auto step_at = [&](double ts) {
        auto it = std::upper_bound(windows.begin(), windows.end(), ts,
                                   [](double t, const StepWindow& w) { return t < w.start; });
        if (it == windows.begin()) return -1;
        --it;
        return ts <= it->end ? static_cast<int>(it - windows.begin()) : -1;
    };
    auto phase_at = [&](int tid, double ts) {
        auto p = phases.find(tid);
        if (p != phases.end()) {
            const auto& spans = p->second;
            auto it = std::upper_bound(spans.begin(), spans.end(), ts,
                                       [](double t, const PhaseSpan& s) { return t < s.start; });
            // Spans nest (an optimizer step holds no backward): the latest start that still
            // covers ts is the innermost.
            while (it != spans.begin()) {
                --it;
                if (ts <= it->end) return it->kind;
                if (spans.end() - it > 64) break;  // far back: nothing older covers ts
            }
        }
        return EventKind::kernel;
    };
    // Threads named like autograd's device threads run only backward work.
    std::map<int, bool> autograd_thread;
    for (const auto& [pt, name] : thread_name)
        if (name.find("autograd") != std::string::npos) autograd_thread[pt.second] = true;

    for (std::size_t i = 0; i < windows.size(); ++i) {
        out.steps.push_back({static_cast<int>(i), std::nan("")});
        out.profiler_steps.push_back(windows[i].number);
    }

    RankDevice dev;
    if (!f.distributed_info.is_null()) {
        const auto& d = f.distributed_info;
        const double rank = json_number(d, "rank", -1), world = json_number(d, "world_size", 0);
        // Absent is unknown; present, a rank counts from 0 and a job has at least one rank.
        if (d.contains("rank") && d["rank"].is_number() && rank < 0)
            PD_THROW(BadInput, f.path,
                     "distributedInfo.rank is " + d["rank"].dump() + ": a rank counts from 0");
        if (d.contains("world_size") && d["world_size"].is_number() && world < 1)
            PD_THROW(BadInput, f.path,
                     "distributedInfo.world_size is " + d["world_size"].dump() +
                         ": a job has at least one rank");
        dev.rank = to_int(rank);
        out.world_size = to_int(world);
        out.distributed_backend = json_string(d, "backend");
    }

    bool sizes_missing = false, ranks_missing = false;
    out.events.reserve(f.events.size() / 2);
    if (gpu) {
        out.producer = "PyTorch profiler (Kineto)";
        // Kineto's times are on the host's clock (epoch-based, or from baseTimeNanoseconds).
        out.shared_clock = true;
        out.backend = BackendKind::cuda;
        int gpu_pid = -1;
        for (const RawEvent& e : f.events) {
            if (e.ph != 'X' || !e.has_ts) continue;
            const std::string& cat = f.str(e.cat);
            const bool memop = cat == "gpu_memcpy" || cat == "gpu_memset";
            if (cat != kineto_cat_kernel && !memop) continue;
            if (gpu_pid < 0) gpu_pid = e.pid;
            const std::string& name = f.str(e.name);
            TraceEvent te;
            te.device = 0;
            te.start_ns = t_ns(e.ts);
            te.end_ns = te.start_ns + duration_ns_of_us(e.dur);
            te.label = name;
            double launched_at = e.ts;
            EventKind phase = EventKind::kernel;
            if (auto c = f.number(e, k_correlation)) {
                if (auto l = launch.find(static_cast<long long>(*c)); l != launch.end()) {
                    launched_at = l->second.first;
                    phase = autograd_thread.count(l->second.second)
                                ? EventKind::backward
                                : phase_at(l->second.second, launched_at);
                }
            }
            te.step = step_at(launched_at);
            const std::string op = memop ? std::string() : collective_op_of(name);
            if (memop) {
                te.kind = EventKind::copy;
            } else if (!op.empty()) {
                // The kernel's own argument names the collective best, where it has one.
                const std::string named = collective_op_of(f.text(e, k_coll));
                out.collectives.push_back(collective_record(f, e, named.empty() ? op : named, name,
                                                            te, sizes_missing, ranks_missing));
            } else {
                te.kind = phase;
            }
            out.events.push_back(std::move(te));
        }
        // No collective kernel ran, yet the CPU issued collectives: a one-rank NCCL group
        // launches no kernel (nothing to exchange). List the calls the CPU made, sized from
        // their record_param_comms, timed by the CPU call; they are not drawn.
        if (out.collectives.empty()) {
            const std::vector<CpuCollective> issued = cpu_issued_collectives(f);
            for (const CpuCollective& c : issued) {
                TraceEvent te;
                te.start_ns = t_ns(c.call->ts);
                te.end_ns = te.start_ns + duration_ns_of_us(c.call->dur);
                te.step = step_at(c.call->ts);
                CollectiveRecord r =
                    c.params ? collective_record(f, *c.params, c.op, f.str(c.call->name), te,
                                                 sizes_missing, ranks_missing)
                             : collective_record(f, *c.call, c.op, f.str(c.call->name), te,
                                                 sizes_missing, ranks_missing);
                out.collectives.push_back(std::move(r));
            }
            if (!issued.empty())
                out.notes.push_back(
                    "Collectives: no collective kernel ran on the GPU (a one-rank NCCL group "
                    "launches none), so the " +
                    std::to_string(issued.size()) +
                    " collectives listed are the calls the CPU issued (c10d::allreduce_ and "
                    "the like), sized from their record_param_comms and timed by the CPU call "
                    "(its bandwidth is the call's, not a transfer's); they are not drawn.");
        }
        // The caching allocator's [memory] marks: its reserved bytes on this GPU (Device Type
        // 1 is CUDA), PyTorch's max_memory_reserved; what the bytes hold is not recorded.
        const int k_type = key("Device Type"), k_id = key("Device Id"),
                  k_reserved = key("Total Reserved");
        for (const RawEvent& e : f.events) {
            if ((e.ph != 'i' && e.ph != 'I') || f.str(e.name) != "[memory]") continue;
            if (f.number(e, k_type).value_or(-1) != 1) continue;
            if (f.text(e, k_id) != f.str(gpu_pid)) continue;
            if (auto r = f.number(e, k_reserved))
                dev.peak_reserved_bytes = std::max(dev.peak_reserved_bytes, to_size(*r));
        }
        std::string label = process_label.count(gpu_pid) ? process_label[gpu_pid] : "GPU";
        if (!f.device_properties.is_null() && f.device_properties.is_array()) {
            for (const auto& p : f.device_properties) {
                if (std::to_string(to_int(json_number(p, "id", -1))) != f.str(gpu_pid)) continue;
                if (const std::string name = json_string(p, "name"); !name.empty())
                    label += " " + name;
                dev.capacity_bytes = to_size(json_number(p, "totalGlobalMem", 0));
            }
        }
        dev.name = label;
        out.notes.push_back(
            "Lanes: a rank's GPU kernels of every stream on its compute lane, NCCL kernels on "
            "its comm lane; the CPU side is not drawn.");
        out.notes.push_back(
            "A kernel's step and phase are those of the CPU call that launched it (its "
            "correlation id): forward inside a module's .forward, backward from autograd's "
            "backward, optimizer from Optimizer.step, else kernel (phase not recorded).");
    } else {
        out.producer = "PyTorch profiler (CPU)";
        out.backend = BackendKind::cpu;
        // The training thread: the one holding the profiler steps, else the busiest.
        std::map<int, std::size_t> per_thread;
        int step_thread = -1;
        for (const RawEvent& e : f.events) {
            if (e.ph != 'X') continue;
            ++per_thread[e.tid];
            if (step_thread < 0 && starts_with(f.str(e.name), "ProfilerStep#")) step_thread = e.tid;
        }
        if (step_thread < 0 && !per_thread.empty())
            step_thread =
                std::max_element(per_thread.begin(), per_thread.end(),
                                 [](const auto& a, const auto& b) { return a.second < b.second; })
                    ->first;
        // Per thread, events by start (longer first on ties), so a stack of open ends tells
        // each event's depth: depth 0 under no other, the lane takes each thread's outermost
        // non-step ops and every collective not inside another collective.
        std::map<int, std::vector<const RawEvent*>> threads;
        bool worker_collectives = false;  // gloo:/nccl: work events, beside c10d:: launches
        for (const RawEvent& e : f.events)
            if (e.ph == 'X' && e.has_ts && f.str(e.cat) != "gpu_user_annotation") {
                threads[e.tid].push_back(&e);
                const std::string& n = f.str(e.name);
                worker_collectives =
                    worker_collectives || starts_with(n, "gloo:") || starts_with(n, "nccl:");
            }

        for (auto& [tid, list] : threads) {
            std::sort(list.begin(), list.end(), [](const RawEvent* a, const RawEvent* b) {
                return a->ts != b->ts ? a->ts < b->ts : a->dur > b->dur;
            });
            std::vector<double> open_ends;       // enclosing non-step ops
            std::vector<double> open_comm_ends;  // enclosing collectives
            for (const RawEvent* e : list) {
                const double end = e->ts + e->dur;
                while (!open_ends.empty() && open_ends.back() <= e->ts) open_ends.pop_back();
                while (!open_comm_ends.empty() && open_comm_ends.back() <= e->ts)
                    open_comm_ends.pop_back();
                const std::string& name = f.str(e->name);
                if (starts_with(name, "ProfilerStep#")) continue;
                std::string op = collective_op_of(name);
                // c10d::allreduce_ only hands the work to a gloo thread; the gloo event is it.
                if (worker_collectives && starts_with(name, "c10d::")) op.clear();
                const bool top = open_ends.empty();
                // Start and duration are rounded to whole microseconds apart, so a child can
                // end 1 us after its parent: it ends with its parent here.
                open_ends.push_back(top ? end : std::min(end, open_ends.back()));
                if (!op.empty()) {
                    if (!open_comm_ends.empty()) continue;
                    open_comm_ends.push_back(end);
                } else if (!top || tid != step_thread) {
                    if (!(top && autograd_thread.count(tid))) continue;
                }
                TraceEvent te;
                te.device = 0;
                te.start_ns = t_ns(e->ts);
                te.end_ns = te.start_ns + duration_ns_of_us(e->dur);
                te.label = name;
                te.step = step_at(e->ts);
                if (!op.empty()) {
                    out.collectives.push_back(
                        collective_record(f, *e, op, name, te, sizes_missing, ranks_missing));
                } else {
                    te.kind = autograd_thread.count(tid) ? EventKind::backward : phase_of_op(name);
                }
                out.events.push_back(std::move(te));
            }
        }
        dev.name = "CPU";
        out.notes.push_back(
            "Lanes: the training thread's top-level ops on the compute lane (forward from a "
            "module's .forward, backward from autograd's evaluate_function, optimizer from "
            "Optimizer.step, else kernel), collectives of any thread (gloo's worker threads) "
            "on the comm lane.");
        out.notes.push_back(
            "This profiler's times count from each rank's own profiler start: the ranks share "
            "no clock.");
    }
    if (windows.empty())
        out.unknown.push_back("steps: the trace has no ProfilerStep# marks, so no step time");
    if (sizes_missing)
        out.unknown.push_back(
            "collective sizes: some collectives carry no message size, so their bytes and "
            "bandwidth are unknown");
    if (ranks_missing)
        out.unknown.push_back("collective group sizes: not recorded, so no busbw for those");
    out.unknown.push_back("loss: a profiler trace does not record it");
    out.unknown.push_back(
        "memory by category: a profiler trace does not record it (Kineto's [memory] marks give the "
        "caching allocator's reserved bytes, where present)");
    out.unknown.push_back(
        "pipeline bubble: no pipeline schedule is recognised in a profiler trace");
    out.devices.push_back(dev);
    return out;
}

}  // namespace pd::import
