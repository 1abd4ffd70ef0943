// The card browser: search text (matches marked in the table), filter by tag, difficulty and
// due state; open a card in the card dialog or run its scenario (Show me).
#pragma once

#include <QWidget>

#include "app_context.h"

class QComboBox;
class QLabel;
class QLineEdit;
class QPushButton;
class QTableView;

namespace pd::ui {

class CardTableModel;
class CardFilterModel;
class SearchHighlightDelegate;

class BrowserPage : public QWidget {
    Q_OBJECT
  public:
    explicit BrowserPage(AppContext& context, QWidget* parent = nullptr);
    void refresh();
    void focusSearch();
    // The results: focus on the table, its first row selected (Enter in the search does this).
    void focusResults();
    CardTableModel* model() const { return model_; }
    CardFilterModel* filterModel() const { return filter_; }
    QTableView* view() const { return view_; }
    QLineEdit* searchEdit() const { return search_; }
    QPushButton* showMeButton() const { return showMe_; }
    SearchHighlightDelegate* highlightDelegate() const { return highlight_; }
    // Opens the card dialog (window-modal, not blocking) for a row of the view.
    void openCard(const QModelIndex& proxyIndex);

  signals:
    // Run a card's scenario; the main window connects this to its Show me.
    void showMeRequested(const QString& deckId, const QString& cardId);

  protected:
    bool eventFilter(QObject* watched, QEvent* event) override;

  private:
    const study::Card* cardAt(const QModelIndex& proxyIndex, const study::Deck** deck) const;
    void requestShowMe();
    void updateShowMe();
    void updateCount();
    void rebuildTagFilter();
    void fitColumns();

    AppContext& context_;
    CardTableModel* model_ = nullptr;
    CardFilterModel* filter_ = nullptr;
    QTableView* view_ = nullptr;
    QLineEdit* search_ = nullptr;
    QComboBox* tag_ = nullptr;
    QComboBox* difficulty_ = nullptr;
    QComboBox* due_ = nullptr;
    QLabel* count_ = nullptr;
    QPushButton* showMe_ = nullptr;
    SearchHighlightDelegate* highlight_ = nullptr;
};

}  // namespace pd::ui
