// An imported run (File > Open Trace, `paralleldeck --open`): the learner's own PyTorch
// traces in the visualizer, with the same exports; above the timeline, what the traces do
// not record and how the ranks were aligned.
#pragma once

#include <QMainWindow>
#include <QStringList>
#include <memory>

#include "pd/run.h"

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

  private:
    pd::vis::VisualizerPanel* visualizer_;
};

// The note shown above an imported timeline: how the ranks were aligned, how lanes were
// built, and what is unknown.
QString importedRunNote(const pd::Trace& trace);

}  // namespace pd::ui
