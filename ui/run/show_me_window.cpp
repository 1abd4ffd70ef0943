#include "show_me_window.h"

#include <QAction>
#include <QCloseEvent>
#include <QDockWidget>
#include <QGuiApplication>
#include <QHBoxLayout>
#include <QKeySequence>
#include <QLabel>
#include <QMenuBar>
#include <QMessageBox>
#include <QProgressBar>
#include <QPushButton>
#include <QScreen>
#include <QScrollArea>
#include <QScrollBar>
#include <QTimer>
#include <QToolBar>
#include <QVBoxLayout>
#include <algorithm>

#include "claims_panel.h"
#include "pd/error.h"
#include "run_controller.h"
#include "screen_fit.h"
#include "visualizer/metrics_text.h"
#include "visualizer/timeline_view.h"
#include "visualizer/visualizer_panel.h"
#include "what_if_panel.h"

namespace pd::ui {

namespace {

QString describe(const pd::RunConfig& c) {
    QString text = QString::fromLatin1(pd::name_of(c.strategy).data());
    // A hybrid mesh without pipeline stages has no schedule to name.
    if (c.strategy == pd::StrategyKind::pipeline ||
        (c.strategy == pd::StrategyKind::hybrid && c.mesh.pp > 1))
        text += QStringLiteral(" %1, %2 micro-batch%3")
                    .arg(QString::fromLatin1(pd::name_of(c.schedule).data()))
                    .arg(c.effective_microbatches())
                    .arg(c.effective_microbatches() == 1 ? QString() : QStringLiteral("es"));
    QString where = QStringLiteral("%1 on %2 device%3")
                        .arg(text)
                        .arg(c.devices)
                        .arg(c.devices == 1 ? QString() : QStringLiteral("s"));
    if (const int nodes = c.cluster.node_count(c.devices); nodes > 1)
        where += QStringLiteral(" in %1 nodes").arg(nodes);
    return where;
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
    cancel_->setToolTip(tr("Stop the run (Esc)"));
    cancel_->hide();
    progress_ticker_ = new QTimer(this);
    progress_ticker_->setInterval(1000);
    connect(progress_ticker_, &QTimer::timeout, this, &ShowMeWindow::updateProgressText);
    run_row->addWidget(status_, 1);
    run_row->addWidget(progress_);
    run_row->addWidget(cancel_);
    layout->addLayout(run_row);

    layout->addWidget(visualizer_, 1);
    setCentralWidget(central);

    // The claims sit beside the timeline: choosing one brings its evidence into view.
    claims_ = new ClaimsPanel(this);
    claims_dock_ = new QDockWidget(tr("Claims"), this);
    claims_dock_->setObjectName(QStringLiteral("claimsDock"));
    claims_dock_->setWidget(claims_);
    claims_dock_->setFeatures(QDockWidget::DockWidgetMovable | QDockWidget::DockWidgetFloatable |
                              QDockWidget::DockWidgetClosable);
    addDockWidget(Qt::RightDockWidgetArea, claims_dock_);
    connect(claims_, &ClaimsPanel::claimChosen, this, &ShowMeWindow::showClaimEvidence);

    // The knobs are a drawer (Ctrl+K): open by default only where the screen leaves the
    // timeline its room beside them.
    auto* knobs = new QWidget(this);
    auto* knobs_layout = new QVBoxLayout(knobs);
    auto* knobs_title =
        new QLabel(tr("<b>What if…</b><br>Change a knob and the run starts again."), knobs);
    knobs_title->setWordWrap(true);
    knobs_layout->addWidget(knobs_title);
    knobs_layout->addWidget(what_if_);
    knobs_layout->addStretch(1);
    auto* scroll = new QScrollArea(this);
    scroll->setObjectName(QStringLiteral("whatIfScroll"));
    scroll->setWidget(knobs);
    scroll->setWidgetResizable(true);
    scroll->setHorizontalScrollBarPolicy(Qt::ScrollBarAlwaysOff);
    knobs_scroll_ = scroll;
    fitKnobsWidth();
    knobs_dock_ = new QDockWidget(tr("What if…"), this);
    knobs_dock_->setObjectName(QStringLiteral("whatIfDock"));
    knobs_dock_->setWidget(scroll);
    addDockWidget(Qt::RightDockWidgetArea, knobs_dock_);
    resizeDocks({claims_dock_, knobs_dock_}, {330, 330}, Qt::Horizontal);

    show_knobs_ = knobs_dock_->toggleViewAction();
    show_knobs_->setText(tr("&What-if panel"));
    show_knobs_->setShortcut(QKeySequence(tr("Ctrl+K")));
    show_knobs_->setToolTip(tr("Open or close the what-if knobs (Ctrl+K)"));
    QAction* show_claims = claims_dock_->toggleViewAction();
    show_claims->setText(tr("C&laims"));
    show_claims->setShortcut(QKeySequence(tr("Ctrl+L")));
    show_claims->setToolTip(tr("Show or hide the card's claims (Ctrl+L)"));

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
    // Esc stops a run; with nothing running it closes the window, as a dialog would.
    escape_ = new QAction(tr("Cancel the run or close"), this);
    escape_->setShortcut(QKeySequence(Qt::Key_Escape));
    connect(escape_, &QAction::triggered, this, [this] {
        if (controller_->isRunning())
            cancel();
        else
            this->close();
    });
    addAction(escape_);
    auto* keys = new QAction(tr("&Keyboard Shortcuts"), this);
    keys->setShortcut(QKeySequence::HelpContents);
    connect(keys, &QAction::triggered, this, &ShowMeWindow::showShortcuts);

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
    view->addSeparator();
    view->addAction(show_claims);
    view->addAction(show_knobs_);
    QMenu* compare = menuBar()->addMenu(tr("&Compare"));
    compare->addAction(pin_);
    compare->addAction(unpin_);
    QMenu* help = menuBar()->addMenu(tr("&Help"));
    help->addAction(keys);

    // The visualizer's own row of fit and export controls also carries comparison and the
    // knobs' toggle: one row, so the timeline keeps the height.
    QToolBar* bar = visualizer_->toolBar();
    bar->addSeparator();
    bar->addAction(pin_);
    bar->addAction(unpin_);
    bar->addSeparator();
    bar->addAction(show_knobs_);

    connect(controller_, &pd::app::RunController::started, this, &ShowMeWindow::onStarted);
    connect(controller_, &pd::app::RunController::progress, this, &ShowMeWindow::onProgress);
    connect(controller_, &pd::app::RunController::partial, this, &ShowMeWindow::onPartial);
    connect(controller_, &pd::app::RunController::finished, this, &ShowMeWindow::onFinished);
    connect(controller_, &pd::app::RunController::cancelled, this, &ShowMeWindow::onCancelled);
    connect(controller_, &pd::app::RunController::rejected, this, &ShowMeWindow::onRejected);
    connect(cancel_, &QPushButton::clicked, this, &ShowMeWindow::cancel);
    connect(what_if_, &WhatIfPanel::configChanged, this, &ShowMeWindow::run);
    connect(what_if_, &WhatIfPanel::problemChanged, this, &ShowMeWindow::onKnobProblem);
    connect(visualizer_, &pd::vis::VisualizerPanel::resetToCardRequested, this,
            &ShowMeWindow::resetToCard);
    connect(visualizer_, &pd::vis::VisualizerPanel::message, this,
            [this](const QString& text) { setStatus(text, false); });
    // The first step is drawn while the others run, and the picture grows every second.
    controller_->setShareRunSoFar(1000);
    updateActions();
    resize(1400, 900);
}

ShowMeWindow::~ShowMeWindow() = default;

void ShowMeWindow::showScenario(const QString& title, const QString& note,
                                const pd::RunConfig& config, const QString& card_id,
                                const pd::Expectations& expectations) {
    // The same card asked for again (M while the window is open) keeps the learner's
    // what-if changes and the run on screen.
    if (isVisible() && title == card_title_ && note == visualizer_->note() && current_) return;
    card_title_ = title;
    visualizer_->setExportBaseName(card_id);
    setWindowTitle(tr("Show me — %1").arg(title));
    visualizer_->setNote(note);
    card_config_ = config;
    expectations_ = expectations;
    claims_dock_->setVisible(!expectations_.empty());
    what_if_->setConfig(config);
    pinned_.reset();
    current_.reset();  // another card's run is no picture of this one
    showCurrent();
    run(config);
    // Keys go to the timeline (Space plays, arrows pan), not to the first knob.
    visualizer_->timeline()->setFocus(Qt::OtherFocusReason);
}

void ShowMeWindow::showEvent(QShowEvent* event) {
    QMainWindow::showEvent(event);
    if (!placed_) {
        placed_ = true;
        fitKnobsWidth();  // the application's font is known now
        fitToScreen();
        // Narrower than 1400 px, the knobs would squeeze the timeline: their drawer starts
        // closed (Ctrl+K opens it).
        knobs_dock_->setVisible(width() >= 1400);
        sizeClaimsDock();
    }
    visualizer_->timeline()->setFocus(Qt::OtherFocusReason);
}

void ShowMeWindow::fitKnobsWidth() {
    // The drawer is as wide as its widest knob or label needs: nothing in it is cut off (its
    // scroll area scrolls only vertically).
    QScrollArea* scroll = knobs_scroll_;
    const int needed = scroll->widget()->minimumSizeHint().width() +
                       scroll->verticalScrollBar()->sizeHint().width() + 2 * scroll->frameWidth();
    scroll->setMinimumWidth(needed);
}

void ShowMeWindow::placeAt(const QSize& size) {
    placed_ = true;
    resize(size);
    knobs_dock_->setVisible(size.width() >= 1400);
    sizeClaimsDock();
}

void ShowMeWindow::sizeClaimsDock() {
    // A quarter of the window at most: the timeline keeps the width its header needs to stay
    // on few lines (the dock took a third of a 1280-px window).
    resizeDocks({claims_dock_}, {std::clamp(width() / 4, 260, 360)}, Qt::Horizontal);
}

void ShowMeWindow::fitToScreen() {
    const QScreen* screen =
        parentWidget() ? parentWidget()->screen() : QGuiApplication::primaryScreen();
    if (!screen) return;
    const QRect avail = screen->availableGeometry();
    // The frame (title bar, borders) is outside the size: leave room for it.
    const QSize frame_extra = frameGeometry().size() - size();
    const QSize room(avail.width() - std::max(0, frame_extra.width()),
                     avail.height() - std::max(0, frame_extra.height()));
    resize(std::min(width(), room.width()), std::min(height(), room.height()));
    QRect frame = frameGeometry();
    if (parentWidget()) frame.moveCenter(parentWidget()->frameGeometry().center());
    frame = fitRectInto(frame, avail);
    move(frame.topLeft());
}

void ShowMeWindow::showShortcuts() {
    const QString rows =
        QStringLiteral(
            "<table cellpadding='4'>"
            "<tr><td><tt>Space</tt></td><td>%1</td></tr>"
            "<tr><td><tt>Esc</tt></td><td>%2</td></tr>"
            "<tr><td><tt>Ctrl+P</tt></td><td>%3</td></tr>"
            "<tr><td><tt>Ctrl+K</tt></td><td>%4</td></tr>"
            "<tr><td><tt>Ctrl+L</tt></td><td>%9</td></tr>"
            "<tr><td><tt>Ctrl+Shift+S</tt></td><td>%5</td></tr>"
            "<tr><td><tt>Ctrl+W</tt></td><td>%6</td></tr>"
            "<tr><td>%7</td><td>%8</td></tr>"
            "</table>")
            .arg(tr("play or pause the playback"), tr("cancel the run; with none running, close"),
                 tr("pin the run to compare the next one with it"), tr("show or hide the knobs"),
                 tr("export the timeline (PNG, SVG, PDF)"), tr("close the window"), tr("Timeline"),
                 timelineKeysText(),
                 tr("show or hide the card's claims (arrow keys choose one and bring its "
                    "evidence into view)"));
    QMessageBox box(QMessageBox::NoIcon, tr("Show me: keyboard shortcuts"), rows,
                    QMessageBox::Close, this);
    box.setTextFormat(Qt::RichText);
    box.exec();
}

QString ShowMeWindow::timelineKeysText() const {
    // The timeline's own keys, as its actions name them.
    QStringList parts;
    for (QAction* a : {visualizer_->fitStepAction(), visualizer_->fitAllAction()})
        if (!a->shortcut().isEmpty())
            parts << tr("<tt>%1</tt> %2")
                         .arg(a->shortcut().toString(QKeySequence::NativeText),
                              a->text().remove(QLatin1Char('&')).toLower());
    parts << tr("wheel: zoom at the pointer; drag: pan");
    return parts.join(QStringLiteral("; "));
}

void ShowMeWindow::run(const pd::RunConfig& config) {
    // The knobs were set from the card, so they tell whether this run is the card's.
    running_is_card_ = !what_if_->differsFromCard();
    follow_ups_.clear();
    running_follow_up_.reset();
    claims_checked_ = false;
    claims_held_.clear();
    evidence_rect_ = {};
    if (expectations_.empty())
        claims_->setWaiting(tr("This card makes no claims about its run."));
    else if (running_is_card_)
        claims_->setWaiting(tr("The card's claims are checked when its run ends."));
    else
        claims_->setWaiting(
            tr("The card's claims are about its own settings; this run has "
               "others. Reset to card to check them."));
    controller_->start(config);
}

QString ShowMeWindow::variantLabel(int variant) const {
    if (variant < 0 || static_cast<std::size_t>(variant) >= expectations_.variants.size())
        return {};
    // The claims' own words for it ("seq_len 8, batch 4"), so panel and status agree.
    return tr("comparison run with %1")
        .arg(QString::fromStdString(
            pd::variant_words(expectations_.variants[static_cast<std::size_t>(variant)])));
}

void ShowMeWindow::queueFollowUps(const pd::RunConfig& config, const pd::RunResult& result) {
    follow_ups_.clear();
    repeat_results_.clear();
    variant_runs_.assign(expectations_.variants.size(), std::nullopt);
    compared_variant_ = -1;
    // Repeats only of a run that completed: an out-of-memory run repeats identically.
    if (result.status == pd::RunStatus::ok)
        for (int i = 1; i < config.repeats; ++i) follow_ups_.push_back({true, i, config});
    for (std::size_t v = 0; v < expectations_.variants.size(); ++v) {
        try {
            if (auto refusal = pd::variant_refusal(config, expectations_, v, "the card")) {
                auto none = std::make_shared<pd::RunResult>();
                none->status = pd::RunStatus::failed;
                none->error = refusal->reason;
                variant_runs_[v] = Shown{config, std::move(none), false, std::move(refusal)};
                continue;
            }
            follow_ups_.push_back({false, static_cast<int>(v),
                                   pd::variant_config(config, expectations_, v, "the card")});
        } catch (const pd::Error& e) {
            follow_ups_.clear();
            claims_->setWaiting(
                tr("The claims cannot be checked: %1").arg(QString::fromUtf8(e.what())));
            emit claimsUnavailable(claims_->headline());
            return;
        }
    }
    startNextFollowUp();
}

void ShowMeWindow::startNextFollowUp() {
    if (follow_ups_.empty()) {
        running_follow_up_.reset();
        checkClaims();
        return;
    }
    running_follow_up_ = follow_ups_.front();
    follow_ups_.pop_front();
    const FollowUp& f = *running_follow_up_;
    claims_->setWaiting(
        f.repeat ? tr("Repeating the card's run (%1 of %2) so its timed figures show their "
                      "spread…")
                       .arg(f.index + 1)
                       .arg(f.config.repeats)
                 : tr("Running the %1 that the claims compare with…").arg(variantLabel(f.index)));
    controller_->start(f.config);
}

void ShowMeWindow::finishFollowUp(std::shared_ptr<const pd::RunResult> result) {
    const FollowUp f = *running_follow_up_;
    running_follow_up_.reset();
    if (f.repeat)
        repeat_results_.push_back(result);
    else
        variant_runs_[static_cast<std::size_t>(f.index)] =
            Shown{f.config, result, false, std::nullopt};
    startNextFollowUp();
}

void ShowMeWindow::checkClaims() {
    if (!current_ || !current_->is_card) return;
    pd::RunEvidence card{current_->config,
                         *current_->result,
                         pd::compute_metrics(current_->result->trace, current_->config),
                         {},
                         {}};
    for (const auto& r : repeat_results_) pd::add_repeat(card, *r);
    std::vector<pd::RunEvidence> variants;
    for (const auto& v : variant_runs_) {
        if (!v) return;  // every comparison run is needed
        variants.push_back({v->config,
                            *v->result,
                            pd::compute_metrics(v->result->trace, v->config),
                            {},
                            v->refused});
    }
    claims_->setOutcomes(pd::check_expectations(expectations_, card, variants));
    claims_checked_ = true;
    visualizer_->setRepeats(card.repeats);  // the figures on screen cover what the claims read
    // The comparison the claims read is on screen without being asked for (a pinned run
    // stays the learner's choice).
    int held = 0;
    for (const auto& o : claims_->outcomes()) held += o.passed ? 1 : 0;
    claims_held_ = tr("%1 %2 of %3 claims hold")
                       .arg(status(), QString::number(held), QString::number(claims_->count()));
    setStatus(claims_held_ + QLatin1Char('.'), false);
    // The first comparison that ran (a refused one has no run to show).
    if (!pinned_)
        for (std::size_t v = 0; v < variant_runs_.size(); ++v)
            if (variant_runs_[v] && !variant_runs_[v]->refused) {
                showVariant(static_cast<int>(v));
                break;
            }
    emit claimsReady();
}

void ShowMeWindow::showVariant(int variant) {
    if (pinned_ || variant < 0 || static_cast<std::size_t>(variant) >= variant_runs_.size() ||
        !variant_runs_[static_cast<std::size_t>(variant)] ||
        variant_runs_[static_cast<std::size_t>(variant)]->refused)
        return;
    if (compared_variant_ == variant && visualizer_->hasComparison()) return;
    const Shown& v = *variant_runs_[static_cast<std::size_t>(variant)];
    visualizer_->setComparison(v.config, v.result, variantLabel(variant));
    compared_variant_ = variant;
    // The status names the run B shows (a claim about another comparison switches it).
    if (claims_checked_ && !claims_held_.isEmpty())
        setStatus(tr("%1; B below is the %2.").arg(claims_held_, variantLabel(variant)), false);
}

void ShowMeWindow::showClaimEvidence(int index) {
    if (index < 0 || index >= claims_->count()) return;
    const pd::ClaimOutcome& o = claims_->outcomes()[static_cast<std::size_t>(index)];
    showVariant(o.variant);
    const QRect r = visualizer_->revealEvidence(o);
    evidence_rect_ = r.isEmpty() ? QRect() : QRect(visualizer_->mapTo(this, r.topLeft()), r.size());
}

void ShowMeWindow::resetToCard() {
    what_if_->setConfig(card_config_);
    run(card_config_);
}

void ShowMeWindow::cancel() {
    controller_->cancel();
}

void ShowMeWindow::closeEvent(QCloseEvent* event) {
    if (controller_->isRunning()) cancel();
    QMainWindow::closeEvent(event);
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
    status_->setProperty("knobProblem", false);
    progress_->setRange(0, config.steps);
    progress_->setValue(0);
    progress_phase_ = tr("Setting up devices…");
    run_elapsed_.start();
    progress_ticker_->start();
    updateProgressText();
    progress_->show();
    cancel_->show();
    if (running_follow_up_) {
        progress_phase_ =
            running_follow_up_->repeat ? tr("Repeat of the card's run…") : tr("Comparison run…");
        updateProgressText();
        return;  // the card's run stays on screen and in the status line
    }
    setStatus(tr("Running %1 on the engine…").arg(describe(config)), false);
}

void ShowMeWindow::onProgress(int done, int total, const QString& phase, double loss) {
    progress_->setRange(0, total);
    progress_->setValue(done);
    if (phase == QStringLiteral("setup"))
        progress_phase_ = tr("Setting up devices…");
    else if (done == 0)
        progress_phase_ = tr("Step 1 of %1 running…").arg(total);
    else
        progress_phase_ = tr("Step %1 of %2 — loss %3").arg(done).arg(total).arg(loss, 0, 'f', 3);
    updateProgressText();
}

void ShowMeWindow::updateProgressText() {
    // Seconds tick on even while one long step runs, so a slow run never looks stuck.
    const qint64 s = run_elapsed_.isValid() ? run_elapsed_.elapsed() / 1000 : 0;
    progress_->setFormat(s >= 1 ? tr("%1 · %2 s").arg(progress_phase_).arg(s) : progress_phase_);
}

QString ShowMeWindow::progressText() const {
    return progress_->format();
}

void ShowMeWindow::onPartial(const pd::RunConfig& config,
                             std::shared_ptr<const pd::RunResult> so_far) {
    // A stale run's signals are dropped: this is the run last started.
    if (running_follow_up_) return;  // drawn only as the comparison, once finished
    partial_on_screen_ = true;
    shown_is_card_ = running_is_card_;
    visualizer_->setRun(config, so_far);
    compared_variant_ = -1;
    visualizer_->setNoteDescribesRun(shown_is_card_);
    if (pinned_) visualizer_->setComparison(pinned_->config, pinned_->result);
    setStatus(tr("%1: step %2 of %3 drawn while the rest runs; the figures are final when it "
                 "ends.")
                  .arg(describe(config))
                  .arg(so_far->steps_completed)
                  .arg(config.steps),
              false);
    updateActions();
    emit partialShown(config, so_far->steps_completed);
}

void ShowMeWindow::showCurrent() {
    partial_on_screen_ = false;
    if (!current_) {
        visualizer_->setRun(card_config_, nullptr);
    } else {
        shown_is_card_ = current_->is_card;
        visualizer_->setRun(current_->config, current_->result);
        compared_variant_ = -1;
        visualizer_->setNoteDescribesRun(shown_is_card_);
        if (pinned_) visualizer_->setComparison(pinned_->config, pinned_->result);
    }
    updateActions();
}

void ShowMeWindow::onFinished(const pd::RunConfig& config,
                              std::shared_ptr<const pd::RunResult> result) {
    if (running_follow_up_) {
        if (follow_ups_.empty()) {
            progress_ticker_->stop();
            progress_->hide();
            cancel_->hide();
        }
        finishFollowUp(std::move(result));
        return;
    }
    progress_ticker_->stop();
    progress_->hide();
    cancel_->hide();
    partial_on_screen_ = false;
    // A stale run's signals are dropped: this is the run last started.
    shown_is_card_ = running_is_card_;
    current_ = Shown{config, result, shown_is_card_, std::nullopt};
    visualizer_->setRun(config, result);
    compared_variant_ = -1;
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
            // Every device that ran out, as the timeline and the memory chart mark them.
            setStatus(tr("Out of memory — %1. The timeline shows the run up to that point.")
                          .arg(pd::vis::out_of_memory_text(*result)),
                      true);
            break;
        default:
            // A collective that timed out is what some cards show (a peer that never came).
            setStatus((result->timed_out ? tr("The run stopped: %1.") : tr("The run failed: %1"))
                          .arg(QString::fromStdString(result->error)),
                      true);
            break;
    }
    updateActions();
    emit runShown(config);
    // The card's own run: its claims need its repeats and comparison runs, run next.
    if (shown_is_card_ && !expectations_.empty() &&
        (result->status == pd::RunStatus::ok || result->status == pd::RunStatus::out_of_memory ||
         result->timed_out)) {
        if (config.repeats > 1 || !expectations_.variants.empty()) {
            progress_->show();
            cancel_->show();
            progress_ticker_->start();
        }
        queueFollowUps(config, *result);
    } else if (!expectations_.empty() && shown_is_card_) {
        claims_->setWaiting(tr("The claims are not checked: the run did not finish."));
        emit claimsUnavailable(claims_->headline());
    }
}

void ShowMeWindow::onCancelled() {
    progress_ticker_->stop();
    progress_->hide();
    cancel_->hide();
    if (running_follow_up_) {
        running_follow_up_.reset();
        follow_ups_.clear();
        claims_->setWaiting(
            tr("The claims were not checked: their comparison run was "
               "cancelled. Reset to card runs it all again."));
        emit claimsUnavailable(claims_->headline());
        return;
    }
    // The knobs describe the picture again, not the run that was stopped; the stopped run's
    // first steps make way for the last finished run.
    what_if_->showKnobs(current_ ? current_->config : card_config_);
    if (partial_on_screen_) showCurrent();
    setStatus(current_ ? tr("Run cancelled. The picture shows the previous run.")
                       : tr("Run cancelled before it finished; nothing to show."),
              false);
}

void ShowMeWindow::onRejected(const QString& message) {
    progress_ticker_->stop();
    progress_->hide();
    cancel_->hide();
    if (running_follow_up_) {
        running_follow_up_.reset();
        follow_ups_.clear();
        claims_->setWaiting(tr("The claims cannot be checked: %1").arg(message));
        emit claimsUnavailable(claims_->headline());
        return;
    }
    setStatus(tr("This scenario cannot run: %1").arg(message), true);
}

void ShowMeWindow::onKnobProblem(const QString& problem) {
    if (problem.isEmpty()) {
        if (status_->property("knobProblem").toBool()) {
            status_->setProperty("knobProblem", false);
            setStatus(current_ ? tr("The knobs are valid again; the next change runs.") : QString(),
                      false);
        }
        return;
    }
    status_->setProperty("knobProblem", true);
    setStatus(current_ ? tr("Not run: %1. The picture still shows the previous run.").arg(problem)
                       : tr("Not run: %1.").arg(problem),
              true);
}

void ShowMeWindow::pinCurrentRun() {
    if (!current_ || partial_on_screen_) return;
    pinned_ = current_;
    compared_variant_ = -1;
    visualizer_->setComparison(pinned_->config, pinned_->result);
    setStatus(tr("Pinned %1. Change a knob: the new run appears above it on the same time axis.")
                  .arg(describe(pinned_->config)),
              false);
    updateActions();
}

void ShowMeWindow::clearPinnedRun() {
    pinned_.reset();
    visualizer_->clearComparison();
    compared_variant_ = -1;
    updateActions();
}

void ShowMeWindow::updateActions() {
    // Only a finished run can be pinned: the comparison would miss the steps to come.
    pin_->setEnabled(current_.has_value() && !partial_on_screen_);
    unpin_->setEnabled(pinned_.has_value());
}

}  // namespace pd::ui
