// paralleldeck: the desktop application.
#include <QApplication>
#include <QCommandLineParser>
#include <QDir>
#include <QFileInfo>
#include <QIcon>
#include <QMessageBox>
#include <QStandardPaths>
#include <cstdio>
#include <cstring>

#include "app_context.h"
#include "main_window.h"
#include "study/deck_library.h"
#include "study/review_store.h"
#include "theme.h"

namespace {

void describe(QCoreApplication& app) {
    QCoreApplication::setApplicationName(QStringLiteral("ParallelDeck"));
    QCoreApplication::setOrganizationName(QStringLiteral("ParallelDeck"));
    QCoreApplication::setApplicationVersion(QStringLiteral(PD_VERSION));
    Q_UNUSED(app);
}

void addOptions(QCommandLineParser& parser) {
    parser.setApplicationDescription(
        QStringLiteral("Flashcards on distributed deep-learning training, scheduled with FSRS-6."));
    parser.addHelpOption();
    parser.addVersionOption();
    parser.addOption({QStringLiteral("database"),
                      QStringLiteral("Keep reviews and settings in <file> instead of the app-data "
                                     "folder."),
                      QStringLiteral("file")});
}

}  // namespace

int main(int argc, char** argv) {
    // --version and --help print and exit without needing a display.
    for (int i = 1; i < argc; ++i) {
        if (!std::strcmp(argv[i], "--version") || !std::strcmp(argv[i], "-v") ||
            !std::strcmp(argv[i], "--help") || !std::strcmp(argv[i], "-h")) {
            QCoreApplication core(argc, argv);
            describe(core);
            QCommandLineParser parser;
            addOptions(parser);
            parser.process(core);
            return 0;
        }
    }

    QApplication app(argc, argv);
    describe(app);
    QApplication::setWindowIcon(QIcon(QStringLiteral(":/icons/paralleldeck.svg")));
    QApplication::setDesktopFileName(QStringLiteral("io.github.paralleldeck.ParallelDeck"));
    QCommandLineParser parser;
    addOptions(parser);
    parser.process(app);

    const QString dbPath = parser.isSet(QStringLiteral("database"))
                               ? parser.value(QStringLiteral("database"))
                               : pd::study::ReviewStore::defaultPath();
    pd::study::ReviewStore store;
    QString error;
    if (!store.open(dbPath, &error)) {
        QMessageBox::critical(nullptr, QStringLiteral("ParallelDeck"),
                              QObject::tr("Cannot open the review database:\n%1").arg(error));
        return 1;
    }

    pd::study::DeckLibrary library;
    QStringList problems;
    const QString bundled = library.addBundled(QStringLiteral(":/decks/distributed-training.json"));
    if (!bundled.isEmpty()) problems.append(bundled);
    const QString userDecks =
        QDir(QFileInfo(dbPath).absolutePath()).filePath(QStringLiteral("decks"));
    problems += library.loadUserDecks(userDecks);

    pd::ui::AppContext context;
    context.library = &library;
    context.store = &store;
    context.settings = pd::study::StudySettings::load(store);
    QFont font = QApplication::font();
    if (font.pointSizeF() < 10.5) font.setPointSizeF(10.5);
    QApplication::setFont(font);
    pd::ui::applyTheme(app, context.settings.theme);

    pd::ui::MainWindow window(context);
    window.show();
    if (!problems.isEmpty()) {
        QMessageBox::warning(&window, QStringLiteral("ParallelDeck"),
                             QObject::tr("Some decks could not be loaded:\n\n%1")
                                 .arg(problems.join(QStringLiteral("\n"))));
    }
    return QApplication::exec();
}
