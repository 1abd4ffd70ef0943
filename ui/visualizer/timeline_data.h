// A trace prepared for drawing: events per lane (device x stream) sorted by start, with a
// running maximum of end times so the visible range is found by binary search, the boxes a
// learner sees (consecutive layers of one micro-batch drawn as one box), send->recv flows and
// step boundaries. Built once per run; painting only reads it.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <utility>
#include <vector>

#include "pd/metrics.h"
#include "pd/run.h"
#include "pd/trace.h"

namespace pd::vis {

// One drawn box: one event, or several consecutive events of the same kind and micro-batch
// (the layers of a stage) with no idle gap worth showing between them.
struct TimelineBox {
    std::int64_t start_ns = 0;
    std::int64_t end_ns = 0;
    pd::EventKind kind = pd::EventKind::forward;
    pd::CollectivePhase phase = pd::CollectivePhase::none;
    int microbatch = -1;
    int step_index = -1;
    int round = 0;        // which of its device's model chunks (interleaved 1F1B), else 0
    int first_event = 0;  // index into Trace::events
    int event_count = 1;
    // The lane's collective call this ring step (or, in TimelineLane::collective_boxes, this
    // half of a collective) belongs to: index into TimelineLane::collectives, else -1.
    int collective = -1;
};

// One collective call on one device as the learner reads it zoomed out: one box, its
// reduce-scatter half then its all-gather half (an all-reduce has both, a reduce-scatter or
// all-gather alone has one). Found from the trace's own fields: the CollectiveRecord that
// spans the call on that device, and the ring steps' phase, step and step_index.
struct TimelineCollective {
    std::int64_t start_ns = 0;
    std::int64_t split_ns = 0;  // end of the reduce-scatter half, start of the all-gather half
    std::int64_t end_ns = 0;
    int step = -1;
    int reduce_scatter_steps = 0;
    int all_gather_steps = 0;
    int first_box = 0;  // its ring steps: TimelineLane::boxes[first_box, first_box + box_count)
    int box_count = 0;
    int record = -1;  // index into Trace::collectives; -1 when the trace has none for it
};

struct TimelineLane {
    int device = 0;
    pd::StreamKind stream = pd::StreamKind::compute;
    std::vector<int> events;                   // indices into Trace::events, sorted by start
    std::vector<std::int64_t> events_max_end;  // running max of end over `events`
    std::vector<TimelineBox> boxes;            // waits excluded: they show as idle grey
    std::vector<std::int64_t> boxes_max_end;
    // busy_before[k]: the time covered by boxes[0, k) (their union; boxes.size() + 1 values),
    // so the busy time of any run of boxes is a difference: a rectangle standing for many
    // sub-pixel boxes is shaded by how busy it is, not painted solid.
    std::vector<std::int64_t> boxes_busy_before;
    // Collective calls, and the boxes drawn when their ring steps are too narrow to read:
    // `boxes` with each call's ring steps replaced by its one or two halves.
    std::vector<TimelineCollective> collectives;
    std::vector<TimelineBox> collective_boxes;
    std::vector<std::int64_t> collective_boxes_max_end;
    std::vector<std::int64_t> collective_boxes_busy_before;
    std::int64_t median_ring_step_ns = 0;  // 0 when the lane has no ring steps
};

struct TimelineFlow {
    int send_event = 0;  // indices into Trace::events
    int recv_event = 0;
};

class TimelineData {
  public:
    TimelineData() = default;
    // `boundaries` (RunMetrics::stage_boundaries) tell which model chunk each layer belongs
    // to, so an interleaved schedule's chunks can be told apart.
    explicit TimelineData(std::shared_ptr<const pd::RunResult> result,
                          const std::vector<pd::StageBoundary>& boundaries = {});

    bool empty() const { return !result_; }
    const pd::RunResult* result() const { return result_.get(); }
    const pd::Trace& trace() const;
    int devices() const { return devices_; }
    // Whether any device's host stream has work (ZeRO-Offload): its lane is drawn then.
    bool has_host_lane() const { return has_host_lane_; }
    // Lane of (device, stream): index device * kStreamsPerDevice + stream.
    const std::vector<TimelineLane>& lanes() const { return lanes_; }
    const TimelineLane& lane(int device, pd::StreamKind stream) const;

    std::int64_t begin_ns() const { return begin_ns_; }
    std::int64_t end_ns() const { return end_ns_; }
    // [first start, last end] of every event of training step `step` (by its `step` field,
    // waits excluded); nullopt if none.
    std::optional<std::pair<std::int64_t, std::int64_t>> step_range(int step) const;
    int step_count() const { return static_cast<int>(steps_.size()); }
    // The step whose range holds t (or the last step that began before t); -1 if none.
    int step_at(std::int64_t t_ns) const;
    const std::vector<TimelineFlow>& flows() const { return flows_; }
    const std::vector<int>& oom_events() const { return oom_events_; }
    // Pipeline stage a device runs (from its events), -1 when the run is not pipelined.
    int stage_of(int device) const;
    // Global model chunks a device holds ("0, 4" for interleaved), empty if unknown.
    const std::vector<int>& chunks_of(int device) const;
    bool interleaved() const { return max_round_ > 0; }
    std::size_t event_count() const;
    // Whether any event of `kind` (for send/recv: outside a collective) is in the trace.
    bool has_kind(pd::EventKind kind) const {
        return kinds_present_ >> static_cast<int>(kind) & 1u;
    }
    bool has_phase(pd::CollectivePhase phase) const {
        return phases_present_ >> static_cast<int>(phase) & 1u;
    }

    // Boxes [first, last) of a lane that may overlap [t0, t1]: of `lane.boxes`, or with
    // `collapsed` of `lane.collective_boxes`.
    std::pair<std::size_t, std::size_t> visible_boxes(const TimelineLane& lane, double t0_ns,
                                                      double t1_ns, bool collapsed = false) const;
    // The collective call (index into lane.collectives) ring step `event` belongs to, or -1.
    int collective_of(const TimelineLane& lane, int event) const;
    // The event of a lane under time t (waits included), or the nearest one within
    // `tolerance_ns`; -1 if none.
    int event_at(const TimelineLane& lane, double t_ns, double tolerance_ns) const;

  private:
    std::shared_ptr<const pd::RunResult> result_;
    int devices_ = 0;
    bool has_host_lane_ = false;
    std::vector<TimelineLane> lanes_;
    std::vector<std::pair<std::int64_t, std::int64_t>> steps_;  // (-1, -1) for a missing step
    std::vector<TimelineFlow> flows_;
    std::vector<int> oom_events_;
    std::vector<int> stages_;
    std::vector<std::vector<int>> chunks_;
    int max_round_ = 0;
    unsigned kinds_present_ = 0;
    unsigned phases_present_ = 0;  // of every event, `none` included
    std::int64_t begin_ns_ = 0;
    std::int64_t end_ns_ = 0;
};

}  // namespace pd::vis
