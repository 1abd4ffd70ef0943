#include "home_page.h"

#include <QBoxLayout>
#include <QComboBox>
#include <QFrame>
#include <QHBoxLayout>
#include <QKeyEvent>
#include <QLabel>
#include <QPushButton>
#include <QScrollArea>
#include <QVBoxLayout>
#include <algorithm>

#include "theme.h"

namespace pd::ui {

namespace {

QLabel* countLabel(int value, const QString& caption, const QColor& color, QWidget* parent) {
    auto* label = new QLabel(parent);
    label->setTextFormat(Qt::RichText);
    label->setText(
        QStringLiteral("<span style='font-size:20pt; font-weight:600; color:%1'>%2</span>"
                       "<br><span>%3</span>")
            .arg(css(color))
            .arg(value)
            .arg(caption));
    label->setAlignment(Qt::AlignCenter);
    label->setMinimumWidth(96);
    return label;
}

// The deck card's action row: "Study now" at the left and the practice filters at the right
// when there is room, the filters under it when not (e.g. a 900 px window).
class ReflowRow : public QWidget {
  public:
    ReflowRow(QWidget* first, QWidget* second, QWidget* parent)
        : QWidget(parent), first_(first), second_(second) {
        setObjectName(QStringLiteral("deckActions"));
        box_ = new QBoxLayout(QBoxLayout::LeftToRight, this);
        box_->setContentsMargins(0, 0, 0, 0);
        box_->setSpacing(10);
        // The row decides its own minimum (the stacked one), so the card can shrink.
        box_->setSizeConstraint(QLayout::SetNoConstraint);
        box_->addWidget(first, 0, Qt::AlignLeft);
        box_->addStretch(1);
        box_->addWidget(second, 0, Qt::AlignLeft);
        setSizePolicy(QSizePolicy::Preferred, QSizePolicy::Fixed);
    }
    bool stacked() const { return box_->direction() == QBoxLayout::TopToBottom; }
    // As narrow as the stacked form, as tall as the current one (the height is fixed).
    QSize minimumSizeHint() const override {
        const QSize a = first_->sizeHint();
        const QSize b = second_->sizeHint();
        return {std::max(a.width(), b.width()), sizeHint().height()};
    }
    QSize sizeHint() const override {
        const QSize a = first_->sizeHint();
        const QSize b = second_->sizeHint();
        return stacked() ? QSize(std::max(a.width(), b.width()),
                                 a.height() + box_->spacing() + b.height())
                         : QSize(wideWidth(), std::max(a.height(), b.height()));
    }

  protected:
    void resizeEvent(QResizeEvent* event) override {
        const auto direction =
            width() >= wideWidth() ? QBoxLayout::LeftToRight : QBoxLayout::TopToBottom;
        if (direction != box_->direction()) {
            box_->setDirection(direction);
            updateGeometry();  // the height changes with the direction
        }
        QWidget::resizeEvent(event);
    }

  private:
    int wideWidth() const {
        return first_->sizeHint().width() + 4 * box_->spacing() + second_->sizeHint().width();
    }
    QWidget* first_;
    QWidget* second_;
    QBoxLayout* box_ = nullptr;
};

}  // namespace

HomePage::HomePage(AppContext& context, QWidget* parent) : QWidget(parent), context_(context) {
    setFocusPolicy(Qt::StrongFocus);
    auto* outer = new QVBoxLayout(this);
    outer->setContentsMargins(0, 0, 0, 0);
    auto* scroll = new QScrollArea(this);
    scroll->setWidgetResizable(true);
    scroll->setFrameShape(QFrame::NoFrame);
    scroll->setFocusPolicy(Qt::NoFocus);
    auto* canvas = new QWidget(scroll);
    auto* centre = new QHBoxLayout(canvas);
    centre->setContentsMargins(32, 28, 32, 28);
    auto* column = new QWidget(canvas);
    column->setMaximumWidth(900);
    auto* col = new QVBoxLayout(column);
    col->setContentsMargins(0, 0, 0, 0);
    col->setSpacing(16);
    auto* title = new QLabel(tr("Your decks"), column);
    QFont tf = title->font();
    tf.setPointSizeF(tf.pointSizeF() * 1.7);
    tf.setBold(true);
    title->setFont(tf);
    summary_ = new QLabel(column);
    summary_->setObjectName(QStringLiteral("muted"));
    summary_->setWordWrap(true);
    col->addWidget(title);
    col->addWidget(summary_);
    list_ = new QVBoxLayout;
    list_->setSpacing(16);
    col->addLayout(list_);
    col->addStretch(1);
    centre->addStretch(1);
    centre->addWidget(column, 100);
    centre->addStretch(1);
    scroll->setWidget(canvas);
    outer->addWidget(scroll);
    refresh();
}

QString HomePage::defaultDeckId() const {
    if (!context_.library || context_.library->decks().isEmpty()) return {};
    for (const study::Deck& d : context_.library->decks()) {
        const study::DeckCounts c = study::countDeck(d, *context_.store, context_.now());
        if (c.due > 0 || c.newCards > 0) return d.id;
    }
    return context_.library->decks().first().id;
}

void HomePage::refresh() {
    while (QLayoutItem* item = list_->takeAt(0)) {
        delete item->widget();
        delete item;
    }
    if (!context_.library || !context_.store) return;
    const ThemeColors colors = themeColors();
    const QDateTime now = context_.now();
    int dueTotal = 0;
    for (const study::Deck& deck : context_.library->decks()) {
        const study::DeckCounts counts = study::countDeck(deck, *context_.store, now);
        // What a review session would show now, within today's limits.
        dueTotal +=
            study::StudySession(deck, *context_.store, context_.settings, {}, now).remaining();
        auto* card = new QFrame(this);
        card->setObjectName(QStringLiteral("deckCard"));
        card->setStyleSheet(
            QStringLiteral("QFrame#deckCard { background: %1; border: 1px solid %2; "
                           "border-radius: 12px; }")
                .arg(css(colors.surface), css(colors.border)));
        auto* cl = new QVBoxLayout(card);
        cl->setContentsMargins(24, 20, 24, 20);
        cl->setSpacing(12);
        auto* top = new QHBoxLayout;
        auto* text = new QVBoxLayout;
        auto* name = new QLabel(deck.title, card);
        QFont nf = name->font();
        nf.setPointSizeF(nf.pointSizeF() * 1.3);
        nf.setBold(true);
        name->setFont(nf);
        auto* desc = new QLabel(deck.description, card);
        desc->setWordWrap(true);
        desc->setObjectName(QStringLiteral("muted"));
        text->addWidget(name);
        text->addWidget(
            new QLabel(counted(static_cast<int>(deck.cards.size()), tr("card"), tr("cards")) +
                           (context_.library->isBundled(deck.id)
                                ? QString()
                                : QStringLiteral("  \u00b7  ") + tr("imported")),
                       card));
        top->addLayout(text, 1);
        top->addSpacing(16);
        top->addWidget(countLabel(counts.due, tr("due"), colors.accent, card));
        top->addWidget(countLabel(counts.newCards, tr("new"), colors.right, card));
        top->addWidget(countLabel(counts.learned, tr("learned"), colors.muted, card));
        cl->addLayout(top);
        cl->addWidget(desc);
        cl->addSpacing(4);

        auto* studyPart = new QWidget(card);
        auto* studyRow = new QHBoxLayout(studyPart);
        studyRow->setContentsMargins(0, 0, 0, 0);
        auto* filterPart = new QWidget(card);
        auto* filterRow = new QHBoxLayout(filterPart);
        filterRow->setContentsMargins(0, 0, 0, 0);
        filterRow->setSpacing(10);
        auto* study = new QPushButton(tr("Study now"), studyPart);
        study->setObjectName(QStringLiteral("primary"));
        study->setMinimumHeight(38);
        study->setToolTip(
            tr("Review the cards FSRS says are due, then today's new cards, of the concept and "
               "difficulty chosen beside it (Enter on Decks: the whole first deck with work)"));
        const QString deckId = deck.id;
        studyRow->addWidget(study);
        auto* conceptBox = new QComboBox(filterPart);
        conceptBox->setObjectName(QStringLiteral("conceptFilter"));
        conceptBox->addItem(tr("Any concept"), QString());
        QStringList used;
        for (const study::Card& c : deck.cards) {
            for (const QString& n : c.concepts()) {
                if (!used.contains(n)) used.append(n);
            }
        }
        for (const QString& n : study::conceptNames()) {
            if (used.contains(n))
                conceptBox->addItem(study::tagDisplayName(n), QStringLiteral("concept::") + n);
        }
        auto* difficulty = new QComboBox(filterPart);
        difficulty->setObjectName(QStringLiteral("difficultyFilter"));
        difficulty->addItem(tr("Any difficulty"), -1);
        for (auto d : {study::Difficulty::Foundation, study::Difficulty::Application,
                       study::Difficulty::Expert})
            difficulty->addItem(study::difficultyDisplayName(d), static_cast<int>(d));
        // The learner's last choice on this deck, kept when the page is rebuilt.
        const Filter kept = filters_.value(deckId);
        if (const int i = conceptBox->findData(kept.tag); i >= 0) conceptBox->setCurrentIndex(i);
        if (const int i = difficulty->findData(kept.difficulty); i >= 0)
            difficulty->setCurrentIndex(i);
        connect(conceptBox, &QComboBox::currentIndexChanged, this, [this, deckId, conceptBox] {
            filters_[deckId].tag = conceptBox->currentData().toString();
        });
        connect(difficulty, &QComboBox::currentIndexChanged, this, [this, deckId, difficulty] {
            filters_[deckId].difficulty = difficulty->currentData().toInt();
        });
        const auto options = [conceptBox, difficulty](study::StudyMode mode) {
            study::SessionOptions o;
            o.mode = mode;
            o.filter.tag = conceptBox->currentData().toString();
            const int d = difficulty->currentData().toInt();
            if (d >= 0) o.filter.difficulty = static_cast<study::Difficulty>(d);
            return o;
        };
        conceptBox->setToolTip(tr("Study now, Practice and mock exams draw from this concept"));
        difficulty->setToolTip(tr("Study now, Practice and mock exams draw from this difficulty"));
        // Study now reviews the due and new cards of the chosen concept and difficulty.
        connect(study, &QPushButton::clicked, this, [this, deckId, options] {
            emit studyRequested(deckId, options(study::StudyMode::Review));
        });
        auto* practice = new QPushButton(tr("Practice"), filterPart);
        practice->setObjectName(QStringLiteral("practice"));
        practice->setToolTip(
            tr("Any cards matching the filter, in random order; the schedule is "
               "left untouched"));
        connect(practice, &QPushButton::clicked, this, [this, deckId, options] {
            emit studyRequested(deckId, options(study::StudyMode::Practice));
        });
        auto* exam = new QPushButton(tr("Mock exam"), filterPart);
        exam->setObjectName(QStringLiteral("mockExam"));
        exam->setToolTip(
            tr("Up to 20 questions interleaved across concepts, 90 seconds each, "
               "scored per concept at the end"));
        connect(exam, &QPushButton::clicked, this, [this, deckId, options] {
            emit studyRequested(deckId, options(study::StudyMode::MockExam));
        });
        filterRow->addWidget(conceptBox);
        filterRow->addWidget(difficulty);
        filterRow->addWidget(practice);
        filterRow->addWidget(exam);
        for (QWidget* w : std::initializer_list<QWidget*>{conceptBox, difficulty, practice, exam})
            w->setMinimumHeight(34);
        cl->addWidget(new ReflowRow(studyPart, filterPart, card));
        list_->addWidget(card);
    }
    summary_->setText(
        dueTotal > 0 ? tr("%1 to study today. Press Enter to start.")
                           .arg(counted(dueTotal, tr("card"), tr("cards")))
                     : tr("All caught up for today. Practice and mock exams are always open."));
    setStyleSheet(
        QStringLiteral("QLabel#muted { color: %1; } QPushButton#primary { background: %2; "
                       "color: white; border: none; border-radius: 8px; padding: 8px 20px; "
                       "font-weight: 600; }")
            .arg(css(colors.muted), css(colors.accent)));
}

void HomePage::keyPressEvent(QKeyEvent* event) {
    if ((event->key() == Qt::Key_Return || event->key() == Qt::Key_Enter) &&
        !defaultDeckId().isEmpty()) {
        study::SessionOptions o;
        emit studyRequested(defaultDeckId(), o);
        return;
    }
    QWidget::keyPressEvent(event);
}

}  // namespace pd::ui
