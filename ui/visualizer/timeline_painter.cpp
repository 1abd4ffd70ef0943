// The frame every painting step shares, the layout of the rows, and the order of the steps.
#include "visualizer/timeline_painter.h"

#include <algorithm>

namespace pd::vis {

using namespace timeline_geometry;

namespace {

QFont pixel_font(int px, bool bold = false) {
    QFont f;
    f.setPixelSize(px);
    f.setBold(bold);
    return f;
}

}  // namespace

TimelinePaintStats& TimelinePaintStats::operator+=(const TimelinePaintStats& o) {
    boxes += o.boxes;
    labels += o.labels;
    flows += o.flows;
    flows_hidden = flows_hidden || o.flows_hidden;
    collective_calls += o.collective_calls;
    ring_steps += o.ring_steps;
    faded += o.faded;
    legend_entries += o.legend_entries;
    legend_rows += o.legend_rows;
    header_lines += o.header_lines;
    playhead = playhead || o.playhead;
    return *this;
}

bool collectives_collapsed(const TimelineLane& lane, double ns_per_px) {
    return lane.median_ring_step_ns > 0 &&
           static_cast<double>(lane.median_ring_step_ns) / ns_per_px < kReadableRingStepPx;
}

double timeline_header_height(const TimelineScene& scene, double width, bool header, bool legend) {
    if (!header) return 0;
    // The zoomed-out wording is the longer one, so it wraps onto at least as many rows: laid
    // out for it, the lanes stay put while the learner zooms. Colours take no room.
    return timeline_header_layout(scene, TimelinePalette::light_theme(), width, legend, true)
        .height;
}

TimelineLayout timeline_layout(const TimelineScene& scene, const QSizeF& size, bool header,
                               bool legend) {
    return timeline_rows_layout(scene, size,
                                timeline_header_height(scene, size.width(), header, legend));
}

TimelineLayout timeline_rows_layout(const TimelineScene& scene, const QSizeF& size,
                                    double header_h) {
    TimelineLayout l;
    l.header_h = header_h;
    l.ruler_top = l.header_h;
    l.rows_top = l.header_h + kRulerHeight;
    const int n = std::max(1, scene.data.devices());
    const double per_device = (size.height() - l.rows_top - kBottomPad) / n;
    // Lanes grow with the space but keep their proportion: compute work is the story, the
    // comm lane beneath it is the supporting act.
    // A host lane (ZeRO-Offload's PCIe copies and CPU update) takes a share like comm's.
    const bool host = scene.data.has_host_lane();
    const double lanes = per_device - kRowGap - (host ? 1 : 0);
    // With three lanes the thin ones keep room for their labels ("comm", "host"): the rows
    // then scroll rather than shrink past reading.
    l.compute_h = std::clamp(lanes * (host ? 0.5 : 0.62), 10.0, 34.0);
    l.comm_h = std::clamp(lanes * (host ? 0.25 : 0.38), host ? 10.0 : 7.0, 22.0);
    l.host_h = host ? l.comm_h : 0.0;
    l.row_h = l.compute_h + 1 + l.comm_h + (host ? 1 + l.host_h : 0.0) + kRowGap;
    return l;
}

const QStaticText& TimelinePaintCache::label(const QString& text, const QFont& font) {
    if (font != font_ || labels_.size() > 1024) {
        labels_.clear();
        font_ = font;
    }
    auto it = labels_.find(text);
    if (it == labels_.end()) {
        QStaticText st(text);
        st.setTextFormat(Qt::PlainText);
        st.prepare(QTransform(), font);
        it = labels_.insert(text, st);
    }
    return *it;
}

const TimelineHeaderLayout& TimelinePaintCache::header(const TimelineScene& scene,
                                                       const TimelinePalette& pal, double width,
                                                       bool legend, bool zoomed_out) {
    const HeaderKey key{scene.data.result(), scene.title, width, legend, zoomed_out, pal.dark};
    for (auto it = headers_.begin(); it != headers_.end(); ++it)
        if (it->first == key) return it->second;
    if (headers_.size() >= 6) headers_.erase(headers_.begin());
    headers_.emplace_back(key, timeline_header_layout(scene, pal, width, legend, zoomed_out));
    return headers_.back().second;
}

void TimelinePaintCache::clear() {
    labels_.clear();
    headers_.clear();
}

TimelineFrame::TimelineFrame(QPainter& painter, const TimelineScene& scene_,
                             const TimelineViewState& view_, TimelinePaintCache& cache_)
    : p(painter),
      scene(scene_),
      view(view_),
      pal(view_.palette),
      cache(cache_),
      small(pixel_font(11)),
      label_font(pixel_font(12, true)) {
    const TimeMapping& m = view.mapping;
    double header_h = 0;
    if (view.header) {
        // Height from the longer (zoomed-out) wording, as timeline_header_height() does.
        const double w = view.size.width();
        const TimelineHeaderLayout& longest = cache.header(scene, pal, w, view.legend, true);
        header_h = longest.height;
        bool zoomed_out = false;
        for (const TimelineLane& lane : scene.data.lanes())
            zoomed_out = zoomed_out || collectives_collapsed(lane, m.ns_per_px);
        header = zoomed_out ? &longest : &cache.header(scene, pal, w, view.legend, false);
    }
    layout = timeline_rows_layout(scene, view.size, header_h);
    plot_left = m.left_px;
    plot_right = std::max(plot_left + 1, view.size.width() - kRightMargin);
    origin = static_cast<double>(view.origin_ns);
    zero = view.time_zero_ns ? static_cast<double>(*view.time_zero_ns)
                             : static_cast<double>(scene.data.begin_ns()) - origin;
    t0 = m.t_of(plot_left) + origin;
    t1 = m.t_of(plot_right) + origin;
    cursor = view.cursor_ns ? static_cast<double>(*view.cursor_ns) + origin : t1;
    t_end = std::min(t1, cursor);
    run_begin = static_cast<double>(scene.data.begin_ns());
    run_end = static_cast<double>(scene.data.end_ns());
    rows_bottom = layout.rows_top + std::max(1, scene.data.devices()) * layout.row_h;
}

TimelinePaintStats paint_timeline(QPainter& p, const TimelineScene& scene,
                                  const TimelineViewState& view, TimelinePaintCache& cache) {
    using namespace timeline_paint;
    const QRectF all(QPointF(0, 0), view.size);
    p.save();
    p.setClipRect(all);
    p.fillRect(all, view.palette.background);
    const TimelineFrame f(p, scene, view, cache);
    TimelinePaintStats stats;
    if (view.header) stats += paint_header(f);
    stats += paint_ruler(f);
    stats += paint_lanes(f);
    stats += paint_idle_shading(f);
    const DrawnBoxes drawn = paint_event_boxes(f);
    stats += drawn.stats;
    stats += paint_labels(f, drawn);
    stats += paint_step_marks(f);
    stats += paint_flows(f);
    stats += paint_highlight(f);
    stats += paint_oom_marks(f);
    stats += paint_playhead(f);
    p.restore();
    return stats;
}

}  // namespace pd::vis
