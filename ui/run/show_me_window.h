// "Show me": runs a card's scenario off the GUI thread and plays back what happened, with the
// card's note above the timeline, progress and Cancel, the what-if knobs, and a pinned run to
// compare against on a shared time axis.
#pragma once

#include <QElapsedTimer>
#include <QMainWindow>
#include <deque>
#include <memory>
#include <optional>
#include <vector>

#include "pd/expectations.h"
#include "pd/run.h"
#include "pd/run_config.h"

class QAction;
class QDockWidget;
class QLabel;
class QProgressBar;
class QPushButton;
class QScrollArea;
class QTimer;

namespace pd::app {
class RunController;
}
namespace pd::vis {
class VisualizerPanel;
}

namespace pd::ui {

class ClaimsPanel;
class WhatIfPanel;

class ShowMeWindow : public QMainWindow {
    Q_OBJECT
  public:
    explicit ShowMeWindow(QWidget* parent = nullptr);
    ~ShowMeWindow() override;

    // Shows the card's scenario and starts running it; `card_id` names exported files.
    // `expectations`: the card's claims, checked when its run (with its repeats and its
    // comparison runs, which run on their own after it) ends.
    void showScenario(const QString& title, const QString& note, const pd::RunConfig& config,
                      const QString& card_id = {}, const pd::Expectations& expectations = {});

    // Lays the window out at `size` and keeps it there (no fitting to the screen): the
    // headless claims report's window, as a learner's screen of that size would show it.
    void placeAt(const QSize& size);

    pd::app::RunController* controller() const { return controller_; }
    pd::vis::VisualizerPanel* visualizer() const { return visualizer_; }
    WhatIfPanel* whatIf() const { return what_if_; }
    ClaimsPanel* claimsPanel() const { return claims_; }
    QDockWidget* claimsDock() const { return claims_dock_; }
    QDockWidget* whatIfDock() const { return knobs_dock_; }
    // Whether the card's claims have been checked on the run on screen.
    bool claimsChecked() const { return claims_checked_; }
    // Where the evidence of the claim chosen last was brought into view, in this window's
    // coordinates (empty: nothing shows it, or no claim was chosen).
    QRect evidenceRect() const { return evidence_rect_; }
    // The comparison run shown as B for the card's claims (-1: none, or a pinned run).
    int comparedVariant() const { return compared_variant_; }
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
    // The card's claims were checked on its run and its comparison runs (claimsPanel()).
    void claimsReady();
    // The claims could not be checked (a comparison run was cancelled or refused).
    void claimsUnavailable(const QString& why);

  private:
    struct Shown {
        pd::RunConfig config;
        std::shared_ptr<const pd::RunResult> result;
        bool is_card = true;  // has the card's settings
        // A comparison run a claim expects refused, and refused: never run, never shown.
        std::optional<pd::Refusal> refused;
    };
    // A run the card's claims need after its own: a repeat of it, or a comparison run.
    struct FollowUp {
        bool repeat = false;
        int index = 0;  // repeat number, or compare_with variant
        pd::RunConfig config;
    };
    void queueFollowUps(const pd::RunConfig& config, const pd::RunResult& result);
    void startNextFollowUp();
    void finishFollowUp(std::shared_ptr<const pd::RunResult> result);
    void checkClaims();
    void showClaimEvidence(int index);
    void showVariant(int variant);
    QString variantLabel(int variant) const;
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
    void fitKnobsWidth();
    void sizeClaimsDock();
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
    QScrollArea* knobs_scroll_;
    QString card_title_;
    bool placed_ = false;
    std::optional<Shown> current_;
    std::optional<Shown> pinned_;
    ClaimsPanel* claims_;
    QDockWidget* claims_dock_;
    QDockWidget* knobs_dock_;
    pd::Expectations expectations_;
    std::deque<FollowUp> follow_ups_;            // still to run, in order
    std::optional<FollowUp> running_follow_up_;  // the controller runs this one
    std::vector<std::shared_ptr<const pd::RunResult>> repeat_results_;
    std::vector<std::optional<Shown>> variant_runs_;  // by compare_with variant
    int compared_variant_ = -1;
    bool claims_checked_ = false;
    QString claims_held_;  // "… N of M claims hold", the status before naming run B
    QRect evidence_rect_;
    pd::RunConfig card_config_;       // what showScenario() was given
    bool running_is_card_ = true;     // the run last started has the card's settings
    bool shown_is_card_ = true;       // the run on screen has them
    bool partial_on_screen_ = false;  // the picture is of the running run's first steps
};

}  // namespace pd::ui
