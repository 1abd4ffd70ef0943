// The main window: pages and their shortcuts, undo from the menu, remembered geometry.
#include <QAction>
#include <QCheckBox>
#include <QComboBox>
#include <QLabel>
#include <QLineEdit>
#include <QMenuBar>
#include <QPushButton>
#include <QTemporaryDir>
#include <QtTest>

#include "app/study_test_support.h"
#include "home_page.h"
#include "main_window.h"
#include "message_box_clicker.h"
#include "numeric_answer_panel.h"
#include "settings_dialog.h"
#include "stats_page.h"
#include "study_page.h"
#include "theme.h"
#include "trace_loader.h"
#include "trace_window.h"
#include "visualizer/timeline_view.h"
#include "visualizer/visualizer_panel.h"

using namespace pd::study;
using pd::ui::MainWindow;

class TestMainWindow : public QObject {
    Q_OBJECT
  private slots:
    void init();
    void cleanup();
    void shortcutsSwitchPages();
    void enterStudiesAndMenuUndoes();
    void geometryIsRemembered();
    void settingsDialogRoundTrip();
    void optimizeSaysWhyNotYet();
    void settingsMnemonicsAreUnique();
    void settingsMenuShowsCtrlComma();
    void savedGeometryIsKeptOnScreen();
    void conceptFilterGivesThatConceptsCards();
    void sessionInProgressIsNotReplacedSilently();
    void homeCardReflowsWhenNarrow();
    void calendarNamesEveryMonthIncludingDecember();
    void calibrationLineShowsAccuracyPerConfidence();
    void shortcutListSaysWhatTheStudyKeysDo();
    void themesGiveDistinctVerdictColours_data();
    void themesGiveDistinctVerdictColours();
    void openTraceOpensATraceWindow();
    void openTraceSaysWhyAFileIsNoTrace();
    void numericCardTakesTypingAtOnce();
    void studyNowReviewsTheChosenConcept();
    void conceptFilterIsKeptOnReturnToDecks();

  private:
    QAction* action(MainWindow& w, const QString& text) const;
    std::unique_ptr<QTemporaryDir> dir_;
    std::unique_ptr<ReviewStore> store_;
    std::unique_ptr<DeckLibrary> library_;
    std::unique_ptr<pd::ui::AppContext> context_;
};

void TestMainWindow::init() {
    dir_ = std::make_unique<QTemporaryDir>();
    store_ = std::make_unique<ReviewStore>();
    QVERIFY(store_->open(dir_->filePath(QStringLiteral("w.sqlite")), nullptr));
    library_ = std::make_unique<DeckLibrary>();
    library_->loadUserDecks(dir_->filePath(QStringLiteral("decks")));
    QVERIFY(library_->importDeck(pd::test::smallDeck(), nullptr));
    context_ = std::make_unique<pd::ui::AppContext>();
    context_->library = library_.get();
    context_->store = store_.get();
    context_->now = [] { return pd::test::startTime(); };
}

void TestMainWindow::cleanup() {
    context_.reset();
    library_.reset();
    store_.reset();
    dir_.reset();
}

QAction* TestMainWindow::action(MainWindow& w, const QString& text) const {
    for (QAction* a : w.findChildren<QAction*>()) {
        if (a->text().remove(QLatin1Char('&')) == text) return a;
    }
    return nullptr;
}

void TestMainWindow::shortcutsSwitchPages() {
    MainWindow w(*context_);
    w.show();
    QVERIFY(QTest::qWaitForWindowActive(&w));
    QCOMPARE(w.currentPage(), MainWindow::Page::Home);
    QTest::keyClick(&w, Qt::Key_2, Qt::ControlModifier);
    QCOMPARE(w.currentPage(), MainWindow::Page::Browser);
    QTest::keyClick(&w, Qt::Key_3, Qt::ControlModifier);
    QCOMPARE(w.currentPage(), MainWindow::Page::Stats);
    QTest::keyClick(&w, Qt::Key_1, Qt::ControlModifier);
    QCOMPARE(w.currentPage(), MainWindow::Page::Home);
    // The Help menu lists the shortcuts and the About box.
    QVERIFY(action(w, QStringLiteral("Keyboard Shortcuts")));
    QCOMPARE(action(w, QStringLiteral("Keyboard Shortcuts"))->shortcut(),
             QKeySequence(QKeySequence::HelpContents));
    QVERIFY(action(w, QStringLiteral("About ParallelDeck")));
}

void TestMainWindow::enterStudiesAndMenuUndoes() {
    MainWindow w(*context_);
    w.show();
    QVERIFY(QTest::qWaitForWindowActive(&w));
    QTest::keyClick(w.homePage(), Qt::Key_Return);
    QCOMPARE(w.currentPage(), MainWindow::Page::Study);
    pd::ui::StudyPage* page = w.studyPage();
    const int pos = static_cast<int>(page->session()->optionOrder().indexOf(0));
    QTest::keyClick(page, static_cast<Qt::Key>(Qt::Key_1 + pos));
    QTest::keyClick(page, Qt::Key_Return);
    QTest::keyClick(page, Qt::Key_Return);
    QCOMPARE(store_->reviewCount(), 1);
    QAction* undo = action(w, QStringLiteral("Undo Last Answer"));
    QVERIFY(undo && undo->isEnabled());
    undo->trigger();
    QCOMPARE(store_->reviewCount(), 0);
    QTest::keyClick(page, Qt::Key_Escape);
    QCOMPARE(w.currentPage(), MainWindow::Page::Home);
}

void TestMainWindow::geometryIsRemembered() {
    QSize saved;
    {
        MainWindow w(*context_);
        w.resize(780, 570);  // fits the offscreen 800x600 screen, so no clamping applies
        w.show();
        QVERIFY(QTest::qWaitForWindowExposed(&w));
        saved = w.size();
        w.close();
    }
    QVERIFY(!store_->setting(QStringLiteral("window_geometry")).isEmpty());
    MainWindow again(*context_);
    QCOMPARE(again.size(), saved);
    QVERIFY(saved.width() > 756);  // more than the window's minimum, so the size was restored
}

void TestMainWindow::settingsDialogRoundTrip() {
    StudySettings s;
    s.desiredRetention = 0.85;
    s.newPerDay = 12;
    s.reviewsPerDay = 150;
    s.fuzz = false;
    s.showMeBeforeCheck = true;
    s.theme = QStringLiteral("dark");
    s.ankiScheduling = false;
    s.nextDayStartsAt = 6;
    pd::study::FsrsWeights w = pd::study::kFsrsDefaultWeights;
    w[20] = 0.3;
    s.weights = w;
    pd::ui::SettingsDialog dialog(s);
    QCOMPARE(dialog.settings(), s);
    s.showMeBeforeCheck = false;
    QCOMPARE(pd::ui::SettingsDialog(s).settings(), s);
}

// Optimize on a history too short to fit says so and changes nothing.
void TestMainWindow::optimizeSaysWhyNotYet() {
    QTemporaryDir dir;
    pd::study::ReviewStore store;
    QString error;
    QVERIFY2(store.open(dir.filePath(QStringLiteral("o.sqlite")), &error), qPrintable(error));
    pd::ui::SettingsDialog dialog(StudySettings{}, &store);
    auto* button = dialog.findChild<QPushButton*>(QStringLiteral("optimize"));
    QVERIFY(button && button->isEnabled());
    dialog.optimize();
    auto* note = dialog.findChild<QLabel*>(QStringLiteral("weightsNote"));
    QVERIFY(note);
    QVERIFY2(note->text().contains(QStringLiteral("at least 400")), qPrintable(note->text()));
    QVERIFY(!dialog.settings().weights);
    // Without a store there is no history to fit.
    pd::ui::SettingsDialog bare{StudySettings{}};
    QVERIFY(!bare.findChild<QPushButton*>(QStringLiteral("optimize"))->isEnabled());
}

void TestMainWindow::settingsMnemonicsAreUnique() {
    pd::ui::SettingsDialog dialog{StudySettings{}};
    QStringList texts;
    for (QLabel* l : dialog.findChildren<QLabel*>()) texts.append(l->text());
    for (QAbstractButton* b : dialog.findChildren<QAbstractButton*>()) texts.append(b->text());
    QMap<QChar, QString> used;
    for (const QString& t : texts) {
        for (qsizetype i = 0; i + 1 < t.size(); ++i) {
            if (t[i] != QLatin1Char('&')) continue;
            if (t[i + 1] == QLatin1Char('&')) {
                ++i;  // a literal ampersand
                continue;
            }
            const QChar key = t[i + 1].toLower();
            QVERIFY2(!used.contains(key), qPrintable(QStringLiteral("'%1' is the mnemonic of "
                                                                    "both '%2' and '%3'")
                                                         .arg(key)
                                                         .arg(used.value(key), t)));
            used.insert(key, t);
        }
    }
    QVERIFY(used.size() >= 6);  // retention, new, reviews, fuzz, Show me, theme
}

void TestMainWindow::settingsMenuShowsCtrlComma() {
    MainWindow w(*context_);
    QAction* settings = action(w, QStringLiteral("Settings\u2026"));
    QVERIFY(settings);
    // The menu shows an action's first shortcut.
    QCOMPARE(settings->shortcut(), QKeySequence(QStringLiteral("Ctrl+,")));
}

void TestMainWindow::savedGeometryIsKeptOnScreen() {
    const QRect screen(0, 0, 1280, 720);
    // Inside: unchanged. Hanging off the right and bottom: moved in. Too big: shrunk too.
    QCOMPARE(pd::ui::fitRectInto(QRect(100, 50, 800, 600), screen), QRect(100, 50, 800, 600));
    QCOMPARE(pd::ui::fitRectInto(QRect(1000, 500, 800, 600), screen), QRect(480, 120, 800, 600));
    QCOMPARE(pd::ui::fitRectInto(QRect(-300, -40, 800, 600), screen), QRect(0, 0, 800, 600));
    QCOMPARE(pd::ui::fitRectInto(QRect(50, 50, 1600, 1000), screen), QRect(0, 0, 1280, 720));
    {
        MainWindow w(*context_);
        w.setGeometry(QRect(2400, 1600, 700, 500));  // off a screen that is no longer there
        w.close();
    }
    MainWindow again(*context_);
    const QRect available = again.screen()->availableGeometry();
    QVERIFY2(available.contains(again.geometry()), qPrintable(QStringLiteral("%1,%2 %3x%4")
                                                                  .arg(again.x())
                                                                  .arg(again.y())
                                                                  .arg(again.width())
                                                                  .arg(again.height())));
}

void TestMainWindow::conceptFilterGivesThatConceptsCards() {
    QVERIFY(
        library_->addBundled(QStringLiteral(PD_DECK_DIR "/ml-systems-parallelism.json")).isEmpty());
    MainWindow w(*context_);
    w.show();
    const QList<QComboBox*> boxes =
        w.homePage()->findChildren<QComboBox*>(QStringLiteral("conceptFilter"));
    QCOMPARE(boxes.size(), 2);  // one per deck
    int checked = 0;
    for (QComboBox* box : boxes) {
        QWidget* row = box->parentWidget();
        auto* practice = row->findChild<QPushButton*>(QStringLiteral("practice"));
        auto* exam = row->findChild<QPushButton*>(QStringLiteral("mockExam"));
        QVERIFY(practice && exam);
        QVERIFY(!exam->toolTip().contains(QStringLiteral("conceptBox")));
        for (int i = 1; i < box->count(); ++i) {
            box->setCurrentIndex(i);
            const QString shown = box->currentText();
            for (QPushButton* button : {practice, exam}) {
                // An unfinished exam asks before it is replaced.
                std::shared_ptr<pd::test::MessageBoxSeen> replace;
                if (w.studyPage()->inProgress())
                    replace = pd::test::answerNextMessageBox(QStringLiteral("Start the new one"));
                button->click();
                if (replace) QVERIFY(replace->clicked);
                QCOMPARE(w.currentPage(), MainWindow::Page::Study);
                const StudySession* session = w.studyPage()->session();
                int expected = 0;
                const bool isExam = button == exam;
                for (const Card& card : session->deck().cards) {
                    if (isExam && card.isNumeric()) continue;  // exams are multiple choice
                    bool has = false;
                    for (const QString& c : card.concepts())
                        has = has || tagDisplayName(c) == shown;
                    expected += has ? 1 : 0;
                }
                QVERIFY2(expected > 0, qPrintable(shown));
                QCOMPARE(session->total(), isExam ? std::min(20, expected) : expected);
                bool currentHas = false;
                for (const QString& c : session->current()->concepts())
                    currentHas = currentHas || tagDisplayName(c) == shown;
                QVERIFY2(currentHas, qPrintable(shown));
                ++checked;
            }
        }
    }
    QVERIFY(checked >= 2 * 4);  // the small deck's two concepts and the bundled deck's
}

// A session that opens on a numeric card: its answer field has the focus, so typing goes in
// without a click (the window used to give the focus to the page after the field had it).
void TestMainWindow::numericCardTakesTypingAtOnce() {
    const auto parsed = parseDeck(
        pd::test::deckJson(
            {pd::test::numericCard(QStringLiteral("n")),
             pd::test::singleCard(QStringLiteral("plain"), QStringLiteral("data-parallelism"))},
            QStringLiteral("numeric-deck")),
        QStringLiteral("numeric.json"), {true});
    QVERIFY(parsed.deck);
    QVERIFY(library_->importDeck(*parsed.deck, nullptr));
    MainWindow w(*context_);
    w.show();
    QVERIFY(QTest::qWaitForWindowActive(&w));
    emit w.homePage()->studyRequested(QStringLiteral("numeric-deck"), SessionOptions{});
    QCOMPARE(w.currentPage(), MainWindow::Page::Study);
    pd::ui::StudyPage* page = w.studyPage();
    QVERIFY(page->session()->current()->isNumeric());
    QLineEdit* input = page->numericPanel()->input();
    QCOMPARE(QApplication::focusWidget(), input);
    QTest::keyClicks(QApplication::focusWidget(), QStringLiteral("42"));
    QCOMPARE(input->text(), QStringLiteral("42"));
    // Back to Decks and into the session again: still the field.
    QTest::keyClick(&w, Qt::Key_1, Qt::ControlModifier);
    QCOMPARE(w.currentPage(), MainWindow::Page::Home);
    w.showPage(MainWindow::Page::Study);
    QCOMPARE(QApplication::focusWidget(), input);
}

// "Study now" reviews the cards of the concept chosen beside it, not the whole deck.
void TestMainWindow::studyNowReviewsTheChosenConcept() {
    MainWindow w(*context_);
    w.show();
    auto* box = w.homePage()->findChild<QComboBox*>(QStringLiteral("conceptFilter"));
    QVERIFY(box);
    const int pipeline = box->findData(QStringLiteral("concept::pipeline-parallelism"));
    QVERIFY(pipeline > 0);
    box->setCurrentIndex(pipeline);
    QWidget* deckCard = box;
    while (deckCard && deckCard->objectName() != QStringLiteral("deckCard"))
        deckCard = deckCard->parentWidget();
    QVERIFY(deckCard);
    auto* studyNow = deckCard->findChild<QPushButton*>(QStringLiteral("primary"));
    QVERIFY(studyNow && studyNow->text() == QStringLiteral("Study now"));
    studyNow->click();
    QCOMPARE(w.currentPage(), MainWindow::Page::Study);
    const StudySession* session = w.studyPage()->session();
    QCOMPARE(session->mode(), StudyMode::Review);
    QCOMPARE(session->total(), 2);  // card-two and card-four, both new
    QVERIFY(session->current()->concepts().contains(QStringLiteral("pipeline-parallelism")));
    // Grading it keeps to the concept: the next card is the other pipeline card.
    pd::ui::StudyPage* page = w.studyPage();
    const QString first = session->current()->id;
    QTest::keyClick(page, static_cast<Qt::Key>(Qt::Key_1 + session->optionOrder().indexOf(0)));
    QTest::keyClick(page, Qt::Key_Return);
    QTest::keyClick(page, Qt::Key_4);  // Easy: not back today
    QVERIFY(session->current()->id != first);
    QVERIFY(session->current()->concepts().contains(QStringLiteral("pipeline-parallelism")));
}

// The concept and difficulty chosen on a deck's card stay chosen when the learner comes back
// to Decks (the page is rebuilt each time it is shown).
void TestMainWindow::conceptFilterIsKeptOnReturnToDecks() {
    MainWindow w(*context_);
    w.show();
    QVERIFY(QTest::qWaitForWindowActive(&w));
    auto* box = w.homePage()->findChild<QComboBox*>(QStringLiteral("conceptFilter"));
    auto* difficulty = w.homePage()->findChild<QComboBox*>(QStringLiteral("difficultyFilter"));
    QVERIFY(box && difficulty);
    box->setCurrentIndex(box->findData(QStringLiteral("concept::pipeline-parallelism")));
    difficulty->setCurrentIndex(difficulty->findData(static_cast<int>(Difficulty::Application)));
    // Away to Browse and back.
    QTest::keyClick(&w, Qt::Key_2, Qt::ControlModifier);
    QTest::keyClick(&w, Qt::Key_1, Qt::ControlModifier);
    QCOMPARE(w.currentPage(), MainWindow::Page::Home);
    box = w.homePage()->findChild<QComboBox*>(QStringLiteral("conceptFilter"));
    difficulty = w.homePage()->findChild<QComboBox*>(QStringLiteral("difficultyFilter"));
    QCOMPARE(box->currentData().toString(), QStringLiteral("concept::pipeline-parallelism"));
    QCOMPARE(difficulty->currentData().toInt(), static_cast<int>(Difficulty::Application));
    // Through a practice session and Esc back to Decks.
    auto* practice = box->parentWidget()->findChild<QPushButton*>(QStringLiteral("practice"));
    QVERIFY(practice);
    practice->click();
    QCOMPARE(w.currentPage(), MainWindow::Page::Study);
    QCOMPARE(w.studyPage()->session()->current()->id, QStringLiteral("card-four"));
    QTest::keyClick(w.studyPage(), Qt::Key_Escape);
    QCOMPARE(w.currentPage(), MainWindow::Page::Home);
    box = w.homePage()->findChild<QComboBox*>(QStringLiteral("conceptFilter"));
    QCOMPARE(box->currentText(), QStringLiteral("Pipeline parallelism"));
}

void TestMainWindow::sessionInProgressIsNotReplacedSilently() {
    MainWindow w(*context_);
    w.show();
    QVERIFY(QTest::qWaitForWindowActive(&w));
    QTest::keyClick(w.homePage(), Qt::Key_Return);
    pd::ui::StudyPage* page = w.studyPage();
    const int pos = static_cast<int>(page->session()->optionOrder().indexOf(0));
    QTest::keyClick(page, static_cast<Qt::Key>(Qt::Key_1 + pos));
    QTest::keyClick(page, Qt::Key_Return);
    QTest::keyClick(page, Qt::Key_Return);
    QCOMPARE(store_->reviewCount(), 1);  // saved as it was answered
    const StudySession* first = page->session();
    // A menu action takes the learner to Decks; a stray Enter there keeps the session.
    QTest::keyClick(&w, Qt::Key_1, Qt::ControlModifier);
    QCOMPARE(w.currentPage(), MainWindow::Page::Home);
    auto resume = pd::test::answerNextMessageBox(QStringLiteral("Continue it"));
    QTest::keyClick(w.homePage(), Qt::Key_Return);
    QVERIFY(resume->opened);
    QCOMPARE(resume->defaultButton, QStringLiteral("Continue it"));
    QVERIFY(resume->text.contains(QStringLiteral("1 answered")));
    QCOMPARE(w.currentPage(), MainWindow::Page::Study);
    QCOMPARE(page->session(), first);
    QCOMPARE(page->session()->answered(), 1);
    // Review Due Cards (Ctrl+R), cancelled: nothing changes.
    QAction* review = action(w, QStringLiteral("Review Due Cards"));
    QVERIFY(review);
    QCOMPARE(review->shortcut(), QKeySequence(QStringLiteral("Ctrl+R")));
    auto cancel = pd::test::answerNextMessageBox(QStringLiteral("Cancel"));
    review->trigger();
    QVERIFY(cancel->clicked);
    QCOMPARE(page->session(), first);
    // Starting the new one: a fresh session, and the answer is still in the store.
    auto fresh = pd::test::answerNextMessageBox(QStringLiteral("Start the new one"));
    review->trigger();
    QVERIFY(fresh->clicked);
    QCOMPARE(page->session()->answered(), 0);
    QCOMPARE(store_->reviewCount(), 1);
}

void TestMainWindow::homeCardReflowsWhenNarrow() {
    MainWindow w(*context_);
    w.show();
    QVERIFY(QTest::qWaitForWindowExposed(&w));
    auto* study = w.homePage()->findChild<QPushButton*>(QStringLiteral("primary"));
    auto* exam = w.homePage()->findChild<QPushButton*>(QStringLiteral("mockExam"));
    auto* card = w.homePage()->findChild<QWidget*>(QStringLiteral("deckCard"));
    QVERIFY(study && exam && card);
    for (const int width : {1600, 900}) {
        w.resize(width, 700);
        // Settle the layouts (the row's direction change asks for one more pass).
        for (int pass = 0; pass < 3; ++pass)
            QCoreApplication::sendPostedEvents(nullptr, QEvent::LayoutRequest);
        const QRect cardRect = card->rect();
        for (QWidget* control : card->findChildren<QWidget*>()) {
            if (!control->isVisible() ||
                !(qobject_cast<QPushButton*>(control) || qobject_cast<QComboBox*>(control)))
                continue;
            const QRect r(control->mapTo(card, QPoint(0, 0)), control->size());
            QVERIFY2(
                cardRect.contains(r),
                qPrintable(
                    QStringLiteral("%1 px: %2 cut off").arg(width).arg(control->objectName())));
            QVERIFY2(
                control->width() >= control->minimumSizeHint().width(),
                qPrintable(
                    QStringLiteral("%1 px: %2 squeezed").arg(width).arg(control->objectName())));
        }
        const int studyY = study->mapTo(card, QPoint(0, 0)).y();
        const int examY = exam->mapTo(card, QPoint(0, 0)).y();
        if (width == 1600)
            QVERIFY(std::abs(examY - studyY) < study->height() / 2);  // one row
        else
            QVERIFY(examY > studyY + study->height() / 2);  // the filters moved under
    }
}

void TestMainWindow::calendarNamesEveryMonthIncludingDecember() {
    // 1 December 2026 is a Tuesday: its week starts on Monday 30 November.
    const QDate today(2026, 12, 1);
    const QDate lastMonday = today.addDays(1 - today.dayOfWeek());
    const QDate start = lastMonday.addDays(-7 * 25);
    const auto labels = pd::ui::CalendarHeatmap::monthLabels(start, 26, today);
    QList<int> months;
    for (const auto& [column, month] : labels) months.append(month);
    QCOMPARE(months.last(), 12);
    QCOMPARE(labels.last().first, 25);  // over the last column, the week of 1 December
    QCOMPARE(months, (QList<int>{6, 7, 8, 9, 10, 11, 12}));
}

void TestMainWindow::calibrationLineShowsAccuracyPerConfidence() {
    StudyStatistics s;
    s.calibration[0] = {4, 1};
    s.calibration[2] = {10, 9};
    s.hintedAnswers = 2;
    const QString text = pd::ui::calibrationText(s);
    QVERIFY(text.contains(QStringLiteral("Guessing: <b>25%</b> right (1 of 4)")));
    QVERIFY(text.contains(QStringLiteral("Unsure: no answers")));
    QVERIFY(text.contains(QStringLiteral("Sure: <b>90%</b> right (9 of 10)")));
    QVERIFY(text.contains(QStringLiteral("2 answers were given after Show me")));
}

void TestMainWindow::themesGiveDistinctVerdictColours_data() {
    QTest::addColumn<QString>("theme");
    QTest::newRow("light") << QStringLiteral("light");
    QTest::newRow("dark") << QStringLiteral("dark");
}

void TestMainWindow::themesGiveDistinctVerdictColours() {
    QFETCH(QString, theme);
    pd::ui::applyTheme(*qApp, theme);
    QCOMPARE(pd::ui::isDarkPalette(), theme == QStringLiteral("dark"));
    const pd::ui::ThemeColors c = pd::ui::themeColors();
    // Right and wrong differ in hue and both stand out from the background they sit on.
    QVERIFY(std::abs(c.right.hue() - c.wrong.hue()) > 90);
    const auto contrast = [](const QColor& a, const QColor& b) {
        return std::abs(a.lightness() - b.lightness());
    };
    QVERIFY(contrast(c.right, c.rightBackground) > 80);
    QVERIFY(contrast(c.wrong, c.wrongBackground) > 80);
}

void TestMainWindow::shortcutListSaysWhatTheStudyKeysDo() {
    MainWindow w(*context_);
    QAction* keys = action(w, QStringLiteral("Keyboard Shortcuts"));
    QVERIFY(keys);
    auto seen = pd::test::answerNextMessageBox(QStringLiteral("Close"));
    keys->trigger();
    QVERIFY(seen->opened);
    // The keys this list must keep right: scrolling, free grades, Show me after checking, and
    // Esc asking first.
    QVERIFY(seen->text.contains(QStringLiteral("<tt>PgUp</tt>")));
    QVERIFY(seen->text.contains(QStringLiteral("the suggested one is preselected")));
    QVERIFY(seen->text.contains(QStringLiteral("after checking")));
    QVERIFY(seen->text.contains(QStringLiteral("asks first in a session")));
    QVERIFY(seen->text.contains(QStringLiteral("<tt>Ctrl+,</tt>")));
}

void TestMainWindow::openTraceOpensATraceWindow() {
    MainWindow w(*context_);
    w.show();
    QAction* open = action(w, QStringLiteral("Open Trace\u2026"));
    QVERIFY(open);
    QCOMPARE(open->shortcut(), QKeySequence(QKeySequence::Open));
    w.openTraces({QStringLiteral(PD_TRACE_FIXTURES_DIR "/ddp-gloo-2rank/rank0.json"),
                  QStringLiteral(PD_TRACE_FIXTURES_DIR "/ddp-gloo-2rank/rank1.json")});
    pd::ui::TraceWindow* shown = nullptr;
    QTRY_VERIFY_WITH_TIMEOUT(
        [&] {
            for (QWidget* top : QApplication::topLevelWidgets())
                if (auto* t = qobject_cast<pd::ui::TraceWindow*>(top); t && t->isVisible())
                    shown = t;
            return shown != nullptr;
        }(),
        60000);
    QCOMPARE(shown->visualizer()->timeline()->data().devices(), 2);
    shown->close();  // deletes itself
}

void TestMainWindow::openTraceSaysWhyAFileIsNoTrace() {
    MainWindow w(*context_);
    w.show();
    const QString bad = dir_->filePath(QStringLiteral("config.json"));
    QFile f(bad);
    QVERIFY(f.open(QIODevice::WriteOnly));
    f.write("{\"layers\": 3}");
    f.close();
    // The box opens when the loader fails; its first progress report comes before that.
    std::shared_ptr<pd::test::MessageBoxSeen> seen;
    w.openTraces({bad});
    connect(w.traceLoader(), &pd::app::TraceLoader::progress, this, [&seen] {
        if (!seen) seen = pd::test::answerNextMessageBox(QStringLiteral("OK"));
    });
    QTRY_VERIFY_WITH_TIMEOUT(seen && seen->opened, 60000);
    QVERIFY2(seen->text.contains(bad) && seen->text.contains(QStringLiteral("not a Chrome trace")),
             qPrintable(seen->text));
    QVERIFY(!w.traceLoader()->isLoading());
}

QTEST_MAIN(TestMainWindow)
#include "test_main_window.moc"
