#include "show_me_window.h"

#include <QAction>
#include <QHBoxLayout>
#include <QKeySequence>
#include <QLabel>
#include <QMenuBar>
#include <QProgressBar>
#include <QPushButton>
#include <QScrollArea>
#include <QSplitter>
#include <QToolBar>
#include <QVBoxLayout>

#include "run_controller.h"
#include "visualizer/visualizer_panel.h"
#include "what_if_panel.h"

namespace pd::ui {

namespace {

QString describe(const pd::RunConfig& c) {
    QString text = QString::fromLatin1(pd::name_of(c.strategy).data());
    if (c.strategy == pd::StrategyKind::pipeline || c.strategy == pd::StrategyKind::hybrid)
        text += QStringLiteral(" %1, %2 micro-batches")
                    .arg(QString::fromLatin1(pd::name_of(c.schedule).data()))
                    .arg(c.effective_microbatches());
    return QObject::tr("%1 on %n device(s)", nullptr, c.devices).arg(text);
}

}  // namespace

ShowMeWindow::ShowMeWindow(QWidget* parent) : QMainWindow(parent) {
    setWindowTitle(tr("Show me"));
    controller_ = new pd::app::RunController(this);
    visualizer_ = new pd::vis::VisualizerPanel(this);
    what_if_ = new WhatIfPanel(this);

    auto* central = new QWidget(this);
    auto* layout = new QVBoxLayout(central);
    layout->setContentsMargins(12, 8, 12, 8);
    auto* run_row = new QHBoxLayout;
    status_ = new QLabel(central);
    status_->setObjectName(QStringLiteral("showMeStatus"));
    status_->setWordWrap(true);
    status_->setTextInteractionFlags(Qt::TextSelectableByMouse);
    progress_ = new QProgressBar(central);
    progress_->setMinimumWidth(260);
    progress_->setTextVisible(true);
    progress_->hide();
    cancel_ = new QPushButton(tr("Cancel"), central);
    cancel_->setShortcut(QKeySequence(Qt::Key_Escape));
    cancel_->setToolTip(tr("Stop the run (Esc)"));
    cancel_->hide();
    run_row->addWidget(status_, 1);
    run_row->addWidget(progress_);
    run_row->addWidget(cancel_);
    layout->addLayout(run_row);

    auto* knobs = new QWidget(this);
    auto* knobs_layout = new QVBoxLayout(knobs);
    auto* knobs_title =
        new QLabel(tr("<b>What if…</b><br>Change a knob and the run starts again."), knobs);
    knobs_title->setWordWrap(true);
    knobs_layout->addWidget(knobs_title);
    knobs_layout->addWidget(what_if_);
    knobs_layout->addStretch(1);
    auto* scroll = new QScrollArea(this);
    scroll->setWidget(knobs);
    scroll->setWidgetResizable(true);
    scroll->setMinimumWidth(280);

    auto* splitter = new QSplitter(Qt::Horizontal, central);
    splitter->addWidget(visualizer_);
    splitter->addWidget(scroll);
    splitter->setStretchFactor(0, 1);
    splitter->setStretchFactor(1, 0);
    layout->addWidget(splitter, 1);
    setCentralWidget(central);

    pin_ = new QAction(tr("&Pin this run for comparison"), this);
    pin_->setShortcut(QKeySequence(tr("Ctrl+P")));
    pin_->setToolTip(
        tr("Keep this run on screen; the next run appears above it on the same time axis"));
    unpin_ = new QAction(tr("&Clear comparison"), this);
    connect(pin_, &QAction::triggered, this, &ShowMeWindow::pinCurrentRun);
    connect(unpin_, &QAction::triggered, this, &ShowMeWindow::clearPinnedRun);
    auto* close = new QAction(tr("&Close"), this);
    close->setShortcut(QKeySequence::Close);
    connect(close, &QAction::triggered, this, &QWidget::close);

    QMenu* file = menuBar()->addMenu(tr("&File"));
    file->addAction(visualizer_->exportScreenshotAction());
    file->addAction(visualizer_->exportTraceAction());
    file->addAction(visualizer_->copyImageAction());
    file->addSeparator();
    file->addAction(close);
    QMenu* view = menuBar()->addMenu(tr("&View"));
    view->addAction(visualizer_->fitStepAction());
    view->addAction(visualizer_->fitAllAction());
    view->addAction(visualizer_->playPauseAction());
    QMenu* compare = menuBar()->addMenu(tr("&Compare"));
    compare->addAction(pin_);
    compare->addAction(unpin_);

    // The visualizer has its own playback, fit and export controls; the window adds comparison.
    QToolBar* bar = addToolBar(tr("Compare"));
    bar->setObjectName(QStringLiteral("showMeToolbar"));
    bar->setMovable(false);
    bar->addAction(pin_);
    bar->addAction(unpin_);

    connect(controller_, &pd::app::RunController::started, this, &ShowMeWindow::onStarted);
    connect(controller_, &pd::app::RunController::progress, this, &ShowMeWindow::onProgress);
    connect(controller_, &pd::app::RunController::finished, this, &ShowMeWindow::onFinished);
    connect(controller_, &pd::app::RunController::cancelled, this, &ShowMeWindow::onCancelled);
    connect(controller_, &pd::app::RunController::rejected, this, &ShowMeWindow::onRejected);
    connect(cancel_, &QPushButton::clicked, this, &ShowMeWindow::cancel);
    connect(what_if_, &WhatIfPanel::configChanged, this, &ShowMeWindow::run);
    connect(visualizer_, &pd::vis::VisualizerPanel::resetToCardRequested, this,
            &ShowMeWindow::resetToCard);
    connect(visualizer_, &pd::vis::VisualizerPanel::message, this,
            [this](const QString& text) { setStatus(text, false); });
    updateActions();
    resize(1400, 860);
}

ShowMeWindow::~ShowMeWindow() = default;

void ShowMeWindow::showScenario(const QString& title, const QString& note,
                                const pd::RunConfig& config) {
    setWindowTitle(tr("Show me — %1").arg(title));
    visualizer_->setNote(note);
    card_config_ = config;
    what_if_->setConfig(config);
    pinned_.reset();
    run(config);
}

void ShowMeWindow::run(const pd::RunConfig& config) {
    // The knobs were set from the card, so they tell whether this run is the card's.
    running_is_card_ = !what_if_->differsFromCard();
    controller_->start(config);
}

void ShowMeWindow::resetToCard() {
    what_if_->setConfig(card_config_);
    run(card_config_);
}

void ShowMeWindow::cancel() {
    controller_->cancel();
}

QString ShowMeWindow::status() const {
    return status_->text();
}

void ShowMeWindow::setStatus(const QString& text, bool problem) {
    status_->setText(text);
    QFont font = status_->font();
    font.setBold(problem);
    status_->setFont(font);
    status_->setProperty("problem", problem);
}

void ShowMeWindow::onStarted(const pd::RunConfig& config) {
    progress_->setRange(0, config.steps);
    progress_->setValue(0);
    progress_->setFormat(tr("Setting up…"));
    progress_->show();
    cancel_->show();
    setStatus(tr("Running %1 on the engine…").arg(describe(config)), false);
}

void ShowMeWindow::onProgress(int done, int total, const QString& phase, double loss) {
    progress_->setRange(0, total);
    progress_->setValue(done);
    if (phase == QStringLiteral("setup"))
        progress_->setFormat(tr("Setting up devices…"));
    else
        progress_->setFormat(
            tr("Step %1 of %2 — loss %3").arg(done).arg(total).arg(loss, 0, 'f', 3));
}

void ShowMeWindow::onFinished(const pd::RunConfig& config,
                              std::shared_ptr<const pd::RunResult> result) {
    progress_->hide();
    cancel_->hide();
    current_ = Shown{config, result};
    // A stale run's signals are dropped: this is the run last started.
    shown_is_card_ = running_is_card_;
    visualizer_->setRun(config, result);
    visualizer_->setNoteDescribesRun(shown_is_card_);
    if (pinned_) visualizer_->setComparison(pinned_->config, pinned_->result);
    const QString clock = QString::fromLatin1(pd::name_of(result->trace.clock).data());
    switch (result->status) {
        case pd::RunStatus::ok:
            setStatus(tr("%1: %2 steps measured on the %3 clock.%4")
                          .arg(describe(config))
                          .arg(result->steps_completed)
                          .arg(clock)
                          .arg(pinned_ ? tr(" Compared with the pinned run below.") : QString()),
                      false);
            break;
        case pd::RunStatus::out_of_memory:
            setStatus(tr("Out of memory — %1. The timeline shows the run up to that point.")
                          .arg(QString::fromStdString(result->oom ? result->oom->describe()
                                                                  : result->error)),
                      true);
            break;
        default:
            setStatus(tr("The run failed: %1").arg(QString::fromStdString(result->error)), true);
            break;
    }
    updateActions();
    emit runShown(config);
}

void ShowMeWindow::onCancelled() {
    progress_->hide();
    cancel_->hide();
    setStatus(current_ ? tr("Run cancelled. The picture shows the previous run.")
                       : tr("Run cancelled before it finished; nothing to show."),
              false);
}

void ShowMeWindow::onRejected(const QString& message) {
    progress_->hide();
    cancel_->hide();
    setStatus(tr("This scenario cannot run: %1").arg(message), true);
}

void ShowMeWindow::pinCurrentRun() {
    if (!current_) return;
    pinned_ = current_;
    visualizer_->setComparison(pinned_->config, pinned_->result);
    setStatus(tr("Pinned %1. Change a knob: the new run appears above it on the same time axis.")
                  .arg(describe(pinned_->config)),
              false);
    updateActions();
}

void ShowMeWindow::clearPinnedRun() {
    pinned_.reset();
    visualizer_->clearComparison();
    updateActions();
}

void ShowMeWindow::updateActions() {
    pin_->setEnabled(current_.has_value());
    unpin_->setEnabled(pinned_.has_value());
}

}  // namespace pd::ui
