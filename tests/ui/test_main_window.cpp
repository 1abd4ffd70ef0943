// The main window: pages and their shortcuts, undo from the menu, remembered geometry.
#include <QAction>
#include <QMenuBar>
#include <QTemporaryDir>
#include <QtTest>

#include "app/study_test_support.h"
#include "home_page.h"
#include "main_window.h"
#include "settings_dialog.h"
#include "study_page.h"
#include "theme.h"

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
    void themesGiveDistinctVerdictColours_data();
    void themesGiveDistinctVerdictColours();

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
    {
        MainWindow w(*context_);
        w.resize(1000, 700);
        w.show();
        QVERIFY(QTest::qWaitForWindowExposed(&w));
        w.close();
    }
    QVERIFY(!store_->setting(QStringLiteral("window_geometry")).isEmpty());
    MainWindow again(*context_);
    QCOMPARE(again.size(), QSize(1000, 700));
}

void TestMainWindow::settingsDialogRoundTrip() {
    StudySettings s;
    s.desiredRetention = 0.85;
    s.newPerDay = 12;
    s.reviewsPerDay = 150;
    s.fuzz = false;
    s.theme = QStringLiteral("dark");
    pd::ui::SettingsDialog dialog(s);
    QCOMPARE(dialog.settings(), s);
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

QTEST_MAIN(TestMainWindow)
#include "test_main_window.moc"
