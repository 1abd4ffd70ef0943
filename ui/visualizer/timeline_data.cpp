#include "visualizer/timeline_data.h"

#include <algorithm>
#include <limits>
#include <unordered_map>

namespace pd::vis {

namespace {

bool mergeable_kind(pd::EventKind k) {
    return k == pd::EventKind::forward || k == pd::EventKind::backward ||
           k == pd::EventKind::backward_weight || k == pd::EventKind::recompute ||
           k == pd::EventKind::optimizer;
}

// Two layers of one micro-batch run back to back, separated only by bookkeeping time; a gap
// larger than this is real idleness and keeps the boxes apart.
bool small_gap(const TimelineBox& box, const pd::TraceEvent& next) {
    const std::int64_t gap = next.start_ns - box.end_ns;
    const std::int64_t shorter = std::min(box.end_ns - box.start_ns, next.duration_ns());
    return gap <= std::max<std::int64_t>(2000, shorter / 8);
}

TimelineBox box_of(const pd::TraceEvent& e, int index, int round) {
    TimelineBox b;
    b.start_ns = e.start_ns;
    b.end_ns = std::max(e.end_ns, e.start_ns);
    b.kind = e.kind;
    b.phase = e.phase;
    b.microbatch = e.microbatch;
    b.step_index = e.step_index;
    b.round = round;
    b.first_event = index;
    return b;
}

bool is_ring_step(const TimelineBox& b) {
    return b.kind == pd::EventKind::reduce_scatter_step || b.kind == pd::EventKind::all_gather_step;
}

// The collective call on `e`'s device that spans ring step `e`: the record of the same step
// that began last at or before it and ends after it. `records` (indices into
// Trace::collectives, one device's) are sorted by start; a device runs its calls one after
// another per stream, so only the last few that began earlier can still be running.
int record_of(const pd::Trace& t, const std::vector<int>& records, const pd::TraceEvent& e) {
    auto it =
        std::upper_bound(records.begin(), records.end(), e.start_ns, [&](std::int64_t s, int r) {
            return s < t.collectives[static_cast<std::size_t>(r)].start_ns;
        });
    for (int looked = 0; it != records.begin() && looked < 4; ++looked) {
        --it;
        const pd::CollectiveRecord& r = t.collectives[static_cast<std::size_t>(*it)];
        if (r.step == e.step && r.end_ns >= e.end_ns) return *it;
    }
    return -1;
}

// Whether ring step `next` continues the call whose last ring step was `prev`: the
// reduce-scatter steps count up from 0, then the all-gather steps count up from 0.
bool continues_ring(const pd::TraceEvent& prev, const pd::TraceEvent& next) {
    if (prev.step != next.step) return false;
    if (next.phase == prev.phase) return next.step_index == prev.step_index + 1;
    return prev.phase == pd::CollectivePhase::reduce_scatter &&
           next.phase == pd::CollectivePhase::all_gather && next.step_index == 0;
}

// Groups a lane's ring steps into collective calls and builds the boxes drawn zoomed out.
void group_collectives(TimelineLane& lane, const pd::Trace& t, const std::vector<int>& records) {
    std::vector<std::int64_t> durations;
    int open = -1;  // the call the previous box belongs to
    int open_record = -1;
    for (std::size_t k = 0; k < lane.boxes.size(); ++k) {
        TimelineBox& b = lane.boxes[k];
        if (!is_ring_step(b)) {
            open = -1;
            continue;
        }
        durations.push_back(b.end_ns - b.start_ns);
        const pd::TraceEvent& e = t.events[static_cast<std::size_t>(b.first_event)];
        const int record = record_of(t, records, e);
        bool extend = false;
        if (open >= 0) {
            const TimelineBox& prev = lane.boxes[k - 1];
            const pd::TraceEvent& pe = t.events[static_cast<std::size_t>(prev.first_event)];
            // With records the call is named by the trace; without (hand-made traces) only
            // directly consecutive events in ring order form one call.
            const bool same_call =
                record >= 0
                    ? record == open_record
                    : open_record < 0 && prev.first_event + prev.event_count == b.first_event;
            extend = same_call && continues_ring(pe, e);
        }
        const bool reducing = e.phase == pd::CollectivePhase::reduce_scatter;
        if (!extend) {
            TimelineCollective c;
            c.start_ns = b.start_ns;
            c.split_ns = b.start_ns;
            c.end_ns = b.end_ns;
            c.step = e.step;
            c.first_box = static_cast<int>(k);
            c.record = record;
            lane.collectives.push_back(c);
            open = static_cast<int>(lane.collectives.size()) - 1;
            open_record = record;
        }
        TimelineCollective& c = lane.collectives[static_cast<std::size_t>(open)];
        c.end_ns = std::max(c.end_ns, b.end_ns);
        if (reducing) {
            c.split_ns = c.end_ns;
            ++c.reduce_scatter_steps;
        } else {
            ++c.all_gather_steps;
        }
        ++c.box_count;
        b.collective = open;
    }
    if (!durations.empty()) {
        auto mid = durations.begin() + static_cast<std::ptrdiff_t>(durations.size() / 2);
        std::nth_element(durations.begin(), mid, durations.end());
        lane.median_ring_step_ns = *mid;
    }

    lane.collective_boxes.reserve(lane.boxes.size());
    for (std::size_t k = 0; k < lane.boxes.size(); ++k) {
        const TimelineBox& b = lane.boxes[k];
        if (b.collective < 0) {
            lane.collective_boxes.push_back(b);
            continue;
        }
        const TimelineCollective& c = lane.collectives[static_cast<std::size_t>(b.collective)];
        if (static_cast<int>(k) != c.first_box) continue;
        // The halves, each starting at its first ring step's event (for hover and details).
        for (const bool reducing : {true, false}) {
            const int steps = reducing ? c.reduce_scatter_steps : c.all_gather_steps;
            if (steps == 0) continue;
            TimelineBox half =
                reducing ? b : lane.boxes[k + static_cast<std::size_t>(c.reduce_scatter_steps)];
            half.start_ns = reducing ? c.start_ns : c.split_ns;
            half.end_ns = reducing ? c.split_ns : c.end_ns;
            half.kind =
                reducing ? pd::EventKind::reduce_scatter_step : pd::EventKind::all_gather_step;
            half.phase =
                reducing ? pd::CollectivePhase::reduce_scatter : pd::CollectivePhase::all_gather;
            half.step_index = -1;
            half.event_count = steps;
            lane.collective_boxes.push_back(half);
        }
    }
}

template <typename T>
std::vector<std::int64_t> running_max_end(const std::vector<T>& items, auto end_of) {
    std::vector<std::int64_t> out;
    out.reserve(items.size());
    std::int64_t m = std::numeric_limits<std::int64_t>::min();
    for (const auto& it : items) {
        m = std::max(m, end_of(it));
        out.push_back(m);
    }
    return out;
}

// busy_before[k]: the length of the union of boxes[0, k), the boxes sorted by start.
std::vector<std::int64_t> busy_before(const std::vector<TimelineBox>& boxes) {
    std::vector<std::int64_t> out;
    out.reserve(boxes.size() + 1);
    out.push_back(0);
    std::int64_t covered_to = std::numeric_limits<std::int64_t>::min();
    for (const TimelineBox& b : boxes) {
        const std::int64_t from = std::max(b.start_ns, covered_to);
        out.push_back(out.back() + std::max<std::int64_t>(0, b.end_ns - from));
        covered_to = std::max(covered_to, b.end_ns);
    }
    return out;
}

}  // namespace

TimelineData::TimelineData(std::shared_ptr<const pd::RunResult> result,
                           const std::vector<pd::StageBoundary>& boundaries)
    : result_(std::move(result)) {
    if (!result_) return;
    const pd::Trace& t = result_->trace;
    devices_ = t.devices;
    for (const auto& e : t.events) devices_ = std::max(devices_, e.device + 1);
    lanes_.resize(static_cast<std::size_t>(devices_) * pd::kStreamsPerDevice);
    for (int d = 0; d < devices_; ++d)
        for (int s = 0; s < pd::kStreamsPerDevice; ++s) {
            auto& lane = lanes_[static_cast<std::size_t>(d * pd::kStreamsPerDevice + s)];
            lane.device = d;
            lane.stream = static_cast<pd::StreamKind>(s);
        }
    stages_.assign(static_cast<std::size_t>(devices_), -1);

    begin_ns_ = std::numeric_limits<std::int64_t>::max();
    end_ns_ = std::numeric_limits<std::int64_t>::min();
    std::unordered_map<std::uint64_t, std::pair<int, int>> flow_ends;  // id -> (send, recv)
    for (int i = 0; i < static_cast<int>(t.events.size()); ++i) {
        const auto& e = t.events[static_cast<std::size_t>(i)];
        if (e.device < 0) continue;
        lanes_[static_cast<std::size_t>(e.device * pd::kStreamsPerDevice +
                                        static_cast<int>(e.stream))]
            .events.push_back(i);
        if (e.stream == pd::StreamKind::host) has_host_lane_ = true;
        begin_ns_ = std::min(begin_ns_, e.start_ns);
        end_ns_ = std::max(end_ns_, e.end_ns);
        // Waits are tagged with the step they wait for but begin while the previous step
        // still runs; they would stretch a step backwards over its predecessor.
        if (e.step >= 0 && e.kind != pd::EventKind::wait) {
            if (static_cast<int>(steps_.size()) <= e.step)
                steps_.resize(static_cast<std::size_t>(e.step) + 1, {-1, -1});
            auto& r = steps_[static_cast<std::size_t>(e.step)];
            if (r.first < 0 || e.start_ns < r.first) r.first = e.start_ns;
            r.second = std::max(r.second, e.end_ns);
        }
        if (e.kind == pd::EventKind::oom) oom_events_.push_back(i);
        kinds_present_ |= 1u << static_cast<int>(e.kind);
        phases_present_ |= 1u << static_cast<int>(e.phase);
        if (e.stage >= 0 && pd::is_compute(e.kind))
            stages_[static_cast<std::size_t>(e.device)] = e.stage;
        if (e.flow_id != 0) {
            auto& f = flow_ends.try_emplace(e.flow_id, -1, -1).first->second;
            (e.flow_source ? f.first : f.second) = i;
        }
    }
    if (begin_ns_ > end_ns_) begin_ns_ = end_ns_ = 0;

    // Model chunk of a layer on a device stage: its position among that stage's chunks.
    int stage_count = 0;
    for (const auto& b : boundaries) stage_count = std::max(stage_count, b.device_stage + 1);
    chunks_.resize(static_cast<std::size_t>(devices_));
    auto round_of = [&](const pd::TraceEvent& e) {
        if (e.layer < 0 || e.stage < 0 || stage_count == 0) return 0;
        for (const auto& b : boundaries)
            if (b.device_stage == e.stage && e.layer >= b.first_unit && e.layer < b.end_unit)
                return b.chunk / stage_count;
        return 0;
    };
    for (int d = 0; d < devices_; ++d) {
        const int stage = stages_[static_cast<std::size_t>(d)];
        for (const auto& b : boundaries)
            if (stage >= 0 && b.device_stage == stage)
                chunks_[static_cast<std::size_t>(d)].push_back(b.chunk);
    }

    // Each device's collective calls by start, to name the call every ring step belongs to.
    std::vector<std::vector<int>> records(static_cast<std::size_t>(devices_));
    for (int i = 0; i < static_cast<int>(t.collectives.size()); ++i) {
        const int d = t.collectives[static_cast<std::size_t>(i)].device;
        if (d >= 0 && d < devices_) records[static_cast<std::size_t>(d)].push_back(i);
    }
    for (auto& r : records)
        std::stable_sort(r.begin(), r.end(), [&](int a, int b) {
            return t.collectives[static_cast<std::size_t>(a)].start_ns <
                   t.collectives[static_cast<std::size_t>(b)].start_ns;
        });

    for (auto& lane : lanes_) {
        std::stable_sort(lane.events.begin(), lane.events.end(), [&](int a, int b) {
            return t.events[static_cast<std::size_t>(a)].start_ns <
                   t.events[static_cast<std::size_t>(b)].start_ns;
        });
        lane.events_max_end = running_max_end(
            lane.events, [&](int i) { return t.events[static_cast<std::size_t>(i)].end_ns; });
        for (int i : lane.events) {
            const auto& e = t.events[static_cast<std::size_t>(i)];
            if (e.kind == pd::EventKind::wait || e.kind == pd::EventKind::oom) continue;
            const int round = mergeable_kind(e.kind) ? round_of(e) : 0;
            max_round_ = std::max(max_round_, round);
            if (!lane.boxes.empty()) {
                TimelineBox& last = lane.boxes.back();
                const auto& first = t.events[static_cast<std::size_t>(last.first_event)];
                // Only directly consecutive events merge: a wait between them stays visible.
                const bool adjacent = last.first_event + last.event_count == i;
                if (adjacent && mergeable_kind(e.kind) && e.kind == last.kind &&
                    e.microbatch == last.microbatch && e.step == first.step && small_gap(last, e)) {
                    last.end_ns = std::max(last.end_ns, e.end_ns);
                    ++last.event_count;
                    continue;
                }
            }
            lane.boxes.push_back(box_of(e, i, round));
        }
        lane.boxes_max_end =
            running_max_end(lane.boxes, [](const TimelineBox& b) { return b.end_ns; });
        group_collectives(lane, t, records[static_cast<std::size_t>(lane.device)]);
        lane.collective_boxes_max_end =
            running_max_end(lane.collective_boxes, [](const TimelineBox& b) { return b.end_ns; });
        lane.boxes_busy_before = busy_before(lane.boxes);
        lane.collective_boxes_busy_before = busy_before(lane.collective_boxes);
    }

    for (const auto& [id, ends] : flow_ends)
        if (ends.first >= 0 && ends.second >= 0) flows_.push_back({ends.first, ends.second});
    std::sort(flows_.begin(), flows_.end(), [&](const TimelineFlow& a, const TimelineFlow& b) {
        return t.events[static_cast<std::size_t>(a.send_event)].start_ns <
               t.events[static_cast<std::size_t>(b.send_event)].start_ns;
    });
}

const pd::Trace& TimelineData::trace() const {
    static const pd::Trace empty_trace;
    return result_ ? result_->trace : empty_trace;
}

const TimelineLane& TimelineData::lane(int device, pd::StreamKind stream) const {
    return lanes_[static_cast<std::size_t>(device * pd::kStreamsPerDevice +
                                           static_cast<int>(stream))];
}

std::optional<std::pair<std::int64_t, std::int64_t>> TimelineData::step_range(int step) const {
    if (step < 0 || step >= static_cast<int>(steps_.size())) return std::nullopt;
    const auto& r = steps_[static_cast<std::size_t>(step)];
    if (r.first < 0) return std::nullopt;
    return r;
}

int TimelineData::step_at(std::int64_t t_ns) const {
    int found = -1;
    for (int s = 0; s < static_cast<int>(steps_.size()); ++s) {
        const auto& r = steps_[static_cast<std::size_t>(s)];
        if (r.first >= 0 && r.first <= t_ns) found = s;
    }
    return found;
}

int TimelineData::stage_of(int device) const {
    if (device < 0 || device >= static_cast<int>(stages_.size())) return -1;
    return stages_[static_cast<std::size_t>(device)];
}

const std::vector<int>& TimelineData::chunks_of(int device) const {
    static const std::vector<int> none;
    if (device < 0 || device >= static_cast<int>(chunks_.size())) return none;
    return chunks_[static_cast<std::size_t>(device)];
}

std::size_t TimelineData::event_count() const {
    return trace().events.size();
}

std::pair<std::size_t, std::size_t> TimelineData::visible_boxes(const TimelineLane& lane,
                                                                double t0_ns, double t1_ns,
                                                                bool collapsed) const {
    const auto& boxes = collapsed ? lane.collective_boxes : lane.boxes;
    const auto& max_end = collapsed ? lane.collective_boxes_max_end : lane.boxes_max_end;
    // The running maximum of ends is sorted, so the first box that can reach t0 is found by
    // binary search even if boxes overlapped; starts are sorted for the right edge.
    const auto first =
        std::lower_bound(max_end.begin(), max_end.end(), t0_ns,
                         [](std::int64_t end, double t) { return static_cast<double>(end) < t; });
    const auto b = static_cast<std::size_t>(first - max_end.begin());
    const auto last = std::upper_bound(
        boxes.begin() + static_cast<std::ptrdiff_t>(b), boxes.end(), t1_ns,
        [](double t, const TimelineBox& box) { return t < static_cast<double>(box.start_ns); });
    return {b, static_cast<std::size_t>(last - boxes.begin())};
}

int TimelineData::collective_of(const TimelineLane& lane, int event) const {
    const auto& events = trace().events;
    if (event < 0 || event >= static_cast<int>(events.size())) return -1;
    const std::int64_t start = events[static_cast<std::size_t>(event)].start_ns;
    auto it = std::lower_bound(lane.boxes.begin(), lane.boxes.end(), start,
                               [](const TimelineBox& b, std::int64_t t) { return b.start_ns < t; });
    for (; it != lane.boxes.end() && it->start_ns == start; ++it)
        if (it->first_event == event) return it->collective;
    return -1;
}

int TimelineData::event_at(const TimelineLane& lane, double t_ns, double tolerance_ns) const {
    const auto& ev = trace().events;
    const auto first = std::lower_bound(
        lane.events_max_end.begin(), lane.events_max_end.end(), t_ns - tolerance_ns,
        [](std::int64_t end, double t) { return static_cast<double>(end) < t; });
    int best = -1;
    double best_distance = tolerance_ns;
    for (auto k = static_cast<std::size_t>(first - lane.events_max_end.begin());
         k < lane.events.size(); ++k) {
        const auto& e = ev[static_cast<std::size_t>(lane.events[k])];
        if (static_cast<double>(e.start_ns) > t_ns + tolerance_ns) break;
        const double s = static_cast<double>(e.start_ns), f = static_cast<double>(e.end_ns);
        const double distance = t_ns < s ? s - t_ns : (t_ns > f ? t_ns - f : 0.0);
        // Prefer work over waits when both are under the pointer.
        const bool better = distance < best_distance ||
                            (distance == best_distance && best >= 0 &&
                             ev[static_cast<std::size_t>(best)].kind == pd::EventKind::wait &&
                             e.kind != pd::EventKind::wait);
        if (best < 0 ? distance <= tolerance_ns : better) {
            best = lane.events[k];
            best_distance = distance;
        }
    }
    return best;
}

}  // namespace pd::vis
