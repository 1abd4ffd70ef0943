#include "study_page.h"

#include <QApplication>
#include <QButtonGroup>
#include <QCheckBox>
#include <QDesktopServices>
#include <QEvent>
#include <QFrame>
#include <QHBoxLayout>
#include <QKeyEvent>
#include <QLabel>
#include <QLineEdit>
#include <QMessageBox>
#include <QMouseEvent>
#include <QPushButton>
#include <QRadioButton>
#include <QScrollArea>
#include <QScrollBar>
#include <QStackedWidget>
#include <QStyle>
#include <QTimer>
#include <QVBoxLayout>
#include <functional>

#include "numeric_answer_panel.h"
#include "theme.h"

namespace pd::ui {

using study::Rating;
using study::StudyMode;

namespace {

QFont scaled(const QFont& base, double factor, bool bold = false) {
    QFont f = base;
    f.setPointSizeF(base.pointSizeF() * factor);
    f.setBold(bold);
    return f;
}

QString modeTitle(StudyMode mode) {
    switch (mode) {
        case StudyMode::Review:
            return QObject::tr("Review");
        case StudyMode::Practice:
            return QObject::tr("Practice");
        case StudyMode::MockExam:
            return QObject::tr("Mock exam");
    }
    return {};
}

QString countWord(int n) {
    static const QStringList words = {QObject::tr("two"), QObject::tr("three"), QObject::tr("four"),
                                      QObject::tr("five")};
    return n >= 2 && n <= 5 ? words[n - 2] : QString::number(n);
}

// Seconds of mock-exam time per question.
constexpr int kExamSecondsPerQuestion = 90;

// The verdict banner in the current theme's right or wrong colours (its "correct" property
// says which): set when a verdict is shown, and again when the theme changes while it is.
void styleVerdictBanner(QFrame* banner) {
    const ThemeColors c = themeColors();
    const bool correct = banner->property("correct").toBool();
    banner->setStyleSheet(
        QStringLiteral("QFrame#verdictBanner { background: %1; border-radius: 10px; border: 2px "
                       "solid %2; } QLabel { color: %2; }")
            .arg(css(correct ? c.rightBackground : c.wrongBackground),
                 css(correct ? c.right : c.wrong)));
}

}  // namespace

// One answer option: key badge, indicator, text and, after the reveal, a verdict and the
// option's explanation. Clicking anywhere on it toggles it.
class OptionRow : public QFrame {
  public:
    enum class Verdict { None, ChosenRight, MissedRight, ChosenWrong, OtherWrong };

    OptionRow(int position, bool multiple, const study::Option& option,
              std::function<void(int)> onClick, QWidget* parent)
        : QFrame(parent), position_(position), onClick_(std::move(onClick)) {
        setObjectName(QStringLiteral("optionRow"));
        setCursor(Qt::PointingHandCursor);
        auto* outer = new QHBoxLayout(this);
        outer->setContentsMargins(14, 12, 16, 12);
        outer->setSpacing(12);
        badge_ = new QLabel(QString::number(position + 1), this);
        badge_->setObjectName(QStringLiteral("keyBadge"));
        badge_->setAlignment(Qt::AlignCenter);
        badge_->setFixedSize(26, 26);
        if (multiple)
            indicator_ = new QCheckBox(this);
        else
            indicator_ = new QRadioButton(this);
        indicator_->setFocusPolicy(Qt::NoFocus);
        indicator_->setAttribute(Qt::WA_TransparentForMouseEvents);
        indicator_->setAccessibleName(option.text);
        auto* column = new QVBoxLayout;
        column->setSpacing(6);
        text_ = new QLabel(option.text, this);
        text_->setWordWrap(true);
        text_->setTextFormat(Qt::PlainText);
        verdict_ = new QLabel(this);
        verdict_->setVisible(false);
        QFont vf = verdict_->font();
        vf.setBold(true);
        verdict_->setFont(vf);
        explanation_ = new QLabel(option.explanation, this);
        explanation_->setWordWrap(true);
        explanation_->setTextFormat(Qt::PlainText);
        explanation_->setVisible(false);
        column->addWidget(text_);
        column->addWidget(verdict_);
        column->addWidget(explanation_);
        outer->addWidget(badge_, 0, Qt::AlignTop);
        outer->addWidget(indicator_, 0, Qt::AlignTop);
        outer->addLayout(column, 1);
        restyle();
    }

    bool isChecked() const { return indicator_->isChecked(); }
    void setChecked(bool on) {
        indicator_->setChecked(on);
        restyle();
    }
    void reveal(Verdict verdict) {
        verdict_kind_ = verdict;
        static const QString tick = QStringLiteral("\u2713 ");
        static const QString cross = QStringLiteral("\u2717 ");
        switch (verdict) {
            case Verdict::ChosenRight:
                verdict_->setText(tick + QObject::tr("Right \u2014 you chose this"));
                break;
            case Verdict::MissedRight:
                verdict_->setText(tick + QObject::tr("Right answer \u2014 you missed it"));
                break;
            case Verdict::ChosenWrong:
                verdict_->setText(cross + QObject::tr("Wrong \u2014 you chose this"));
                break;
            case Verdict::OtherWrong:
                verdict_->setText(cross + QObject::tr("Wrong"));
                break;
            case Verdict::None:
                break;
        }
        verdict_->setVisible(verdict != Verdict::None);
        explanation_->setVisible(verdict != Verdict::None);
        setCursor(verdict == Verdict::None ? Qt::PointingHandCursor : Qt::ArrowCursor);
        restyle();
    }
    Verdict verdict() const { return verdict_kind_; }
    QString verdictText() const { return verdict_->text(); }
    bool explanationShown() const { return !explanation_->isHidden(); }

    void restyle() {
        const ThemeColors c = themeColors();
        QColor border = c.border;
        QColor background = c.surface;
        int width = 1;
        QColor verdictColor = c.muted;
        switch (verdict_kind_) {
            case Verdict::None:
                if (isChecked()) {
                    border = c.accent;
                    width = 2;
                }
                break;
            case Verdict::ChosenRight:
            case Verdict::MissedRight:
                border = c.right;
                background = c.rightBackground;
                width = 2;
                verdictColor = c.right;
                break;
            case Verdict::ChosenWrong:
                border = c.wrong;
                background = c.wrongBackground;
                width = 2;
                verdictColor = c.wrong;
                break;
            case Verdict::OtherWrong:
                verdictColor = c.muted;
                break;
        }
        // A missed right answer gets a dashed outline so it differs from a chosen one by more
        // than its words.
        const QString style = verdict_kind_ == Verdict::MissedRight ? QStringLiteral("dashed")
                                                                    : QStringLiteral("solid");
        setStyleSheet(QStringLiteral("QFrame#optionRow { border: %1px %2 %3; border-radius: 10px; "
                                     "background: %4; }"
                                     "QLabel#keyBadge { border: 1px solid %5; border-radius: 6px; "
                                     "color: %6; font-weight: 600; }")
                          .arg(width)
                          .arg(style, css(border), css(background), css(c.border), css(c.muted)));
        verdict_->setStyleSheet(QStringLiteral("color: %1;").arg(css(verdictColor)));
        explanation_->setStyleSheet(QStringLiteral("color: palette(text);"));
    }

  protected:
    void mousePressEvent(QMouseEvent* event) override {
        if (event->button() == Qt::LeftButton && verdict_kind_ == Verdict::None)
            onClick_(position_);
        QFrame::mousePressEvent(event);
    }

  private:
    int position_;
    std::function<void(int)> onClick_;
    QLabel* badge_ = nullptr;
    QAbstractButton* indicator_ = nullptr;
    QLabel* text_ = nullptr;
    QLabel* verdict_ = nullptr;
    QLabel* explanation_ = nullptr;
    Verdict verdict_kind_ = Verdict::None;
};

StudyPage::StudyPage(AppContext& context, QWidget* parent) : QWidget(parent), context_(context) {
    setFocusPolicy(Qt::StrongFocus);
    auto* layout = new QVBoxLayout(this);
    layout->setContentsMargins(0, 0, 0, 0);
    layout->setSpacing(0);

    auto* header = new QWidget(this);
    header->setObjectName(QStringLiteral("studyHeader"));
    auto* hl = new QHBoxLayout(header);
    hl->setContentsMargins(28, 14, 28, 14);
    auto* back = new QPushButton(tr("\u2190 Decks"), header);
    back->setFocusPolicy(Qt::NoFocus);
    back->setFlat(true);
    back->setToolTip(tr("Back to the decks (Esc)"));
    connect(back, &QPushButton::clicked, this, &StudyPage::requestClose);
    modeLabel_ = new QLabel(header);
    modeLabel_->setFont(scaled(font(), 1.05, true));
    progressLabel_ = new QLabel(header);
    timerLabel_ = new QLabel(header);
    timerLabel_->setFont(scaled(font(), 1.05, true));
    timerLabel_->setVisible(false);
    hl->addWidget(back);
    hl->addSpacing(12);
    hl->addWidget(modeLabel_);
    hl->addStretch(1);
    hl->addWidget(timerLabel_);
    hl->addSpacing(16);
    hl->addWidget(progressLabel_);
    layout->addWidget(header);

    views_ = new QStackedWidget(this);
    layout->addWidget(views_, 1);
    buildQuestionView();
    buildResultsView();
    buildActionBar(layout);

    examTimer_ = new QTimer(this);
    examTimer_->setInterval(1000);
    connect(examTimer_, &QTimer::timeout, this, &StudyPage::updateTimer);
    applyStyles();
}

StudyPage::~StudyPage() = default;

void StudyPage::buildQuestionView() {
    scroll_ = new QScrollArea(views_);
    scroll_->setObjectName(QStringLiteral("questionScroll"));
    scroll_->setWidgetResizable(true);
    scroll_->setFrameShape(QFrame::NoFrame);
    scroll_->setFocusPolicy(Qt::NoFocus);
    scroll_->verticalScrollBar()->setSingleStep(40);
    auto* canvas = new QWidget(scroll_);
    auto* centre = new QHBoxLayout(canvas);
    centre->setContentsMargins(28, 20, 28, 28);
    auto* column = new QWidget(canvas);
    column->setMaximumWidth(860);
    auto* col = new QVBoxLayout(column);
    col->setContentsMargins(0, 0, 0, 0);
    col->setSpacing(14);
    centre->addStretch(1);
    centre->addWidget(column, 100);
    centre->addStretch(1);

    chipsLabel_ = new QLabel(column);
    chipsLabel_->setObjectName(QStringLiteral("chips"));
    promptLabel_ = new QLabel(column);
    promptLabel_->setWordWrap(true);
    promptLabel_->setTextFormat(Qt::PlainText);
    promptLabel_->setFont(scaled(font(), 1.3));
    promptLabel_->setTextInteractionFlags(Qt::TextSelectableByMouse);
    hintLabel_ = new QLabel(column);
    hintLabel_->setObjectName(QStringLiteral("hint"));
    col->addWidget(chipsLabel_);
    col->addWidget(promptLabel_);
    col->addWidget(hintLabel_);
    col->addSpacing(4);

    optionsLayout_ = new QVBoxLayout;
    optionsLayout_->setSpacing(10);
    col->addLayout(optionsLayout_);

    numeric_ = new NumericAnswerPanel(column);
    numeric_->setVisible(false);
    col->addWidget(numeric_);
    numericResult_ = new QLabel(column);
    numericResult_->setObjectName(QStringLiteral("numericResult"));
    numericResult_->setWordWrap(true);
    numericResult_->setTextFormat(Qt::RichText);
    numericResult_->setTextInteractionFlags(Qt::TextSelectableByMouse);
    numericResult_->setVisible(false);
    col->addWidget(numericResult_);
    connect(numeric_, &NumericAnswerPanel::submitRequested, this, &StudyPage::checkAnswer);
    connect(numeric_, &NumericAnswerPanel::graded, this,
            [this](const study::NumericGrade& g) { revealNumeric(g, {}); });
    connect(numeric_, &NumericAnswerPanel::measurementFailed, this,
            [this](const QString& why) { revealNumeric(std::nullopt, why); });

    // After the answer: where the card's facts come from, each a link the system opens.
    sourcesLabel_ = new QLabel(canvas);
    sourcesLabel_->setObjectName(QStringLiteral("sources"));
    sourcesLabel_->setWordWrap(true);
    sourcesLabel_->setTextFormat(Qt::RichText);
    sourcesLabel_->setTextInteractionFlags(Qt::TextBrowserInteraction);
    sourcesLabel_->setVisible(false);
    connect(sourcesLabel_, &QLabel::linkActivated, this,
            [](const QString& link) { QDesktopServices::openUrl(QUrl(link)); });
    col->addSpacing(6);
    col->addWidget(sourcesLabel_);

    col->addStretch(1);

    scroll_->setWidget(canvas);
    views_->addWidget(scroll_);
}

void StudyPage::buildActionBar(QVBoxLayout* pageLayout) {
    actionBar_ = new QFrame(this);
    actionBar_->setObjectName(QStringLiteral("actionBar"));
    auto* centre = new QHBoxLayout(actionBar_);
    centre->setContentsMargins(28, 12, 28, 16);
    auto* bar = new QWidget(actionBar_);
    bar->setMaximumWidth(860);
    auto* bl = new QVBoxLayout(bar);
    bl->setContentsMargins(0, 0, 0, 0);
    bl->setSpacing(10);
    centre->addStretch(1);
    centre->addWidget(bar, 100);
    centre->addStretch(1);
    confidenceRow_ = new QWidget(bar);
    auto* cl = new QHBoxLayout(confidenceRow_);
    cl->setContentsMargins(0, 6, 0, 0);
    auto* cLabel = new QLabel(tr("How sure are you? (optional)"), confidenceRow_);
    cLabel->setObjectName(QStringLiteral("hint"));
    cl->addWidget(cLabel);
    const std::array<QString, 3> names = {tr("Guessing  G"), tr("Unsure  U"), tr("Sure  S")};
    for (int i = 0; i < 3; ++i) {
        auto* b = new QPushButton(names[i], confidenceRow_);
        b->setCheckable(true);
        b->setFocusPolicy(Qt::NoFocus);
        connect(b, &QPushButton::clicked, this, [this, i] { setConfidence(i + 1); });
        confidenceButtons_[i] = b;
        cl->addWidget(b);
    }
    cl->addStretch(1);
    bl->addWidget(confidenceRow_);

    checkButton_ = new QPushButton(tr("Check answer   Enter"), bar);
    checkButton_->setObjectName(QStringLiteral("primary"));
    checkButton_->setFocusPolicy(Qt::NoFocus);
    checkButton_->setMinimumHeight(40);
    connect(checkButton_, &QPushButton::clicked, this, &StudyPage::checkAnswer);
    showMeButton_ = new QPushButton(tr("Show me   M"), bar);
    showMeButton_->setObjectName(QStringLiteral("showMe"));
    showMeButton_->setFocusPolicy(Qt::NoFocus);
    showMeButton_->setMinimumHeight(40);
    showMeButton_->setToolTip(tr("Run this card's scenario on the engine and watch what happens"));
    showMeNote_ = new QLabel(bar);
    showMeNote_->setObjectName(QStringLiteral("hint"));
    showMeNote_->setVisible(false);
    connect(showMeButton_, &QPushButton::clicked, this, &StudyPage::requestShowMe);
    auto* checkRow = new QHBoxLayout;
    checkRow->setSpacing(10);
    checkRow->addWidget(checkButton_);
    checkRow->addWidget(showMeButton_);
    checkRow->addWidget(showMeNote_);
    checkRow->addStretch(1);
    bl->addLayout(checkRow);

    verdictBanner_ = new QFrame(bar);
    verdictBanner_->setObjectName(QStringLiteral("verdictBanner"));
    auto* vl = new QHBoxLayout(verdictBanner_);
    vl->setContentsMargins(16, 10, 16, 10);
    verdictLabel_ = new QLabel(verdictBanner_);
    verdictLabel_->setFont(scaled(font(), 1.15, true));
    vl->addWidget(verdictLabel_);
    bl->addWidget(verdictBanner_);

    gradeRow_ = new QWidget(bar);
    auto* gl = new QVBoxLayout(gradeRow_);
    gl->setContentsMargins(0, 0, 0, 0);
    auto* buttons = new QHBoxLayout;
    buttons->setSpacing(10);
    const std::array<QString, 4> grades = {tr("Again"), tr("Hard"), tr("Good"), tr("Easy")};
    for (int i = 0; i < 4; ++i) {
        auto* b = new QPushButton(gradeRow_);
        b->setFocusPolicy(Qt::NoFocus);
        b->setMinimumSize(120, 52);
        b->setProperty("gradeName", grades[i]);
        connect(b, &QPushButton::clicked, this,
                [this, i] { gradeAndContinue(static_cast<Rating>(i + 1)); });
        gradeButtons_[i] = b;
        buttons->addWidget(b);
    }
    buttons->addStretch(1);
    gl->addLayout(buttons);
    gradeHint_ = new QLabel(gradeRow_);
    gradeHint_->setObjectName(QStringLiteral("hint"));
    gradeHint_->setWordWrap(true);
    gl->addWidget(gradeHint_);
    bl->addWidget(gradeRow_);

    nextButton_ = new QPushButton(tr("Next card   Enter"), bar);
    nextButton_->setObjectName(QStringLiteral("primary"));
    nextButton_->setFocusPolicy(Qt::NoFocus);
    nextButton_->setMinimumHeight(40);
    connect(nextButton_, &QPushButton::clicked, this, &StudyPage::continuePractice);
    bl->addWidget(nextButton_, 0, Qt::AlignLeft);
    pageLayout->addWidget(actionBar_);
}

void StudyPage::buildResultsView() {
    // Scrolls: an exam's list of missed questions can be longer than the window.
    resultsScroll_ = new QScrollArea(views_);
    resultsScroll_->setObjectName(QStringLiteral("resultsScroll"));
    resultsScroll_->setWidgetResizable(true);
    resultsScroll_->setFrameShape(QFrame::NoFrame);
    resultsScroll_->setFocusPolicy(Qt::NoFocus);
    resultsScroll_->verticalScrollBar()->setSingleStep(40);
    auto* page = new QWidget(resultsScroll_);
    auto* centre = new QHBoxLayout(page);
    centre->setContentsMargins(28, 28, 28, 28);
    auto* column = new QWidget(page);
    column->setMaximumWidth(760);
    auto* col = new QVBoxLayout(column);
    col->setSpacing(16);
    resultsTitle_ = new QLabel(column);
    resultsTitle_->setFont(scaled(font(), 1.6, true));
    resultsBody_ = new QLabel(column);
    resultsBody_->setWordWrap(true);
    resultsBody_->setTextFormat(Qt::RichText);
    resultsBack_ = new QPushButton(tr("Back to the decks   Enter"), column);
    resultsBack_->setObjectName(QStringLiteral("primary"));
    resultsBack_->setFocusPolicy(Qt::NoFocus);
    resultsBack_->setMinimumHeight(40);
    connect(resultsBack_, &QPushButton::clicked, this, &StudyPage::closeRequested);
    col->addWidget(resultsTitle_);
    col->addWidget(resultsBody_);
    col->addWidget(resultsBack_, 0, Qt::AlignLeft);
    col->addStretch(1);
    centre->addStretch(1);
    centre->addWidget(column, 100);
    centre->addStretch(1);
    resultsScroll_->setWidget(page);
    views_->addWidget(resultsScroll_);
}

bool StudyPage::start(const QString& deckId, const study::SessionOptions& options) {
    const study::Deck* deck = context_.library ? context_.library->deck(deckId) : nullptr;
    if (!deck || !context_.store) return false;
    deckId_ = deckId;
    examTimer_->stop();
    session_ = std::make_unique<study::StudySession>(*deck, *context_.store, context_.settings,
                                                     options, context_.now());
    if (options.mode == StudyMode::MockExam) {
        examDeadline_ = context_.now().addSecs(qint64(kExamSecondsPerQuestion) * session_->total());
        examTimer_->start();
    }
    timerLabel_->setVisible(options.mode == StudyMode::MockExam);
    setFocus();
    showCurrent();  // a numeric card then gives the focus to its field
    return true;
}

void StudyPage::focusAnswer() {
    if (!revealed_ && !isShowingResults() && currentIsNumeric() && !numeric_->measuring())
        numeric_->input()->setFocus(Qt::OtherFocusReason);
    else
        setFocus(Qt::OtherFocusReason);
}

bool StudyPage::isShowingResults() const {
    return views_->currentIndex() == 1;
}

QList<int> StudyPage::selectedOptions() const {
    QList<int> chosen;
    if (!session_) return chosen;
    for (int pos = 0; pos < optionRows_.size(); ++pos) {
        if (optionRows_[pos]->isChecked()) chosen.append(session_->optionOrder()[pos]);
    }
    std::sort(chosen.begin(), chosen.end());
    return chosen;
}

void StudyPage::showSources(const study::Card& card) {
    if (card.sources.isEmpty()) return;
    QStringList items;
    for (const study::Source& s : card.sources)
        items << QStringLiteral("<a href=\"%1\">%2</a> \u2014 %3")
                     .arg(s.url.toHtmlEscaped(), s.title.toHtmlEscaped(),
                          s.locator.toHtmlEscaped());
    sourcesLabel_->setText(
        QStringLiteral("<b>%1</b><br>%2").arg(tr("Sources"), items.join(QStringLiteral("<br>"))));
    sourcesLabel_->setToolTip(tr("Opens in your web browser"));
    sourcesLabel_->setVisible(true);
}

void StudyPage::showCurrent() {
    revealed_ = false;
    confidence_.reset();
    for (QPushButton* b : confidenceButtons_) b->setChecked(false);
    qDeleteAll(optionRows_);
    optionRows_.clear();
    updateHeader();
    if (!session_ || session_->finished()) {
        showResults();
        return;
    }
    views_->setCurrentIndex(0);
    actionBar_->setVisible(true);
    hintLabel_->setVisible(true);
    const study::Card& card = *session_->current();
    QStringList chips;
    for (const QString& c : card.concepts()) chips.append(study::tagDisplayName(c));
    chips.append(study::difficultyDisplayName(card.difficulty));
    chipsLabel_->setText(chips.join(QStringLiteral("  \u00b7  ")));
    promptLabel_->setText(card.prompt);
    const bool multiple = card.type == study::CardType::Multiple;
    numericResult_->clear();
    numericResult_->setVisible(false);
    numeric_->setVisible(card.isNumeric());
    if (card.isNumeric()) numeric_->setCard(card);
    updateChoiceHint();
    const QList<int>& order = session_->optionOrder();
    for (int pos = 0; pos < order.size(); ++pos) {
        auto* row = new OptionRow(
            pos, multiple, card.options[order[pos]], [this](int p) { toggleOption(p); },
            scroll_->widget());
        optionRows_.append(row);
        optionsLayout_->addWidget(row);
        row->show();  // now, not when the layout's queued show runs
    }
    confidenceRow_->setVisible(true);
    checkButton_->setVisible(true);
    checkButton_->setText(session_->mode() == StudyMode::MockExam ? tr("Submit answer   Enter")
                                                                  : tr("Check answer   Enter"));
    checkButton_->setEnabled(false);
    if (card.isNumeric()) {
        checkButton_->setText(tr("Check: run and measure   Enter"));
        checkButton_->setEnabled(true);
        numeric_->input()->setFocus(Qt::OtherFocusReason);
    }
    showMeNote_->clear();
    showMeNote_->setVisible(false);
    sourcesLabel_->clear();
    sourcesLabel_->setVisible(false);
    verdictBanner_->setVisible(false);
    gradeRow_->setVisible(false);
    nextButton_->setVisible(false);
    updateShowMe();
    scroll_->verticalScrollBar()->setValue(0);
    answerTimer_.start();
}

void StudyPage::toggleOption(int position) {
    if (revealed_ || !session_ || session_->finished() || position < 0 ||
        position >= optionRows_.size())
        return;
    const bool multiple = session_->current()->type == study::CardType::Multiple;
    if (multiple) {
        optionRows_[position]->setChecked(!optionRows_[position]->isChecked());
    } else {
        for (int i = 0; i < optionRows_.size(); ++i) optionRows_[i]->setChecked(i == position);
    }
    checkButton_->setEnabled(choiceComplete());
    updateChoiceHint();
}

// A "choose two" card needs exactly that many boxes ticked, as exam software requires.
bool StudyPage::choiceComplete() const {
    if (!session_ || session_->finished()) return false;
    const study::Card& card = *session_->current();
    const qsizetype chosen = selectedOptions().size();
    return card.type == study::CardType::Multiple ? chosen == card.correctCount() : chosen == 1;
}

void StudyPage::updateChoiceHint() {
    if (!session_ || session_->finished()) return;
    const study::Card& card = *session_->current();
    if (card.isNumeric()) {
        hintLabel_->setText(tr("Predict, then run: type your number (%1), then press Enter.")
                                .arg(study::answerUnitLabel(card.numeric->unit)));
        return;
    }
    const int options = static_cast<int>(card.options.size());
    if (card.type != study::CardType::Multiple) {
        hintLabel_->setText(
            tr("Select one answer with keys 1\u2013%1, then press Enter.").arg(options));
        return;
    }
    const int needed = card.correctCount();
    hintLabel_->setText(tr("Select %1 answers with keys 1\u2013%2, then press Enter "
                           "(%3 of %4 chosen).")
                            .arg(countWord(needed))
                            .arg(options)
                            .arg(selectedOptions().size())
                            .arg(needed));
}

void StudyPage::setConfidence(int level) {
    if (revealed_) return;
    confidence_ = confidence_ == level ? std::nullopt : std::optional<int>(level);
    for (int i = 0; i < 3; ++i) confidenceButtons_[i]->setChecked(confidence_ == i + 1);
}

bool StudyPage::currentIsNumeric() const {
    return session_ && !session_->finished() && session_->current()->isNumeric();
}

void StudyPage::checkAnswer() {
    if (revealed_ || !session_ || session_->finished()) return;
    if (currentIsNumeric()) {
        if (numeric_->measuring()) return;
        answerMs_ = answerTimer_.elapsed();  // the thinking, not the run
        if (numeric_->submit()) checkButton_->setEnabled(false);
        return;
    }
    const QList<int> chosen = selectedOptions();
    if (chosen.isEmpty()) {
        hintLabel_->setText(tr("Choose an answer first (keys 1\u2013%1).").arg(optionRows_.size()));
        return;
    }
    if (!choiceComplete()) {
        const int needed = session_->current()->correctCount();
        hintLabel_->setText(tr("Choose exactly %1 answers: %2 chosen now.")
                                .arg(countWord(needed))
                                .arg(chosen.size()));
        return;
    }
    answerMs_ = answerTimer_.elapsed();
    if (session_->mode() == StudyMode::MockExam) {
        // No feedback during an exam: record and move on; the score comes at the end.
        QString error;
        if (session_->answer(chosen, std::nullopt, confidence_, answerMs_, context_.now(), &error))
            emit answered();
        else
            hintLabel_->setText(error);
        showCurrent();
        return;
    }
    // Practice saves the answer as it is checked: leaving before "Next card" loses nothing.
    if (session_->mode() == StudyMode::Practice) {
        QString error;
        if (!session_->answer(chosen, std::nullopt, confidence_, answerMs_, context_.now(), &error,
                              study::StudySession::Then::Stay)) {
            hintLabel_->setText(tr("Could not save the answer: %1").arg(error));
            return;
        }
        emit answered();
        updateHeader();
    }
    revealed_ = true;
    const study::Card& card = *session_->current();
    const bool correct = card.isCorrectAnswer(chosen);
    const QList<int>& order = session_->optionOrder();
    for (int pos = 0; pos < optionRows_.size(); ++pos) {
        const study::Option& option = card.options[order[pos]];
        const bool picked = chosen.contains(order[pos]);
        using V = OptionRow::Verdict;
        optionRows_[pos]->reveal(option.correct ? (picked ? V::ChosenRight : V::MissedRight)
                                                : (picked ? V::ChosenWrong : V::OtherWrong));
    }
    const bool single = card.type == study::CardType::Single;
    suggested_ = session_->suggestedGradeFor(chosen, confidence_);
    finishReveal(card, correct,
                 correct  ? tr("Correct")
                 : single ? tr("Not quite \u2014 the right answer is marked \u2713 above")
                          : tr("Not quite \u2014 the right answers are marked \u2713 above"));
}

void StudyPage::revealNumeric(const std::optional<study::NumericGrade>& grade,
                              const QString& failure) {
    if (revealed_ || !currentIsNumeric()) return;
    revealed_ = true;
    const study::Card& card = *session_->current();
    numericCorrect_ = grade && grade->correct;
    QString unsaved;
    if (session_->mode() == StudyMode::Practice) {
        // Saved as it is checked, as a choice card's answer is.
        if (session_->answerNumeric(numericCorrect_, std::nullopt, confidence_, answerMs_,
                                    context_.now(), &unsaved, study::StudySession::Then::Stay)) {
            emit answered();
            updateHeader();
        } else {
            unsaved = tr(" (could not save the answer: %1)").arg(unsaved);
        }
    }
    if (grade) {
        numericResult_->setText(numeric_->resultHtml(*grade));
        numericResult_->setVisible(true);
    }
    const QString measured =
        grade ? study::formatInUnit(grade->measured, card.numeric->unit) : QString();
    suggested_ = session_->suggestedGradeForNumeric(numericCorrect_, confidence_);
    setFocus(Qt::OtherFocusReason);  // the grade keys 1-4 and Enter are the page's
    finishReveal(card, numericCorrect_,
                 (!grade           ? tr("Not measured: %1").arg(failure)
                  : grade->correct ? tr("Right: the run measured %1").arg(measured)
                                   : tr("Not quite: the run measured %1").arg(measured)) +
                     unsaved);
}

QString StudyPage::verdictText() const {
    return verdictBanner_->isVisible() ? verdictLabel_->text() : QString();
}

QString StudyPage::numericResultText() const {
    return numericResult_->isVisible() ? numericResult_->text() : QString();
}

// Every card's reveal ends here: the verdict banner, the sources, the question's controls
// put away, then the four grades with their next due times (review) or Next (practice).
void StudyPage::finishReveal(const study::Card& card, bool correct, const QString& verdict) {
    verdictLabel_->setText((correct ? QStringLiteral("\u2713  ") : QStringLiteral("\u2717  ")) +
                           verdict);
    verdictBanner_->setProperty("correct", correct);
    styleVerdictBanner(verdictBanner_);
    verdictBanner_->setVisible(true);
    showSources(card);
    confidenceRow_->setVisible(false);
    checkButton_->setVisible(false);
    hintLabel_->setVisible(false);
    updateShowMe();
    if (session_->mode() == StudyMode::Review) {
        const QDateTime now = context_.now();
        const std::array<QDateTime, 4> due = session_->previewDue(now);
        for (int i = 0; i < 4; ++i) {
            const Rating rating = static_cast<Rating>(i + 1);
            QPushButton* b = gradeButtons_[i];
            b->setText(QStringLiteral("%1  %2\n%3")
                           .arg(i + 1)
                           .arg(b->property("gradeName").toString(),
                                study::formatInterval(now.secsTo(due[i]))));
            b->setEnabled(true);  // the learner's own grade, as in Anki
            b->setObjectName(rating == suggested_ ? QStringLiteral("primary") : QString());
            b->setToolTip(
                tr("Next review %1")
                    .arg(due[i].toLocalTime().toString(QStringLiteral("ddd d MMM yyyy, HH:mm"))));
        }
        applyStyles();
        gradeHint_->setText(gradeAdvice(correct));
        gradeRow_->setVisible(true);
    } else {
        nextButton_->setVisible(true);
    }
    scrollToRightAnswer();  // last: the action bar's new height changes the viewport
}

// Why the preselected grade is the one Enter accepts, and that any grade may be chosen.
QString StudyPage::gradeAdvice(bool correct) const {
    if (!correct)
        return tr(
            "Enter accepts Again: the card comes back in a few minutes. If it was a slip "
            "on something you know, grade it yourself with 2\u20134.");
    if (session_->currentHinted())
        return tr(
            "You used Show me before checking, so this review is recorded as hinted and "
            "Enter accepts Hard. Press 3 or 4 if you knew it anyway.");
    if (suggested_ == Rating::Hard)
        return tr("You marked this a guess, so Enter accepts Hard. Press 3 or 4 if you knew it.");
    return tr("Enter accepts Good. Press 2 if it was hard, 4 if it was easy, 1 if you were lucky.");
}

void StudyPage::gradeAndContinue(Rating rating) {
    if (!revealed_ || !session_ || session_->mode() != StudyMode::Review) return;
    QString error;
    const bool saved = currentIsNumeric()
                           ? session_->answerNumeric(numericCorrect_, rating, confidence_,
                                                     answerMs_, context_.now(), &error)
                           : session_->answer(selectedOptions(), rating, confidence_, answerMs_,
                                              context_.now(), &error);
    if (!saved) {
        gradeHint_->setText(tr("Could not save the review: %1").arg(error));
        return;
    }
    emit answered();
    showCurrent();
}

void StudyPage::continuePractice() {
    if (!revealed_ || !session_ || session_->mode() != StudyMode::Practice) return;
    if (session_->currentAnswered()) {  // saved when it was checked
        session_->next(context_.now());
        showCurrent();
        return;
    }
    QString error;
    const bool saved = currentIsNumeric()
                           ? session_->answerNumeric(numericCorrect_, std::nullopt, confidence_,
                                                     answerMs_, context_.now(), &error)
                           : session_->answer(selectedOptions(), std::nullopt, confidence_,
                                              answerMs_, context_.now(), &error);
    if (!saved) {
        hintLabel_->setText(tr("Could not save the answer: %1").arg(error));
        return;
    }
    emit answered();
    showCurrent();
}

bool StudyPage::undo() {
    if (!session_ || !session_->canUndo()) return false;
    QString error;
    if (!session_->undo(&error)) {
        hintLabel_->setText(tr("Cannot undo: %1").arg(error));
        return false;
    }
    emit answered();
    showCurrent();
    return true;
}

void StudyPage::showResults() {
    examTimer_->stop();
    timerLabel_->setVisible(false);
    views_->setCurrentIndex(1);
    actionBar_->setVisible(false);
    if (!session_) return;
    const ThemeColors c = themeColors();
    const int answered = session_->answered();
    if (session_->mode() == StudyMode::MockExam) {
        const bool early = session_->endedEarly();
        // Left early, the score is over the questions answered; timed out, over all of them.
        const int total = early ? answered : answered + session_->unanswered();
        resultsTitle_->setText(
            early ? tr("Mock exam ended early: %1 of %2 answered right")
                        .arg(session_->correctAnswers())
                        .arg(total)
                  : tr("Mock exam: %1 of %2 right").arg(session_->correctAnswers()).arg(total));
        QString html = QStringLiteral("<table cellspacing='0' cellpadding='6' width='100%'>");
        html += QStringLiteral(
                    "<tr><th align='left'>%1</th><th align='right'>%2</th>"
                    "<th align='right'>%3</th></tr>")
                    .arg(tr("Concept"), tr("Right"), tr("Score"));
        for (const study::ConceptScore& s : session_->conceptScores()) {
            const int pct = s.total > 0 ? qRound(100.0 * s.correct / s.total) : 0;
            const bool strong = pct >= 70;
            html += QStringLiteral(
                        "<tr><td>%1</td><td align='right'>%2 / %3</td>"
                        "<td align='right' style='color:%4'><b>%5 %6%</b></td></tr>")
                        .arg(study::tagDisplayName(s.name))
                        .arg(s.correct)
                        .arg(s.total)
                        .arg(css(strong ? c.right : c.wrong),
                             strong ? QStringLiteral("\u2713") : QStringLiteral("\u2717"))
                        .arg(pct);
        }
        html += QStringLiteral("</table>");
        if (early && session_->unanswered() > 0) {
            html += QStringLiteral("<p>") +
                    tr("You left with %1 unanswered; they are not scored.")
                        .arg(counted(session_->unanswered(), tr("question"), tr("questions"))) +
                    QStringLiteral("</p>");
        } else if (session_->unanswered() > 0) {
            html += QStringLiteral("<p>") +
                    tr("%1 not answered before the time ran out; they count as wrong.")
                        .arg(counted(session_->unanswered(), tr("question was"),
                                     tr("questions were"))) +
                    QStringLiteral("</p>");
        }
        html += QStringLiteral("<p>") +
                tr("Concepts under 70% are worth a practice session: on Decks (Ctrl+1), pick the "
                   "concept on the deck's card and press Practice.") +
                QStringLiteral("</p>");
        html += missedQuestionsHtml();
        resultsBody_->setText(html);
    } else if (answered == 0) {
        resultsTitle_->setText(tr("Nothing to study right now"));
        resultsBody_->setText(
            session_->mode() == StudyMode::Review
                ? (session_->filter().tag.isEmpty() && !session_->filter().difficulty
                       ? tr("<p>No cards of this deck are due, and today's new cards are done. "
                            "Come back later, or practise any concept without touching the "
                            "schedule.</p>")
                       : tr("<p>No cards of this deck that match the chosen concept and "
                            "difficulty are due, and today's new cards of them are done. Choose "
                            "another concept, come back later, or practise these cards without "
                            "touching the schedule.</p>"))
                : tr("<p>No card matches this filter.</p>"));
    } else {
        resultsTitle_->setText(tr("Session complete"));
        const int pct = qRound(100.0 * session_->correctAnswers() / answered);
        // Answers and cards differ when cards answered wrong came back.
        const int cards = session_->distinctAnswered();
        resultsBody_->setText(
            tr("<p>You gave <b>%1</b> on <b>%2</b>; <b>%3</b> of the answers were right "
               "(%4%).</p>")
                .arg(counted(answered, tr("answer"), tr("answers")),
                     counted(cards, tr("card"), tr("cards")))
                .arg(session_->correctAnswers())
                .arg(pct) +
            (session_->mode() == StudyMode::Review
                 ? tr("<p>Your next reviews are scheduled. Press Ctrl+Z to undo the last one.</p>")
                 : tr("<p>Practice leaves the schedule untouched.</p>")));
    }
}

// The exam's wrong answers, each with its question, the learner's answer and the right one.
QString StudyPage::missedQuestionsHtml() const {
    const QList<study::MissedQuestion> missed = session_->missedQuestions();
    if (missed.isEmpty()) return {};
    const ThemeColors c = themeColors();
    const auto optionList = [](const study::Card& card, const QList<int>& indices) {
        QStringList texts;
        for (int i : indices)
            if (i >= 0 && i < card.options.size())
                texts.append(card.options[i].text.toHtmlEscaped());
        return texts.join(QStringLiteral("<br>"));
    };
    QString html =
        QStringLiteral("<h3>%1</h3>").arg(tr("Missed questions (%1)").arg(missed.size()));
    int n = 0;
    for (const study::MissedQuestion& m : missed) {
        const study::Card& card = *m.card;
        QList<int> right;
        for (int i = 0; i < card.options.size(); ++i)
            if (card.options[i].correct) right.append(i);
        html +=
            QStringLiteral(
                "<p><b>%1.</b> %2<br><span style='color:%3'>%4 %5</span><br>"
                "<span style='color:%6'>%7 %8</span></p>")
                .arg(++n)
                .arg(card.prompt.toHtmlEscaped(), css(c.wrong),
                     right.size() > 1 ? tr("Your answers:") : tr("Your answer:"),
                     m.answered ? optionList(card, m.chosen)
                                : tr("<i>not answered before the time ran out</i>"),
                     css(c.right), right.size() > 1 ? tr("Right answers:") : tr("Right answer:"),
                     optionList(card, right));
    }
    return html;
}

void StudyPage::updateHeader() {
    if (!session_) return;
    QStringList parts = {modeTitle(session_->mode()), session_->deck().title};
    // A session over part of the deck says which part.
    if (!session_->filter().tag.isEmpty())
        parts.append(study::tagDisplayName(session_->filter().tag));
    if (session_->filter().difficulty)
        parts.append(study::difficultyDisplayName(*session_->filter().difficulty));
    modeLabel_->setText(parts.join(QStringLiteral("  \u00b7  ")));
    progressLabel_->setText(progressText());
    updateTimer();
}

// "5 answered · 3 to go", and cards answered wrong that come back are counted apart, so the
// count moves as the learner works.
QString StudyPage::progressText() const {
    const int answered = session_->answered();
    if (session_->finished()) return tr("%1 answered").arg(answered);
    const int returning = session_->returning();
    const int fresh = session_->remaining() - returning;
    QString text = tr("%1 answered  \u00b7  %2 to go").arg(answered).arg(fresh);
    if (returning > 0) text += tr(" + %1 coming back").arg(returning);
    return text;
}

void StudyPage::updateTimer() {
    if (!session_ || session_->mode() != StudyMode::MockExam || session_->finished()) return;
    const qint64 left = std::max<qint64>(0, context_.now().secsTo(examDeadline_));
    timerLabel_->setText(
        tr("Time left %1:%2").arg(left / 60).arg(left % 60, 2, 10, QLatin1Char('0')));
    if (left == 0) {
        session_->finishNow();
        emit answered();
        showCurrent();
    }
}

void StudyPage::keyPressEvent(QKeyEvent* event) {
    const int key = event->key();
    if (event->matches(QKeySequence::Undo)) {
        undo();
        return;
    }
    if (key == Qt::Key_Escape) {
        requestClose();
        return;
    }
    if (scrollByKey(key)) return;
    if (isShowingResults()) {
        if (key == Qt::Key_Return || key == Qt::Key_Enter || key == Qt::Key_Space) {
            emit closeRequested();
            return;
        }
        QWidget::keyPressEvent(event);
        return;
    }
    if (!session_ || session_->finished() ||
        (event->modifiers() & ~Qt::KeypadModifier & ~Qt::ShiftModifier)) {
        QWidget::keyPressEvent(event);
        return;
    }
    if (key >= Qt::Key_1 && key <= Qt::Key_6) {
        const int n = key - Qt::Key_1;
        if (!revealed_)
            toggleOption(n);
        else if (session_->mode() == StudyMode::Review && n < 4)
            gradeAndContinue(static_cast<Rating>(n + 1));
        return;
    }
    if (key == Qt::Key_Return || key == Qt::Key_Enter || key == Qt::Key_Space) {
        if (!revealed_) {
            checkAnswer();
        } else if (session_->mode() == StudyMode::Review) {
            gradeAndContinue(suggested_);
        } else {
            continuePractice();
        }
        return;
    }
    if (key == Qt::Key_M) {
        requestShowMe();
        return;
    }
    if (!revealed_ && (key == Qt::Key_G || key == Qt::Key_U || key == Qt::Key_S)) {
        setConfidence(key == Qt::Key_G ? 1 : key == Qt::Key_U ? 2 : 3);
        return;
    }
    QWidget::keyPressEvent(event);
}

// A run can give the answer away: it is offered after checking, or before as an opt-in hint
// (Settings) that marks the review as hinted. A mock exam is an exam: no runs at all.
bool StudyPage::showMeAvailable() const {
    // A numeric card's run is its answer: shown after the prediction only.
    return session_ && !session_->finished() && session_->current()->hasScenario() &&
           session_->mode() != StudyMode::MockExam &&
           (revealed_ || (context_.settings.showMeBeforeCheck && !currentIsNumeric()));
}

void StudyPage::updateShowMe() {
    const bool available = showMeAvailable();
    showMeButton_->setVisible(available);
    showMeButton_->setText(revealed_ ? tr("Show me   M") : tr("Show me (hint)   M"));
    showMeButton_->setToolTip(
        revealed_ ? tr("Run this card's scenario on the engine and watch what happens")
                  : tr("Run this card's scenario before checking, as a hint: the review is "
                       "recorded as hinted and Enter then accepts Hard"));
}

void StudyPage::requestShowMe() {
    if (!showMeAvailable()) return;
    if (!revealed_) {
        session_->markCurrentHinted();
        showMeNote_->setText(tr("Hinted: this answer is recorded as helped by Show me."));
        showMeNote_->setVisible(true);
    }
    emit showMeRequested(deckId_, session_->current()->id);
}

bool StudyPage::inProgress() const {
    return session_ && !session_->finished() &&
           (session_->answered() > 0 || session_->mode() == StudyMode::MockExam);
}

// Leaving loses nothing already answered (each answer is saved as it is given), but it does
// end the flow: ask first. Leaving an exam ends it and shows the results so far.
void StudyPage::requestClose() {
    if (!inProgress()) {
        emit closeRequested();
        return;
    }
    const bool exam = session_->mode() == StudyMode::MockExam;
    QMessageBox box(
        QMessageBox::Question, exam ? tr("End the mock exam?") : tr("Leave this session?"),
        exam ? tr("You have answered %1 of %2 questions. End the exam now and see the "
                  "results for what you answered?")
                   .arg(session_->answered())
                   .arg(session_->total())
             : tr("Your %1 saved. Leave the session and go back to the decks?")
                   .arg(counted(session_->answered(), tr("answer is"), tr("answers are"))),
        QMessageBox::NoButton, this);
    QPushButton* leave = box.addButton(exam ? tr("End exam and show results") : tr("Leave"),
                                       QMessageBox::AcceptRole);
    QPushButton* stay =
        box.addButton(exam ? tr("Keep going") : tr("Keep studying"), QMessageBox::RejectRole);
    box.setDefaultButton(stay);
    box.setEscapeButton(stay);
    box.exec();
    // The exam's clock may have ended it while the question was open.
    if (box.clickedButton() != leave || !inProgress()) return;
    if (exam) {
        session_->finishNow(study::StudySession::Unanswered::LeaveOut);
        emit answered();
        showCurrent();  // the results
        return;
    }
    emit closeRequested();
}

// After the reveal, the right option (the one missed, else the one chosen) and its
// explanation are scrolled into view; the layout is settled first so the geometry is current.
void StudyPage::scrollToRightAnswer() {
    QCoreApplication::sendPostedEvents(nullptr, QEvent::LayoutRequest);
    OptionRow* target = nullptr;
    for (OptionRow* row : optionRows_) {
        if (row->verdict() == OptionRow::Verdict::MissedRight) {
            target = row;
            break;
        }
        if (!target && row->verdict() == OptionRow::Verdict::ChosenRight) target = row;
    }
    if (target) scroll_->ensureWidgetVisible(target, 0, 24);
    if (numericResult_->isVisible()) scroll_->ensureWidgetVisible(numericResult_, 0, 24);
}

// Page Up/Down and the arrows scroll the card; the number keys and Enter keep their jobs.
bool StudyPage::scrollByKey(int key) {
    QScrollBar* bar = (isShowingResults() ? resultsScroll_ : scroll_)->verticalScrollBar();
    switch (key) {
        case Qt::Key_PageDown:
            bar->triggerAction(QAbstractSlider::SliderPageStepAdd);
            return true;
        case Qt::Key_PageUp:
            bar->triggerAction(QAbstractSlider::SliderPageStepSub);
            return true;
        case Qt::Key_Down:
            bar->triggerAction(QAbstractSlider::SliderSingleStepAdd);
            return true;
        case Qt::Key_Up:
            bar->triggerAction(QAbstractSlider::SliderSingleStepSub);
            return true;
        default:
            return false;
    }
}

bool StudyPage::event(QEvent* event) {
    if (event->type() == QEvent::PaletteChange || event->type() == QEvent::ApplicationPaletteChange)
        refreshTheme();
    return QWidget::event(event);
}

void StudyPage::refreshSettings() {
    if (session_ && !session_->finished()) updateShowMe();
}

void StudyPage::refreshTheme() {
    applyStyles();
    for (OptionRow* row : optionRows_) row->restyle();
    // A verdict shown when the theme changes takes the new theme's colours too.
    if (verdictBanner_ && verdictBanner_->property("correct").isValid())
        styleVerdictBanner(verdictBanner_);
}

void StudyPage::applyStyles() {
    const ThemeColors c = themeColors();
    setStyleSheet(
        QStringLiteral("QWidget#studyHeader { border-bottom: 1px solid %1; }"
                       "QFrame#actionBar { border-top: 1px solid %1; }"
                       "QLabel#chips { color: %2; font-weight: 600; }"
                       "QLabel#hint { color: %2; }"
                       "QPushButton#primary { background: %3; color: white; border: none; "
                       "border-radius: 8px; padding: 8px 18px; font-weight: 600; }"
                       "QPushButton#primary:disabled { background: %1; color: %2; }")
            .arg(css(c.border), css(c.muted), css(c.accent)));
    for (QPushButton* b : gradeButtons_) {
        if (b) {
            b->style()->unpolish(b);
            b->style()->polish(b);
        }
    }
}

}  // namespace pd::ui
