// The card browser: search text, filter by tag, difficulty and due state; open a card.
#pragma once

#include <QWidget>

#include "app_context.h"

class QComboBox;
class QLabel;
class QLineEdit;
class QTableView;

namespace pd::ui {

class CardTableModel;
class CardFilterModel;

class BrowserPage : public QWidget {
    Q_OBJECT
  public:
    explicit BrowserPage(AppContext& context, QWidget* parent = nullptr);
    void refresh();
    void focusSearch();
    CardTableModel* model() const { return model_; }
    CardFilterModel* filterModel() const { return filter_; }
    QTableView* view() const { return view_; }
    QLineEdit* searchEdit() const { return search_; }

  private:
    void openCard(const QModelIndex& proxyIndex);
    void updateCount();
    void rebuildTagFilter();

    AppContext& context_;
    CardTableModel* model_ = nullptr;
    CardFilterModel* filter_ = nullptr;
    QTableView* view_ = nullptr;
    QLineEdit* search_ = nullptr;
    QComboBox* tag_ = nullptr;
    QComboBox* difficulty_ = nullptr;
    QComboBox* due_ = nullptr;
    QLabel* count_ = nullptr;
};

// Shows one card: prompt, every option marked right or wrong with its explanation, tags and
// the card's schedule.
void showCardDialog(const study::Deck& deck, const study::Card& card,
                    const std::optional<study::CardSchedule>& schedule, const QDateTime& now,
                    QWidget* parent);

}  // namespace pd::ui
