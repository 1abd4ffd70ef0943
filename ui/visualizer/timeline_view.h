// The timeline widget: a row per device with a compute lane and a comm lane,
// time left to right. It keeps the interaction (zoom, pan, hover, keys,
// following the playhead); the picture itself comes from timeline_painter.h,
// whose one path serves the screen, PNG, SVG and PDF alike, so an exported
// picture is what the learner saw.
#pragma once

#include <QString>
#include <QWidget>
#include <cstdint>
#include <memory>
#include <optional>

#include "pd/metrics.h"
#include "pd/run.h"
#include "visualizer/time_mapping.h"
#include "visualizer/timeline_data.h"
#include "visualizer/timeline_painter.h"
#include "visualizer/timeline_palette.h"

namespace pd::vis {

class TimelineView : public QWidget {
    Q_OBJECT

  public:
    using View = TimelineViewState;
    using PaintStats = TimelinePaintStats;

    static constexpr double kLeftMargin = timeline_geometry::kLeftMargin;
    static constexpr double kRightMargin = timeline_geometry::kRightMargin;
    static constexpr double kReadableRingStepPx = timeline_geometry::kReadableRingStepPx;
    // One press of a zoom key zooms by this factor; a pan key moves an eighth of
    // the plot.
    static constexpr double kKeyZoomFactor = 1.5;
    static constexpr double kKeyPanFraction = 1.0 / 8;

    explicit TimelineView(QWidget* parent = nullptr);

    // `bubble` comes from RunMetrics (pipelined runs); `title` names the run in
    // the header. `boundaries` (RunMetrics::stage_boundaries) let an interleaved
    // schedule shade each device's second model chunk lighter, as Megatron-LM's
    // figures do.
    void setRun(std::shared_ptr<const pd::RunResult> result,
                std::optional<pd::BubbleMetrics> bubble = std::nullopt, QString title = {},
                const std::vector<pd::StageBoundary>& boundaries = {});
    const TimelineData& data() const { return data_; }
    void setTheme(ThemeChoice theme);
    ThemeChoice theme() const { return theme_; }
    TimelinePalette palette() const;

    PaintStats paint(QPainter& painter, const View& view) const;
    // The view the widget shows now, at `size` (default: the widget's size).
    View currentView(std::optional<QSizeF> size = std::nullopt) const;
    // Height that shows every device comfortably with the header, at `width`
    // (default: the widget's width): a narrow picture wraps its header onto more
    // lines.
    double preferredHeight(bool header = true, bool legend = true,
                           std::optional<double> width = std::nullopt) const;
    // Where a lane is drawn in a picture of `size` (x spans the plot area).
    QRectF laneRect(int device, pd::StreamKind stream, const QSizeF& size, bool header = true,
                    bool legend = true) const;
    // The second run of a comparison leaves the legend to the first.
    // Frames devices `first`..`last`'s lanes on screen (a claim's evidence); nullopt clears.
    // Exports leave the frame out: it marks what the learner chose, not what the run did.
    void setHighlightedDevices(std::optional<std::pair<int, int>> devices);
    std::optional<std::pair<int, int>> highlightedDevices() const { return highlight_; }
    void setLegendVisible(bool visible);
    bool legendVisible() const { return legend_; }
    QSize sizeHint() const override;
    QSize minimumSizeHint() const override;

    const TimeMapping& mapping() const { return mapping_; }
    std::int64_t origin() const { return origin_ns_; }
    // The display time the ruler reads as zero: the run's first event unless set (compared
    // runs share the earlier start, as the playback clock does). The playback slider counts
    // from the same moment (PlaybackClock::begin()), so the ruler, the slider and the
    // details' times agree and never read below zero. A new run clears what was set.
    void setTimeZero(std::optional<std::int64_t> display_ns);
    std::int64_t timeZero() const;
    // The trace time the ruler reads as zero: what event times are told from
    // (describe_event(e, labelOrigin())).
    std::int64_t labelOrigin() const { return origin_ns_ + timeZero(); }
    // Shared axis in compare mode: sets without emitting mappingChanged.
    void setMapping(const TimeMapping& mapping, std::int64_t origin_ns);
    // The step this view shows (View::focus_step); unset, or a step the run
    // lacks, shows every step alike.
    void setFocusStep(std::optional<int> step);
    // Mapping that fits trace times [t0, t1] into a plot `width` wide (left
    // margin included). A fitted step starts exactly at its first event
    // (`left_air` false): what is left of it belongs to the step before.
    static TimeMapping fittedMapping(double t0_display, double t1_display, double width,
                                     bool left_air = true);
    // Time range (trace time) of step `step`, or the whole run if it has no such
    // step.
    std::pair<std::int64_t, std::int64_t> stepRange(int step) const;
    std::pair<std::int64_t, std::int64_t> runRange() const;
    // What "Fit step" shows of this run: the ruler's origin (trace time) and the
    // range in display time. A run that finished no step (out of memory before
    // the first) shows the whole run on Fit all's origin, so Fit step, Fit all
    // and playback tell one range.
    struct StepFit {
        std::int64_t origin_ns = 0;
        std::int64_t begin_ns = 0;  // display time
        std::int64_t end_ns = 0;
        bool is_step = false;  // a real step: its left edge is its first event, no air
    };
    StepFit stepFit(int step) const;
    // The step a "fit step" shows by default: 1 when there are two or more (step
    // 0 also carries the set-up), else 0.
    int defaultStep() const;

    // The step the last "fit step" showed; unset after "fit all".
    std::optional<int> focusStep() const { return focus_step_; }
    // Whether `lane`'s collective calls are drawn as one box each at `ns_per_px`.
    static bool collectivesCollapsed(const TimelineLane& lane, double ns_per_px) {
        return collectives_collapsed(lane, ns_per_px);
    }

    // What hovering event `event` (index into Trace::events) shows at the current
    // zoom: a ring step of a call drawn as one box also describes the whole call.
    QString tooltipFor(int event) const;
    // What hovering at `pos` shows: over a rectangle that merges boxes too narrow to draw
    // one by one, what it merges (how many events, their span, their summed duration);
    // over a box, tooltipFor(it); else nothing.
    QString tooltipAt(const QPointF& pos) const;
    // The text the pointer's position shows now (tooltipAt the last hover); empty when the
    // pointer is over nothing, has left, or a new run came.
    QString hoverText() const { return hover_text_; }

    std::optional<std::int64_t> playbackCursor() const { return cursor_ns_; }
    int selectedEvent() const { return selected_; }

  public slots:
    void fitAll();
    void fitStep(int step);
    // Playback: events that start after `display_ns` are hidden; nullopt shows
    // all. A cursor outside the visible range brings the view to it (emitting
    // mappingChanged), so the playhead stays in sight whether playing forward or
    // scrubbing back.
    void setPlaybackCursor(std::optional<std::int64_t> display_ns);
    // Zoom around x (default: the centre of the plot).
    void zoomBy(double factor, std::optional<double> anchor_x = std::nullopt);
    // Moves the view by `fraction` of the plot's width: positive shows later
    // times.
    void panBy(double fraction);

  signals:
    void mappingChanged(const pd::vis::TimeMapping& mapping, std::int64_t origin_ns);
    void eventClicked(const pd::TraceEvent& event);
    void eventHovered(int event_index);
    // hoverText() changed (empty: nothing hovered); a details line can show it.
    void hoverTextChanged(const QString& text);

  protected:
    void paintEvent(QPaintEvent* event) override;
    void resizeEvent(QResizeEvent* event) override;
    void wheelEvent(QWheelEvent* event) override;
    void mousePressEvent(QMouseEvent* event) override;
    void mouseMoveEvent(QMouseEvent* event) override;
    void mouseReleaseEvent(QMouseEvent* event) override;
    void leaveEvent(QEvent* event) override;
    void keyPressEvent(QKeyEvent* event) override;
    void changeEvent(QEvent* event) override;

  private:
    TimelineScene scene() const { return {data_, bubble_, title_}; }
    double layoutWidth() const;
    int eventAt(const QPointF& pos) const;
    // The lane under `pos`, or null (the device names, a gap between rows, below the rows).
    const TimelineLane* laneAt(const QPointF& pos) const;
    void setHoverText(const QString& text);
    double plotWidth() const;
    void applyPendingFit();
    void emitMapping();
    void followCursor();
    // Where keyboard zoom anchors: the pointer when it is over the plot, else the
    // centre.
    std::optional<double> keyZoomAnchor() const;

    TimelineData data_;
    std::optional<pd::BubbleMetrics> bubble_;
    QString title_;
    bool legend_ = true;
    std::optional<std::pair<int, int>> highlight_;
    ThemeChoice theme_ = ThemeChoice::follow_palette;
    TimeMapping mapping_;
    std::int64_t origin_ns_ = 0;
    std::optional<std::int64_t> time_zero_ns_;
    std::optional<std::int64_t> cursor_ns_;
    std::optional<int> focus_step_;
    std::optional<std::pair<std::int64_t, std::int64_t>> pending_fit_;  // until sized
    int hovered_ = -1;
    QString hover_text_;
    int selected_ = -1;
    bool dragging_ = false;
    QPointF press_pos_;
    TimeMapping press_mapping_;
    double header_h_ = 0;  // at the last resize: a new height asks the layout again
    mutable TimelinePaintCache paint_cache_;
};

}  // namespace pd::vis
