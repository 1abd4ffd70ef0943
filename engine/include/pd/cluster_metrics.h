// Figures of a run's cluster read from its trace alone: traffic and transfer time per link
// tier, all-reduce algorithms used, and the straggler (the rank that arrives last at the
// collectives, whose collective calls are therefore the shortest: everyone else waits in them).
#pragma once

#include <array>
#include <map>
#include <optional>
#include <string>

#include "pd/cluster.h"
#include "pd/trace.h"

namespace pd {

struct StepRange;

struct TierMetrics {
    double bytes_per_step = 0.0;   // bytes that crossed this tier per step, all devices together
    double busy_s_per_step = 0.0;  // transfer events on this tier per step, summed over devices
    long long transfers = 0;       // transfer events over the figure steps
};

struct StragglerMetrics {
    int device = -1;             // the device last to arrive most often; -1: no collectives
    double last_fraction = 0.0;  // of the matched calls, the share where it arrived last
    int calls = 0;               // collective calls matched across two or more devices
    // What the others spent waiting for the last arrival: per device per step, seconds
    // (each call's durations less its shortest, summed, over devices and figure steps).
    double wait_s_per_step = 0.0;
};

struct ClusterMetrics {
    std::array<TierMetrics, kLinkTierCount> tiers{};  // indexed by LinkTier
    StragglerMetrics straggler;
    std::map<std::string, double> allreduce_calls_per_step;  // by algorithm, per device
};

// Over `steps` (the figure steps; every step when absent).
ClusterMetrics cluster_metrics(const Trace& trace, std::optional<StepRange> steps);

}  // namespace pd
