// The card's claims beside its run: each in the learner's words with the value this run
// measured, a tick or a cross, and the run-to-run spread of timed figures. Choosing a claim
// (click, or the arrow keys) asks the window to bring its evidence into view.
#pragma once

#include <QWidget>
#include <vector>

#include "pd/expectations.h"

class QLabel;
class QListWidget;

namespace pd::ui {

class ClaimsPanel : public QWidget {
    Q_OBJECT
  public:
    explicit ClaimsPanel(QWidget* parent = nullptr);

    // What the panel says while there is nothing checked yet ("Running the comparison run…").
    void setWaiting(const QString& text);
    void setOutcomes(const std::vector<pd::ClaimOutcome>& outcomes);
    const std::vector<pd::ClaimOutcome>& outcomes() const { return outcomes_; }
    int count() const { return static_cast<int>(outcomes_.size()); }
    int current() const;
    void choose(int index);  // selects the claim (and emits claimChosen)
    QString headline() const;
    QListWidget* list() const { return list_; }

  signals:
    void claimChosen(int index);

  private:
    QLabel* headline_;
    QListWidget* list_;
    std::vector<pd::ClaimOutcome> outcomes_;
};

// "✔ Peak activation memory … — measured 10.1x": one claim as the list shows it.
QString claimText(const pd::ClaimOutcome& outcome);

}  // namespace pd::ui
