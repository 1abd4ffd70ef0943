// Settings: desired retention, daily limits, fuzz, Show me before checking, Anki's scheduling
// rules, theme, and FSRS weights fitted to the learner's history (Optimize).
#pragma once

#include <QDialog>

#include <optional>

#include "study/review_store.h"
#include "study/study_session.h"

class QComboBox;
class QCheckBox;
class QDoubleSpinBox;
class QLabel;
class QPushButton;
class QSpinBox;

namespace pd::ui {

class SettingsDialog : public QDialog {
    Q_OBJECT
  public:
    // `store` (optional) holds the history Optimize fits the weights to.
    explicit SettingsDialog(const study::StudySettings& settings,
                            const study::ReviewStore* store = nullptr, QWidget* parent = nullptr);
    study::StudySettings settings() const;
    // Fits FSRS's weights to the history, with a progress dialog; the better weights are
    // kept (applied on OK). The result is shown under the button.
    void optimize();

  private:
    void showWeights();
    study::StudySettings base_;
    const study::ReviewStore* store_ = nullptr;
    std::optional<study::FsrsWeights> weights_;
    QPushButton* optimize_ = nullptr;
    QLabel* weightsNote_ = nullptr;
    QDoubleSpinBox* retention_ = nullptr;
    QSpinBox* newPerDay_ = nullptr;
    QSpinBox* reviewsPerDay_ = nullptr;
    QCheckBox* fuzz_ = nullptr;
    QCheckBox* showMeBeforeCheck_ = nullptr;
    QCheckBox* ankiScheduling_ = nullptr;
    QSpinBox* nextDayStartsAt_ = nullptr;
    QComboBox* theme_ = nullptr;
};

}  // namespace pd::ui
