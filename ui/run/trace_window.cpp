#include "trace_window.h"

#include <QAction>
#include <QFileInfo>
#include <QMenu>
#include <QMenuBar>
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
    : QMainWindow(parent), visualizer_(new pd::vis::VisualizerPanel(this)) {
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
    connect(visualizer_, &pd::vis::VisualizerPanel::message, this,
            [this](const QString& text) { statusBar()->showMessage(text, 6000); });
    resize(1400, 900);
}

void TraceWindow::showImported(const QStringList& files,
                               std::shared_ptr<const pd::RunResult> result) {
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
