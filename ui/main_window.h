#pragma once

#include <QMainWindow>

#include "app_context.h"
#include "screen_fit.h"

class QAction;
class QButtonGroup;
class QProgressDialog;
class QStackedWidget;

namespace pd::app {
class TraceLoader;
}

namespace pd::ui {

class HomePage;
class StudyPage;
class BrowserPage;
class StatsPage;
class ShowMeWindow;

class MainWindow : public QMainWindow {
    Q_OBJECT
  public:
    explicit MainWindow(AppContext& context, QWidget* parent = nullptr);

    enum class Page { Home, Study, Browser, Stats };
    void showPage(Page page);
    Page currentPage() const;
    StudyPage* studyPage() const { return study_; }
    HomePage* homePage() const { return home_; }
    ShowMeWindow* showMeWindow() const { return showMe_; }
    // Opens the Show me window on a card's scenario (and runs it).
    void showMe(const QString& deckId, const QString& cardId);
    // Reads PyTorch profiler traces (one file per rank) or a ParallelDeck trace export off
    // the GUI thread, with a progress dialog and Cancel, and opens them in a trace window.
    void openTraces(const QStringList& files);
    pd::app::TraceLoader* traceLoader() const { return traceLoader_; }

  protected:
    void closeEvent(QCloseEvent* event) override;

  private:
    void buildMenus();
    void keepOnScreen();
    void startSession(const QString& deckId, const study::SessionOptions& options);
    void refreshAll();
    void importDeck();
    void exportDeck();
    void exportReviewHistory();
    void importReviewHistory();
    void renameDeck();
    void deleteDeck();
    void openSettings();
    void showShortcuts();
    void showAbout();
    void chooseAndOpenTraces();

    AppContext& context_;
    QStackedWidget* pages_ = nullptr;
    QButtonGroup* nav_ = nullptr;
    HomePage* home_ = nullptr;
    StudyPage* study_ = nullptr;
    BrowserPage* browser_ = nullptr;
    StatsPage* stats_ = nullptr;
    QAction* undo_ = nullptr;
    ShowMeWindow* showMe_ = nullptr;  // created on first use
    pd::app::TraceLoader* traceLoader_ = nullptr;
    QProgressDialog* traceProgress_ = nullptr;  // while a trace loads
};

}  // namespace pd::ui
