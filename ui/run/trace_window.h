// An imported run (File > Open Trace, `paralleldeck --open`): the learner's own PyTorch
// traces in the visualizer, with the same exports; above the timeline, what the traces do
// not record and how the ranks were aligned.
#pragma once

#include <QMainWindow>
#include <QStringList>
#include <memory>
#include <optional>

#include "pd/run.h"
#include "pd/trace_import.h"
#include "visualizer/time_mapping.h"

class QAction;

namespace pd::app {
class TraceLoader;
}

namespace pd::vis {
class VisualizerPanel;
}

namespace pd::ui {

class TraceWindow : public QMainWindow {
    Q_OBJECT
  public:
    explicit TraceWindow(QWidget* parent = nullptr);

    void showImported(const QStringList& files, std::shared_ptr<const pd::RunResult> result);
    // File > Open… (Ctrl+O): reads other traces (one file per rank) off the GUI thread and
    // shows them here; on failure the run shown stays, and a box names the file and why.
    void openTraces(const QStringList& files);
    QAction* openAction() const { return open_; }
    QStringList files() const { return files_; }
    pd::vis::VisualizerPanel* visualizer() const { return visualizer_; }
    // View > Clock: the traces' own clock, or every rank aligned on its first collective;
    // choosing one reads the files again with it.
    QAction* ownClockAction() const { return own_clock_; }
    QAction* firstCollectiveAction() const { return first_collective_; }
    pd::app::TraceLoader* loader() const { return loader_; }

  signals:
    // A File > Open or a clock change could not read the traces; the run shown is unchanged.
    void loadFailed(const QString& message);

  protected:
    void showEvent(QShowEvent* event) override;
    void resizeEvent(QResizeEvent* event) override;

  private:
    void realign(pd::ClockAlignment alignment);
    void chooseAndOpenTraces();
    void refitUntouchedStep();

    pd::vis::VisualizerPanel* visualizer_;
    pd::app::TraceLoader* loader_;
    QAction* open_;
    QAction* own_clock_;
    QAction* first_collective_;
    QStringList files_;
    // What the load under way is: another trace (File > Open) or the same one again on
    // another clock; its failure is worded accordingly.
    bool opening_other_ = false;
    bool shown_on_first_collective_ = false;  // the clock of the run shown
    // The step a run opens on is fitted again as the window takes its size (shown, resized)
    // until the learner zooms or pans: the panel fits it once, to the width the timeline had
    // before the window was shown. What the last such fit set, to tell a learner's change.
    bool keep_step_fitted_ = false;
    std::optional<pd::vis::TimeMapping> fitted_;
    int fitted_width_ = -1;
};

// The note shown above an imported timeline: how the ranks were aligned, how lanes were
// built, and what is unknown.
QString importedRunNote(const pd::Trace& trace);

}  // namespace pd::ui
