#include "pd/trace.h"

namespace pd {

std::string_view name_of(EventKind k) {
    switch (k) {
        case EventKind::forward:
            return "forward";
        case EventKind::backward:
            return "backward";
        case EventKind::optimizer:
            return "optimizer";
        case EventKind::reduce_scatter_step:
            return "reduce_scatter_step";
        case EventKind::all_gather_step:
            return "all_gather_step";
        case EventKind::broadcast:
            return "broadcast";
        case EventKind::send:
            return "send";
        case EventKind::recv:
            return "recv";
        case EventKind::wait:
            return "wait";
        case EventKind::oom:
            return "oom";
        case EventKind::copy:
            return "copy";
        case EventKind::collective:
            return "collective";
        case EventKind::backward_weight:
            return "backward_weight";
        case EventKind::recompute:
            return "recompute";
        case EventKind::all_to_all_step:
            return "all_to_all_step";
        case EventKind::kernel:
            return "kernel";
    }
    return "?";
}

bool is_compute(EventKind k) {
    return k == EventKind::forward || k == EventKind::backward || k == EventKind::optimizer ||
           k == EventKind::backward_weight || k == EventKind::recompute || k == EventKind::kernel;
}

bool is_communication(EventKind k) {
    return k == EventKind::reduce_scatter_step || k == EventKind::all_gather_step ||
           k == EventKind::broadcast || k == EventKind::send || k == EventKind::recv ||
           k == EventKind::collective || k == EventKind::all_to_all_step;
}

std::string_view name_of(StreamKind s) {
    return s == StreamKind::compute ? "compute" : s == StreamKind::comm ? "comm" : "host";
}

}  // namespace pd
