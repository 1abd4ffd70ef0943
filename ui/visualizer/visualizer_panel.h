// The visualizer for one run (or two, compared on a shared time axis): timeline, playback,
// memory bars, ring diagram, metrics and event details, with screenshot and trace export.
#pragma once

#include <QImage>
#include <QString>
#include <QWidget>
#include <memory>
#include <optional>

#include "pd/expectations.h"
#include "pd/metrics.h"
#include "pd/run.h"
#include "visualizer/picture_export.h"
#include "visualizer/time_mapping.h"
#include "visualizer/timeline_palette.h"

class QAction;
class QComboBox;
class QLabel;
class QPushButton;
class QSpinBox;
class QScrollArea;
class QSplitter;
class QTabWidget;
class QToolBar;

namespace pd::vis {

class TimelineView;
class MemoryBarsView;
class LossChart;
class MetricsPanel;
class PlaybackClock;
class PlaybackBar;
class RingDiagram;
class DataView;

class VisualizerPanel : public QWidget {
    Q_OBJECT

  public:
    explicit VisualizerPanel(QWidget* parent = nullptr);
    ~VisualizerPanel() override;

    // Shows one run; clears any comparison. A null result clears the panel.
    void setRun(const pd::RunConfig& config, std::shared_ptr<const pd::RunResult> result);
    // Shows a second run below the first on the same time axis, metrics side by side.
    // `label` says what B is ("comparison run with seq_len 8"); empty: the run's settings.
    void setComparison(const pd::RunConfig& config, std::shared_ptr<const pd::RunResult> result,
                       const QString& label = {});
    void clearComparison();
    // The first run's repeats (a card's `repeats`): its headline figures then cover them all.
    void setRepeats(const std::vector<pd::RunMetrics>& repeats);
    bool hasComparison() const;
    // The card's note on what to look at, shown above the timeline (empty hides it).
    void setNote(const QString& note);
    QString note() const;
    // Whether the note describes the run shown. When it does not (a what-if knob differs
    // from the card), the note is muted under a line that says so, with "Reset to card",
    // and exported pictures leave it out.
    void setNoteDescribesRun(bool describes);
    bool noteDescribesRun() const { return note_describes_run_; }
    void setTheme(ThemeChoice theme);
    // What exported files are named after (the card's id); empty: the run alone.
    void setExportBaseName(const QString& name) { export_base_name_ = name; }
    // "card_pipeline-gpipe-4dev_timeline.png": the file name export dialogs suggest.
    QString suggestedExportName(const QString& what, const QString& ext) const;

    // Exports what the panel shows now (its zoom, playback cursor and theme): .png at 2x,
    // .svg or .pdf by extension. Same painting path as export_picture.
    bool exportPicture(const QString& path, QString* error) const;
    // Chrome Trace Event JSON of the (first) run, for Perfetto.
    bool exportTrace(const QString& path, QString* error) const;
    QImage renderImage() const;  // what "Copy image" puts on the clipboard (2x)
    PictureOptions pictureOptions() const;

    // For menus and toolbars of the window that hosts the panel.
    QAction* exportScreenshotAction() const { return export_screenshot_; }  // Ctrl+Shift+S
    QAction* exportTraceAction() const { return export_trace_; }
    QAction* copyImageAction() const { return copy_image_; }
    QAction* fitStepAction() const { return fit_step_; }
    QAction* fitAllAction() const { return fit_all_; }
    QAction* playPauseAction() const { return play_pause_; }
    // The row of fit and export buttons above the timeline; a host may add its own actions.
    QToolBar* toolBar() const { return bar_; }

    // Brings a claim's evidence into view: the lower tab that shows its figure, the timeline
    // fitted to a figure step and scrolled to its devices, the comparison run beside it. The
    // host shows the claim's comparison run (setComparison) first. Returns where the evidence
    // is, in this panel's coordinates, clipped to what is visible (empty: nothing shows it).
    QRect revealEvidence(const pd::ClaimOutcome& claim);
    QTabWidget* lowerTabs() const { return lower_tabs_; }

    TimelineView* timeline() const { return timeline_; }
    TimelineView* comparisonTimeline() const { return compare_timeline_; }
    MemoryBarsView* memoryBars() const { return memory_; }
    MemoryBarsView* comparisonMemoryBars() const { return compare_memory_; }
    LossChart* lossChart() const { return loss_; }
    LossChart* comparisonLossChart() const { return compare_loss_; }
    QPushButton* resetToCardButton() const { return reset_to_card_; }
    MetricsPanel* metricsPanel() const { return metrics_; }
    QString detailsText() const;  // the hover/click line under the timeline
    PlaybackClock* playback() const { return clock_; }
    RingDiagram* ringDiagram() const { return ring_; }
    DataView* dataView() const { return data_; }

  public slots:
    void fitStep();
    void fitAll();

  protected:
    void resizeEvent(QResizeEvent* event) override;
    // The timeline's new width refits a view the learner has not zoomed or panned since it
    // was fitted (a fit made before the window's layout was made showed part of the run).
    bool eventFilter(QObject* watched, QEvent* event) override;

  signals:
    void eventSelected(const pd::TraceEvent& event);
    // A line for the host's status bar ("Saved timeline.png").
    void message(const QString& text);
    // "Reset to card" was pressed: the host restores the card's settings and runs them.
    void resetToCardRequested();

  private:
    struct Shown {
        pd::RunConfig config;
        std::shared_ptr<const pd::RunResult> result;
        pd::RunMetrics metrics;
        QString label;  // what the run is, before its settings in its title
    };
    void buildActions();
    void showRun(int index);  // 0: main run, 1: comparison
    void shareMapping(const TimeMapping& mapping, std::int64_t origin, const TimelineView* source);
    void updatePlaybackRange();
    void onCursor(std::int64_t display_ns);
    void showDetails(const pd::TraceEvent& event, std::int64_t origin);
    void chooseAndExportPicture();
    void chooseAndExportTrace();
    void copyImage();
    void sizeSplit();  // the timelines get their natural height, the rest goes below
    void clearDetails();
    void shareMemoryScale();
    void shareLossScale();  // compared runs' loss and step-time charts on the same axes
    // The part of `w` inside `rect` (w's coordinates) that is visible, in panel coordinates.
    QRect visiblePart(const QWidget* w, const QRect& rect)
        const;  // compared runs' memory bars on one y-axis  // back to the hint: on
                // every new run, nothing stale is described

    std::optional<Shown> runs_[2];
    ThemeChoice theme_ = ThemeChoice::follow_palette;
    bool syncing_ = false;
    // The origin the playback clock's times were given in; unset for a new run.
    std::optional<std::int64_t> clock_origin_;
    bool split_moved_by_user_ = false;
    // The last fit, to tell whether the view is still it (then a new width refits).
    struct Fitted {
        bool step = true;  // Fit step, else Fit all
        TimeMapping mapping;
        int width = 0;
    };
    std::optional<Fitted> fitted_;

    QSplitter* split_ = nullptr;
    QToolBar* bar_ = nullptr;
    QScrollArea* timelines_scroll_ = nullptr;
    QLabel* note_;
    QWidget* note_caveat_;
    QPushButton* reset_to_card_;
    bool note_describes_run_ = true;
    QSpinBox* step_box_;
    TimelineView* timeline_;
    TimelineView* compare_timeline_;
    PlaybackClock* clock_;
    PlaybackBar* playback_bar_;
    QLabel* details_;
    QString kept_details_;
    QString export_base_name_;  // a clicked box's details stay until the next run
    QComboBox* memory_mode_;
    MemoryBarsView* memory_;
    MemoryBarsView* compare_memory_;
    QTabWidget* lower_tabs_;
    QScrollArea* metrics_scroll_ = nullptr;
    int memory_tab_ = 0, loss_tab_ = 1, metrics_tab_ = 2, ring_tab_ = 3, data_tab_ = 4;
    LossChart* loss_;
    LossChart* compare_loss_;
    RingDiagram* ring_;
    RingDiagram* compare_ring_;
    DataView* data_;
    DataView* compare_data_;
    MetricsPanel* metrics_;
    MetricsPanel* compare_metrics_;
    QAction* export_screenshot_ = nullptr;
    QAction* export_trace_ = nullptr;
    QAction* copy_image_ = nullptr;
    QAction* fit_step_ = nullptr;
    QAction* fit_all_ = nullptr;
    QAction* play_pause_ = nullptr;
};

}  // namespace pd::vis
