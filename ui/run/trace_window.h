// An imported run (File > Open Trace, `paralleldeck --open`): the learner's own PyTorch
// traces in the visualizer, with the same exports; above the timeline, what the traces do
// not record and how the ranks were aligned.
#pragma once

#include <QMainWindow>
#include <QStringList>
#include <memory>

#include "pd/run.h"
#include "pd/trace_import.h"

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
    pd::vis::VisualizerPanel* visualizer() const { return visualizer_; }
    // View > Clock: the traces' own clock, or every rank aligned on its first collective;
    // choosing one reads the files again with it.
    QAction* ownClockAction() const { return own_clock_; }
    QAction* firstCollectiveAction() const { return first_collective_; }
    pd::app::TraceLoader* loader() const { return loader_; }

  private:
    void realign(pd::ClockAlignment alignment);

    pd::vis::VisualizerPanel* visualizer_;
    pd::app::TraceLoader* loader_;
    QAction* own_clock_;
    QAction* first_collective_;
    QStringList files_;
};

// The note shown above an imported timeline: how the ranks were aligned, how lanes were
// built, and what is unknown.
QString importedRunNote(const pd::Trace& trace);

}  // namespace pd::ui
