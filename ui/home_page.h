// Home: every deck with its due, new and learned counts, and the ways to study it.
#pragma once

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
    AppContext& context_;
    QVBoxLayout* list_ = nullptr;
    QLabel* summary_ = nullptr;
};

}  // namespace pd::ui
