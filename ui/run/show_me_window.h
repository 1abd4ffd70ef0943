// "Show me": runs a card's scenario off the GUI thread and plays back what happened, with the
// card's note above the timeline, progress and Cancel, the what-if knobs, and a pinned run to
// compare against on a shared time axis.
#pragma once

#include <QElapsedTimer>
#include <QMainWindow>
#include <memory>
#include <optional>

#include "pd/run.h"
#include "pd/run_config.h"

class QAction;
class QLabel;
class QProgressBar;
class QPushButton;
class QTimer;

namespace pd::app {
class RunController;
}
namespace pd::vis {
class VisualizerPanel;
}

namespace pd::ui {

class WhatIfPanel;

class ShowMeWindow : public QMainWindow {
    Q_OBJECT
  public:
    explicit ShowMeWindow(QWidget* parent = nullptr);
    ~ShowMeWindow() override;

    // Shows the card's scenario and starts running it; `card_id` names exported files.
    void showScenario(const QString& title, const QString& note, const pd::RunConfig& config,
                      const QString& card_id = {});

    pd::app::RunController* controller() const { return controller_; }
    pd::vis::VisualizerPanel* visualizer() const { return visualizer_; }
    WhatIfPanel* whatIf() const { return what_if_; }
    QString status() const;
    QString progressText() const;  // what the progress bar says (phase and elapsed seconds)
    bool hasPinnedRun() const { return pinned_.has_value(); }
    QAction* whatIfPanelAction() const { return show_knobs_; }
    // Whether the run on screen has the card's settings, so the card's note describes it.
    bool showsCardRun() const { return shown_is_card_; }
    // Whether the picture is of a run still going (its first steps).
    bool showsPartialRun() const { return partial_on_screen_; }

  public slots:
    void run(const pd::RunConfig& config);
    void cancel();
    void pinCurrentRun();
    void clearPinnedRun();
    // Restores the card's settings in the knobs and runs them.
    void resetToCard();

  protected:
    void showEvent(QShowEvent* event) override;
    // Closing the window mid-run cancels the run: nothing keeps computing for a window that
    // is gone (the next Show me starts afresh).
    void closeEvent(QCloseEvent* event) override;

  signals:
    // A run's picture is on screen (the result of `config`, finished).
    void runShown(const pd::RunConfig& config);
    // The first steps of a run still going are on screen (the complete run follows).
    void partialShown(const pd::RunConfig& config, int stepsDrawn);

  private:
    struct Shown {
        pd::RunConfig config;
        std::shared_ptr<const pd::RunResult> result;
        bool is_card = true;  // has the card's settings
    };
    void onStarted(const pd::RunConfig& config);
    void onProgress(int done, int total, const QString& phase, double loss);
    void onPartial(const pd::RunConfig& config, std::shared_ptr<const pd::RunResult> so_far);
    void onFinished(const pd::RunConfig& config, std::shared_ptr<const pd::RunResult> result);
    // Puts the last finished run (if any) back on screen, with the pinned one.
    void showCurrent();
    void onCancelled();
    void onRejected(const QString& message);
    void setStatus(const QString& text, bool problem);
    void updateActions();
    void onKnobProblem(const QString& problem);
    void showShortcuts();  // F1
    QString timelineKeysText() const;
    // First shown: no larger than the screen's free area, and entirely on it.
    void fitToScreen();
    void updateProgressText();

    pd::app::RunController* controller_;
    pd::vis::VisualizerPanel* visualizer_;
    WhatIfPanel* what_if_;
    QLabel* status_;
    QProgressBar* progress_;
    QTimer* progress_ticker_;
    QElapsedTimer run_elapsed_;
    QString progress_phase_;
    QPushButton* cancel_;
    QAction* pin_;
    QAction* unpin_;
    QAction* escape_;
    QAction* show_knobs_;
    QWidget* knobs_scroll_;
    QString card_title_;
    bool placed_ = false;
    std::optional<Shown> current_;
    std::optional<Shown> pinned_;
    pd::RunConfig card_config_;       // what showScenario() was given
    bool running_is_card_ = true;     // the run last started has the card's settings
    bool shown_is_card_ = true;       // the run on screen has them
    bool partial_on_screen_ = false;  // the picture is of the running run's first steps
};

}  // namespace pd::ui
