// The timeline's picture, painted in small pure steps: header and legend, ruler, lanes, idle
// (bubble) shading, event boxes, labels, step marks, flows, highlight, out-of-memory marks and
// the playhead. Each step takes the frame (the View and what follows from it) and returns what
// it drew; paint_timeline() runs them in order. TimelineView keeps interaction only, and the
// screen and every export share this one path (hotspot keeps its TimeLineDelegate apart from
// its view the same way).
#pragma once

#include <QFont>
#include <QFontMetricsF>
#include <QHash>
#include <QPainter>
#include <QRectF>
#include <QSizeF>
#include <QStaticText>
#include <QString>
#include <QStringList>
#include <array>
#include <cstdint>
#include <optional>
#include <vector>

#include "pd/metrics.h"
#include "visualizer/time_mapping.h"
#include "visualizer/timeline_data.h"
#include "visualizer/timeline_palette.h"

namespace pd::vis {

// Everything one picture depends on besides the run itself (TimelineView::View).
struct TimelineViewState {
    QSizeF size;          // logical pixels
    TimeMapping mapping;  // in display time: trace time minus origin_ns
    std::int64_t origin_ns = 0;
    // The display time the ruler reads as zero, the playback slider's start: unset, the run's
    // first event (display time = trace time - origin_ns, so the ruler and the slider count
    // from the same moment and never read below zero). Compared runs share one.
    std::optional<std::int64_t> time_zero_ns;
    std::optional<std::int64_t> cursor_ns;  // display time; events after it are hidden
    TimelinePalette palette = TimelinePalette::light_theme();
    bool header = true;          // clock, link model, legend and bubble lines
    bool legend = true;          // off for the second run of a comparison: same colours
    int highlighted_event = -1;  // index into Trace::events, outlined
    // The step "Fit step" shows: inside its time range, events of other steps (a slower
    // device still finishing the previous step) are faded, so none reads as this step's.
    std::optional<int> focus_step;
};

// What one paint drew (TimelineView::PaintStats): tests and the benchmark read it.
struct TimelinePaintStats {
    int boxes = 0;              // filled event rectangles (merged sub-pixel boxes count once)
    int labels = 0;             // text labels inside boxes
    int flows = 0;              // send -> recv arrows
    bool flows_hidden = false;  // too many to read at this zoom
    int collective_calls = 0;   // collective calls drawn as one box (zoomed out)
    int ring_steps = 0;         // ring steps drawn one by one (zoomed in)
    int faded = 0;              // boxes of another step inside the focused step's range
    int legend_entries = 0;     // legend entries drawn, each whole
    int legend_rows = 0;        // rows the legend wrapped onto
    int header_lines = 0;       // text lines of the header (title, clock, legend, bubble)
    bool playhead = false;      // the playback cursor line is in view

    TimelinePaintStats& operator+=(const TimelinePaintStats& o);
};

// Geometry the painter and the widget's hit testing share.
namespace timeline_geometry {
inline constexpr double kLeftMargin = 124.0;  // device names
inline constexpr double kRightMargin = 14.0;
inline constexpr double kHeaderLine = 18.0;
inline constexpr double kRulerHeight = 34.0;  // step names above, tick labels below
inline constexpr double kRowGap = 10.0;
inline constexpr double kBottomPad = 6.0;
// A lane's ring steps are drawn one by one (with their step index) once its typical step is
// this wide; narrower, each collective call is one box in two halves.
inline constexpr double kReadableRingStepPx = 16.0;
}  // namespace timeline_geometry

// What the picture is of: the run prepared for drawing, its bubble figures and its title.
struct TimelineScene {
    const TimelineData& data;
    const std::optional<pd::BubbleMetrics>& bubble;
    const QString& title;
};

// Whether `lane`'s collective calls are drawn as one box each at `ns_per_px`.
bool collectives_collapsed(const TimelineLane& lane, double ns_per_px);

// One legend entry placed in the header.
struct TimelineLegendEntry {
    QColor color;
    QString text;
    bool arrow = false;  // the send -> recv arrow instead of a swatch
    QPointF at;          // top left of the swatch
};

// The header's lines, laid out for one width: nothing is cut, long lines wrap at their
// " · " separators and the legend wraps onto as many rows as it needs.
struct TimelineHeaderLayout {
    QStringList title_lines;  // own lines when the title does not fit beside the clock
    QString title_beside;     // the title right-aligned on the first clock line
    QStringList clock_lines;
    std::vector<TimelineLegendEntry> legend;
    int legend_rows = 0;
    QStringList bubble_lines;
    double height = 0;  // the header's total height, 0 without a header
    int lines() const {
        return static_cast<int>(title_lines.size() + clock_lines.size() + bubble_lines.size()) +
               legend_rows;
    }
};

// `zoomed_out`: some collective is drawn as one box, which the legend says. A header laid out
// for height (the widget's rows) takes the longer of both wordings, so zooming never moves
// the lanes.
TimelineHeaderLayout timeline_header_layout(const TimelineScene& scene, const TimelinePalette& pal,
                                            double width, bool legend, bool zoomed_out);

struct TimelineLayout {
    double header_h = 0;
    double ruler_top = 0;
    double rows_top = 0;
    double compute_h = 26;
    double comm_h = 16;
    double host_h = 0;  // 0: no host lane (nothing offloaded)
    double row_h = 52;
    double compute_top(int device) const { return rows_top + device * row_h; }
    double comm_top(int device) const { return compute_top(device) + compute_h + 1; }
    double host_top(int device) const { return comm_top(device) + comm_h + 1; }
    double top(int device, pd::StreamKind s) const {
        return s == pd::StreamKind::compute ? compute_top(device)
               : s == pd::StreamKind::comm  ? comm_top(device)
                                            : host_top(device);
    }
    double height(pd::StreamKind s) const {
        return s == pd::StreamKind::compute ? compute_h
               : s == pd::StreamKind::comm  ? comm_h
                                            : host_h;
    }
};

double timeline_header_height(const TimelineScene& scene, double width, bool header, bool legend);
TimelineLayout timeline_layout(const TimelineScene& scene, const QSizeF& size, bool header,
                               bool legend);
// The rows under a header `header_h` tall.
TimelineLayout timeline_rows_layout(const TimelineScene& scene, const QSizeF& size,
                                    double header_h);

// What repaints of one run share, so a repaint measures no text twice: labels repeat
// (micro-batch numbers, ring step indices) and the header is the same until the width,
// the run or the theme changes. clear() when the run changes.
class TimelinePaintCache {
  public:
    const QStaticText& label(const QString& text, const QFont& font);
    const TimelineHeaderLayout& header(const TimelineScene& scene, const TimelinePalette& pal,
                                       double width, bool legend, bool zoomed_out);
    void clear();

  private:
    struct HeaderKey {
        const void* run = nullptr;
        QString title;
        double width = 0;
        bool legend = false, zoomed_out = false, dark = false;
        bool operator==(const HeaderKey&) const = default;
    };
    QHash<QString, QStaticText> labels_;
    QFont font_;
    std::vector<std::pair<HeaderKey, TimelineHeaderLayout>> headers_;  // most recent last
};

// One paint's shared facts: the View, the plot's edges and the visible time range.
struct TimelineFrame {
    TimelineFrame(QPainter& painter, const TimelineScene& scene, const TimelineViewState& view,
                  TimelinePaintCache& cache);

    QPainter& p;
    const TimelineScene& scene;
    const TimelineViewState& view;
    const TimelinePalette& pal;
    TimelinePaintCache& cache;
    const TimelineHeaderLayout* header = nullptr;  // as drawn now; null without a header
    TimelineLayout layout;
    double plot_left = 0, plot_right = 0;
    double origin = 0;  // view.origin_ns
    double zero = 0;    // display time the ruler reads as 0 (view.time_zero_ns or the run's start)
    double t0 = 0, t1 = 0;  // visible range in trace time
    double cursor = 0;      // playback cursor in trace time (t1 without one)
    double t_end = 0;       // what is drawn ends here: min(t1, cursor)
    double run_begin = 0, run_end = 0;
    double rows_bottom = 0;
    QFont small, label_font;
    double x_of(double t) const { return view.mapping.x_of(t - origin); }
};

namespace timeline_paint {

// A drawn box wide enough to hold a label, and the idle gaps wide enough to name.
struct LabelSpot {
    QRectF rect;
    QColor fill;
    const TimelineBox* box = nullptr;
    bool other_step = false;  // of another step inside the focused one: faded, says its step
    bool half = false;        // half of a collective call drawn as one box
};
struct DrawnBoxes {
    TimelinePaintStats stats;
    std::vector<LabelSpot> labels;
    std::vector<QRectF> gaps;  // compute-lane gaps labelled "bubble" or "idle"
};

TimelinePaintStats paint_header(const TimelineFrame& f);
TimelinePaintStats paint_ruler(const TimelineFrame& f);
TimelinePaintStats paint_lanes(const TimelineFrame& f);         // names, comm lane ground
TimelinePaintStats paint_idle_shading(const TimelineFrame& f);  // idle / bubble grey
DrawnBoxes paint_event_boxes(const TimelineFrame& f);
TimelinePaintStats paint_labels(const TimelineFrame& f, const DrawnBoxes& drawn);
TimelinePaintStats paint_step_marks(const TimelineFrame& f);
TimelinePaintStats paint_flows(const TimelineFrame& f);
TimelinePaintStats paint_highlight(const TimelineFrame& f);
TimelinePaintStats paint_oom_marks(const TimelineFrame& f);
TimelinePaintStats paint_playhead(const TimelineFrame& f);

}  // namespace timeline_paint

// A run of boxes each too narrow to draw (under 2 px), drawn as one rectangle in the colour
// of the kind that covers most of it (paint_event_boxes): what that rectangle stands for.
struct MergedBoxes {
    double x0 = 0, x1 = 0;                  // the rectangle as drawn
    int boxes = 0;                          // boxes merged into it (two or more)
    int events = 0;                         // the trace events behind those boxes
    std::int64_t start_ns = 0, end_ns = 0;  // trace time: first start, last end
    std::int64_t busy_ns = 0;               // the boxes' durations summed
    std::array<int, pd::kEventKindCount> events_by_kind{};
};
// The merged rectangle of `lane` under pixel `x` in `view` (of a picture of the run in
// `scene`), or nothing when `x` is over a box drawn on its own, or over nothing.
std::optional<MergedBoxes> merged_boxes_at(const TimelineData& data, const TimelineLane& lane,
                                           const TimelineViewState& view, double x);

// Where an out-of-memory banner goes: beside its mark at `x` (right of it, else left of
// it), one line `line_h` high when the text fits the plot, else as wide as the plot with the
// text wrapped onto as many lines as it needs: the whole message, never cut at the plot's
// edge.
QRectF oom_banner_rect(const QString& text, const QFontMetricsF& fm, double x, double top,
                       double line_h, double plot_left, double plot_right);

// The ruler's ticks across [plot_left, plot_right]: each tick's x and the time it reads
// (display time minus `zero_ns`), never below zero.
struct RulerTick {
    double x = 0;
    double reads_ns = 0;
};
double ruler_tick_spacing_ns(const TimeMapping& m);
std::vector<RulerTick> ruler_ticks(const TimeMapping& m, double zero_ns, double plot_left,
                                   double plot_right);

// The whole picture: every step above, in order.
TimelinePaintStats paint_timeline(QPainter& p, const TimelineScene& scene,
                                  const TimelineViewState& view, TimelinePaintCache& cache);

}  // namespace pd::vis
