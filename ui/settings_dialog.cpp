#include "settings_dialog.h"

#include <QCheckBox>
#include <QComboBox>
#include <QDialogButtonBox>
#include <QDoubleSpinBox>
#include <QFormLayout>
#include <QLabel>
#include <QSpinBox>
#include <QVBoxLayout>

namespace pd::ui {

SettingsDialog::SettingsDialog(const study::StudySettings& settings, QWidget* parent)
    : QDialog(parent), base_(settings) {
    setWindowTitle(tr("Settings"));
    auto* layout = new QVBoxLayout(this);
    layout->setContentsMargins(20, 20, 20, 16);
    layout->setSpacing(14);
    auto* form = new QFormLayout;
    form->setSpacing(10);
    form->setLabelAlignment(Qt::AlignRight);

    retention_ = new QDoubleSpinBox(this);
    retention_->setRange(0.70, 0.99);
    retention_->setSingleStep(0.01);
    retention_->setDecimals(2);
    retention_->setValue(settings.desiredRetention);
    retention_->setToolTip(
        tr("The recall probability FSRS schedules for. Higher means more "
           "reviews; 0.90 is the usual choice."));
    form->addRow(tr("Desired &retention:"), retention_);

    newPerDay_ = new QSpinBox(this);
    newPerDay_->setRange(0, 999);
    newPerDay_->setValue(settings.newPerDay);
    form->addRow(tr("&New cards per day:"), newPerDay_);

    reviewsPerDay_ = new QSpinBox(this);
    reviewsPerDay_->setRange(0, 9999);
    reviewsPerDay_->setValue(settings.reviewsPerDay);
    form->addRow(tr("Maximum re&views per day:"), reviewsPerDay_);

    fuzz_ = new QCheckBox(tr("Spread due dates slightly (interval &fuzz)"), this);
    fuzz_->setChecked(settings.fuzz);
    fuzz_->setToolTip(
        tr("Moves long intervals by a few days so cards learned together do not "
           "all come back on the same day"));
    form->addRow(QString(), fuzz_);

    showMeBeforeCheck_ = new QCheckBox(tr("Allow &Show me before checking, as a hint"), this);
    showMeBeforeCheck_->setChecked(settings.showMeBeforeCheck);
    showMeBeforeCheck_->setToolTip(
        tr("A card's run can give its answer away. When allowed, Show me before checking "
           "records the review as hinted and suggests Hard."));
    form->addRow(QString(), showMeBeforeCheck_);

    ankiScheduling_ =
        new QCheckBox(tr("Schedule as &Anki does (day boundary, interval order)"), this);
    ankiScheduling_->setChecked(settings.ankiScheduling);
    ankiScheduling_->setToolTip(
        tr("A study day starts at the hour below, local time, and days since a review count "
           "day rollovers; Good is always at least a day longer than Hard, Easy than Good. "
           "Off: py-fsrs's rules (whole 24-hour periods, midnight days)."));
    form->addRow(QString(), ankiScheduling_);
    nextDayStartsAt_ = new QSpinBox(this);
    nextDayStartsAt_->setRange(0, 23);
    nextDayStartsAt_->setSuffix(tr(":00"));
    nextDayStartsAt_->setValue(settings.nextDayStartsAt);
    nextDayStartsAt_->setToolTip(tr("Reviews after midnight but before this hour still count "
                                    "as the previous day's, as in Anki (default 4:00)"));
    nextDayStartsAt_->setEnabled(settings.ankiScheduling);
    connect(ankiScheduling_, &QCheckBox::toggled, nextDayStartsAt_, &QWidget::setEnabled);
    form->addRow(tr("Next &day starts at:"), nextDayStartsAt_);

    theme_ = new QComboBox(this);
    theme_->addItem(tr("Follow the system"), QStringLiteral("system"));
    theme_->addItem(tr("Light"), QStringLiteral("light"));
    theme_->addItem(tr("Dark"), QStringLiteral("dark"));
    theme_->setCurrentIndex(std::max(0, theme_->findData(settings.theme)));
    form->addRow(tr("&Theme:"), theme_);
    layout->addLayout(form);

    auto* note = new QLabel(tr("Scheduling uses FSRS-6 with its default parameters; learning "
                               "steps are 1 and 10 minutes, relearning 10 minutes."),
                            this);
    note->setWordWrap(true);
    note->setEnabled(false);
    layout->addWidget(note);

    auto* buttons = new QDialogButtonBox(QDialogButtonBox::Ok | QDialogButtonBox::Cancel, this);
    connect(buttons, &QDialogButtonBox::accepted, this, &QDialog::accept);
    connect(buttons, &QDialogButtonBox::rejected, this, &QDialog::reject);
    layout->addWidget(buttons);
    setMinimumWidth(460);
}

study::StudySettings SettingsDialog::settings() const {
    study::StudySettings s = base_;
    s.desiredRetention = retention_->value();
    s.newPerDay = newPerDay_->value();
    s.reviewsPerDay = reviewsPerDay_->value();
    s.fuzz = fuzz_->isChecked();
    s.showMeBeforeCheck = showMeBeforeCheck_->isChecked();
    s.theme = theme_->currentData().toString();
    s.ankiScheduling = ankiScheduling_->isChecked();
    s.nextDayStartsAt = nextDayStartsAt_->value();
    return s;
}

}  // namespace pd::ui
