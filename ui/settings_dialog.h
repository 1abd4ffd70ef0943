// Settings: desired retention, daily limits, fuzz, Show me before checking and theme.
#pragma once

#include <QDialog>

#include "study/study_session.h"

class QComboBox;
class QCheckBox;
class QDoubleSpinBox;
class QSpinBox;

namespace pd::ui {

class SettingsDialog : public QDialog {
    Q_OBJECT
  public:
    explicit SettingsDialog(const study::StudySettings& settings, QWidget* parent = nullptr);
    study::StudySettings settings() const;

  private:
    study::StudySettings base_;
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
