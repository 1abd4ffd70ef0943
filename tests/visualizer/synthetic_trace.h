// A made-up trace of any size for the sub-pixel test and the repaint benchmark: each device
// alternates forward and backward boxes on its compute lane and ring steps on its comm lane.
#pragma once

#include <cstdint>
#include <memory>

#include "pd/run.h"

namespace pd::vis::test {

inline std::shared_ptr<const pd::RunResult> synthetic_result(int total_events, int devices) {
    auto r = std::make_shared<pd::RunResult>();
    pd::Trace& t = r->trace;
    t.clock = pd::ClockMode::device;
    t.devices = devices;
    t.capacity_bytes.assign(static_cast<std::size_t>(devices), std::size_t{1} << 30);
    const int lanes = 2;  // compute and comm (no host stream: nothing offloaded)
    const int per_lane = total_events / (devices * lanes);
    for (int d = 0; d < devices; ++d)
        for (int s = 0; s < lanes; ++s) {
            std::int64_t clock = d * 1000;
            for (int i = 0; i < per_lane; ++i) {
                pd::TraceEvent e;
                e.device = d;
                e.stream = static_cast<pd::StreamKind>(s);
                e.step = i / 64;
                if (s == 0) {
                    e.kind = (i / 8) % 2 == 0 ? pd::EventKind::forward : pd::EventKind::backward;
                    e.microbatch = i % 8;
                } else {
                    e.kind = (i / 3) % 2 == 0 ? pd::EventKind::reduce_scatter_step
                                              : pd::EventKind::all_gather_step;
                    e.phase = e.kind == pd::EventKind::reduce_scatter_step
                                  ? pd::CollectivePhase::reduce_scatter
                                  : pd::CollectivePhase::all_gather;
                    e.step_index = i % 3;
                    e.peer = (d + 1) % devices;
                    e.bytes = 4096;
                }
                // Durations vary so that merged and unmerged boxes both occur; gaps leave idle.
                e.start_ns = clock + (i % 5 == 0 ? 3000 : 200);
                e.end_ns = e.start_ns + 2000 + (i * 7919) % 9000;
                clock = e.end_ns;
                t.events.push_back(e);
            }
        }
    return r;
}

}  // namespace pd::vis::test
