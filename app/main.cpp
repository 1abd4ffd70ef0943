// paralleldeck: the desktop application.
#include <QApplication>
#include <QCommandLineParser>

#include "main_window.h"

int main(int argc, char** argv) {
    QApplication app(argc, argv);
    QApplication::setApplicationName(QStringLiteral("ParallelDeck"));
    QApplication::setOrganizationName(QStringLiteral("ParallelDeck"));
    QApplication::setApplicationVersion(QStringLiteral(PD_VERSION));

    QCommandLineParser parser;
    parser.setApplicationDescription(
        QStringLiteral("Flashcards on distributed training, with a visualizer of real runs."));
    parser.addHelpOption();
    parser.addVersionOption();
    parser.process(app);

    pd::ui::MainWindow window;
    window.show();
    return QApplication::exec();
}
