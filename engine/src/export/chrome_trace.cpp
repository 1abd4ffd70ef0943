// Chrome Trace Event format, as Perfetto reads it: pid = device, tid = stream, complete ("X")
// events in microseconds, counters ("C") for memory by category, metadata ("M") names, and
// flow events ("s"/"f") from each send to its recv.
//
// Written event by event into a stream, never held whole: a run of minutes records millions
// of events, and an interrupted run must stop in seconds, not build a JSON tree of gigabytes
// first. Strings are escaped and numbers written in their shortest round-trip form, as a JSON
// library would.
#include <algorithm>
#include <array>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <sstream>

#include "pd/atomic_file.h"
#include "pd/exports.h"

namespace pd {

namespace {

class JsonOut {
  public:
    explicit JsonOut(std::ostream& out) : out_(out) {}

    void raw(std::string_view s) { out_.write(s.data(), static_cast<std::streamsize>(s.size())); }

    void string(std::string_view s) {
        out_.put('"');
        for (const char c : s) {
            switch (c) {
                case '"':
                    raw("\\\"");
                    break;
                case '\\':
                    raw("\\\\");
                    break;
                case '\n':
                    raw("\\n");
                    break;
                case '\r':
                    raw("\\r");
                    break;
                case '\t':
                    raw("\\t");
                    break;
                default:
                    if (static_cast<unsigned char>(c) < 0x20) {
                        char buf[8];
                        std::snprintf(buf, sizeof buf, "\\u%04x", static_cast<unsigned>(c));
                        raw(buf);
                    } else {
                        out_.put(c);
                    }
            }
        }
        out_.put('"');
    }

    // Shortest round-trip form; JSON has no NaN or infinity: null, as nlohmann writes them.
    void number(double v) {
        if (!std::isfinite(v)) {
            raw("null");
            return;
        }
        char buf[32];
        const auto r = std::to_chars(buf, buf + sizeof buf, v);
        raw(std::string_view(buf, static_cast<std::size_t>(r.ptr - buf)));
    }
    template <typename Int>
    void integer(Int v) {
        char buf[24];
        const auto r = std::to_chars(buf, buf + sizeof buf, v);
        raw(std::string_view(buf, static_cast<std::size_t>(r.ptr - buf)));
    }

    // "key": within an object; a comma before every key but the first.
    void key(std::string_view k, bool& first) {
        if (!first) out_.put(',');
        first = false;
        string(k);
        out_.put(':');
    }

  private:
    std::ostream& out_;
};

double us(std::int64_t ns) {
    return static_cast<double>(ns) / 1000.0;
}

void write_event_args(JsonOut& j, const TraceEvent& e) {
    bool first = true;
    j.raw("{");
    auto field = [&](std::string_view k, long long v) {
        j.key(k, first);
        j.integer(v);
    };
    if (e.step >= 0) field("step", e.step);
    if (e.microbatch >= 0) field("microbatch", e.microbatch);
    if (e.stage >= 0) field("stage", e.stage);
    if (e.layer >= 0) field("layer", e.layer);
    if (e.phase != CollectivePhase::none) {
        j.key("phase", first);
        j.string(e.phase == CollectivePhase::reduce_scatter ? "reduce_scatter" : "all_gather");
    }
    if (e.step_index >= 0) field("step_index", e.step_index);
    if (e.chunk >= 0) field("chunk", e.chunk);
    if (e.peer >= 0) field("peer", e.peer);
    if (e.tier != LinkTier::none) {
        j.key("tier", first);
        j.string(name_of(e.tier));
    }
    if (e.bytes) {
        j.key("bytes", first);
        j.integer(e.bytes);
    }
    // For the importer's round trip: the name below adds micro-batch and step suffixes.
    if (!e.label.empty()) {
        j.key("label", first);
        j.string(e.label);
    }
    if (e.flow_id) {
        j.key("flow_id", first);
        j.integer(e.flow_id);
        j.key("flow_source", first);
        j.raw(e.flow_source ? "true" : "false");
    }
    j.raw("}");
}

// The fields every event starts with: "ph", "name" (when given), "pid", "tid".
void begin_event(JsonOut& j, bool& first_event, std::string_view ph, std::string_view name, int pid,
                 int tid) {
    j.raw(first_event ? "\n{" : ",\n{");
    first_event = false;
    j.raw("\"ph\":");
    j.string(ph);
    j.raw(",\"name\":");
    j.string(name);
    j.raw(",\"pid\":");
    j.integer(pid);
    j.raw(",\"tid\":");
    j.integer(tid);
}

}  // namespace

void write_chrome_trace(std::ostream& out, const Trace& trace) {
    JsonOut j(out);
    bool first_event = true;
    j.raw("{\"traceEvents\":[");
    // The host stream is named only where a run used it (ZeRO-Offload).
    const bool host_used =
        std::any_of(trace.events.begin(), trace.events.end(),
                    [](const TraceEvent& e) { return e.stream == StreamKind::host; });
    for (int d = 0; d < trace.devices; ++d) {
        const std::string name = d < static_cast<int>(trace.device_names.size())
                                     ? trace.device_names[static_cast<std::size_t>(d)]
                                     : "device " + std::to_string(d);
        begin_event(j, first_event, "M", "process_name", d, 0);
        j.raw(",\"args\":{\"name\":");
        j.string(name);
        j.raw("}}");
        begin_event(j, first_event, "M", "process_sort_index", d, 0);
        j.raw(",\"args\":{\"sort_index\":");
        j.integer(d);
        j.raw("}}");
        for (StreamKind s : {StreamKind::compute, StreamKind::comm, StreamKind::host}) {
            if (s == StreamKind::host && !host_used) continue;
            begin_event(j, first_event, "M", "thread_name", d, static_cast<int>(s));
            j.raw(",\"args\":{\"name\":");
            j.string(name_of(s));
            j.raw("}}");
        }
    }
    for (const auto& e : trace.events) {
        const int tid = static_cast<int>(e.stream);
        if (e.kind == EventKind::oom) {
            begin_event(j, first_event, "i", "out of memory", e.device, tid);
            j.raw(",\"s\":\"p\",\"cat\":\"oom\",\"ts\":");
            j.number(us(e.start_ns));
            j.raw(",\"args\":{\"message\":");
            j.string(e.label);
            j.raw("}}");
            continue;
        }
        std::string name = e.label.empty() ? std::string(name_of(e.kind)) : e.label;
        if (e.microbatch >= 0 && is_compute(e.kind) && e.kind != EventKind::optimizer)
            name += " mb" + std::to_string(e.microbatch);
        if (e.step_index >= 0) name += " #" + std::to_string(e.step_index);
        begin_event(j, first_event, "X", name, e.device, tid);
        j.raw(",\"cat\":");
        j.string(name_of(e.kind));
        j.raw(",\"ts\":");
        j.number(us(e.start_ns));
        j.raw(",\"dur\":");
        j.number(us(e.end_ns - e.start_ns));
        j.raw(",\"args\":");
        write_event_args(j, e);
        j.raw("}");
        if (e.flow_id) {
            // Bound to the enclosing slice: place the flow point inside it.
            begin_event(j, first_event, e.flow_source ? "s" : "f", "transfer", e.device, tid);
            j.raw(",\"cat\":\"flow\",\"id\":");
            j.integer(e.flow_id);
            j.raw(",\"ts\":");
            j.number(us(e.start_ns + (e.end_ns - e.start_ns) / 2));
            if (!e.flow_source) j.raw(",\"bp\":\"e\"");
            j.raw("}");
        }
    }
    // Memory counters: every sample carries the device's full category breakdown at that time.
    std::vector<std::array<std::size_t, kMemoryCategoryCount>> live(
        static_cast<std::size_t>(std::max(0, trace.devices)));
    for (const auto& s : trace.memory) {
        if (s.device < 0 || s.device >= trace.devices) continue;
        auto& cur = live[static_cast<std::size_t>(s.device)];
        cur[static_cast<std::size_t>(s.category)] = s.bytes;
        j.raw(first_event ? "\n{" : ",\n{");
        first_event = false;
        j.raw("\"ph\":\"C\",\"name\":\"memory (bytes)\",\"pid\":");
        j.integer(s.device);
        j.raw(",\"ts\":");
        j.number(us(s.t_ns));
        j.raw(",\"args\":{");
        bool first = true;
        for (std::size_t c = 0; c < kMemoryCategoryCount; ++c) {
            j.key(kMemoryCategoryNames[c], first);
            j.integer(cur[c]);
        }
        j.raw("}}");
    }
    j.raw("\n],\"displayTimeUnit\":\"ms\",\"otherData\":{\"producer\":\"ParallelDeck\",\"clock\":");
    j.string(name_of(trace.clock));
    j.raw(",\"backend\":");
    j.string(name_of(trace.backend));
    j.raw(",\"link_latency_us\":");
    j.number(trace.link.latency_us);
    j.raw(",\"link_gbit_per_s\":");
    j.number(trace.link.gbit_per_s());
    j.raw(",\"link_gbyte_per_s\":");
    j.number(trace.link.bytes_per_ns);
    j.raw(",\"intra_op_threads\":");
    j.integer(trace.intra_op_threads);
    // What the events above do not carry, so an import of this file gives the same metrics.
    j.raw(",\"devices\":[");
    for (int d = 0; d < trace.devices; ++d) {
        const auto i = static_cast<std::size_t>(d);
        j.raw(d ? ",{\"name\":" : "{\"name\":");
        j.string(i < trace.device_names.size() ? trace.device_names[i] : std::string());
        j.raw(",\"capacity_bytes\":");
        j.integer(i < trace.capacity_bytes.size() ? trace.capacity_bytes[i] : std::size_t{0});
        j.raw(",\"peak_reserved_bytes\":");
        j.integer(i < trace.peak_reserved_bytes.size() ? trace.peak_reserved_bytes[i]
                                                       : std::size_t{0});
        j.raw("}");
    }
    j.raw("],\"steps\":[");
    for (std::size_t i = 0; i < trace.steps.size(); ++i) {
        j.raw(i ? ",{\"step\":" : "{\"step\":");
        j.integer(trace.steps[i].step);
        j.raw(",\"loss\":");
        j.number(trace.steps[i].loss);
        j.raw("}");
    }
    j.raw("],\"collectives\":[");
    for (std::size_t i = 0; i < trace.collectives.size(); ++i) {
        const CollectiveRecord& c = trace.collectives[i];
        j.raw(i ? ",\n{\"device\":" : "\n{\"device\":");
        j.integer(c.device);
        j.raw(",\"op\":");
        j.string(c.op);
        j.raw(",\"label\":");
        j.string(c.label);
        j.raw(",\"bytes\":");
        j.integer(c.bytes);
        j.raw(",\"ranks\":");
        j.integer(c.ranks);
        j.raw(",\"step\":");
        j.integer(c.step);
        j.raw(",\"start_ns\":");
        j.integer(c.start_ns);
        j.raw(",\"end_ns\":");
        j.integer(c.end_ns);
        j.raw("}");
    }
    j.raw("]}}\n");
}

std::string chrome_trace_json(const Trace& trace) {
    std::ostringstream out;
    write_chrome_trace(out, trace);
    return out.str();
}

void write_chrome_trace_file(const std::string& path, const Trace& trace) {
    AtomicFile file(path);
    write_chrome_trace(file.stream(), trace);
    file.commit();
}

}  // namespace pd
