#include "main_window.h"

#include "pd/expectations.h"

#include <QAction>
#include <QApplication>
#include <QButtonGroup>
#include <QCloseEvent>
#include <QFile>
#include <QFileDialog>
#include <QFileInfo>
#include <QHBoxLayout>
#include <QInputDialog>
#include <QLabel>
#include <QMenuBar>
#include <QMessageBox>
#include <QProgressDialog>
#include <QPushButton>
#include <QRegularExpression>
#include <QSaveFile>
#include <QScreen>
#include <QStackedWidget>
#include <QStatusBar>
#include <QTableView>
#include <QVBoxLayout>
#include <algorithm>

#include "browser_page.h"
#include "deck_actions.h"
#include "home_page.h"
#include "scenario_config.h"
#include "settings_dialog.h"
#include "show_me_window.h"
#include "stats_page.h"
#include "study/apkg_export.h"
#include "study/card_import.h"
#include "study/revlog_csv.h"
#include "study_page.h"
#include "theme.h"
#include "trace_loader.h"
#include "trace_window.h"

namespace pd::ui {

MainWindow::MainWindow(AppContext& context, QWidget* parent)
    : QMainWindow(parent), context_(context) {
    setWindowTitle(QStringLiteral("ParallelDeck"));
    auto* central = new QWidget(this);
    auto* layout = new QHBoxLayout(central);
    layout->setContentsMargins(0, 0, 0, 0);
    layout->setSpacing(0);

    auto* side = new QWidget(central);
    side->setObjectName(QStringLiteral("sideBar"));
    side->setFixedWidth(190);
    auto* sl = new QVBoxLayout(side);
    sl->setContentsMargins(12, 18, 12, 18);
    sl->setSpacing(4);
    auto* brand = new QLabel(QStringLiteral("ParallelDeck"), side);
    QFont bf = brand->font();
    bf.setPointSizeF(bf.pointSizeF() * 1.25);
    bf.setBold(true);
    brand->setFont(bf);
    brand->setContentsMargins(10, 0, 0, 14);
    sl->addWidget(brand);
    nav_ = new QButtonGroup(this);
    nav_->setExclusive(true);
    const std::array<std::pair<QString, Page>, 3> entries = {{{tr("Decks"), Page::Home},
                                                              {tr("Browse"), Page::Browser},
                                                              {tr("Statistics"), Page::Stats}}};
    int shortcut = 1;
    for (const auto& [label, page] : entries) {
        auto* b = new QPushButton(label, side);
        b->setCheckable(true);
        b->setFlat(true);
        b->setObjectName(QStringLiteral("navButton"));
        b->setMinimumHeight(36);
        b->setToolTip(tr("Ctrl+%1").arg(shortcut++));
        nav_->addButton(b, static_cast<int>(page));
        sl->addWidget(b);
    }
    sl->addStretch(1);
    layout->addWidget(side);

    pages_ = new QStackedWidget(central);
    home_ = new HomePage(context_, pages_);
    study_ = new StudyPage(context_, pages_);
    browser_ = new BrowserPage(context_, pages_);
    stats_ = new StatsPage(context_, pages_);
    pages_->addWidget(home_);
    pages_->addWidget(study_);
    pages_->addWidget(browser_);
    pages_->addWidget(stats_);
    layout->addWidget(pages_, 1);
    setCentralWidget(central);

    connect(nav_, &QButtonGroup::idClicked, this,
            [this](int id) { showPage(static_cast<Page>(id)); });
    connect(home_, &HomePage::studyRequested, this, &MainWindow::startSession);
    connect(study_, &StudyPage::closeRequested, this, [this] { showPage(Page::Home); });
    connect(study_, &StudyPage::showMeRequested, this, &MainWindow::showMe);
    connect(browser_, &BrowserPage::showMeRequested, this, &MainWindow::showMe);
    connect(study_, &StudyPage::answered, this,
            [this] { undo_->setEnabled(study_->session() && study_->session()->canUndo()); });

    buildMenus();
    const QString palette = isDarkPalette() ? QStringLiteral("#171a1f") : QStringLiteral("#eceff3");
    const ThemeColors c = themeColors();
    side->setStyleSheet(
        QStringLiteral("QWidget#sideBar { background: %1; border-right: 1px solid %2; }"
                       "QPushButton#navButton { text-align: left; padding: 6px 12px; "
                       "border: none; border-radius: 8px; }"
                       "QPushButton#navButton:checked { background: %3; color: white; "
                       "font-weight: 600; }")
            .arg(palette, css(c.border), css(c.accent)));

    const QByteArray geometry = QByteArray::fromBase64(
        context_.store->setting(QStringLiteral("window_geometry")).toLatin1());
    if (geometry.isEmpty() || !restoreGeometry(geometry)) resize(1200, 800);
    keepOnScreen();
    showPage(Page::Home);
}

// A geometry saved on a larger or another screen must not open partly off this one.
void MainWindow::keepOnScreen() {
    QScreen* s = screen() ? screen() : QGuiApplication::primaryScreen();
    if (!s) return;
    const QRect available = s->availableGeometry();
    const QRect fitted = fitRectInto(geometry(), available);
    if (fitted != geometry()) setGeometry(fitted);
}

void MainWindow::buildMenus() {
    QMenu* file = menuBar()->addMenu(tr("&File"));
    file->addAction(tr("&Import Cards\u2026"), QKeySequence(tr("Ctrl+I")), this,
                    &MainWindow::importDeck);
    file->addAction(tr("&Export Deck\u2026"), QKeySequence(tr("Ctrl+E")), this,
                    &MainWindow::exportDeck);
    file->addAction(tr("&Open Trace\u2026"), QKeySequence::Open, this,
                    &MainWindow::chooseAndOpenTraces);
    file->addAction(tr("Export Review &History\u2026"), this, &MainWindow::exportReviewHistory);
    file->addAction(tr("Import Re&view History\u2026"), this, &MainWindow::importReviewHistory);
    file->addAction(tr("Re&name Deck\u2026"), this, &MainWindow::renameDeck);
    file->addAction(tr("&Delete Deck\u2026"), this, &MainWindow::deleteDeck);
    file->addSeparator();
    QAction* settings = file->addAction(tr("&Settings\u2026"), this, &MainWindow::openSettings);
    // Ctrl+, first: the menu shows the first shortcut, and the platform's Preferences key is
    // empty on Linux.
    QList<QKeySequence> settingsKeys = {QKeySequence(tr("Ctrl+,"))};
    const QKeySequence preferences(QKeySequence::Preferences);
    if (!preferences.isEmpty() && preferences != settingsKeys.first())
        settingsKeys.append(preferences);
    settings->setShortcuts(settingsKeys);
    file->addSeparator();
    QAction* quit = file->addAction(tr("&Quit"), qApp, &QApplication::quit);
    quit->setShortcut(QKeySequence::Quit);

    QMenu* studyMenu = menuBar()->addMenu(tr("&Study"));
    studyMenu->addAction(tr("&Review Due Cards"), QKeySequence(tr("Ctrl+R")), this, [this] {
        const QString deck = home_->defaultDeckId();
        if (!deck.isEmpty()) startSession(deck, study::SessionOptions{});
    });
    undo_ = studyMenu->addAction(tr("&Undo Last Answer"), this, [this] {
        if (study_->undo()) showPage(Page::Study);
    });
    undo_->setShortcut(QKeySequence::Undo);
    undo_->setEnabled(false);

    QMenu* view = menuBar()->addMenu(tr("&View"));
    view->addAction(tr("&Decks"), QKeySequence(tr("Ctrl+1")), this,
                    [this] { showPage(Page::Home); });
    view->addAction(tr("&Browse"), QKeySequence(tr("Ctrl+2")), this,
                    [this] { showPage(Page::Browser); });
    view->addAction(tr("&Statistics"), QKeySequence(tr("Ctrl+3")), this,
                    [this] { showPage(Page::Stats); });
    QAction* find = view->addAction(tr("&Find Cards"), this, [this] {
        showPage(Page::Browser);
        browser_->focusSearch();
    });
    find->setShortcut(QKeySequence::Find);

    QMenu* help = menuBar()->addMenu(tr("&Help"));
    QAction* keys = help->addAction(tr("&Keyboard Shortcuts"), this, &MainWindow::showShortcuts);
    keys->setShortcut(QKeySequence::HelpContents);
    help->addAction(tr("&About ParallelDeck"), this, &MainWindow::showAbout);
}

void MainWindow::showPage(Page page) {
    switch (page) {
        case Page::Home:
            home_->refresh();
            pages_->setCurrentWidget(home_);
            home_->setFocus();
            break;
        case Page::Study:
            pages_->setCurrentWidget(study_);
            // Not the page itself: a numeric card's field must take the keystrokes at once.
            study_->focusAnswer();
            break;
        case Page::Browser:
            browser_->refresh();
            pages_->setCurrentWidget(browser_);
            browser_->view()->setFocus();
            break;
        case Page::Stats:
            stats_->refresh();
            pages_->setCurrentWidget(stats_);
            break;
    }
    if (QAbstractButton* b =
            nav_->button(static_cast<int>(page == Page::Study ? Page::Home : page)))
        b->setChecked(true);
}

MainWindow::Page MainWindow::currentPage() const {
    QWidget* w = pages_->currentWidget();
    if (w == study_) return Page::Study;
    if (w == browser_) return Page::Browser;
    if (w == stats_) return Page::Stats;
    return Page::Home;
}

// A session in progress is never replaced silently: Enter on the question keeps it (so a
// stray Enter cannot reset the tally), and starting the new one says the answers are saved.
void MainWindow::startSession(const QString& deckId, const study::SessionOptions& options) {
    if (study_->inProgress()) {
        const study::StudySession& current = *study_->session();
        const bool exam = current.mode() == study::StudyMode::MockExam;
        QMessageBox box(QMessageBox::Question, tr("A session is in progress"),
                        tr("You are in the middle of %1 on '%2': %3 answered, %4 to go. Your "
                           "answers so far are saved either way.")
                            .arg(exam ? tr("a mock exam") : tr("a session"), current.deck().title)
                            .arg(current.answered())
                            .arg(current.remaining()),
                        QMessageBox::NoButton, this);
        if (exam) box.setInformativeText(tr("Starting a new one ends the exam without results."));
        QPushButton* resume = box.addButton(tr("Continue it"), QMessageBox::AcceptRole);
        QPushButton* fresh = box.addButton(tr("Start the new one"), QMessageBox::DestructiveRole);
        QPushButton* cancel = box.addButton(QMessageBox::Cancel);
        box.setDefaultButton(resume);
        box.setEscapeButton(cancel);
        box.exec();
        if (box.clickedButton() == resume) {
            showPage(Page::Study);
            return;
        }
        if (box.clickedButton() != fresh) return;
    }
    if (study_->start(deckId, options)) {
        undo_->setEnabled(false);
        showPage(Page::Study);
    }
}

void MainWindow::refreshAll() {
    home_->refresh();
    browser_->refresh();
    if (currentPage() == Page::Stats) stats_->refresh();
}

void MainWindow::importDeck() {
    const QString path =
        QFileDialog::getOpenFileName(this, tr("Import Cards"), QString(),
                                     tr("Cards (*.csv *.tsv *.txt *.json);;Anki-style text (*.csv "
                                        "*.tsv *.txt);;ParallelDeck deck "
                                        "(*.json)"));
    if (path.isEmpty()) return;
    const study::ImportResult result = study::importFile(path);
    if (!result.deck) {
        QMessageBox box(QMessageBox::Warning, tr("Nothing imported"),
                        tr("The file has %1, so no card was imported. The first is:")
                            .arg(counted(static_cast<int>(result.errors.size()), tr("problem"),
                                         tr("problems"))),
                        QMessageBox::Ok, this);
        box.setInformativeText(result.errors.isEmpty() ? QString()
                                                       : result.errors.first().toString());
        box.setDetailedText(result.errorText());
        box.exec();
        return;
    }
    const QString done = importWithConfirmation(context_, *result.deck, this);
    if (done.isEmpty()) return;
    refreshAll();
    statusBar()->showMessage(done, 6000);
}

void MainWindow::renameDeck() {
    const QString done = renameDeckInteractively(context_, this);
    if (done.isEmpty()) return;
    refreshAll();
    statusBar()->showMessage(done, 6000);
}

void MainWindow::deleteDeck() {
    const QString busy = currentPage() == Page::Study && study_->session()
                             ? study_->session()->deck().id
                             : QString();
    const QString done = deleteDeckInteractively(context_, busy, this);
    if (done.isEmpty()) return;
    refreshAll();
    statusBar()->showMessage(done, 6000);
}

void MainWindow::exportDeck() {
    const QList<study::Deck>& decks = context_.library->decks();
    if (decks.isEmpty()) return;
    QStringList titles;
    for (const study::Deck& d : decks) titles.append(d.title);
    int index = 0;
    if (decks.size() > 1) {
        bool ok = false;
        const QString chosen =
            QInputDialog::getItem(this, tr("Export Deck"), tr("Deck:"), titles, 0, false, &ok);
        if (!ok) return;
        index = static_cast<int>(titles.indexOf(chosen));
    }
    const study::Deck& deck = decks[index];
    QString filter;
    const QString apkgFilter = tr("Anki package (*.apkg)");
    QString path = QFileDialog::getSaveFileName(
        this, tr("Export Deck"), deck.id + QStringLiteral(".tsv"),
        tr("Anki-style TSV (*.tsv);;Anki-style CSV (*.csv);;ParallelDeck deck (*.json);;") +
            apkgFilter,
        &filter);
    if (path.isEmpty()) return;
    const QString apkgSuffix = QStringLiteral(".apkg");
    // The package filter means a package even when the name kept the suggested ".tsv".
    if (filter == apkgFilter && !path.endsWith(apkgSuffix, Qt::CaseInsensitive)) {
        path.remove(QRegularExpression(QStringLiteral("\\.(tsv|csv|json)$"),
                                       QRegularExpression::CaseInsensitiveOption));
        path += apkgSuffix;
    }
    if (path.endsWith(apkgSuffix, Qt::CaseInsensitive)) {
        QString error;
        if (!study::exportApkg(deck, path, &error)) {
            QMessageBox::warning(this, tr("Export failed"), error);
            return;
        }
        statusBar()->showMessage(
            tr("Exported %1 to %2 as an Anki package.")
                .arg(counted(static_cast<int>(deck.cards.size()), tr("card"), tr("cards")), path),
            6000);
        return;
    }
    QByteArray bytes;
    int leftOut = 0;  // numeric cards: CSV/TSV columns hold options, not a measured answer
    if (path.endsWith(QStringLiteral(".json"), Qt::CaseInsensitive))
        bytes = study::deckToJson(deck);
    else if (path.endsWith(QStringLiteral(".csv"), Qt::CaseInsensitive))
        bytes = study::exportDelimited(deck, QLatin1Char(','), &leftOut);
    else
        bytes = study::exportDelimited(deck, QLatin1Char('\t'), &leftOut);
    QSaveFile file(path);
    if (!file.open(QIODevice::WriteOnly) || file.write(bytes) < 0 || !file.commit()) {
        QMessageBox::warning(this, tr("Export failed"), file.errorString());
        return;
    }
    const int written = static_cast<int>(deck.cards.size()) - leftOut;
    statusBar()->showMessage(
        tr("Exported %1 to %2.").arg(counted(written, tr("card"), tr("cards")), path) +
            (leftOut > 0 ? tr(" %1 left out: CSV/TSV has no column for a measured answer (the "
                              "JSON deck and the Anki package keep them).")
                               .arg(counted(leftOut, tr("numeric card"), tr("numeric cards")))
                         : QString()),
        10000);
}

// The review log as fsrs-optimizer's revlog.csv, for the FSRS ecosystem's tools.
void MainWindow::exportReviewHistory() {
    const QString path =
        QFileDialog::getSaveFileName(this, tr("Export Review History"),
                                     QStringLiteral("revlog.csv"), tr("FSRS review log (*.csv)"));
    if (path.isEmpty()) return;
    QSaveFile file(path);
    if (!file.open(QIODevice::WriteOnly) ||
        file.write(study::exportRevlogCsv(*context_.store)) < 0 || !file.commit()) {
        QMessageBox::warning(this, tr("Export failed"), file.errorString());
        return;
    }
    statusBar()->showMessage(tr("Exported the review history to %1.").arg(path), 6000);
}

void MainWindow::importReviewHistory() {
    const QString path = QFileDialog::getOpenFileName(this, tr("Import Review History"), QString(),
                                                      tr("FSRS review log (*.csv)"));
    if (path.isEmpty()) return;
    QFile file(path);
    if (!file.open(QIODevice::ReadOnly)) {
        QMessageBox::warning(this, tr("Import failed"), file.errorString());
        return;
    }
    const study::RevlogImport r = study::importRevlogCsv(file.readAll(), path, *context_.store,
                                                         *context_.library, context_.settings);
    if (!r.errors.isEmpty()) {
        QMessageBox::warning(
            this, tr("Import failed"),
            tr("Nothing was imported:\n\n%1").arg(r.errors.mid(0, 12).join(QLatin1Char('\n'))));
        return;
    }
    QMessageBox::information(
        this, tr("Review history imported"),
        tr("%1 added, %2 already in the history; %3 rebuilt from their reviews.")
            .arg(counted(r.added, tr("review"), tr("reviews")))
            .arg(r.duplicates)
            .arg(counted(r.cards, tr("card's schedule"), tr("cards' schedules"))));
    refreshAll();
}

void MainWindow::openSettings() {
    SettingsDialog dialog(context_.settings, context_.store, this);
    if (dialog.exec() != QDialog::Accepted) return;
    const study::StudySettings updated = dialog.settings();
    const bool themeChanged = updated.theme != context_.settings.theme;
    context_.settings = updated;
    if (!updated.save(*context_.store))
        QMessageBox::warning(this, tr("Settings"), tr("The settings could not be saved."));
    if (themeChanged) {
        applyTheme(*qApp, updated.theme);
        // Rebuild the pages' colours.
        const QString palette =
            isDarkPalette() ? QStringLiteral("#171a1f") : QStringLiteral("#eceff3");
        const ThemeColors c = themeColors();
        if (QWidget* side = findChild<QWidget*>(QStringLiteral("sideBar")))
            side->setStyleSheet(side->styleSheet().replace(
                QRegularExpression(QStringLiteral("QWidget#sideBar \\{[^}]*\\}")),
                QStringLiteral("QWidget#sideBar { background: %1; border-right: 1px solid %2; }")
                    .arg(palette, css(c.border))));
        study_->refreshTheme();
    }
    study_->refreshSettings();
    refreshAll();
}

void MainWindow::showShortcuts() {
    const QString rows =
        QStringLiteral(
            "<table cellpadding='4'>"
            "<tr><td colspan='2'><b>%1</b></td></tr>"
            "<tr><td><tt>1</tt>\u2013<tt>6</tt></td><td>%2</td></tr>"
            "<tr><td><tt>G</tt> <tt>U</tt> <tt>S</tt></td><td>%3</td></tr>"
            "<tr><td><tt>Enter</tt> / <tt>Space</tt></td><td>%4</td></tr>"
            "<tr><td><tt>1</tt>\u2013<tt>4</tt></td><td>%5</td></tr>"
            "<tr><td><tt>PgUp</tt> <tt>PgDn</tt> <tt>\u2191</tt> "
            "<tt>\u2193</tt></td><td>%21</td></tr>"
            "<tr><td><tt>Ctrl+Z</tt></td><td>%6</td></tr>"
            "<tr><td><tt>M</tt></td><td>%16</td></tr>"
            "<tr><td><tt>Esc</tt></td><td>%7</td></tr>"
            "<tr><td colspan='2'><br><b>%8</b></td></tr>"
            "<tr><td><tt>Enter</tt></td><td>%9</td></tr>"
            "<tr><td><tt>Ctrl+R</tt></td><td>%10</td></tr>"
            "<tr><td><tt>Ctrl+1</tt> <tt>Ctrl+2</tt> <tt>Ctrl+3</tt></td><td>%11</td></tr>"
            "<tr><td><tt>Ctrl+F</tt></td><td>%12</td></tr>"
            "<tr><td><tt>Ctrl+I</tt> / <tt>Ctrl+E</tt></td><td>%13</td></tr>"
            "<tr><td><tt>Ctrl+O</tt></td><td>%22</td></tr>"
            "<tr><td><tt>Ctrl+,</tt></td><td>%14</td></tr>"
            "<tr><td><tt>F1</tt></td><td>%15</td></tr>"
            "<tr><td colspan='2'><br><b>%17</b></td></tr>"
            "<tr><td><tt>Ctrl+Shift+S</tt></td><td>%18</td></tr>"
            "<tr><td><tt>Ctrl+P</tt></td><td>%19</td></tr>"
            "<tr><td><tt>Esc</tt></td><td>%20</td></tr>"
            "</table>")
            .arg(tr("While studying"), tr("choose an answer (toggle when several are right)"),
                 tr("optional confidence: guessing, unsure, sure"),
                 tr("check the answer; after the reveal, accept the suggested grade"),
                 tr("after the reveal: Again, Hard, Good, Easy (any of them; the suggested one "
                    "is preselected)"),
                 tr("undo the last answer"),
                 tr("back to the decks (asks first in a session; ends an exam with its results)"),
                 tr("Everywhere"), tr("on Decks: study the first deck with work"))
            .arg(tr("review due cards"), tr("Decks, Browse, Statistics"), tr("search the cards"),
                 tr("import cards / export a deck"), tr("settings"), tr("this list"),
                 tr("Show me: run the card's scenario (cards with one) after checking; before, "
                    "only if Settings allows it as a hint"))
            .arg(tr("In Show me"), tr("export the timeline (PNG, SVG, PDF)"),
                 tr("pin the run to compare the next one with it"), tr("cancel the run"),
                 tr("scroll the card"))
            .arg(tr("open a PyTorch profiler trace (one file per rank) in the visualizer"));
    QMessageBox box(QMessageBox::NoIcon, tr("Keyboard Shortcuts"), rows, QMessageBox::Close, this);
    box.setTextFormat(Qt::RichText);
    box.exec();
}

void MainWindow::chooseAndOpenTraces() {
    const QStringList files =
        QFileDialog::getOpenFileNames(this, tr("Open Trace (one file per rank)"), QString(),
                                      tr("Chrome traces (*.json *.json.gz *.gz);;All files (*)"));
    if (!files.isEmpty()) openTraces(files);
}

void MainWindow::openTraces(const QStringList& files) {
    if (!traceLoader_) {
        traceLoader_ = new pd::app::TraceLoader(this);
        traceProgress_ = new QProgressDialog(this);
        traceProgress_->setWindowTitle(tr("Open Trace"));
        traceProgress_->setWindowModality(Qt::WindowModal);
        traceProgress_->setMinimumDuration(300);  // small files open without a flash
        traceProgress_->setAutoClose(false);
        traceProgress_->setAutoReset(false);
        traceProgress_->reset();
        connect(traceProgress_, &QProgressDialog::canceled, traceLoader_,
                &pd::app::TraceLoader::cancel);
        connect(traceLoader_, &pd::app::TraceLoader::progress, this,
                [this](qint64 done, qint64 total) {
                    // Per mille of the bytes: the dialog's int range holds any file size.
                    traceProgress_->setValue(total > 0 ? static_cast<int>(1000 * done / total) : 0);
                });
        connect(traceLoader_, &pd::app::TraceLoader::loaded, this,
                [this](const QStringList& loaded, std::shared_ptr<const pd::RunResult> result) {
                    traceProgress_->reset();
                    auto* window = new TraceWindow(nullptr);
                    window->setAttribute(Qt::WA_DeleteOnClose);
                    window->showImported(loaded, result);
                    window->setGeometry(fitRectInto(
                        window->geometry(), screen() ? screen()->availableGeometry() : QRect()));
                    window->show();
                    statusBar()->showMessage(
                        tr("Opened %1.")
                            .arg(loaded.size() == 1 ? loaded.front()
                                                    : tr("%1 trace files").arg(loaded.size())),
                        6000);
                });
        connect(traceLoader_, &pd::app::TraceLoader::failed, this, [this](const QString& message) {
            traceProgress_->reset();
            QMessageBox::warning(this, tr("Open Trace"),
                                 tr("The trace could not be opened:\n%1").arg(message));
        });
        connect(traceLoader_, &pd::app::TraceLoader::cancelled, this, [this] {
            traceProgress_->reset();
            statusBar()->showMessage(tr("Opening the trace was cancelled."), 6000);
        });
    }
    traceProgress_->setLabelText(
        files.size() == 1 ? tr("Reading %1\u2026").arg(QFileInfo(files.front()).fileName())
                          : tr("Reading %1 trace files\u2026").arg(files.size()));
    traceProgress_->setRange(0, 1000);
    traceProgress_->setValue(0);
    traceLoader_->load(files);
}

void MainWindow::showAbout() {
    QMessageBox::about(
        this, tr("About ParallelDeck"),
        tr("<h3>ParallelDeck %1</h3><p>Study distributed deep-learning training: data, pipeline, "
           "tensor and sharded parallelism, gradient synchronisation and hardware choices.</p>"
           "<p>Scheduling: FSRS-6 (as in py-fsrs 6.3.1). Reviews are kept in<br><tt>%2</tt></p>")
            .arg(QStringLiteral(PD_VERSION), context_.store->path().toHtmlEscaped()));
}

void MainWindow::closeEvent(QCloseEvent* event) {
    context_.store->setSetting(QStringLiteral("window_geometry"),
                               QString::fromLatin1(saveGeometry().toBase64()));
    QMainWindow::closeEvent(event);
}

void MainWindow::showMe(const QString& deckId, const QString& cardId) {
    const study::Deck* deck = context_.library ? context_.library->deck(deckId) : nullptr;
    const study::Card* card = deck ? deck->card(cardId) : nullptr;
    if (!card || !card->hasScenario()) return;
    QString error;
    pd::Expectations expectations;
    const auto config = pd::app::scenarioConfig(
        card->scenarioJson, QStringLiteral("card %1").arg(card->id), &error, &expectations);
    if (!config) {
        QMessageBox::warning(this, tr("Show me"),
                             tr("This card's scenario cannot run:\n%1").arg(error));
        return;
    }
    if (!showMe_) showMe_ = new ShowMeWindow(this);
    showMe_->setWindowFlag(Qt::Window);
    QString title = card->prompt.simplified();
    if (title.size() > 70) title = title.left(67) + QStringLiteral("…");
    showMe_->showScenario(title, card->scenarioNote, *config, card->id, expectations);
    showMe_->show();
    showMe_->raise();
    showMe_->activateWindow();
}

}  // namespace pd::ui
