#include "card_dialog.h"

#include <QDialogButtonBox>
#include <QHeaderView>
#include <QLabel>
#include <QPushButton>
#include <QTableWidget>
#include <QTextBrowser>
#include <QVBoxLayout>
#include <algorithm>

#include "study/study_session.h"
#include "theme.h"

namespace pd::ui {

namespace {

QString cardHtml(const study::Deck& deck, const study::Card& card,
                 const std::optional<study::CardSchedule>& schedule, const QDateTime& now) {
    const ThemeColors c = themeColors();
    QString html;
    QStringList chips;
    for (const QString& t : card.concepts()) chips.append(study::tagDisplayName(t));
    chips.append(study::difficultyDisplayName(card.difficulty));
    chips.append(card.isNumeric() ? QObject::tr("predict, then run")
                 : card.type == study::CardType::Single
                     ? QObject::tr("one answer")
                     : QObject::tr("%1 answers").arg(card.correctCount()));
    html += QStringLiteral("<p style='color:%1'><b>%2</b></p>")
                .arg(css(c.muted), chips.join(QStringLiteral(" \u00b7 ")).toHtmlEscaped());
    html += QStringLiteral("<p style='font-size:large'>%1</p>").arg(card.prompt.toHtmlEscaped());
    if (card.numeric) {
        const study::NumericAnswer& a = *card.numeric;
        const QString figure =
            a.device >= 0 ? QObject::tr("%1 of device %2").arg(a.metric).arg(a.device) : a.metric;
        html += QStringLiteral("<p>%1</p>")
                    .arg(QObject::tr("Answered by the run's %1, in %2, within %3.")
                             .arg(figure, study::answerUnitLabel(a.unit), study::toleranceText(a))
                             .toHtmlEscaped());
        if (a.textbook)
            html += QStringLiteral("<p>%1</p>")
                        .arg(QObject::tr("Textbook: %1 (%2).")
                                 .arg(study::formatInUnit(
                                          *a.textbook * study::answerUnitScale(a.unit), a.unit),
                                      a.textbookFormula)
                                 .toHtmlEscaped());
        html += QStringLiteral("<p style='color:%1'>%2</p>")
                    .arg(css(c.muted), a.explanation.toHtmlEscaped());
    }
    for (const study::Option& o : card.options) {
        const QColor color = o.correct ? c.right : c.wrong;
        html +=
            QStringLiteral(
                "<p><span style='color:%1'><b>%2 %3</b></span> %4<br>"
                "<span style='color:%5'>%6</span></p>")
                .arg(css(color), o.correct ? QStringLiteral("\u2713") : QStringLiteral("\u2717"),
                     o.correct ? QObject::tr("Right:") : QObject::tr("Wrong:"),
                     o.text.toHtmlEscaped(), css(c.muted), o.explanation.toHtmlEscaped());
    }
    html += QStringLiteral("<p style='color:%1'>%2: %3<br>%4<br>%5</p>")
                .arg(css(c.muted), QObject::tr("Tags"),
                     card.tags.join(QStringLiteral(", ")).toHtmlEscaped(),
                     QObject::tr("Deck: %1").arg(deck.title.toHtmlEscaped()),
                     QObject::tr("Card id: %1").arg(card.id.toHtmlEscaped()));
    if (schedule) {
        const QDateTime due = study::toDateTime(schedule->fsrs.due);
        html +=
            QStringLiteral("<p style='color:%1'>%2</p>")
                .arg(
                    css(c.muted),
                    QObject::tr("Reviewed %1, %2. Stability %3 days, difficulty %4. Due %5.")
                        .arg(counted(schedule->reps, QObject::tr("time"), QObject::tr("times")))
                        .arg(counted(schedule->lapses, QObject::tr("lapse"), QObject::tr("lapses")))
                        .arg(QString::number(schedule->fsrs.stability.value_or(0.0), 'f', 1))
                        .arg(QString::number(schedule->fsrs.difficulty.value_or(0.0), 'f', 1))
                        .arg(due <= now
                                 ? QObject::tr("now")
                                 : due.toLocalTime().toString(QStringLiteral("d MMM yyyy HH:mm"))));
    } else {
        html += QStringLiteral("<p style='color:%1'>%2</p>")
                    .arg(css(c.muted), QObject::tr("Not scheduled yet (no review-mode answer)."));
    }
    return html;
}

QString modeText(study::StudyMode mode) {
    switch (mode) {
        case study::StudyMode::Review:
            return QObject::tr("Review");
        case study::StudyMode::Practice:
            return QObject::tr("Practice");
        case study::StudyMode::MockExam:
            return QObject::tr("Mock exam");
    }
    return {};
}

QString gradeText(study::Rating grade) {
    switch (grade) {
        case study::Rating::Again:
            return QObject::tr("Again");
        case study::Rating::Hard:
            return QObject::tr("Hard");
        case study::Rating::Good:
            return QObject::tr("Good");
        case study::Rating::Easy:
            return QObject::tr("Easy");
    }
    return {};
}

QString confidenceText(const std::optional<int>& confidence) {
    if (!confidence) return QObject::tr("not given");
    switch (*confidence) {
        case 1:
            return QObject::tr("Guessing");
        case 2:
            return QObject::tr("Unsure");
        case 3:
            return QObject::tr("Sure");
        default:
            return QString::number(*confidence);
    }
}

}  // namespace

CardDialog::CardDialog(const study::Deck& deck, const study::Card& card,
                       const std::optional<study::CardSchedule>& schedule,
                       const QList<study::ReviewEntry>& history, const QDateTime& now,
                       QWidget* parent)
    : QDialog(parent) {
    setWindowTitle(tr("Card %1").arg(card.id));
    resize(760, 720);
    auto* layout = new QVBoxLayout(this);
    auto* text = new QTextBrowser(this);
    text->setOpenLinks(false);
    text->document()->setDocumentMargin(16);
    text->setHtml(cardHtml(deck, card, schedule, now));
    layout->addWidget(text, 1);

    auto* heading = new QLabel(
        history.isEmpty()
            ? tr("Review history: not answered yet.")
            : tr("Review history (%1, newest first)")
                  .arg(counted(static_cast<int>(history.size()), tr("answer"), tr("answers"))),
        this);
    QFont hf = heading->font();
    hf.setBold(true);
    heading->setFont(hf);
    layout->addWidget(heading);
    history_ = new QTableWidget(static_cast<int>(history.size()), 6, this);
    history_->setObjectName(QStringLiteral("reviewHistory"));
    history_->setHorizontalHeaderLabels(
        {tr("Date"), tr("Mode"), tr("Grade"), tr("Confidence"), tr("Answer"), tr("Interval")});
    history_->verticalHeader()->setVisible(false);
    history_->setEditTriggers(QAbstractItemView::NoEditTriggers);
    history_->setSelectionBehavior(QAbstractItemView::SelectRows);
    history_->setShowGrid(false);
    history_->horizontalHeader()->setStretchLastSection(true);
    const ThemeColors c = themeColors();
    for (int row = 0; row < history.size(); ++row) {
        const study::ReviewEntry& e = history[history.size() - 1 - row];
        // Only review-mode answers schedule the card; the interval is until the next due date.
        QString interval = QStringLiteral("\u2014");
        if (e.mode == study::StudyMode::Review && e.after)
            interval =
                study::formatInterval(e.reviewedAt.secsTo(study::toDateTime(e.after->fsrs.due)));
        const QStringList cells = {
            e.reviewedAt.toLocalTime().toString(QStringLiteral("d MMM yyyy HH:mm")),
            modeText(e.mode),
            gradeText(e.grade),
            confidenceText(e.confidence),
            e.correct ? tr("\u2713 right") : tr("\u2717 wrong"),
            interval};
        for (int col = 0; col < cells.size(); ++col) {
            auto* item = new QTableWidgetItem(cells[col]);
            if (col == 4) item->setForeground(e.correct ? c.right : c.wrong);
            if (col == 5 && e.mode != study::StudyMode::Review)
                item->setToolTip(tr("Practice and mock-exam answers leave the schedule as it was"));
            history_->setItem(row, col, item);
        }
    }
    history_->resizeColumnsToContents();
    history_->resizeRowsToContents();
    // As tall as its rows, up to six; the card's text keeps the rest of the dialog.
    const int shownRows = std::min<int>(static_cast<int>(history.size()), 6);
    int height = history_->horizontalHeader()->sizeHint().height() + 2 * history_->frameWidth();
    for (int row = 0; row < shownRows; ++row) height += history_->rowHeight(row);
    history_->setFixedHeight(height);
    history_->setVisible(!history.isEmpty());
    layout->addWidget(history_);

    auto* buttons = new QDialogButtonBox(QDialogButtonBox::Close, this);
    if (card.hasScenario()) {
        showMe_ = buttons->addButton(tr("Show &me"), QDialogButtonBox::ActionRole);
        showMe_->setToolTip(tr("Run this card's scenario in the visualizer (M)"));
        showMe_->setShortcut(QKeySequence(Qt::Key_M));
        const QString deckId = deck.id;
        const QString cardId = card.id;
        connect(showMe_, &QPushButton::clicked, this, [this, deckId, cardId] {
            accept();
            emit showMeRequested(deckId, cardId);
        });
    }
    connect(buttons, &QDialogButtonBox::rejected, this, &QDialog::reject);
    layout->addWidget(buttons);
}

}  // namespace pd::ui
