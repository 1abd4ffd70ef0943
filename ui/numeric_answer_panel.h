// The answer area of a numeric "predict, then run" card on the study page: the learner types
// a number (units accepted), the card's scenario runs on the engine off the GUI thread, and
// the measured figure grades the prediction (study/numeric_answer.h). Progress shows while it
// runs; a run that fails or lacks the figure says why and grades nothing.
#pragma once

#include <QWidget>
#include <memory>
#include <optional>

#include "pd/run.h"
#include "pd/run_config.h"
#include "study/deck.h"

class QLabel;
class QLineEdit;
class QProgressBar;

namespace pd::app {
class RunController;
}

namespace pd::ui {

class NumericAnswerPanel : public QWidget {
    Q_OBJECT
  public:
    explicit NumericAnswerPanel(QWidget* parent = nullptr);
    ~NumericAnswerPanel() override;

    // A new card: clears the field and any result, and stops a run still going.
    void setCard(const study::Card& card);
    // Reads the field: on a valid number starts the run and returns true; otherwise says
    // what is wrong under the field and returns false.
    bool submit();
    bool measuring() const { return measuring_; }
    QLineEdit* input() const { return input_; }
    QString statusText() const;
    // The card's answer, the learner's value and the measurement, as the reveal shows them.
    QString resultHtml(const study::NumericGrade& grade) const;

  signals:
    // The run measured the card's figure: `grade` compares the prediction with it.
    void graded(const study::NumericGrade& grade);
    // The run could not measure it (refused, failed, out of memory, figure missing).
    void measurementFailed(const QString& message);
    // Enter in the field.
    void submitRequested();

  private:
    void onFinished(const pd::RunConfig& config, std::shared_ptr<const pd::RunResult> result);
    void onProgress(int done, int total, const QString& phase);
    void setStatus(const QString& text, bool problem);

    QLineEdit* input_;
    QLabel* unitLabel_;
    QLabel* status_;
    QProgressBar* progress_;
    pd::app::RunController* controller_;
    std::optional<study::Card> card_;
    double typed_ = 0.0;
    bool measuring_ = false;
};

}  // namespace pd::ui

Q_DECLARE_METATYPE(pd::study::NumericGrade)
