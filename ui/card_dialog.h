// The card dialog: one card's prompt, every option marked right or wrong with its explanation,
// tags, schedule and review history, and Show me for cards with a scenario.
#pragma once

#include <QDateTime>
#include <QDialog>

#include "study/deck.h"
#include "study/review_store.h"

class QPushButton;
class QTableWidget;

namespace pd::ui {

class CardDialog : public QDialog {
    Q_OBJECT
  public:
    // `history` is the card's log, oldest first (ReviewStore::cardReviews); shown newest first.
    CardDialog(const study::Deck& deck, const study::Card& card,
               const std::optional<study::CardSchedule>& schedule,
               const QList<study::ReviewEntry>& history, const QDateTime& now,
               QWidget* parent = nullptr);
    QTableWidget* historyTable() const { return history_; }
    QPushButton* showMeButton() const { return showMe_; }  // null for cards without a scenario

  signals:
    // The dialog has closed itself; the main window runs the scenario.
    void showMeRequested(const QString& deckId, const QString& cardId);

  private:
    QTableWidget* history_ = nullptr;
    QPushButton* showMe_ = nullptr;
};

}  // namespace pd::ui
