// What one device's MoE routers did in a run: tokens kept per expert, dropped choices, and
// the load-balancing loss of the step in progress (a device scalar the routing kernel adds
// to). Written only by that device's compute stream, read by the runner between steps.
#pragma once

#include <vector>

#include "backend/device_ops.h"

namespace pd {

struct RoutingCounters {
    RoutingCounters(DeviceOps& ops, int experts)
        : tokens_per_expert(static_cast<std::size_t>(experts), 0), aux(ops) {
        aux.zero();
    }
    std::vector<long long> tokens_per_expert;
    long long assignments = 0;  // token-to-expert choices (tokens x top_k)
    long long dropped = 0;      // choices an expert had no room for
    DeviceScalar aux;           // sum over sequences of the weighted load-balancing loss
};

}  // namespace pd
