// Chrome Trace Event format, as Perfetto reads it: pid = device, tid = stream, complete ("X")
// events in microseconds, counters ("C") for memory by category, metadata ("M") names, and
// flow events ("s"/"f") from each send to its recv.
#include <nlohmann/json.hpp>

#include "pd/exports.h"

namespace pd {

using nlohmann::json;

namespace {

double us(std::int64_t ns) {
    return static_cast<double>(ns) / 1000.0;
}

json event_args(const TraceEvent& e) {
    json args = json::object();
    if (e.step >= 0) args["step"] = e.step;
    if (e.microbatch >= 0) args["microbatch"] = e.microbatch;
    if (e.stage >= 0) args["stage"] = e.stage;
    if (e.layer >= 0) args["layer"] = e.layer;
    if (e.phase != CollectivePhase::none)
        args["phase"] =
            e.phase == CollectivePhase::reduce_scatter ? "reduce_scatter" : "all_gather";
    if (e.step_index >= 0) args["step_index"] = e.step_index;
    if (e.chunk >= 0) args["chunk"] = e.chunk;
    if (e.peer >= 0) args["peer"] = e.peer;
    if (e.bytes) args["bytes"] = e.bytes;
    // For the importer's round trip: the name below adds micro-batch and step suffixes.
    if (!e.label.empty()) args["label"] = e.label;
    if (e.flow_id) {
        args["flow_id"] = e.flow_id;
        args["flow_source"] = e.flow_source;
    }
    return args;
}

}  // namespace

std::string chrome_trace_json(const Trace& trace) {
    json events = json::array();
    for (int d = 0; d < trace.devices; ++d) {
        const std::string name = d < static_cast<int>(trace.device_names.size())
                                     ? trace.device_names[static_cast<std::size_t>(d)]
                                     : "device " + std::to_string(d);
        events.push_back({{"ph", "M"},
                          {"name", "process_name"},
                          {"pid", d},
                          {"tid", 0},
                          {"args", {{"name", name}}}});
        events.push_back({{"ph", "M"},
                          {"name", "process_sort_index"},
                          {"pid", d},
                          {"tid", 0},
                          {"args", {{"sort_index", d}}}});
        for (StreamKind s : {StreamKind::compute, StreamKind::comm}) {
            events.push_back({{"ph", "M"},
                              {"name", "thread_name"},
                              {"pid", d},
                              {"tid", static_cast<int>(s)},
                              {"args", {{"name", std::string(name_of(s))}}}});
        }
    }
    for (const auto& e : trace.events) {
        const int tid = static_cast<int>(e.stream);
        std::string name = e.label.empty() ? std::string(name_of(e.kind)) : e.label;
        if (e.microbatch >= 0 && is_compute(e.kind) && e.kind != EventKind::optimizer)
            name += " mb" + std::to_string(e.microbatch);
        if (e.step_index >= 0) name += " #" + std::to_string(e.step_index);
        if (e.kind == EventKind::oom) {
            events.push_back({{"ph", "i"},
                              {"s", "p"},
                              {"name", "out of memory"},
                              {"cat", "oom"},
                              {"pid", e.device},
                              {"tid", tid},
                              {"ts", us(e.start_ns)},
                              {"args", {{"message", e.label}}}});
            continue;
        }
        events.push_back({{"ph", "X"},
                          {"name", name},
                          {"cat", std::string(name_of(e.kind))},
                          {"pid", e.device},
                          {"tid", tid},
                          {"ts", us(e.start_ns)},
                          {"dur", us(e.end_ns - e.start_ns)},
                          {"args", event_args(e)}});
        if (e.flow_id) {
            // Bound to the enclosing slice: place the flow point inside it.
            const double mid = us(e.start_ns + (e.end_ns - e.start_ns) / 2);
            json flow = {{"name", "transfer"}, {"cat", "flow"}, {"id", e.flow_id},
                         {"pid", e.device},    {"tid", tid},    {"ts", mid}};
            flow["ph"] = e.flow_source ? "s" : "f";
            if (!e.flow_source) flow["bp"] = "e";
            events.push_back(std::move(flow));
        }
    }
    // Memory counters: every sample carries the device's full category breakdown at that time.
    std::vector<std::array<std::size_t, kMemoryCategoryCount>> live(
        static_cast<std::size_t>(trace.devices));
    for (const auto& s : trace.memory) {
        if (s.device < 0 || s.device >= trace.devices) continue;
        auto& cur = live[static_cast<std::size_t>(s.device)];
        cur[static_cast<std::size_t>(s.category)] = s.bytes;
        json args = json::object();
        for (std::size_t c = 0; c < kMemoryCategoryCount; ++c)
            args[std::string(kMemoryCategoryNames[c])] = cur[c];
        events.push_back({{"ph", "C"},
                          {"name", "memory (bytes)"},
                          {"pid", s.device},
                          {"ts", us(s.t_ns)},
                          {"args", std::move(args)}});
    }
    json root;
    root["traceEvents"] = std::move(events);
    root["displayTimeUnit"] = "ms";
    root["otherData"] = {{"producer", "ParallelDeck"},
                         {"clock", std::string(name_of(trace.clock))},
                         {"backend", std::string(name_of(trace.backend))},
                         {"link_latency_us", trace.link.latency_us},
                         {"link_gbit_per_s", trace.link.gbit_per_s()},
                         {"link_gbyte_per_s", trace.link.bytes_per_ns},
                         {"intra_op_threads", trace.intra_op_threads}};
    // What the events above do not carry, so an import of this file gives the same metrics.
    json devices = json::array();
    for (int d = 0; d < trace.devices; ++d) {
        const auto i = static_cast<std::size_t>(d);
        devices.push_back(
            {{"name", i < trace.device_names.size() ? trace.device_names[i] : std::string()},
             {"capacity_bytes", i < trace.capacity_bytes.size() ? trace.capacity_bytes[i] : 0},
             {"peak_reserved_bytes",
              i < trace.peak_reserved_bytes.size() ? trace.peak_reserved_bytes[i] : 0}});
    }
    json steps = json::array();
    for (const auto& s : trace.steps) steps.push_back({{"step", s.step}, {"loss", s.loss}});
    json collectives = json::array();
    for (const auto& c : trace.collectives)
        collectives.push_back({{"device", c.device},
                               {"op", c.op},
                               {"label", c.label},
                               {"bytes", c.bytes},
                               {"ranks", c.ranks},
                               {"step", c.step},
                               {"start_ns", c.start_ns},
                               {"end_ns", c.end_ns}});
    root["otherData"]["devices"] = std::move(devices);
    root["otherData"]["steps"] = std::move(steps);
    root["otherData"]["collectives"] = std::move(collectives);
    return root.dump();
}

}  // namespace pd
