// Study statistics computed from the review store: plain structs the statistics page draws.
#pragma once

#include <QDate>
#include <QDateTime>
#include <QList>
#include <QMap>
#include <QString>
#include <array>

#include "deck.h"
#include "review_store.h"
#include "study_session.h"

namespace pd::study {

struct ConceptMastery {
    QString name;
    int cards = 0;
    int learned = 0;
    double mastery = 0.0;  // mean recall probability now over the concept's cards (new = 0)
};

// How often answers given at one confidence level (1 guessing, 2 unsure, 3 sure) were right:
// a well-calibrated learner is right more often when sure.
struct ConfidenceCalibration {
    int answers = 0;
    int correct = 0;
};

struct StudyStatistics {
    QDate today;                 // local date the statistics were computed for
    QList<int> reviewsPerDay;    // last 30 days, oldest first, today last
    QList<int> dueForecast;      // next 30 days, today first (today includes overdue)
    int retentionReviews = 0;    // review-mode answers on cards in Review, last 30 days
    double trueRetention = 0.0;  // the share of those answered correctly
    double desiredRetention = 0.9;
    QList<ConceptMastery> mastery;   // per concept, syllabus order
    QMap<QDate, int> reviewsByDate;  // every answer, by local date (the heatmap)
    int streak = 0;                  // consecutive days with answers up to today (or yesterday)
    int totalReviews = 0;
    std::array<ConfidenceCalibration, 3> calibration;  // guessing, unsure, sure; every mode
    int hintedAnswers = 0;                             // Show me used before checking
};

// A count axis with round ticks: 0 to `top` in steps of `step` (1, 2 or 5 times a power of
// ten), top >= maxValue and at most six ticks.
struct CountAxis {
    int top = 1;
    int step = 1;
    int tickCount() const { return top / step + 1; }
};
CountAxis countAxis(int maxValue);

StudyStatistics computeStatistics(const QList<Deck>& decks, const ReviewStore& store,
                                  double desiredRetention, const QDateTime& now);
// The same with the learner's scheduler: its weights (fitted or default) and day counting
// estimate each card's recall.
StudyStatistics computeStatistics(const QList<Deck>& decks, const ReviewStore& store,
                                  const StudySettings& settings, const QDateTime& now);

// Consecutive days with at least one answer ending today, or ending yesterday when there is
// none yet today (a streak is not lost until the day is over).
int studyStreak(const QMap<QDate, int>& reviewsByDate, const QDate& today);

}  // namespace pd::study
