// Faults a reliability test asks a run to suffer (the app never sets one): the k-th device
// allocation of the run fails as an out-of-memory, or one device's stream fails inside a
// collective at a given ring step, as a GPU that dies or a rank that is killed would.
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <vector>

namespace pd {

struct FaultPlan {
    // 1-based over every accounted allocation of the run, all devices together; 0 = none.
    std::size_t fail_allocation = 0;

    struct DeadPeer {
        int device = -1;
        // all_reduce, reduce_scatter, all_gather, broadcast, send or recv
        std::string collective;
        // The ring step within one call: all_reduce counts its reduce-scatter steps 0..n-2,
        // then its all-gather steps n-1..2n-3; a broadcast counts hops along its chain; send
        // and recv have step 0 only.
        int ring_step = 0;
        // Which call of that collective on that device fails (0 = its first).
        int call = 0;
    };
    std::optional<DeadPeer> dead_peer;

    // Devices that fail at the start of step `crash_step` (RunConfig::failure): the first of
    // their streams to reach work of that step raises DeviceFailure.
    std::vector<int> crash_devices;
    int crash_step = -1;
    std::string crash_words;  // "node 1 (devices 4-7) failed"
    // The failed devices' workers restart alone: they leave the loop (their streams skip
    // their work) instead of failing the run; their peers' collectives time out.
    bool crash_restarts_alone = false;
};

}  // namespace pd
