#include "settings_dialog.h"

#include <QCheckBox>
#include <QComboBox>
#include <QCoreApplication>
#include <QDialogButtonBox>
#include <QDoubleSpinBox>
#include <QFormLayout>
#include <QHBoxLayout>
#include <QLabel>
#include <QProgressDialog>
#include <QPushButton>
#include <QSpinBox>
#include <QVBoxLayout>

#include "study/fsrs_history.h"
#include "study/fsrs_optimizer.h"

namespace pd::ui {

SettingsDialog::SettingsDialog(const study::StudySettings& settings,
                               const study::ReviewStore* store, QWidget* parent)
    : QDialog(parent), base_(settings), store_(store), weights_(settings.weights) {
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
    nextDayStartsAt_->setToolTip(
        tr("Reviews after midnight but before this hour still count "
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

    auto* optimizeRow = new QHBoxLayout;
    optimize_ = new QPushButton(tr("&Optimize\u2026"), this);
    optimize_->setObjectName(QStringLiteral("optimize"));
    optimize_->setToolTip(
        tr("Fit FSRS's 21 weights to your own review history (as Anki's "
           "optimizer does) and keep them if they predict it better"));
    optimize_->setEnabled(store_ != nullptr);
    connect(optimize_, &QPushButton::clicked, this, &SettingsDialog::optimize);
    weightsNote_ = new QLabel(this);
    weightsNote_->setObjectName(QStringLiteral("weightsNote"));
    weightsNote_->setWordWrap(true);
    optimizeRow->addWidget(optimize_, 0, Qt::AlignTop);
    optimizeRow->addWidget(weightsNote_, 1);
    layout->addLayout(optimizeRow);
    showWeights();

    auto* note = new QLabel(tr("Scheduling uses FSRS-6; learning steps are 1 and 10 minutes, "
                               "relearning 10 minutes."),
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

void SettingsDialog::showWeights() {
    weightsNote_->setText(weights_ ? tr("Weights fitted to your history are in use.")
                                   : tr("FSRS-6's default weights are in use."));
}

void SettingsDialog::optimize() {
    if (!store_) return;
    const std::vector<study::FsrsCardHistory> cards = study::fsrsHistories(*store_);
    QProgressDialog progress(tr("Fitting FSRS's weights to your reviews\u2026"), tr("Cancel"), 0, 1,
                             this);
    progress.setWindowTitle(tr("Optimize"));
    progress.setWindowModality(Qt::WindowModal);
    progress.setMinimumDuration(0);
    study::FsrsOptimizerOptions options;
    options.dayCounter = settings().dayCounter();
    options.current = weights_.value_or(study::kFsrsDefaultWeights);
    options.progress = [&progress](int done, int total) {
        progress.setMaximum(total);
        progress.setValue(done);
        QCoreApplication::processEvents();
        return !progress.wasCanceled();
    };
    const study::FsrsOptimization r = study::optimizeFsrs(cards, options);
    progress.reset();
    if (r.cancelled) {
        weightsNote_->setText(tr("Optimizing was cancelled; the weights are unchanged."));
        return;
    }
    if (!r.offered) {
        weightsNote_->setText(tr("Not yet: %1.").arg(QString::fromStdString(r.message)));
        return;
    }
    if (r.fittedIsBetter) weights_ = r.weights;
    weightsNote_->setText(
        tr("%1 reviews scored. Log loss %2 with the current weights, %3 fitted; RMSE (bins) "
           "%4 and %5. %6.%7")
            .arg(r.current.predictions)
            .arg(r.current.logLoss, 0, 'f', 4)
            .arg(r.fitted.logLoss, 0, 'f', 4)
            .arg(r.current.rmseBins, 0, 'f', 4)
            .arg(r.fitted.rmseBins, 0, 'f', 4)
            .arg(QString::fromStdString(r.message))
            .arg(r.fittedIsBetter ? tr(" Applied with OK.") : QString()));
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
    s.weights = weights_;
    return s;
}

}  // namespace pd::ui
