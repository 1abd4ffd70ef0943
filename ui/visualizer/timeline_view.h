// The timeline: one custom QPainter widget, a row per device with a compute lane and a comm
// lane, time left to right. paint() draws from a View and serves the screen, PNG, SVG and PDF
// alike, so an exported picture is what the learner saw.
#pragma once

#include <QFont>
#include <QHash>
#include <QStaticText>
#include <QString>
#include <QWidget>
#include <cstdint>
#include <memory>
#include <optional>

#include "pd/metrics.h"
#include "pd/run.h"
#include "visualizer/time_mapping.h"
#include "visualizer/timeline_data.h"
#include "visualizer/timeline_palette.h"

namespace pd::vis {

class TimelineView : public QWidget {
    Q_OBJECT

  public:
    // Everything one picture depends on besides the run itself.
    struct View {
        QSizeF size;          // logical pixels
        TimeMapping mapping;  // in display time: trace time minus origin_ns
        std::int64_t origin_ns = 0;
        std::optional<std::int64_t> cursor_ns;  // display time; events after it are hidden
        TimelinePalette palette = TimelinePalette::light_theme();
        bool header = true;          // clock, link model, legend and bubble lines
        bool legend = true;          // off for the second run of a comparison: same colours
        int highlighted_event = -1;  // index into Trace::events, outlined
        // The step "Fit step" shows: inside its time range, events of other steps (a slower
        // device still finishing the previous step) are faded, so none reads as this step's.
        std::optional<int> focus_step;
    };
    // What one paint drew: tests and the benchmark read it.
    struct PaintStats {
        int boxes = 0;              // filled event rectangles (merged sub-pixel boxes count once)
        int labels = 0;             // text labels inside boxes
        int flows = 0;              // send -> recv arrows
        bool flows_hidden = false;  // too many to read at this zoom
        int collective_calls = 0;   // collective calls drawn as one box (zoomed out)
        int ring_steps = 0;         // ring steps drawn one by one (zoomed in)
        int faded = 0;              // boxes of another step inside the focused step's range
    };

    static constexpr double kLeftMargin = 124.0;
    static constexpr double kRightMargin = 14.0;
    // A lane's ring steps are drawn one by one (with their step index) once its typical
    // step is this wide; narrower, each collective call is one box in two halves.
    static constexpr double kReadableRingStepPx = 16.0;

    explicit TimelineView(QWidget* parent = nullptr);

    // `bubble` comes from RunMetrics (pipelined runs); `title` names the run in the header.
    // `boundaries` (RunMetrics::stage_boundaries) let an interleaved schedule shade each
    // device's second model chunk lighter, as Megatron-LM's figures do.
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
    // Height that shows every device comfortably with the header.
    double preferredHeight(bool header = true, bool legend = true) const;
    // Where a lane is drawn in a picture of `size` (x spans the plot area).
    QRectF laneRect(int device, pd::StreamKind stream, const QSizeF& size, bool header = true,
                    bool legend = true) const;
    // The second run of a comparison leaves the legend to the first.
    void setLegendVisible(bool visible);
    bool legendVisible() const { return legend_; }
    QSize sizeHint() const override;
    QSize minimumSizeHint() const override;

    const TimeMapping& mapping() const { return mapping_; }
    std::int64_t origin() const { return origin_ns_; }
    // Shared axis in compare mode: sets without emitting mappingChanged.
    void setMapping(const TimeMapping& mapping, std::int64_t origin_ns);
    // The step this view shows (View::focus_step); unset, or a step the run lacks, shows
    // every step alike.
    void setFocusStep(std::optional<int> step);
    // Mapping that fits trace times [t0, t1] into a plot `width` wide (left margin included).
    // A fitted step starts exactly at its first event (`left_air` false): what is left of
    // it belongs to the step before.
    static TimeMapping fittedMapping(double t0_display, double t1_display, double width,
                                     bool left_air = true);
    // Time range (trace time) of step `step`, or the whole run if it has no such step.
    std::pair<std::int64_t, std::int64_t> stepRange(int step) const;
    std::pair<std::int64_t, std::int64_t> runRange() const;
    // The step a "fit step" shows by default: 1 when there are two or more (step 0 also
    // carries the set-up), else 0.
    int defaultStep() const;

    // The step the last "fit step" showed; unset after "fit all".
    std::optional<int> focusStep() const { return focus_step_; }
    // Whether `lane`'s collective calls are drawn as one box each at `ns_per_px`.
    static bool collectivesCollapsed(const TimelineLane& lane, double ns_per_px);

    // What hovering event `event` (index into Trace::events) shows at the current zoom: a
    // ring step of a call drawn as one box also describes the whole call.
    QString tooltipFor(int event) const;

    std::optional<std::int64_t> playbackCursor() const { return cursor_ns_; }
    int selectedEvent() const { return selected_; }

  public slots:
    void fitAll();
    void fitStep(int step);
    // Playback: events that start after `display_ns` are hidden; nullopt shows all.
    void setPlaybackCursor(std::optional<std::int64_t> display_ns);
    void zoomBy(double factor);  // around the centre of the plot

  signals:
    void mappingChanged(const pd::vis::TimeMapping& mapping, std::int64_t origin_ns);
    void eventClicked(const pd::TraceEvent& event);
    void eventHovered(int event_index);

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
    struct Layout;
    Layout layoutFor(const QSizeF& size, bool header, bool legend = true) const;
    double headerHeight(bool header, bool legend) const;
    int eventAt(const QPointF& pos) const;
    double plotWidth() const;
    void applyPendingFit();
    void emitMapping();
    const QStaticText& staticLabel(const QString& text, const QFont& font) const;

    TimelineData data_;
    std::optional<pd::BubbleMetrics> bubble_;
    QString title_;
    bool legend_ = true;
    ThemeChoice theme_ = ThemeChoice::follow_palette;
    TimeMapping mapping_;
    std::int64_t origin_ns_ = 0;
    std::optional<std::int64_t> cursor_ns_;
    std::optional<int> focus_step_;
    std::optional<std::pair<std::int64_t, std::int64_t>> pending_fit_;  // until sized
    int hovered_ = -1;
    int selected_ = -1;
    bool dragging_ = false;
    QPointF press_pos_;
    TimeMapping press_mapping_;
    mutable QHash<QString, QStaticText> label_cache_;
    mutable QFont label_cache_font_;
};

}  // namespace pd::vis
