// One file's contribution to an imported run, on its own clock, before the ranks are put on
// one time axis: its devices' events, collectives, memory and steps.
#pragma once

#include <string>
#include <vector>

#include "import/raw_trace.h"
#include "pd/trace.h"

namespace pd::import {

struct RankDevice {
    std::string name;
    std::size_t capacity_bytes = 0;  // 0: not recorded
    std::size_t peak_reserved_bytes = 0;
    int rank = -1;  // -1: the file does not say
};

struct RankTrace {
    std::string producer;
    std::string distributed_backend;
    int world_size = 0;
    // Device 0..n-1 of this file (a PyTorch trace has one: its rank's; a ParallelDeck export
    // has every device of the run). Events' `device` index these.
    std::vector<RankDevice> devices;
    std::vector<TraceEvent> events;  // absolute times on the file's clock, ns
    std::vector<CollectiveRecord> collectives;
    std::vector<MemorySample> memory;
    std::vector<StepRecord> steps;
    std::vector<int> profiler_steps;  // per step: the profiler's own number
    ClockMode clock = ClockMode::wall;
    LinkModel link;
    BackendKind backend = BackendKind::cpu;
    bool own_export = false;
    // Whether the file's times are on a clock other ranks' files share (the host's), so
    // ranks line up without shifting.
    bool shared_clock = false;
    std::vector<std::string> unknown;
    std::vector<std::string> notes;
};

// PyTorch's profiler: Kineto (GPU kernels, NCCL) or the autograd profiler (CPU ops).
RankTrace read_pytorch_trace(const RawTraceFile& file);
// ParallelDeck's own Chrome-trace export (otherData.producer "ParallelDeck").
RankTrace read_parallel_deck_trace(const RawTraceFile& file);

// "allreduce", "ncclDevKernel_AllReduce_Sum_f32_RING_LL(...)", "nccl:_all_gather_base",
// "gloo:all_reduce" -> "all_reduce", "all_gather", ...; empty when `name` names no collective.
std::string collective_op_of(std::string_view name);

}  // namespace pd::import
