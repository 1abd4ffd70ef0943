#include "main_window.h"

#include <QAction>
#include <QApplication>
#include <QLabel>
#include <QMenuBar>
#include <QMessageBox>
#include <QVBoxLayout>

namespace pd::ui {

MainWindow::MainWindow(QWidget* parent) : QMainWindow(parent) {
    setWindowTitle(QStringLiteral("ParallelDeck"));
    auto* central = new QWidget(this);
    auto* layout = new QVBoxLayout(central);
    layout->setContentsMargins(48, 40, 48, 40);
    layout->setSpacing(16);

    auto* title = new QLabel(QStringLiteral("ParallelDeck"), central);
    QFont title_font = title->font();
    title_font.setPointSizeF(title_font.pointSizeF() * 2.0);
    title_font.setBold(true);
    title->setFont(title_font);

    auto* text = new QLabel(central);
    text->setWordWrap(true);
    text->setTextFormat(Qt::RichText);
    text->setText(QStringLiteral(
        "<p>Flashcards on distributed deep-learning training, joined to a visualizer that "
        "runs a small <b>real</b> multi-device training job and shows what happened.</p>"
        "<p>The study deck and the visualizer are being built. The training engine is "
        "ready: run it from a terminal, for example</p>"
        "<pre>paralleldeck-run --strategy dp --devices 4 --steps 10 --trace dp.json "
        "--summary dp-summary.json</pre>"
        "<p>and open <tt>dp.json</tt> in Perfetto to see every device's compute and "
        "communication streams, the ring all-reduce steps and the memory counters.</p>"));
    text->setTextInteractionFlags(Qt::TextSelectableByMouse);

    layout->addWidget(title);
    layout->addWidget(text);
    layout->addStretch(1);
    setCentralWidget(central);

    QMenu* file = menuBar()->addMenu(tr("&File"));
    QAction* quit = file->addAction(tr("&Quit"), qApp, &QApplication::quit);
    quit->setShortcut(QKeySequence::Quit);
    QMenu* help = menuBar()->addMenu(tr("&Help"));
    help->addAction(tr("&About ParallelDeck"), this, &MainWindow::show_about);
    resize(900, 560);
}

void MainWindow::show_about() {
    QMessageBox::about(this, tr("About ParallelDeck"),
                       tr("<b>ParallelDeck %1</b><br>Study distributed training with real runs.")
                           .arg(QStringLiteral(PD_VERSION)));
}

}  // namespace pd::ui
