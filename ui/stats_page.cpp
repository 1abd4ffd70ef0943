#include "stats_page.h"

#include <QApplication>
#include <QBarCategoryAxis>
#include <QBarSeries>
#include <QBarSet>
#include <QCategoryAxis>
#include <QChart>
#include <QChartView>
#include <QGridLayout>
#include <QHorizontalBarSeries>
#include <QLabel>
#include <QPainter>
#include <QScrollArea>
#include <QVBoxLayout>
#include <QValueAxis>

#include "theme.h"

namespace pd::ui {

namespace {

constexpr int kCell = 13;
constexpr int kGap = 3;

QChart* makeChart(const QString& title) {
    auto* chart = new QChart;
    chart->setTitle(title);
    chart->setTheme(isDarkPalette() ? QChart::ChartThemeDark : QChart::ChartThemeLight);
    chart->setBackgroundBrush(themeColors().surface);
    chart->setTitleBrush(QApplication::palette().color(QPalette::WindowText));
    QFont f = chart->titleFont();
    f.setBold(true);
    f.setPointSizeF(QApplication::font().pointSizeF() * 1.1);
    chart->setTitleFont(f);
    chart->legend()->setVisible(false);
    chart->setAnimationOptions(QChart::NoAnimation);
    chart->setMargins(QMargins(8, 8, 8, 8));
    return chart;
}

void styleAxis(QAbstractAxis* axis) {
    axis->setLabelsBrush(QApplication::palette().color(QPalette::WindowText));
    axis->setGridLineColor(themeColors().border);
    axis->setLinePenColor(themeColors().border);
}

QChartView* viewFor(QChart* chart, QWidget* parent) {
    auto* view = new QChartView(chart, parent);
    view->setRenderHint(QPainter::Antialiasing);
    view->setMinimumHeight(260);
    view->setFrameShape(QFrame::NoFrame);
    return view;
}

// Bars over 30 days, labelled every 5 days.
QChartView* dayChart(const QString& title, const QList<int>& values, const QDate& first,
                     const QColor& color, QWidget* parent) {
    QChart* chart = makeChart(title);
    auto* set = new QBarSet(title);
    set->setColor(color);
    set->setBorderColor(color);
    int maxValue = 1;
    for (int v : values) {
        *set << v;
        maxValue = std::max(maxValue, v);
    }
    auto* series = new QBarSeries;
    series->append(set);
    series->setBarWidth(0.8);
    chart->addSeries(series);
    // Bars sit at indices 0..n-1; a category axis labels every seventh day by date.
    auto* x = new QCategoryAxis;
    x->setRange(-0.5, values.size() - 0.5);
    x->setLabelsPosition(QCategoryAxis::AxisLabelsPositionOnValue);
    for (int i = 0; i < values.size(); i += 7)
        x->append(first.addDays(i).toString(QStringLiteral("d MMM")), i);
    x->setGridLineVisible(false);
    // Round ticks (0, 50, 100, 150 rather than 0, 29, 58, ...) so bar heights can be read.
    const study::CountAxis scale = study::countAxis(maxValue);
    auto* y = new QValueAxis;
    y->setRange(0, scale.top);
    y->setLabelFormat(QStringLiteral("%d"));
    y->setTickCount(scale.tickCount());
    styleAxis(x);
    styleAxis(y);
    chart->addAxis(x, Qt::AlignBottom);
    chart->addAxis(y, Qt::AlignLeft);
    series->attachAxis(x);
    series->attachAxis(y);
    return viewFor(chart, parent);
}

}  // namespace

// Accuracy per confidence level: are "sure" answers right more often than guesses?
QString calibrationText(const study::StudyStatistics& stats) {
    const std::array<QString, 3> levels = {QObject::tr("Guessing"), QObject::tr("Unsure"),
                                           QObject::tr("Sure")};
    QStringList parts;
    for (std::size_t i = 0; i < levels.size(); ++i) {
        const study::ConfidenceCalibration& c = stats.calibration[i];
        parts.append(c.answers > 0 ? QObject::tr("%1: <b>%2%</b> right (%3 of %4)")
                                         .arg(levels[i])
                                         .arg(qRound(100.0 * c.correct / c.answers))
                                         .arg(c.correct)
                                         .arg(c.answers)
                                   : QObject::tr("%1: no answers").arg(levels[i]));
    }
    QString text = QObject::tr(
                       "<b>Confidence calibration</b> (answers marked G, U or S, every "
                       "mode)<br>") +
                   parts.join(QStringLiteral("  \u00b7  "));
    if (stats.hintedAnswers > 0)
        text += QObject::tr("<br>%1 after Show me before checking (hinted).")
                    .arg(counted(stats.hintedAnswers, QObject::tr("answer was given"),
                                 QObject::tr("answers were given")));
    return text;
}

CalendarHeatmap::CalendarHeatmap(QWidget* parent) : QWidget(parent) {
    setSizePolicy(QSizePolicy::Preferred, QSizePolicy::Fixed);
    setToolTip(tr("Answers per day over the last six months; darker squares mean more answers"));
}

void CalendarHeatmap::setData(const QMap<QDate, int>& counts, const QDate& today) {
    counts_ = counts;
    today_ = today;
    update();
}

QSize CalendarHeatmap::sizeHint() const {
    return {40 + weeks_ * (kCell + kGap), 7 * (kCell + kGap) + 24};
}

void CalendarHeatmap::paintEvent(QPaintEvent*) {
    if (!today_.isValid()) return;
    QPainter p(this);
    p.setRenderHint(QPainter::Antialiasing);
    const ThemeColors c = themeColors();
    const QColor text = palette().color(QPalette::WindowText);
    int maxCount = 1;
    for (int v : counts_) maxCount = std::max(maxCount, v);
    // Columns are weeks starting Monday; the last column holds today.
    const QDate lastMonday = today_.addDays(1 - today_.dayOfWeek());
    const QDate start = lastMonday.addDays(-7 * (weeks_ - 1));
    const int left = 40;
    const int top = 20;
    QFont small = font();
    small.setPointSizeF(font().pointSizeF() * 0.8);
    p.setFont(small);
    p.setPen(c.muted);
    const QStringList days = {tr("Mon"), QString(), tr("Wed"), QString(),
                              tr("Fri"), QString(), QString()};
    for (int d = 0; d < 7; ++d) {
        p.drawText(QRect(0, top + d * (kCell + kGap), left - 6, kCell),
                   Qt::AlignRight | Qt::AlignVCenter, days[d]);
    }
    p.setPen(c.muted);
    for (const auto& [column, month] : monthLabels(start, weeks_, today_))
        p.drawText(QPoint(left + column * (kCell + kGap), top - 6),
                   QLocale().monthName(month, QLocale::ShortFormat));
    for (int w = 0; w < weeks_; ++w) {
        const QDate monday = start.addDays(7 * w);
        for (int d = 0; d < 7; ++d) {
            const QDate day = monday.addDays(d);
            if (day > today_) continue;
            const int n = counts_.value(day);
            QColor fill = c.border;
            if (n > 0) {
                fill = c.accent;
                fill.setAlphaF(0.25 + 0.75 * std::min(1.0, double(n) / maxCount));
            }
            const QRectF cell(left + w * (kCell + kGap), top + d * (kCell + kGap), kCell, kCell);
            p.setPen(day == today_ ? QPen(text, 1.5) : Qt::NoPen);
            p.setBrush(fill);
            p.drawRoundedRect(cell, 3, 3);
        }
    }
}

// A month is named over the week that holds its first day (so December shows from 1 December,
// not from its first Monday); the first column names its month unless a label follows within
// two columns.
QList<QPair<int, int>> CalendarHeatmap::monthLabels(const QDate& start, int weeks,
                                                    const QDate& today) {
    QList<QPair<int, int>> out;
    for (int w = 0; w < weeks; ++w) {
        for (int d = 0; d < 7; ++d) {
            const QDate day = start.addDays(7 * w + d);
            if (day.day() == 1 && day <= today) out.append({w, day.month()});
        }
    }
    if (out.isEmpty() || out.first().first > 2) out.prepend({0, start.month()});
    return out;
}

StatsPage::StatsPage(AppContext& context, QWidget* parent) : QWidget(parent), context_(context) {
    auto* outer = new QVBoxLayout(this);
    outer->setContentsMargins(0, 0, 0, 0);
    auto* scroll = new QScrollArea(this);
    scroll->setWidgetResizable(true);
    scroll->setFrameShape(QFrame::NoFrame);
    auto* canvas = new QWidget(scroll);
    auto* layout = new QVBoxLayout(canvas);
    layout->setContentsMargins(28, 20, 28, 28);
    layout->setSpacing(14);
    auto* title = new QLabel(tr("Statistics"), canvas);
    QFont tf = title->font();
    tf.setPointSizeF(tf.pointSizeF() * 1.5);
    tf.setBold(true);
    title->setFont(tf);
    headline_ = new QLabel(canvas);
    headline_->setWordWrap(true);
    headline_->setTextFormat(Qt::RichText);
    layout->addWidget(title);
    layout->addWidget(headline_);
    auto* heatTitle = new QLabel(tr("<b>Study calendar</b>"), canvas);
    streak_ = new QLabel(canvas);
    auto* heatRow = new QHBoxLayout;
    heatRow->addWidget(heatTitle);
    heatRow->addStretch(1);
    heatRow->addWidget(streak_);
    layout->addLayout(heatRow);
    heatmap_ = new CalendarHeatmap(canvas);
    layout->addWidget(heatmap_);
    grid_ = new QGridLayout;
    grid_->setSpacing(14);
    layout->addLayout(grid_);
    calibration_ = new QLabel(canvas);
    calibration_->setObjectName(QStringLiteral("calibration"));
    calibration_->setWordWrap(true);
    calibration_->setTextFormat(Qt::RichText);
    layout->addWidget(calibration_);
    layout->addStretch(1);
    scroll->setWidget(canvas);
    outer->addWidget(scroll);
}

void StatsPage::refresh() {
    if (!context_.library || !context_.store) return;
    const QDateTime now = context_.now();
    stats_ = study::computeStatistics(context_.library->decks(), *context_.store, context_.settings,
                                      now);
    const ThemeColors c = themeColors();
    qDeleteAll(charts_);
    charts_.clear();

    // True retention counts only review-mode answers on cards that had graduated to Review, so
    // it can be unmeasured beside many answers: say which answers it waits for.
    headline_->setText(
        tr("<span style='font-size:large'><b>%1</b> answers in total  \u00b7  true retention "
           "<b>%2</b> (desired %3%)</span>")
            .arg(stats_.totalReviews)
            .arg(stats_.retentionReviews > 0
                     ? QStringLiteral("%1%").arg(qRound(100 * stats_.trueRetention))
                     : tr("not measured yet"))
            .arg(qRound(100 * stats_.desiredRetention)) +
        (stats_.retentionReviews > 0
             ? QString()
             : tr("<br>True retention counts review answers on cards that have already "
                  "graduated to the Review state (last 30 days); none yet. New and learning "
                  "cards, practice and mock exams are not counted.")));
    calibration_->setText(calibrationText(stats_));
    streak_->setText(
        stats_.streak > 0
            ? tr("Current streak: <b>%1</b>").arg(counted(stats_.streak, tr("day"), tr("days")))
            : tr("No current streak: answer a card today to start one"));
    heatmap_->setData(stats_.reviewsByDate, stats_.today);

    QWidget* host = grid_->parentWidget();
    auto* perDay = dayChart(tr("Answers per day (last 30 days)"), stats_.reviewsPerDay,
                            stats_.today.addDays(-29), c.accent, host);
    auto* forecast = dayChart(tr("Due forecast (next 30 days)"), stats_.dueForecast, stats_.today,
                              c.right, host);

    // Retention: the measured share beside the target, in percent.
    QChart* retention = makeChart(tr("Retention: true (last 30 days) vs desired"));
    {
        auto* measured = new QBarSet(tr("True"));
        measured->setColor(c.accent);
        *measured << (stats_.retentionReviews > 0 ? 100.0 * stats_.trueRetention : 0.0);
        auto* desired = new QBarSet(tr("Desired"));
        desired->setColor(c.muted);
        *desired << 100.0 * stats_.desiredRetention;
        auto* series = new QHorizontalBarSeries;
        series->append(measured);
        series->append(desired);
        series->setLabelsVisible(true);
        series->setLabelsFormat(QStringLiteral("@value%"));
        series->setLabelsPrecision(3);
        retention->addSeries(series);
        auto* x = new QValueAxis;
        x->setRange(0, 100);
        x->setLabelFormat(QStringLiteral("%d%"));
        auto* y = new QBarCategoryAxis;
        y->append(stats_.retentionReviews > 0
                      ? counted(stats_.retentionReviews, tr("review-state answer"),
                                tr("review-state answers"))
                      : tr("no review-state answers yet"));
        styleAxis(x);
        styleAxis(y);
        retention->addAxis(x, Qt::AlignBottom);
        retention->addAxis(y, Qt::AlignLeft);
        series->attachAxis(x);
        series->attachAxis(y);
        retention->legend()->setVisible(true);
        retention->legend()->setLabelColor(palette().color(QPalette::WindowText));
        retention->legend()->setAlignment(Qt::AlignBottom);
    }
    auto* retentionView = viewFor(retention, host);
    retentionView->setMinimumHeight(200);

    QChart* mastery = makeChart(tr("Mastery per concept (recall probability now)"));
    {
        auto* set = new QBarSet(tr("Mastery"));
        set->setColor(c.right);
        QStringList names;
        // Horizontal bars are drawn bottom-up; reverse so the syllabus reads top-down.
        for (auto it = stats_.mastery.crbegin(); it != stats_.mastery.crend(); ++it) {
            *set << qRound(100 * it->mastery);
            names << tr("%1 (%2/%3)")
                         .arg(study::tagDisplayName(it->name))
                         .arg(it->learned)
                         .arg(it->cards);
        }
        auto* series = new QHorizontalBarSeries;
        series->append(set);
        series->setBarWidth(0.7);
        mastery->addSeries(series);
        auto* x = new QValueAxis;
        x->setRange(0, 100);
        x->setLabelFormat(QStringLiteral("%d%"));
        auto* y = new QBarCategoryAxis;
        y->append(names);
        styleAxis(x);
        styleAxis(y);
        mastery->addAxis(x, Qt::AlignBottom);
        mastery->addAxis(y, Qt::AlignLeft);
        series->attachAxis(x);
        series->attachAxis(y);
    }
    auto* masteryView = viewFor(mastery, host);
    masteryView->setMinimumHeight(340);

    grid_->addWidget(perDay, 0, 0);
    grid_->addWidget(forecast, 0, 1);
    grid_->addWidget(masteryView, 1, 0, 1, 2);
    grid_->addWidget(retentionView, 2, 0, 1, 2);
    grid_->setColumnStretch(0, 1);
    grid_->setColumnStretch(1, 1);
    charts_ = {perDay, forecast, retentionView, masteryView};
}

}  // namespace pd::ui
