// The summary of an imported run: what its traces record, and, as null beside the reason,
// what they do not.
#include <nlohmann/json.hpp>

#include <cmath>

#include "pd/metrics.h"
#include "pd/trace_import.h"

namespace pd {

using nlohmann::json;

std::string imported_summary_json(const Trace& trace) {
    const RunMetrics m = compute_metrics(trace, 0);
    const TraceOrigin& o = trace.origin;
    json j;
    j["imported"] = true;
    j["producer"] = o.producer;
    j["files"] = o.files;
    j["ranks"] = o.ranks;
    j["world_size"] = o.world_size > 0 ? json(o.world_size) : json(nullptr);
    j["distributed_backend"] =
        o.distributed_backend.empty() ? json(nullptr) : json(o.distributed_backend);
    j["clock_alignment"] = o.clock_alignment;
    j["raw_events"] = o.raw_events;
    j["device_names"] = trace.device_names;
    json steps = json::array();
    for (std::size_t i = 0; i < m.steps.size(); ++i) {
        const auto& s = m.steps[i];
        steps.push_back({{"step", s.step},
                         {"profiler_step",
                          i < o.profiler_steps.size() ? json(o.profiler_steps[i]) : json(nullptr)},
                         {"time_s", s.time_s},
                         {"loss", std::isnan(s.loss) ? json(nullptr) : json(s.loss)}});
    }
    j["steps"] = std::move(steps);
    j["step_time_s"] = {{"median", m.steps.empty() ? json(nullptr) : json(m.median_step_time_s)}};
    j["figure_steps"] =
        m.figure_steps.empty() ? json(nullptr) : json({m.figure_steps.first, m.figure_steps.last});
    json devices = json::array();
    for (const auto& d : m.devices)
        devices.push_back({{"device", d.device},
                           {"rank", static_cast<std::size_t>(d.device) < o.ranks.size()
                                        ? json(o.ranks[static_cast<std::size_t>(d.device)])
                                        : json(nullptr)},
                           {"busy_s", d.busy_s},
                           {"idle_s", d.idle_s},
                           {"busy_fraction", d.busy_fraction},
                           {"comm_s", d.comm_s},
                           {"exposed_comm_s", d.exposed_comm_s},
                           {"overlapped_comm_s", d.overlapped_comm_s}});
    j["devices"] = std::move(devices);
    j["exposed_comm_s"] = m.exposed_comm_s;
    j["overlapped_comm_s"] = m.overlapped_comm_s;
    json collectives = json::array();
    for (const auto& c : m.collectives) {
        const bool sized = c.bytes > 0;
        const bool grouped = c.ranks > 0;
        collectives.push_back(
            {{"op", c.op},
             {"bytes", sized ? json(c.bytes) : json(nullptr)},
             {"ranks", grouped ? json(c.ranks) : json(nullptr)},
             {"count", c.count},
             {"mean_time_s", c.mean_time_s},
             {"algbw_gbps", sized ? json(c.algbw_gbps) : json(nullptr)},
             {"busbw_gbps", sized && grouped ? json(c.busbw_gbps) : json(nullptr)}});
    }
    j["collectives"] = std::move(collectives);
    j["bubble"] = nullptr;
    j["unknown"] = o.unknown;
    j["notes"] = o.notes;
    return j.dump(2);
}

}  // namespace pd
