// ParallelDeck's own Chrome-trace export read back (see export/chrome_trace.cpp): pid is the
// device, tid the stream, `cat` the event kind and `args` its fields; otherData holds what
// the events do not (devices, losses, collective calls), so a round trip keeps the metrics.
#include <array>
#include <cmath>
#include <cstdlib>

#include "import/rank_trace.h"
#include "pd/error.h"

namespace pd::import {

namespace {

std::optional<EventKind> kind_from_name(std::string_view name) {
    for (std::size_t k = 0; k < kEventKindCount; ++k)
        if (name_of(static_cast<EventKind>(k)) == name) return static_cast<EventKind>(k);
    return std::nullopt;
}

int int_of(const RawTraceFile& f, const RawEvent& e, int key, int fallback = -1) {
    const auto v = f.number(e, key);
    return v ? to_int(*v) : fallback;
}

}  // namespace

RankTrace read_parallel_deck_trace(const RawTraceFile& f) {
    RankTrace out;
    out.producer = "ParallelDeck";
    out.own_export = true;
    out.shared_clock = true;
    const nlohmann::json& other = f.other_data;
    auto get = [&](const char* key) -> const nlohmann::json* {
        return other.contains(key) ? &other[key] : nullptr;
    };
    out.clock = json_string(other, "clock") == "device" ? ClockMode::device : ClockMode::wall;
    out.backend = backend_from_name(json_string(other, "backend")).value_or(BackendKind::cpu);
    out.link.latency_us = json_number(other, "link_latency_us", out.link.latency_us);
    out.link.bytes_per_ns = json_number(other, "link_gbyte_per_s", out.link.bytes_per_ns);

    const StringTable& S = f.strings;
    const int k_step = S.find("step"), k_mb = S.find("microbatch"), k_stage = S.find("stage"),
              k_layer = S.find("layer"), k_phase = S.find("phase"),
              k_step_index = S.find("step_index"), k_chunk = S.find("chunk"),
              k_peer = S.find("peer"), k_bytes = S.find("bytes"), k_label = S.find("label"),
              k_flow = S.find("flow_id"), k_flow_source = S.find("flow_source"),
              k_message = S.find("message"), k_tier = S.find("tier");
    int devices = 0;
    if (auto d = get("devices"); d && d->is_array() && d->size() <= (1u << 16)) {
        for (const auto& dev : *d) {
            RankDevice rd;
            rd.rank = devices++;
            rd.name = json_string(dev, "name");
            rd.capacity_bytes = to_size(json_number(dev, "capacity_bytes", 0));
            rd.peak_reserved_bytes = to_size(json_number(dev, "peak_reserved_bytes", 0));
            out.devices.push_back(std::move(rd));
        }
    }
    auto device_of = [&](const RawEvent& e) {
        const std::string& pid = f.str(e.pid);
        char* end = nullptr;
        const long d = std::strtol(pid.c_str(), &end, 10);
        if (pid.empty() || *end || d < 0 || d >= 1 << 16)
            PD_THROW(BadInput, f.path,
                     "byte " + std::to_string(e.offset) + ": a ParallelDeck event's pid \"" + pid +
                         "\" is not a device number");
        while (static_cast<long>(out.devices.size()) <= d) {
            RankDevice rd;
            rd.rank = static_cast<int>(out.devices.size());
            out.devices.push_back(rd);
        }
        return static_cast<int>(d);
    };

    std::vector<std::array<std::size_t, kMemoryCategoryCount>> live;
    for (const RawEvent& e : f.events) {
        if (e.ph == 'X' && e.has_ts) {
            const auto kind = kind_from_name(f.str(e.cat));
            if (!kind) continue;  // a slice of someone else's: not ours to read
            TraceEvent te;
            te.device = device_of(e);
            te.stream = f.str(e.tid) == "1"   ? StreamKind::comm
                        : f.str(e.tid) == "2" ? StreamKind::host
                                              : StreamKind::compute;
            te.kind = *kind;
            te.label = f.text(e, k_label);
            te.step = int_of(f, e, k_step);
            te.microbatch = int_of(f, e, k_mb);
            te.stage = int_of(f, e, k_stage);
            te.layer = int_of(f, e, k_layer);
            const std::string phase = f.text(e, k_phase);
            te.phase = phase == "reduce_scatter" ? CollectivePhase::reduce_scatter
                       : phase == "all_gather"   ? CollectivePhase::all_gather
                                                 : CollectivePhase::none;
            te.step_index = int_of(f, e, k_step_index);
            te.chunk = int_of(f, e, k_chunk);
            te.peer = int_of(f, e, k_peer);
            const std::string tier = f.text(e, k_tier);
            for (int t = 1; t < kLinkTierCount; ++t)
                if (tier == name_of(static_cast<LinkTier>(t))) te.tier = static_cast<LinkTier>(t);
            te.bytes = to_size(f.number(e, k_bytes).value_or(0));
            te.flow_id = to_size(f.number(e, k_flow).value_or(0));
            te.flow_source = f.number(e, k_flow_source).value_or(0) != 0;
            te.start_ns = ns_of_us(e.ts);
            te.end_ns = te.start_ns + duration_ns_of_us(e.dur);
            out.events.push_back(std::move(te));
        } else if ((e.ph == 'i' || e.ph == 'I') && f.str(e.cat) == "oom") {
            TraceEvent te;
            te.device = device_of(e);
            te.kind = EventKind::oom;
            te.label = f.text(e, k_message);
            te.start_ns = te.end_ns = ns_of_us(e.ts);
            out.events.push_back(std::move(te));
        } else if (e.ph == 'C' && f.str(e.name) == "memory (bytes)") {
            const int d = device_of(e);
            if (live.size() <= static_cast<std::size_t>(d))
                live.resize(static_cast<std::size_t>(d) + 1);
            auto& cur = live[static_cast<std::size_t>(d)];
            // Each counter holds every category: a sample per category that changed.
            for (std::size_t c = 0; c < kMemoryCategoryCount; ++c) {
                const auto v = f.number(e, S.find(kMemoryCategoryNames[c]));
                if (!v) continue;
                const auto bytes = to_size(*v);
                if (bytes == cur[c]) continue;
                cur[c] = bytes;
                out.memory.push_back({d, static_cast<MemoryCategory>(c), bytes, ns_of_us(e.ts)});
            }
        }
    }
    if (auto s = get("steps"); s && s->is_array())
        for (const auto& step : *s)
            if (step.is_object())
                out.steps.push_back({to_int(json_number(step, "step", 0)),
                                     json_number(step, "loss", std::nan(""))});
    if (auto c = get("collectives"); c && c->is_array())
        for (std::size_t i = 0; i < c->size(); ++i) {
            const nlohmann::json& call = (*c)[i];
            if (!call.is_object()) continue;
            CollectiveRecord r;
            r.device = to_int(json_number(call, "device", 0));
            r.op = json_string(call, "op");
            r.label = json_string(call, "label");
            r.bytes = to_size(json_number(call, "bytes", 0));
            r.ranks = to_int(json_number(call, "ranks", 1));
            r.step = to_int(json_number(call, "step", -1));
            r.start_ns = clamp_time_ns(json_number(call, "start_ns", 0));
            r.end_ns = clamp_time_ns(json_number(call, "end_ns", 0));
            if (r.end_ns < r.start_ns)
                PD_THROW(BadInput, f.path,
                         "otherData.collectives[" + std::to_string(i) + "] (" + r.op +
                             ") ends before it starts (start_ns " + std::to_string(r.start_ns) +
                             ", end_ns " + std::to_string(r.end_ns) + ")");
            if (r.device >= 0 && r.device < static_cast<int>(out.devices.size()))
                out.collectives.push_back(std::move(r));
        }
    for (const auto& s : out.steps) out.profiler_steps.push_back(s.step);
    if (out.devices.empty())
        PD_THROW(BadInput, f.path, "a ParallelDeck trace with no device in it");
    (void)devices;
    return out;
}

}  // namespace pd::import
