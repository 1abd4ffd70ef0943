#include "numeric_answer_panel.h"

#include <QHBoxLayout>
#include <QLabel>
#include <QLineEdit>
#include <QProgressBar>
#include <QVBoxLayout>
#include <cmath>

#include "pd/expectations.h"
#include "pd/metrics.h"
#include "run_controller.h"
#include "scenario_config.h"

namespace pd::ui {

namespace {

QString figureName(const study::NumericAnswer& a) {
    return a.device >= 0 ? QStringLiteral("%1 of device %2").arg(a.metric).arg(a.device) : a.metric;
}

}  // namespace

NumericAnswerPanel::NumericAnswerPanel(QWidget* parent) : QWidget(parent) {
    qRegisterMetaType<study::NumericGrade>();
    auto* layout = new QVBoxLayout(this);
    layout->setContentsMargins(0, 0, 0, 0);
    layout->setSpacing(8);
    auto* row = new QHBoxLayout;
    input_ = new QLineEdit(this);
    input_->setObjectName(QStringLiteral("numericInput"));
    input_->setMinimumWidth(220);
    input_->setMaximumWidth(360);
    input_->setClearButtonEnabled(true);
    QFont big = input_->font();
    big.setPointSizeF(big.pointSizeF() * 1.2);
    input_->setFont(big);
    unitLabel_ = new QLabel(this);
    row->addWidget(input_);
    row->addWidget(unitLabel_);
    row->addStretch(1);
    layout->addLayout(row);
    progress_ = new QProgressBar(this);
    progress_->setMaximumWidth(360);
    progress_->setTextVisible(true);
    progress_->hide();
    layout->addWidget(progress_);
    status_ = new QLabel(this);
    status_->setObjectName(QStringLiteral("numericStatus"));
    status_->setWordWrap(true);
    layout->addWidget(status_);

    controller_ = new pd::app::RunController(this);
    connect(controller_, &pd::app::RunController::progress, this,
            [this](int done, int total, const QString& phase, double) {
                onProgress(done, total, phase);
            });
    connect(controller_, &pd::app::RunController::finished, this, &NumericAnswerPanel::onFinished);
    connect(controller_, &pd::app::RunController::rejected, this, [this](const QString& why) {
        measuring_ = false;
        progress_->hide();
        input_->setEnabled(true);
        setStatus(tr("The card's scenario cannot run: %1").arg(why), true);
        emit measurementFailed(why);
    });
    connect(input_, &QLineEdit::returnPressed, this, &NumericAnswerPanel::submitRequested);
}

NumericAnswerPanel::~NumericAnswerPanel() = default;

void NumericAnswerPanel::setCard(const study::Card& card) {
    if (measuring_) controller_->cancel();
    measuring_ = false;
    card_ = card;
    input_->clear();
    input_->setEnabled(true);
    progress_->hide();
    const study::AnswerUnit unit = card.numeric ? card.numeric->unit : study::AnswerUnit::Count;
    const bool count = unit == study::AnswerUnit::Count;
    input_->setPlaceholderText(
        count ? tr("your prediction")
              : tr("your prediction, in %1").arg(study::answerUnitLabel(unit)));
    unitLabel_->setText(count ? QString() : study::answerUnitLabel(unit));
    setStatus(tr("Type your prediction and press Enter: the card's run then measures the "
                 "answer. For example: %1.")
                  .arg(study::typedAnswerExamples(unit)),
              false);
}

bool NumericAnswerPanel::submit() {
    if (!card_ || !card_->numeric || measuring_) return false;
    QString error;
    const auto typed = study::parseTypedAnswer(input_->text(), card_->numeric->unit, &error);
    if (!typed) {
        setStatus(tr("Not graded: %1.").arg(error), true);
        return false;
    }
    const auto config = pd::app::scenarioConfig(card_->scenarioJson, card_->id, &error);
    if (!config) {
        setStatus(tr("The card's scenario cannot run: %1").arg(error), true);
        emit measurementFailed(error);
        return false;
    }
    typed_ = *typed;
    measuring_ = true;
    input_->setEnabled(false);
    progress_->setRange(0, 0);
    progress_->setFormat(tr("Setting up devices…"));
    progress_->show();
    setStatus(tr("Your prediction: %1. Running the card's scenario to measure it…")
                  .arg(study::formatInUnit(typed_, card_->numeric->unit)),
              false);
    controller_->start(*config);
    return true;
}

void NumericAnswerPanel::onProgress(int done, int total, const QString& phase) {
    progress_->setRange(0, total);
    progress_->setValue(done);
    progress_->setFormat(phase == QStringLiteral("setup")
                             ? tr("Setting up devices…")
                             : tr("Step %1 of %2").arg(done).arg(total));
}

void NumericAnswerPanel::onFinished(const pd::RunConfig& config,
                                    std::shared_ptr<const pd::RunResult> result) {
    measuring_ = false;
    progress_->hide();
    if (!card_ || !card_->numeric) return;
    const study::NumericAnswer& a = *card_->numeric;
    if (result->status != pd::RunStatus::ok) {
        const QString why = QStringLiteral("the run ended with %1: %2")
                                .arg(QString::fromLatin1(pd::name_of(result->status).data()),
                                     QString::fromStdString(result->error));
        setStatus(tr("Not graded: %1.").arg(why), true);
        emit measurementFailed(why);
        return;
    }
    const pd::RunEvidence evidence{
        config, *result, pd::compute_metrics(result->trace, config), {}, {}};
    const auto measured = pd::read_metric(a.metric.toStdString(), evidence, a.device);
    if (!measured || !std::isfinite(*measured)) {
        const QString why =
            QStringLiteral("this run has no figure %1 to grade against").arg(figureName(a));
        setStatus(tr("Not graded: %1.").arg(why), true);
        emit measurementFailed(why);
        return;
    }
    // The run's own account of its figure, so the textbook answer counts where it explains
    // the difference.
    const study::NumericGrade grade =
        study::gradeNumeric(a, typed_, *measured, study::explainMeasured(a, evidence.metrics));
    setStatus(QString(), false);
    emit graded(grade);
}

QString NumericAnswerPanel::resultHtml(const study::NumericGrade& g) const {
    if (!card_ || !card_->numeric) return {};
    const study::NumericAnswer& a = *card_->numeric;
    const double off = g.typed - g.measured;
    const QString offText =
        a.unit == study::AnswerUnit::Percent
            ? tr("%1 percentage points").arg(QString::number(std::abs(off) * 100, 'f', 1))
            : study::formatInUnit(std::abs(off), a.unit);
    QString html =
        tr("<p><b>Measured on this run</b> (%1): %2<br><b>Your prediction</b>: %3 — %4 "
           "(the card accepts %5)</p>")
            .arg(figureName(a).toHtmlEscaped(), study::formatInUnit(g.measured, a.unit),
                 study::formatInUnit(g.typed, a.unit),
                 g.byTextbook ? tr("right as the textbook figure, which this run explains")
                 : g.correct  ? tr("within the tolerance")
                              : tr("%1 %2").arg(offText, off > 0 ? tr("too high") : tr("too low")),
                 study::toleranceText(a).toHtmlEscaped());
    if (a.textbook) {
        const double textbook = *a.textbook * study::answerUnitScale(a.unit);
        html += tr("<p><b>Textbook</b>: %1 — %2%3</p>")
                    .arg(study::formatInUnit(textbook, a.unit), a.textbookFormula.toHtmlEscaped(),
                         g.nearTextbook && *g.nearTextbook
                             ? tr("; your prediction is within the tolerance of it too")
                             : tr("; your prediction is outside the tolerance of it"));
    }
    if (!g.textbookNote.isEmpty())
        html += QStringLiteral("<p>%1.</p>").arg(g.textbookNote.toHtmlEscaped());
    html += QStringLiteral("<p>%1</p>").arg(a.explanation.toHtmlEscaped());
    return html;
}

QString NumericAnswerPanel::statusText() const {
    return status_->text();
}

void NumericAnswerPanel::setStatus(const QString& text, bool problem) {
    status_->setText(text);
    status_->setVisible(!text.isEmpty());
    QFont f = status_->font();
    f.setBold(problem);
    status_->setFont(f);
}

}  // namespace pd::ui
