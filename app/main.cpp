// paralleldeck: the desktop application.
#include <QApplication>
#include <QCommandLineParser>
#include <QDir>
#include <QEvent>
#include <QFileInfo>
#include <QIcon>
#include <QMessageBox>
#include <QStandardPaths>
#include <cstdio>
#include <cstring>

#include <QJsonDocument>
#include <QSaveFile>

#include "app_context.h"
#include "claims_panel.h"
#include "claims_report.h"
#include "main_window.h"
#include "pd/run.h"
#include "pd/trace_import.h"
#include "scenario_config.h"
#include "show_me_window.h"
#include "study/bundled_decks.h"
#include "study/deck.h"
#include "study/deck_library.h"
#include "study/fsrs_history.h"
#include "study/fsrs_optimizer.h"
#include "study/review_store.h"
#include "study/revlog_csv.h"
#include "study/study_session.h"
#include "theme.h"
#include "trace_loader.h"
#include "trace_window.h"
#include "visualizer/picture_export.h"

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
    parser.addOption({QStringLiteral("card"),
                      QStringLiteral("The card whose scenario --export-screenshot runs (its id)."),
                      QStringLiteral("id")});
    parser.addOption({QStringLiteral("show-me"),
                      QStringLiteral("Open the app with the Show me window of card <id> (its "
                                     "scenario runs at once)."),
                      QStringLiteral("id")});
    parser.addOption({QStringLiteral("export-screenshot"),
                      QStringLiteral("Run the card's scenario and write its timeline to <file> "
                                     "(.png at 2x, .svg or .pdf) without showing a window."),
                      QStringLiteral("file")});
    parser.addOption({QStringLiteral("theme"),
                      QStringLiteral("With --export-screenshot: the picture's colours, light "
                                     "(default) or dark."),
                      QStringLiteral("light|dark")});
    parser.addOption({QStringLiteral("open"),
                      QStringLiteral("Open trace files (the arguments that follow: PyTorch "
                                     "profiler traces, one per rank, .json or .json.gz, or a "
                                     "ParallelDeck trace export) in the visualizer. With "
                                     "--export-screenshot, write their timeline without a "
                                     "window.")});
    parser.addOption({QStringLiteral("claims-json"),
                      QStringLiteral("With --show-me: run the card as the Show me window does, "
                                     "laid out offscreen, and write its claims to <file> (text, "
                                     "measured value, passed, and where each one's evidence "
                                     "comes into view); no display needed."),
                      QStringLiteral("file")});
    parser.addOption({QStringLiteral("window-size"),
                      QStringLiteral("With --claims-json: the window's size (default 1280x720)."),
                      QStringLiteral("WxH")});
    parser.addOption({QStringLiteral("window-png"),
                      QStringLiteral("With --claims-json: also save the window, showing the "
                                     "evidence of claim --claim (default the first), as a PNG."),
                      QStringLiteral("file")});
    parser.addOption({QStringLiteral("claim"),
                      QStringLiteral("With --window-png: the claim (counted from 1) to show."),
                      QStringLiteral("n")});
    parser.addPositionalArgument(QStringLiteral("files"),
                                 QStringLiteral("With --open: the trace files."),
                                 QStringLiteral("[files...]"));
    parser.addOption({QStringLiteral("check-deck"),
                      QStringLiteral("Check deck files (the following arguments) with the app's "
                                     "own rules and print 'OK N cards' or one line per problem; "
                                     "no display needed. With --lenient, deck-wide rules warn.")});
    parser.addOption({QStringLiteral("optimize-fsrs"),
                      QStringLiteral("Fit FSRS's weights to the review history (of --database), "
                                     "print the default and fitted evaluations and the weights, "
                                     "and keep the better; no display needed.")});
    parser.addOption({QStringLiteral("import-revlog"),
                      QStringLiteral("Add the reviews of a revlog.csv <file> to the history (of "
                                     "--database) and rebuild those cards' schedules; exit 0 "
                                     "imported, 2 refused (each bad line named, nothing "
                                     "written), 1 the database failed; no display needed."),
                      QStringLiteral("file")});
    parser.addOption({QStringLiteral("lenient"),
                      QStringLiteral("With --check-deck: deck-wide rules become warnings.")});
    parser.addOption({QStringLiteral("database"),
                      QStringLiteral("Keep reviews and settings in <file> instead of the app-data "
                                     "folder."),
                      QStringLiteral("file")});
}

// `--card ID --export-screenshot FILE`: run the scenario headless and write the picture.
// Exit codes: 0 written, 1 the run or the export failed, 2 bad input (unknown card, ...).
int exportScreenshot(const pd::study::DeckLibrary& library, const QString& cardId,
                     const QString& path, const QString& theme) {
    if (theme != QStringLiteral("light") && theme != QStringLiteral("dark")) {
        std::fprintf(stderr, "paralleldeck: --theme: '%s' is not light or dark\n",
                     qPrintable(theme));
        return 2;
    }
    const pd::study::Card* card = nullptr;
    for (const pd::study::Deck& deck : library.decks())
        if ((card = deck.card(cardId))) break;
    if (!card) {
        std::fprintf(stderr, "paralleldeck: --card: no deck has a card with id '%s'\n",
                     qPrintable(cardId));
        return 2;
    }
    if (!card->hasScenario()) {
        std::fprintf(stderr, "paralleldeck: --card: card '%s' has no scenario to run\n",
                     qPrintable(cardId));
        return 2;
    }
    QString error;
    const auto config =
        pd::app::scenarioConfig(card->scenarioJson, QStringLiteral("card %1").arg(cardId), &error);
    if (!config) {
        std::fprintf(stderr, "paralleldeck: %s\n", qPrintable(error));
        return 2;
    }
    pd::Run run(*config);
    auto result = std::make_shared<pd::RunResult>(run.execute());
    if (result->status == pd::RunStatus::failed || result->status == pd::RunStatus::cancelled) {
        std::fprintf(stderr, "paralleldeck: the run failed: %s\n", result->error.c_str());
        return 1;
    }
    pd::vis::PictureOptions options;
    options.note = card->scenarioNote;
    options.theme =
        theme == QStringLiteral("dark") ? pd::vis::ThemeChoice::dark : pd::vis::ThemeChoice::light;
    if (!pd::vis::export_picture(path, *config, result, &error, options)) {
        std::fprintf(stderr, "paralleldeck: --export-screenshot: %s\n", qPrintable(error));
        return 1;
    }
    return 0;
}

// The bundled decks, for the headless commands; false (the problems printed) if one fails.
bool loadBundledDecks(pd::study::DeckLibrary& library) {
    const QStringList problems = pd::study::addBundledDecks(library, QStringLiteral(":/decks"));
    if (problems.isEmpty()) return true;
    std::fprintf(stderr, "paralleldeck: %s\n", qPrintable(problems.join(QLatin1Char('\n'))));
    return false;
}

// `--show-me ID --claims-json FILE [--window-size WxH]`: the card's claims as the window
// shows them, headless. Exit codes: 0 written (whether or not every claim holds), 1 the run
// or the file failed, 2 bad input.
int writeClaimsReport(const pd::study::DeckLibrary& library, const QCommandLineParser& parser) {
    const QString cardId = parser.value(QStringLiteral("show-me"));
    const pd::study::Card* card = nullptr;
    for (const pd::study::Deck& deck : library.decks())
        if ((card = deck.card(cardId))) break;
    if (!card || !card->hasScenario()) {
        std::fprintf(stderr, "paralleldeck: --show-me: %s '%s'\n",
                     card ? "no scenario to run on card" : "no deck has a card with id",
                     qPrintable(cardId));
        return 2;
    }
    pd::ui::ClaimsReportRequest request;
    request.card_id = card->id;
    request.title = card->prompt.simplified().left(70);
    request.note = card->scenarioNote;
    if (parser.isSet(QStringLiteral("window-size"))) {
        request.window_size = pd::ui::parseWindowSize(parser.value(QStringLiteral("window-size")));
        if (!request.window_size.isValid() || request.window_size.width() < 640 ||
            request.window_size.height() < 400) {
            std::fprintf(stderr,
                         "paralleldeck: --window-size: '%s' is not WIDTHxHEIGHT of at least "
                         "640x400\n",
                         qPrintable(parser.value(QStringLiteral("window-size"))));
            return 2;
        }
    }
    QString error;
    const auto config = pd::app::scenarioConfig(
        card->scenarioJson, QStringLiteral("card %1").arg(card->id), &error, &request.expectations);
    if (!config) {
        std::fprintf(stderr, "paralleldeck: %s\n", qPrintable(error));
        return 2;
    }
    request.config = *config;
    pd::ui::ShowMeWindow window;
    QJsonObject report;
    if (!pd::ui::claimsReport(window, request, &report, &error)) {
        std::fprintf(stderr, "paralleldeck: card %s: %s\n", qPrintable(cardId), qPrintable(error));
        return 1;
    }
    const QString path = parser.value(QStringLiteral("claims-json"));
    QSaveFile file(path);
    if (!file.open(QIODevice::WriteOnly) || file.write(QJsonDocument(report).toJson()) < 0 ||
        !file.commit()) {
        std::fprintf(stderr, "paralleldeck: --claims-json: cannot write %s: %s\n", qPrintable(path),
                     qPrintable(file.errorString()));
        return 1;
    }
    if (parser.isSet(QStringLiteral("window-png"))) {
        const int claim = parser.isSet(QStringLiteral("claim"))
                              ? parser.value(QStringLiteral("claim")).toInt() - 1
                              : 0;
        window.claimsPanel()->choose(claim);
        QCoreApplication::processEvents();
        // Charts rebuilt for each comparison run leave their old axes to deleteLater, which
        // processEvents does not run: without this the picture would show them.
        QCoreApplication::sendPostedEvents(nullptr, QEvent::DeferredDelete);
        const QString png = parser.value(QStringLiteral("window-png"));
        if (!window.grab().save(png)) {
            std::fprintf(stderr, "paralleldeck: --window-png: cannot write %s\n", qPrintable(png));
            return 1;
        }
    }
    return 0;
}

// `--open FILE... --export-screenshot PICTURE`: import the traces and write their picture.
// Exit codes: 0 written, 1 the export failed, 2 bad input (no file, a file that is no trace).
int exportImportedScreenshot(const QStringList& files, const QString& path, const QString& theme) {
    if (theme != QStringLiteral("light") && theme != QStringLiteral("dark")) {
        std::fprintf(stderr, "paralleldeck: --theme: '%s' is not light or dark\n",
                     qPrintable(theme));
        return 2;
    }
    if (files.isEmpty()) {
        std::fprintf(stderr, "paralleldeck: --open needs one or more trace files\n");
        return 2;
    }
    std::vector<std::string> paths;
    for (const QString& f : files) paths.push_back(f.toStdString());
    auto result = std::make_shared<pd::RunResult>();
    try {
        result->trace = pd::import_traces(paths);
    } catch (const pd::Error& e) {
        std::fprintf(stderr, "paralleldeck: --open: %s\n", e.what());
        return 2;
    }
    result->steps_completed = static_cast<int>(result->trace.steps.size());
    pd::vis::PictureOptions options;
    options.note = pd::ui::importedRunNote(result->trace);
    options.theme =
        theme == QStringLiteral("dark") ? pd::vis::ThemeChoice::dark : pd::vis::ThemeChoice::light;
    QString error;
    if (!pd::vis::export_picture(path, pd::app::importedRunConfig(*result), result, &error,
                                 options)) {
        std::fprintf(stderr, "paralleldeck: --export-screenshot: %s\n", qPrintable(error));
        return 1;
    }
    return 0;
}

// `--check-deck FILE...`: the loader's own checks, engine scenario validation included.
// Exit codes: 0 every deck valid, 2 a problem in one (or no file named): bad input.
int checkDecks(const QStringList& files, bool lenient) {
    if (files.isEmpty()) {
        std::fprintf(stderr, "paralleldeck: --check-deck needs one or more deck files\n");
        return 2;
    }
    bool ok = true;
    for (const QString& path : files) {
        const pd::study::DeckLoadResult r = pd::study::loadDeckFile(path, {lenient});
        for (const pd::study::DeckIssue& w : r.warnings)
            std::fprintf(stderr, "warning: %s\n", qPrintable(w.toString()));
        for (const pd::study::DeckIssue& e : r.errors)
            std::printf("%s\n", qPrintable(e.toString()));
        if (r.deck)
            std::printf("OK %lld cards%s\n", static_cast<long long>(r.deck->cards.size()),
                        files.size() == 1 ? "" : qPrintable(QStringLiteral(" (%1)").arg(path)));
        ok = ok && r.deck.has_value();
    }
    return ok ? 0 : 2;
}

}  // namespace

// `error` with `path` in front, unless it names the path itself (the store's messages do).
QString namingPath(const QString& path, const QString& error) {
    return error.contains(path) ? error : path + QStringLiteral(": ") + error;
}

// `--optimize-fsrs [--database FILE]`: the optimizer on the learner's history, headless.
// Exit codes: 0 done (also when the history is too short to fit), 1 the database failed.
int optimizeFsrs(const QString& dbPath) {
    pd::study::ReviewStore store;
    QString error;
    if (!store.open(dbPath, &error)) {
        std::fprintf(stderr, "paralleldeck: %s\n", qPrintable(namingPath(dbPath, error)));
        return 1;
    }
    pd::study::StudySettings settings = pd::study::StudySettings::load(store);
    const auto cards = pd::study::fsrsHistories(store);
    pd::study::FsrsOptimizerOptions options;
    options.dayCounter = settings.dayCounter();
    options.current = settings.weights.value_or(pd::study::kFsrsDefaultWeights);
    const char* currentName = settings.weights ? "current" : "default";
    const pd::study::FsrsOptimization r = pd::study::optimizeFsrs(cards, options);
    std::printf("FSRS optimizer: %d reviews scored, %zu cards (%s)\n", r.current.predictions,
                cards.size(), qPrintable(dbPath));
    if (!r.offered) {
        std::printf("not fitted: %s\n", r.message.c_str());
        return 0;
    }
    std::printf("%-22s %10s %12s\n", "weights", "log loss", "RMSE(bins)");
    std::printf("%-22s %10.4f %12.4f\n", currentName, r.current.logLoss, r.current.rmseBins);
    std::printf("%-22s %10.4f %12.4f\n", "fitted", r.fitted.logLoss, r.fitted.rmseBins);
    std::printf("%-22s %10.4f %12.4f\n", "held-out, current", r.heldOutCurrent.logLoss,
                r.heldOutCurrent.rmseBins);
    std::printf("%-22s %10.4f %12.4f\n", "held-out, fitted", r.heldOutFitted.logLoss,
                r.heldOutFitted.rmseBins);
    std::printf("fitted weights:");
    for (double w : r.weights) std::printf(" %.4f", w);
    std::printf("\n%s\n", r.message.c_str());
    if (r.fittedIsBetter) settings.weights = r.weights;
    if (QString why; !settings.save(store, &why)) {
        std::fprintf(stderr, "paralleldeck: could not save the weights to %s: %s\n",
                     qPrintable(dbPath), qPrintable(why));
        return 1;
    }
    std::printf("the scheduler now uses the %s weights\n",
                r.fittedIsBetter ? "fitted" : currentName);
    return 0;
}

// `--import-revlog FILE [--database FILE]`: File > Import Review History, headless, against
// the bundled decks and the user decks beside the database (as the window loads them). Exit
// codes: 0 imported, 2 refused (every bad line named; nothing written), 1 the database or
// the decks failed.
int importRevlog(const QString& csvPath, const QString& dbPath) {
    QFile file(csvPath);
    if (!file.open(QIODevice::ReadOnly)) {
        std::fprintf(stderr, "paralleldeck: %s: %s\n", qPrintable(csvPath),
                     qPrintable(file.errorString()));
        return 2;
    }
    const QByteArray csv = file.readAll();
    pd::study::ReviewStore store;
    QString error;
    if (!store.open(dbPath, &error)) {
        std::fprintf(stderr, "paralleldeck: %s\n", qPrintable(namingPath(dbPath, error)));
        return 1;
    }
    pd::study::DeckLibrary library;
    if (!loadBundledDecks(library)) return 1;
    const QStringList problems = library.loadUserDecks(
        QDir(QFileInfo(dbPath).absolutePath()).filePath(QStringLiteral("decks")));
    for (const QString& p : problems) std::fprintf(stderr, "warning: %s\n", qPrintable(p));
    const pd::study::StudySettings settings = pd::study::StudySettings::load(store);
    const pd::study::RevlogImport r =
        pd::study::importRevlogCsv(csv, csvPath, store, library, settings);
    if (!r.errors.isEmpty()) {
        // The first problems, then how many more: a file of the wrong kind would otherwise fill
        // the terminal with one line per row.
        constexpr int kShown = 20;
        for (int i = 0; i < r.errors.size() && i < kShown; ++i)
            std::fprintf(stderr, "%s\n", qPrintable(r.errors[i]));
        if (r.errors.size() > kShown)
            std::fprintf(stderr, "... and %lld more problems\n",
                         static_cast<long long>(r.errors.size() - kShown));
        std::fprintf(stderr, "paralleldeck: nothing was imported into %s\n", qPrintable(dbPath));
        return 2;
    }
    std::printf("imported %d reviews (%d already in the history), %d cards rescheduled (%s)\n",
                r.added, r.duplicates, r.cards, qPrintable(dbPath));
    return 0;
}

int main(int argc, char** argv) {
    // --check-deck FILE... checks decks without a display.
    for (int i = 1; i < argc; ++i) {
        if (!std::strcmp(argv[i], "--check-deck")) {
            QCoreApplication core(argc, argv);
            describe(core);
            QStringList files;
            bool lenient = false;
            for (int k = 1; k < argc; ++k) {
                if (!std::strcmp(argv[k], "--lenient"))
                    lenient = true;
                else if (k > i)
                    files.append(QString::fromLocal8Bit(argv[k]));
            }
            return checkDecks(files, lenient);
        }
    }
    // --optimize-fsrs [--database FILE] fits the scheduler without a display.
    for (int i = 1; i < argc; ++i) {
        if (!std::strcmp(argv[i], "--optimize-fsrs")) {
            QCoreApplication core(argc, argv);
            describe(core);
            QCommandLineParser parser;
            addOptions(parser);
            parser.process(core);
            return optimizeFsrs(parser.isSet(QStringLiteral("database"))
                                    ? parser.value(QStringLiteral("database"))
                                    : pd::study::ReviewStore::defaultPath());
        }
    }
    // --import-revlog FILE [--database FILE] imports a review log without a display.
    for (int i = 1; i < argc; ++i) {
        if (!std::strcmp(argv[i], "--import-revlog") ||
            !std::strncmp(argv[i], "--import-revlog=", 16)) {
            QCoreApplication core(argc, argv);
            describe(core);
            QCommandLineParser parser;
            addOptions(parser);
            parser.process(core);
            return importRevlog(parser.value(QStringLiteral("import-revlog")),
                                parser.isSet(QStringLiteral("database"))
                                    ? parser.value(QStringLiteral("database"))
                                    : pd::study::ReviewStore::defaultPath());
        }
    }
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

    // A headless export or report needs no display: paint offscreen unless told otherwise.
    for (int i = 1; i < argc; ++i)
        if ((!std::strncmp(argv[i], "--export-screenshot", 19) ||
             !std::strncmp(argv[i], "--claims-json", 13)) &&
            qEnvironmentVariableIsEmpty("QT_QPA_PLATFORM"))
            qputenv("QT_QPA_PLATFORM", "offscreen");

    QApplication app(argc, argv);
    describe(app);
    QApplication::setWindowIcon(QIcon(QStringLiteral(":/icons/paralleldeck.svg")));
    QApplication::setDesktopFileName(QStringLiteral("io.github.paralleldeck.ParallelDeck"));
    QCommandLineParser parser;
    addOptions(parser);
    parser.process(app);

    const QString theme = parser.isSet(QStringLiteral("theme"))
                              ? parser.value(QStringLiteral("theme"))
                              : QStringLiteral("light");
    if (parser.isSet(QStringLiteral("open")) && parser.isSet(QStringLiteral("export-screenshot")))
        return exportImportedScreenshot(parser.positionalArguments(),
                                        parser.value(QStringLiteral("export-screenshot")), theme);
    if (parser.isSet(QStringLiteral("claims-json"))) {
        if (!parser.isSet(QStringLiteral("show-me"))) {
            std::fprintf(stderr, "paralleldeck: --claims-json needs --show-me ID\n");
            return 2;
        }
        pd::study::DeckLibrary library;
        if (!loadBundledDecks(library)) return 1;
        QFont font = QApplication::font();
        if (font.pointSizeF() < 10.5) font.setPointSizeF(10.5);
        QApplication::setFont(font);
        pd::ui::applyTheme(app, theme);
        return writeClaimsReport(library, parser);
    }
    if (parser.isSet(QStringLiteral("export-screenshot")) || parser.isSet(QStringLiteral("card"))) {
        if (!parser.isSet(QStringLiteral("export-screenshot")) ||
            !parser.isSet(QStringLiteral("card"))) {
            std::fprintf(stderr, "paralleldeck: --card and --export-screenshot go together\n");
            return 2;
        }
        pd::study::DeckLibrary library;
        if (!loadBundledDecks(library)) return 1;
        return exportScreenshot(library, parser.value(QStringLiteral("card")),
                                parser.value(QStringLiteral("export-screenshot")), theme);
    }

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
    QStringList problems = pd::study::addBundledDecks(library, QStringLiteral(":/decks"));
    const QString userDecks =
        QDir(QFileInfo(dbPath).absolutePath()).filePath(QStringLiteral("decks"));
    problems += library.loadUserDecks(userDecks);
    // The review history of a bundled deck that was split moves to the decks now holding its
    // cards, once.
    if (const QString carried = pd::study::carryOverRetiredHistory(store, library);
        !carried.isEmpty())
        problems.append(carried);

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
    if (parser.isSet(QStringLiteral("show-me"))) {
        const QString cardId = parser.value(QStringLiteral("show-me"));
        const pd::study::Deck* holder = nullptr;
        for (const pd::study::Deck& deck : library.decks())
            if (const pd::study::Card* card = deck.card(cardId); card && card->hasScenario())
                holder = &deck;
        if (!holder) {
            std::fprintf(stderr,
                         "paralleldeck: --show-me: no deck has a card '%s' with a scenario\n",
                         qPrintable(cardId));
            return 2;
        }
        window.showMe(holder->id, cardId);
    }
    if (parser.isSet(QStringLiteral("open"))) {
        if (parser.positionalArguments().isEmpty()) {
            std::fprintf(stderr, "paralleldeck: --open needs one or more trace files\n");
            return 2;
        }
        window.openTraces(parser.positionalArguments());
    }
    if (!problems.isEmpty()) {
        QMessageBox::warning(&window, QStringLiteral("ParallelDeck"),
                             QObject::tr("Some decks could not be loaded:\n\n%1")
                                 .arg(problems.join(QStringLiteral("\n"))));
    }
    return QApplication::exec();
}
