#include "statistics.h"

#include <QHash>
#include <algorithm>

#include "fsrs.h"

namespace pd::study {

int studyStreak(const QMap<QDate, int>& reviewsByDate, const QDate& today) {
    QDate day = today;
    if (reviewsByDate.value(day) == 0) day = day.addDays(-1);
    int streak = 0;
    while (reviewsByDate.value(day) > 0) {
        ++streak;
        day = day.addDays(-1);
    }
    return streak;
}

CountAxis countAxis(int maxValue) {
    const int max = std::max(1, maxValue);
    for (int power = 1;; power *= 10) {
        for (int factor : {1, 2, 5}) {
            const int step = factor * power;
            const int top = (max + step - 1) / step * step;
            if (top / step <= 5) return {top, step};
        }
    }
}

StudyStatistics computeStatistics(const QList<Deck>& decks, const ReviewStore& store,
                                  double desiredRetention, const QDateTime& now) {
    StudySettings pyFsrs;  // default weights, 24-hour days
    pyFsrs.desiredRetention = desiredRetention;
    pyFsrs.ankiScheduling = false;
    return computeStatistics(decks, store, pyFsrs, now);
}

StudyStatistics computeStatistics(const QList<Deck>& decks, const ReviewStore& store,
                                  const StudySettings& settings, const QDateTime& now) {
    const double desiredRetention = settings.desiredRetention;
    StudyStatistics s;
    s.today = now.toLocalTime().date();
    s.desiredRetention = desiredRetention;
    s.reviewsPerDay = QList<int>(30, 0);
    s.dueForecast = QList<int>(30, 0);

    const QList<ReviewEntry> log = store.reviews();
    s.totalReviews = static_cast<int>(log.size());
    int retained = 0;
    const QDateTime retentionFrom = now.addDays(-30);
    for (const ReviewEntry& e : log) {
        const QDate day = e.reviewedAt.toLocalTime().date();
        s.reviewsByDate[day] += 1;
        const qint64 ago = day.daysTo(s.today);
        if (ago >= 0 && ago < 30) s.reviewsPerDay[29 - static_cast<int>(ago)] += 1;
        if (e.confidence && *e.confidence >= 1 && *e.confidence <= 3) {
            ConfidenceCalibration& c = s.calibration[static_cast<std::size_t>(*e.confidence - 1)];
            ++c.answers;
            c.correct += e.correct ? 1 : 0;
        }
        s.hintedAnswers += e.hinted ? 1 : 0;
        // True retention: how often a card that had graduated to Review was still known.
        if (e.mode == StudyMode::Review && e.before && e.before->fsrs.state == CardState::Review &&
            e.reviewedAt >= retentionFrom) {
            ++s.retentionReviews;
            if (e.correct) ++retained;
        }
    }
    s.trueRetention = s.retentionReviews > 0 ? double(retained) / s.retentionReviews : 0.0;
    s.streak = studyStreak(s.reviewsByDate, s.today);

    FsrsParams params = settings.fsrsParams();
    params.enableFuzzing = false;
    FsrsScheduler scheduler(params, 0);
    scheduler.setDayCounter(settings.dayCounter());
    const FsrsTimePoint nowTp = toTimePoint(now);
    QHash<QString, ConceptMastery> mastery;
    for (const Deck& deck : decks) {
        const QHash<QString, CardSchedule> all = store.schedules(deck.id);
        for (const Card& card : deck.cards) {
            const auto it = all.find(card.id);
            double recall = 0.0;
            if (it != all.end()) {
                const qint64 inDays = s.today.daysTo(toDateTime(it->fsrs.due).toLocalTime().date());
                s.dueForecast[static_cast<int>(std::clamp<qint64>(inDays, 0, 29))] +=
                    inDays < 30 ? 1 : 0;
                recall = scheduler.retrievability(it->fsrs, nowTp);
            }
            for (const QString& c : card.concepts()) {
                ConceptMastery& m = mastery[c];
                m.name = c;
                m.cards += 1;
                m.learned += it != all.end() ? 1 : 0;
                m.mastery += recall;
            }
        }
    }
    for (const QString& c : conceptNames()) {
        if (!mastery.contains(c)) continue;
        ConceptMastery m = mastery.value(c);
        m.mastery = m.cards > 0 ? m.mastery / m.cards : 0.0;
        s.mastery.append(m);
    }
    return s;
}

}  // namespace pd::study
