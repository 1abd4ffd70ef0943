// The study page: one card at a time, keyboard first.
//   1-6        choose an option (check boxes when several answers are right)
//   G U S      optional confidence before checking: guess, unsure, sure
//   Enter/Space check the answer; after the reveal, accept the suggested grade
//   1-4        after the reveal (review mode): Again, Hard, Good, Easy (any of the four)
//   M          "Show me": run the card's scenario in the visualizer (cards with one), after
//              checking; before, only when Settings allows it as a hint
//   PgUp/PgDn, Up/Down  scroll the card
//   Ctrl+Z     undo the last answer     Esc  back to the decks (asks first in a session)
#pragma once

#include <QElapsedTimer>
#include <QList>
#include <QWidget>
#include <array>
#include <memory>
#include <optional>

#include "app_context.h"
#include "study/study_session.h"

class QAbstractButton;
class QButtonGroup;
class QFrame;
class QLabel;
class QPushButton;
class QScrollArea;
class QStackedWidget;
class QTimer;
class QVBoxLayout;

namespace pd::ui {

class OptionRow;
class NumericAnswerPanel;

class StudyPage : public QWidget {
    Q_OBJECT
  public:
    explicit StudyPage(AppContext& context, QWidget* parent = nullptr);
    ~StudyPage() override;

    // Starts a session on a deck. Returns false (and shows nothing new) if the deck is unknown.
    bool start(const QString& deckId, const study::SessionOptions& options);
    bool hasSession() const { return session_ != nullptr; }
    const study::StudySession* session() const { return session_.get(); }

    // For tests and the menu: the state of the page.
    bool isRevealed() const { return revealed_; }
    bool isShowingResults() const;
    QList<int> selectedOptions() const;  // option indices in the card
    // The answer area of a numeric card (hidden for multiple-choice cards).
    NumericAnswerPanel* numericPanel() const { return numeric_; }
    QString verdictText() const;
    QString numericResultText() const;  // what the reveal of a numeric card says
    bool undo();
    // Gives the keyboard focus to where the learner types next: the answer field of a numeric
    // card not yet checked, else the page (its keys choose, check and grade).
    void focusAnswer();
    void refreshTheme();
    // After Settings changed (e.g. whether Show me is offered before checking).
    void refreshSettings();
    // A session with answers given, or a mock exam, that has not finished.
    bool inProgress() const;
    // Esc and "← Decks": asks before leaving a session in progress (an exam shows its results).
    void requestClose();

  signals:
    void answered();        // the store changed
    void closeRequested();  // back to the decks
    // The learner asked to see the current card's scenario run.
    void showMeRequested(const QString& deckId, const QString& cardId);

  protected:
    void keyPressEvent(QKeyEvent* event) override;
    bool event(QEvent* event) override;

  private:
    void buildQuestionView();
    void buildResultsView();
    void buildActionBar(QVBoxLayout* pageLayout);
    void showCurrent();
    void showSources(const study::Card& card);
    void toggleOption(int position);
    void setConfidence(int level);
    void checkAnswer();
    void gradeAndContinue(study::Rating rating);
    void continuePractice();
    void showResults();
    void updateHeader();
    QString missedQuestionsHtml() const;
    void updateTimer();
    void applyStyles();
    bool choiceComplete() const;
    void updateChoiceHint();
    QString gradeAdvice(bool correct) const;
    QString progressText() const;
    bool showMeAvailable() const;
    void scrollToRightAnswer();
    // A numeric card measured (grade) or could not be (message): the reveal.
    void revealNumeric(const std::optional<study::NumericGrade>& grade, const QString& failure);
    void finishReveal(const study::Card& card, bool correct, const QString& verdict);
    bool currentIsNumeric() const;
    bool scrollByKey(int key);

    AppContext& context_;
    std::unique_ptr<study::StudySession> session_;
    bool revealed_ = false;
    std::optional<int> confidence_;
    QElapsedTimer answerTimer_;
    qint64 answerMs_ = 0;
    QDateTime examDeadline_;

    QStackedWidget* views_ = nullptr;
    QFrame* actionBar_ = nullptr;
    QLabel* modeLabel_ = nullptr;
    QLabel* progressLabel_ = nullptr;
    QLabel* timerLabel_ = nullptr;
    QScrollArea* scroll_ = nullptr;
    QLabel* chipsLabel_ = nullptr;
    QLabel* promptLabel_ = nullptr;
    QLabel* hintLabel_ = nullptr;
    QVBoxLayout* optionsLayout_ = nullptr;
    QList<OptionRow*> optionRows_;
    QWidget* confidenceRow_ = nullptr;
    std::array<QPushButton*, 3> confidenceButtons_{};
    QPushButton* checkButton_ = nullptr;
    QFrame* verdictBanner_ = nullptr;
    QLabel* verdictLabel_ = nullptr;
    QWidget* gradeRow_ = nullptr;
    std::array<QPushButton*, 4> gradeButtons_{};
    QLabel* gradeHint_ = nullptr;
    QPushButton* nextButton_ = nullptr;
    QPushButton* showMeButton_ = nullptr;
    QLabel* showMeNote_ = nullptr;
    QLabel* sourcesLabel_ = nullptr;
    NumericAnswerPanel* numeric_ = nullptr;
    QLabel* numericResult_ = nullptr;
    bool numericCorrect_ = false;                    // the revealed numeric card's grade
    study::Rating suggested_ = study::Rating::Good;  // what Enter accepts after the reveal
    QString deckId_;
    void requestShowMe();
    void updateShowMe();
    QTimer* examTimer_ = nullptr;

    QScrollArea* resultsScroll_ = nullptr;
    QLabel* resultsTitle_ = nullptr;
    QLabel* resultsBody_ = nullptr;
    QPushButton* resultsBack_ = nullptr;
};

}  // namespace pd::ui
