// Home: every deck with its due, new and learned counts, and the ways to study it.
#pragma once

#include <QHash>
#include <QWidget>

#include "app_context.h"

class QVBoxLayout;
class QLabel;

namespace pd::ui {

class HomePage : public QWidget {
    Q_OBJECT
  public:
    explicit HomePage(AppContext& context, QWidget* parent = nullptr);
    // Rebuilds the deck list and counts (after a review, an import or a settings change).
    void refresh();
    // The deck Enter studies: the first with cards due or new, else the first.
    QString defaultDeckId() const;

  signals:
    void studyRequested(const QString& deckId, const pd::study::SessionOptions& options);

  protected:
    void keyPressEvent(QKeyEvent* event) override;

  private:
    // The learner's filter on a deck's card, kept over refresh() (which rebuilds the cards).
    struct Filter {
        QString tag;          // concept:: tag; empty: any concept
        int difficulty = -1;  // study::Difficulty; -1: any
    };
    QHash<QString, Filter> filters_;  // deck id -> its filter
    AppContext& context_;
    QVBoxLayout* list_ = nullptr;
    QLabel* summary_ = nullptr;
};

}  // namespace pd::ui
