#include "trace_window.h"

#include <QAction>
#include <QActionGroup>
#include <QFileDialog>
#include <QFileInfo>
#include <QMenu>
#include <QMenuBar>
#include <QMessageBox>
#include <QStatusBar>

#include "trace_loader.h"
#include "visualizer/timeline_view.h"
#include "visualizer/visualizer_panel.h"

namespace pd::ui {

namespace {

QString qs(const std::string& s) {
    return QString::fromStdString(s);
}

}  // namespace

QString importedRunNote(const pd::Trace& trace) {
    const pd::TraceOrigin& o = trace.origin;
    QStringList lines;
    lines << QObject::tr("Clock: %1.").arg(qs(o.clock_alignment));
    for (const auto& n : o.notes) lines << qs(n);
    QStringList unknown;
    for (const auto& u : o.unknown) unknown << qs(u.substr(0, u.find(':')));
    if (!unknown.isEmpty())
        lines << QObject::tr("Not in these traces, so shown as unknown: %1.")
                     .arg(unknown.join(QStringLiteral(", ")));
    return lines.join(QLatin1Char('\n'));
}

TraceWindow::TraceWindow(QWidget* parent)
    : QMainWindow(parent),
      visualizer_(new pd::vis::VisualizerPanel(this)),
      loader_(new pd::app::TraceLoader(this)),
      open_(new QAction(tr("&Open\u2026"), this)),
      own_clock_(new QAction(tr("The Traces' Own &Clock"), this)),
      first_collective_(new QAction(tr("Align Ranks on the &First Collective"), this)) {
    setCentralWidget(visualizer_);
    auto* close = new QAction(tr("&Close"), this);
    close->setShortcut(QKeySequence::Close);
    connect(close, &QAction::triggered, this, &QWidget::close);
    open_->setShortcut(QKeySequence::Open);
    open_->setToolTip(tr("Open other PyTorch profiler traces (one file per rank) in this window"));
    connect(open_, &QAction::triggered, this, &TraceWindow::chooseAndOpenTraces);
    QMenu* file = menuBar()->addMenu(tr("&File"));
    file->addAction(open_);
    file->addSeparator();
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
    auto* clocks = new QActionGroup(this);
    for (QAction* a : {own_clock_, first_collective_}) {
        a->setCheckable(true);
        clocks->addAction(a);
        view->addAction(a);
    }
    own_clock_->setToolTip(
        tr("Every rank on its trace's own timestamps: right when the hosts' "
           "clocks agree (Kineto)"));
    first_collective_->setToolTip(
        tr("Each rank shifted so its first collective ends when the "
           "first rank's does: for traces without a shared clock"));
    connect(own_clock_, &QAction::triggered, this,
            [this] { realign(pd::ClockAlignment::trace_clock); });
    connect(first_collective_, &QAction::triggered, this,
            [this] { realign(pd::ClockAlignment::first_collective); });
    connect(loader_, &pd::app::TraceLoader::loaded, this,
            [this](const QStringList& files, std::shared_ptr<const pd::RunResult> result) {
                showImported(files, std::move(result));
            });
    connect(loader_, &pd::app::TraceLoader::progress, this, [this](qint64 done, qint64 total) {
        statusBar()->showMessage(
            tr("Reading the traces\u2026 %1%").arg(total > 0 ? 100 * done / total : 0));
    });
    connect(loader_, &pd::app::TraceLoader::failed, this, [this](const QString& message) {
        statusBar()->clearMessage();
        // The run shown stays; so does the clock it is shown on.
        if (!files_.isEmpty())
            (shown_on_first_collective_ ? first_collective_ : own_clock_)->setChecked(true);
        const QString text = opening_other_
                                 ? tr("The trace could not be opened:\n%1").arg(message)
                                 : tr("The traces could not be read again:\n%1").arg(message);
        // Window-modal and not blocking: the window keeps painting the run it shows.
        auto* box =
            new QMessageBox(QMessageBox::Warning, tr("Open Trace"), text, QMessageBox::Ok, this);
        box->setAttribute(Qt::WA_DeleteOnClose);
        box->setWindowModality(Qt::WindowModal);
        box->open();
        emit loadFailed(message);
    });
    connect(loader_, &pd::app::TraceLoader::cancelled, this,
            [this] { statusBar()->showMessage(tr("Reading the traces was cancelled."), 6000); });
    connect(visualizer_, &pd::vis::VisualizerPanel::message, this,
            [this](const QString& text) { statusBar()->showMessage(text, 6000); });
    resize(1400, 900);
}

void TraceWindow::showEvent(QShowEvent* event) {
    QMainWindow::showEvent(event);
    refitUntouchedStep();  // the window's layout has given the timeline its width by now
}

void TraceWindow::resizeEvent(QResizeEvent* event) {
    QMainWindow::resizeEvent(event);
    refitUntouchedStep();
}

void TraceWindow::refitUntouchedStep() {
    if (!keep_step_fitted_ || !isVisible()) return;
    pd::vis::TimelineView* timeline = visualizer_->timeline();
    const pd::vis::TimeMapping& now = timeline->mapping();
    if (fitted_ && (now.start_ns != fitted_->start_ns || now.ns_per_px != fitted_->ns_per_px)) {
        keep_step_fitted_ = false;  // zoomed, panned or fitted otherwise: the view is theirs
        return;
    }
    if (timeline->width() == fitted_width_) return;
    visualizer_->fitStepAction()->trigger();
    fitted_ = timeline->mapping();
    fitted_width_ = timeline->width();
}

void TraceWindow::realign(pd::ClockAlignment alignment) {
    if (files_.isEmpty()) return;
    statusBar()->showMessage(tr("Reading the traces again\u2026"));
    opening_other_ = false;
    loader_->load(files_, alignment);
}

void TraceWindow::chooseAndOpenTraces() {
    // Not blocking: a window-modal dialog, so the run shown keeps painting behind it.
    auto* dialog = new QFileDialog(this, tr("Open Trace (one file per rank)"),
                                   files_.isEmpty() ? QString() : QFileInfo(files_.front()).path(),
                                   tr("Chrome traces (*.json *.json.gz *.gz);;All files (*)"));
    dialog->setObjectName(QStringLiteral("openTraceDialog"));
    dialog->setFileMode(QFileDialog::ExistingFiles);
    dialog->setAcceptMode(QFileDialog::AcceptOpen);
    dialog->setAttribute(Qt::WA_DeleteOnClose);
    dialog->setWindowModality(Qt::WindowModal);
    connect(dialog, &QFileDialog::filesSelected, this, [this](const QStringList& chosen) {
        if (!chosen.isEmpty()) openTraces(chosen);
    });
    dialog->open();
}

void TraceWindow::openTraces(const QStringList& files) {
    if (files.isEmpty()) return;
    statusBar()->showMessage(files.size() == 1
                                 ? tr("Reading %1\u2026").arg(QFileInfo(files.front()).fileName())
                                 : tr("Reading %1 trace files\u2026").arg(files.size()));
    opening_other_ = true;
    loader_->load(files);
}

void TraceWindow::showImported(const QStringList& files,
                               std::shared_ptr<const pd::RunResult> result) {
    files_ = files;
    shown_on_first_collective_ = result->trace.origin.aligned_on_first_collective;
    // Which clock the run is on, as the importer chose it (automatic picks by the traces).
    (shown_on_first_collective_ ? first_collective_ : own_clock_)->setChecked(true);
    first_collective_->setEnabled(result->trace.devices > 1);
    QStringList names;
    for (const QString& f : files) names << QFileInfo(f).fileName();
    setWindowTitle(tr("Trace — %1").arg(names.join(QStringLiteral(", "))));
    visualizer_->setExportBaseName(QStringLiteral("trace"));
    visualizer_->setNote(importedRunNote(result->trace));
    visualizer_->setRun(pd::app::importedRunConfig(*result), result);
    keep_step_fitted_ = true;
    fitted_.reset();
    fitted_width_ = -1;
    if (isVisible()) refitUntouchedStep();
    const int ranks = result->trace.devices;
    statusBar()->showMessage((ranks == 1 ? tr("1 rank from %1") : tr("%1 ranks from %2").arg(ranks))
                                 .arg(qs(result->trace.origin.producer)));
}

}  // namespace pd::ui
