#include "trace_window.h"

#include <QAction>
#include <QActionGroup>
#include <QFileInfo>
#include <QMenu>
#include <QMenuBar>
#include <QMessageBox>
#include <QStatusBar>

#include "trace_loader.h"
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
      own_clock_(new QAction(tr("The Traces' Own &Clock"), this)),
      first_collective_(new QAction(tr("Align Ranks on the &First Collective"), this)) {
    setCentralWidget(visualizer_);
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
    connect(loader_, &pd::app::TraceLoader::failed, this, [this](const QString& message) {
        QMessageBox::warning(this, tr("Trace"),
                             tr("The traces could not be read again:\n%1").arg(message));
    });
    connect(visualizer_, &pd::vis::VisualizerPanel::message, this,
            [this](const QString& text) { statusBar()->showMessage(text, 6000); });
    resize(1400, 900);
}

void TraceWindow::realign(pd::ClockAlignment alignment) {
    if (files_.isEmpty()) return;
    statusBar()->showMessage(tr("Reading the traces again\u2026"));
    loader_->load(files_, alignment);
}

void TraceWindow::showImported(const QStringList& files,
                               std::shared_ptr<const pd::RunResult> result) {
    files_ = files;
    // Which clock the run is on, as the importer chose it (automatic picks by the traces).
    (result->trace.origin.aligned_on_first_collective ? first_collective_ : own_clock_)
        ->setChecked(true);
    first_collective_->setEnabled(result->trace.devices > 1);
    QStringList names;
    for (const QString& f : files) names << QFileInfo(f).fileName();
    setWindowTitle(tr("Trace — %1").arg(names.join(QStringLiteral(", "))));
    visualizer_->setExportBaseName(QStringLiteral("trace"));
    visualizer_->setNote(importedRunNote(result->trace));
    visualizer_->setRun(pd::app::importedRunConfig(*result), result);
    const int ranks = result->trace.devices;
    statusBar()->showMessage((ranks == 1 ? tr("1 rank from %1") : tr("%1 ranks from %2").arg(ranks))
                                 .arg(qs(result->trace.origin.producer)));
}

}  // namespace pd::ui
