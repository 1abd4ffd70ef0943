#include <QtTest/QtTest>

#include <array>
#include <chrono>
#include <cmath>
#include <set>
#include <stdexcept>
#include <vector>

#include "study/fsrs.h"

using namespace std::chrono;
using pd::study::CardState;
using pd::study::FsrsCard;
using pd::study::FsrsParams;
using pd::study::FsrsScheduler;
using pd::study::FsrsTimePoint;
using pd::study::makeNewFsrsCard;
using pd::study::Rating;
using pd::study::ratingIndex;

namespace {

const FsrsTimePoint kStart = sys_days{2022y / November / 29} + 12h + 30min;

FsrsParams paramsWithoutFuzz() {
    FsrsParams params;
    params.enableFuzzing = false;
    return params;
}

// Whole days from the review to the due date, rounded down (py-fsrs's (due - last_review).days).
long long intervalDays(const FsrsCard& card) {
    return floor<days>(card.due - *card.lastReview).count();
}

// A Review-state card with a known memory state, last reviewed `elapsed` days before kStart.
FsrsCard reviewCard(double stability, double difficulty, days elapsed) {
    FsrsCard card = makeNewFsrsCard(kStart);
    card.state = CardState::Review;
    card.step.reset();
    card.stability = stability;
    card.difficulty = difficulty;
    card.lastReview = kStart - elapsed;
    card.due = kStart;
    return card;
}

}  // namespace

class TestFsrs : public QObject {
    Q_OBJECT

  private slots:
    void publishedIntervalSequence();
    void memoryStateMatchesPyFsrs();
    void repeatedEasyDrivesDifficultyToFloor();
    void retrievabilityAtZeroAndStability();
    void learningSteps();
    void relearningSteps();
    void sameDayReviewUsesShortTermStability();
    void longTermStability();
    void stabilityNeverBelowMinimum();
    void previewIsMonotonicForReviewCard();
    void previewMatchesReview();
    void fuzzStaysInRangeAndIsReproducible();
    void maximumIntervalClamps();
    void invalidParametersThrow();
};

// py-fsrs test_review_card: Good x6, Again x2, Good x5, each review at the card's due time.
void TestFsrs::publishedIntervalSequence() {
    FsrsScheduler scheduler(paramsWithoutFuzz(), 0);
    const std::vector<Rating> ratings = {Rating::Good, Rating::Good, Rating::Good,  Rating::Good,
                                         Rating::Good, Rating::Good, Rating::Again, Rating::Again,
                                         Rating::Good, Rating::Good, Rating::Good,  Rating::Good,
                                         Rating::Good};
    const std::vector<long long> expected = {0, 2, 11, 46, 163, 498, 0, 0, 2, 4, 7, 12, 21};

    FsrsCard card = makeNewFsrsCard(kStart);
    FsrsTimePoint now = kStart;
    std::vector<long long> intervals;
    for (Rating rating : ratings) {
        card = scheduler.review(card, rating, now);
        QCOMPARE(*card.lastReview, now);
        intervals.push_back(intervalDays(card));
        now = card.due;
    }
    QCOMPARE(intervals, expected);
    QCOMPARE(card.state, CardState::Review);
    QVERIFY(!card.step.has_value());
}

// py-fsrs test_memo_state: Again, then Good x5 at day offsets 0, 0, 1, 3, 8, 21.
void TestFsrs::memoryStateMatchesPyFsrs() {
    FsrsScheduler scheduler(FsrsParams{}, 42);  // fuzz on: it must not touch S or D
    const std::array<Rating, 6> ratings = {Rating::Again, Rating::Good, Rating::Good,
                                           Rating::Good,  Rating::Good, Rating::Good};
    const std::array<int, 6> offsets = {0, 0, 1, 3, 8, 21};

    FsrsCard card = makeNewFsrsCard(kStart);
    FsrsTimePoint now = kStart;
    for (std::size_t i = 0; i < ratings.size(); ++i) {
        now += days(offsets[i]);
        card = scheduler.review(card, ratings[i], now);
    }
    QVERIFY(std::abs(*card.stability - 53.62691) < 1e-4);
    QVERIFY(std::abs(*card.difficulty - 6.3574867) < 1e-4);
}

// py-fsrs test_repeated_correct_reviews.
void TestFsrs::repeatedEasyDrivesDifficultyToFloor() {
    FsrsScheduler scheduler(paramsWithoutFuzz(), 0);
    FsrsCard card = makeNewFsrsCard(kStart);
    for (int i = 0; i < 10; ++i) {
        card = scheduler.review(card, Rating::Easy, kStart + microseconds(i));
    }
    QCOMPARE(*card.difficulty, 1.0);
}

void TestFsrs::retrievabilityAtZeroAndStability() {
    FsrsScheduler scheduler(paramsWithoutFuzz(), 0);

    for (double stability : {0.5, 2.3065, 11.0, 46.31685844, 497.8765}) {
        QVERIFY(std::abs(scheduler.forgettingCurve(0.0, stability) - 1.0) < 1e-9);
        QVERIFY(std::abs(scheduler.forgettingCurve(stability, stability) - 0.9) < 1e-9);
        // Decreasing in t.
        QVERIFY(scheduler.forgettingCurve(2.0 * stability, stability) < 0.9);
    }

    // Card-based, as py-fsrs's get_card_retrievability: 0 for a new card, 1 right after a review,
    // 0.9 once S days have passed. Elapsed time counts whole days only.
    FsrsCard card = makeNewFsrsCard(kStart);
    QCOMPARE(scheduler.retrievability(card, kStart), 0.0);

    card = reviewCard(10.0, 5.0, days(0));
    QVERIFY(std::abs(scheduler.retrievability(card, *card.lastReview) - 1.0) < 1e-9);
    QVERIFY(std::abs(scheduler.retrievability(card, *card.lastReview + days(10)) - 0.9) < 1e-9);
    QVERIFY(std::abs(scheduler.retrievability(card, *card.lastReview + days(10) + 23h) - 0.9) <
            1e-9);
    QVERIFY(scheduler.retrievability(card, *card.lastReview + days(11)) < 0.9);
}

void TestFsrs::learningSteps() {
    FsrsScheduler scheduler(paramsWithoutFuzz(), 0);
    const FsrsCard fresh = makeNewFsrsCard(kStart);

    const FsrsCard again = scheduler.review(fresh, Rating::Again, kStart);
    QCOMPARE(again.state, CardState::Learning);
    QCOMPARE(again.step, std::optional<int>(0));
    QCOMPARE(again.due - kStart, FsrsTimePoint::duration(1min));
    QCOMPARE(*again.stability, 0.212);  // w0

    // Hard on step 0 with two steps waits the average of the first two: 5.5 minutes.
    const FsrsCard hard = scheduler.review(fresh, Rating::Hard, kStart);
    QCOMPARE(hard.step, std::optional<int>(0));
    QCOMPARE(hard.due - kStart, FsrsTimePoint::duration(330s));

    const FsrsCard good = scheduler.review(fresh, Rating::Good, kStart);
    QCOMPARE(good.state, CardState::Learning);
    QCOMPARE(good.step, std::optional<int>(1));
    QCOMPARE(good.due - kStart, FsrsTimePoint::duration(10min));

    // Good on the last step graduates; Hard on a later step repeats that step.
    const FsrsCard hardOnLast = scheduler.review(good, Rating::Hard, good.due);
    QCOMPARE(hardOnLast.step, std::optional<int>(1));
    QCOMPARE(hardOnLast.due - good.due, FsrsTimePoint::duration(10min));
    const FsrsCard graduated = scheduler.review(good, Rating::Good, good.due);
    QCOMPARE(graduated.state, CardState::Review);
    QVERIFY(!graduated.step.has_value());
    QCOMPARE(intervalDays(graduated), 2LL);

    // Easy graduates straight away with the Easy initial stability w3.
    const FsrsCard easy = scheduler.review(fresh, Rating::Easy, kStart);
    QCOMPARE(easy.state, CardState::Review);
    QCOMPARE(*easy.stability, 8.2956);
    QCOMPARE(intervalDays(easy), 8LL);

    // One learning step: Hard waits 1.5 times it.
    FsrsParams oneStep = paramsWithoutFuzz();
    oneStep.learningSteps = {10min};
    FsrsScheduler oneStepScheduler(oneStep, 0);
    const FsrsCard hardOneStep = oneStepScheduler.review(fresh, Rating::Hard, kStart);
    QCOMPARE(hardOneStep.due - kStart, FsrsTimePoint::duration(15min));

    // No learning steps: every grade goes straight to Review.
    FsrsParams noSteps = paramsWithoutFuzz();
    noSteps.learningSteps.clear();
    FsrsScheduler noStepScheduler(noSteps, 0);
    const FsrsCard direct = noStepScheduler.review(fresh, Rating::Again, kStart);
    QCOMPARE(direct.state, CardState::Review);
    QCOMPARE(intervalDays(direct), 1LL);
}

void TestFsrs::relearningSteps() {
    FsrsScheduler scheduler(paramsWithoutFuzz(), 0);
    const FsrsCard review = reviewCard(20.0, 5.0, days(20));

    const FsrsCard lapsed = scheduler.review(review, Rating::Again, kStart);
    QCOMPARE(lapsed.state, CardState::Relearning);
    QCOMPARE(lapsed.step, std::optional<int>(0));
    QCOMPARE(lapsed.due - kStart, FsrsTimePoint::duration(10min));
    QVERIFY(*lapsed.stability < 20.0);

    // One relearning step: Hard waits 15 minutes, Good returns the card to Review.
    const FsrsCard hard = scheduler.review(lapsed, Rating::Hard, lapsed.due);
    QCOMPARE(hard.state, CardState::Relearning);
    QCOMPARE(hard.due - lapsed.due, FsrsTimePoint::duration(15min));
    const FsrsCard relearned = scheduler.review(lapsed, Rating::Good, lapsed.due);
    QCOMPARE(relearned.state, CardState::Review);
    QVERIFY(intervalDays(relearned) >= 1);

    // Without relearning steps a lapse stays in Review with a day-based interval.
    FsrsParams noSteps = paramsWithoutFuzz();
    noSteps.relearningSteps.clear();
    FsrsScheduler noStepScheduler(noSteps, 0);
    const FsrsCard stays = noStepScheduler.review(review, Rating::Again, kStart);
    QCOMPARE(stays.state, CardState::Review);
    QVERIFY(intervalDays(stays) >= 1);
}

// Under one whole day since the last review, any state uses S' = S e^(w17 (G - 3 + w18)) S^-w19
// (at least S for Good/Easy); from one day on, the long-term recall/forget formulas.
void TestFsrs::sameDayReviewUsesShortTermStability() {
    FsrsScheduler scheduler(paramsWithoutFuzz(), 0);
    const auto& w = scheduler.params().w;
    const double s = 20.0;

    const FsrsCard almostDay = reviewCard(s, 5.0, days(0));
    const FsrsTimePoint at = *almostDay.lastReview + 23h + 59min;
    const FsrsCard hard = scheduler.review(almostDay, Rating::Hard, at);
    const double expectedHard = s * std::exp(w[17] * (2.0 - 3.0 + w[18])) * std::pow(s, -w[19]);
    QVERIFY(std::abs(*hard.stability - expectedHard) < 1e-9);
    QVERIFY(*hard.stability < s);  // Hard is not floored in 6.3.1

    const FsrsCard good = scheduler.review(almostDay, Rating::Good, at);
    QCOMPARE(*good.stability, s);  // e^(w17 w18) S^-w19 < 1 here, floored to 1

    const FsrsCard nextDay = scheduler.review(almostDay, Rating::Good, *almostDay.lastReview + 24h);
    QVERIFY(*nextDay.stability > s);  // long-term recall stability grows
}

// A day or more after the last review. Recall (Hard/Good/Easy):
//   S' = S (1 + e^w8 (11 - D) S^-w9 (e^((1 - R) w10) - 1) (w15 if Hard) (w16 if Easy)).
// Lapse (Again): S' = min(w11 D^-w12 ((S + 1)^w13 - 1) e^((1 - R) w14), S / e^(w17 w18)).
void TestFsrs::longTermStability() {
    FsrsScheduler scheduler(paramsWithoutFuzz(), 0);
    const auto& w = scheduler.params().w;
    const auto recall = [&](double s, double d, double r, double penaltyOrBonus) {
        return s * (1.0 + std::exp(w[8]) * (11.0 - d) * std::pow(s, -w[9]) *
                              (std::exp((1.0 - r) * w[10]) - 1.0) * penaltyOrBonus);
    };
    const auto longTerm = [&](double s, double d, double r) {
        return w[11] * std::pow(d, -w[12]) * (std::pow(s + 1.0, w[13]) - 1.0) *
               std::exp((1.0 - r) * w[14]);
    };

    const FsrsCard typical = reviewCard(20.0, 5.0, days(20));
    const double r = scheduler.retrievability(typical, kStart);
    QVERIFY(std::abs(r - 0.9) < 1e-9);
    QVERIFY(std::abs(*scheduler.review(typical, Rating::Hard, kStart).stability -
                     recall(20.0, 5.0, r, w[15])) < 1e-9);
    QVERIFY(std::abs(*scheduler.review(typical, Rating::Good, kStart).stability -
                     recall(20.0, 5.0, r, 1.0)) < 1e-9);
    QVERIFY(std::abs(*scheduler.review(typical, Rating::Easy, kStart).stability -
                     recall(20.0, 5.0, r, w[16])) < 1e-9);

    const FsrsCard lapsed = scheduler.review(typical, Rating::Again, kStart);
    QVERIFY(std::abs(*lapsed.stability - longTerm(20.0, 5.0, r)) < 1e-9);

    // For a weak, easy card long overdue the long-term value exceeds S / e^(w17 w18), which caps
    // it.
    const FsrsCard weak = reviewCard(0.5, 1.0, days(3650));
    const double cap = 0.5 / std::exp(w[17] * w[18]);
    QVERIFY(longTerm(0.5, 1.0, scheduler.retrievability(weak, kStart)) > cap);
    QVERIFY(std::abs(*scheduler.review(weak, Rating::Again, kStart).stability - cap) < 1e-9);
}

// py-fsrs test_stability_lower_bound: repeated lapses a day late never go below 0.001.
void TestFsrs::stabilityNeverBelowMinimum() {
    FsrsScheduler scheduler(FsrsParams{}, 3);
    FsrsCard card = makeNewFsrsCard(kStart);
    for (int i = 0; i < 1000; ++i) {
        card = scheduler.review(card, Rating::Again, card.due + days(1));
        QVERIFY(*card.stability >= pd::study::kFsrsStabilityMin);
    }
    QCOMPARE(*card.stability, pd::study::kFsrsStabilityMin);  // the floor is actually reached
}

void TestFsrs::previewIsMonotonicForReviewCard() {
    FsrsScheduler scheduler(paramsWithoutFuzz(), 0);
    for (const FsrsCard& card : {reviewCard(3.0, 5.0, days(3)), reviewCard(46.3, 2.1, days(46)),
                                 reviewCard(12.0, 9.5, days(30)), reviewCard(12.0, 5.0, days(0))}) {
        const std::array<FsrsTimePoint, 4> due = scheduler.previewDue(card, kStart);
        QVERIFY(due[ratingIndex(Rating::Again)] <= due[ratingIndex(Rating::Hard)]);
        QVERIFY(due[ratingIndex(Rating::Hard)] <= due[ratingIndex(Rating::Good)]);
        QVERIFY(due[ratingIndex(Rating::Good)] <= due[ratingIndex(Rating::Easy)]);
        QCOMPARE(due[ratingIndex(Rating::Again)] - kStart, FsrsTimePoint::duration(10min));
        QVERIFY(due[ratingIndex(Rating::Hard)] - kStart >= FsrsTimePoint::duration(days(1)));
    }
}

void TestFsrs::previewMatchesReview() {
    FsrsScheduler scheduler(FsrsParams{}, 1234);  // fuzz on
    const FsrsCard card = reviewCard(60.0, 5.0, days(60));
    const std::array<FsrsCard, 4> preview = scheduler.preview(card, kStart);
    const std::array<FsrsCard, 4> again = scheduler.preview(card, kStart);
    QVERIFY(preview == again);  // preview does not consume randomness
    for (Rating rating : pd::study::kAllRatings) {
        FsrsScheduler copy = scheduler;
        QVERIFY(copy.review(card, rating, kStart) == preview[ratingIndex(rating)]);
    }
}

void TestFsrs::fuzzStaysInRangeAndIsReproducible() {
    // py-fsrs _get_fuzz_range(100): delta = 1 + 0.15 * 4.5 + 0.1 * 13 + 0.05 * 80 = 6.975.
    FsrsScheduler plain(paramsWithoutFuzz(), 0);
    QCOMPARE(plain.fuzzRange(100), std::make_pair(93, 107));
    QCOMPARE(plain.fuzzRange(3), std::make_pair(2, 4));

    const FsrsCard card = reviewCard(90.0, 5.0, days(90));
    const FsrsCard unfuzzed = plain.review(card, Rating::Good, kStart);
    const int base = static_cast<int>(intervalDays(unfuzzed));
    QVERIFY(base > 100);  // a long interval, fuzzed by several days
    const auto [lo, hi] = plain.fuzzRange(base);
    QVERIFY(lo < base && base < hi);

    std::set<long long> seen;
    for (std::uint64_t seed = 0; seed < 300; ++seed) {
        FsrsScheduler fuzzy(FsrsParams{}, seed);
        const FsrsCard fuzzed = fuzzy.review(card, Rating::Good, kStart);
        const long long ivl = intervalDays(fuzzed);
        QVERIFY2(lo <= ivl && ivl <= hi, qPrintable(QString::number(ivl)));
        QCOMPARE(fuzzed.due - kStart, FsrsTimePoint::duration(days(ivl)));  // whole days
        QCOMPARE(*fuzzed.stability, *unfuzzed.stability);  // fuzz only moves the due date
        seen.insert(ivl);
    }
    // Fuzz is actually applied, and both ends of the range are reachable.
    QVERIFY(seen.size() > 5);
    QVERIFY(seen.count(lo) == 1 && seen.count(hi) == 1);

    // Same seed, same sequence of reviews: same due dates.
    const auto run = [&](std::uint64_t seed) {
        FsrsScheduler fuzzy(FsrsParams{}, seed);
        std::vector<FsrsTimePoint> dues;
        FsrsCard c = makeNewFsrsCard(kStart);
        FsrsTimePoint now = kStart;
        // Eight Good reviews span decades; more would run past system_clock's year-2262 range.
        for (int i = 0; i < 8; ++i) {
            c = fuzzy.review(c, Rating::Good, now);
            dues.push_back(c.due);
            now = c.due;
        }
        return dues;
    };
    QVERIFY(run(7) == run(7));
    QVERIFY(run(7) != run(8));

    FsrsScheduler reseeded(FsrsParams{}, 1);
    const FsrsCard first = reseeded.review(card, Rating::Good, kStart);
    reseeded.reseed(1);
    QVERIFY(reseeded.review(card, Rating::Good, kStart) == first);
}

void TestFsrs::maximumIntervalClamps() {
    FsrsParams params = paramsWithoutFuzz();
    params.maximumInterval = 100;
    FsrsScheduler scheduler(params, 0);
    QCOMPARE(scheduler.nextIntervalDays(1e6), 100);
    QCOMPARE(scheduler.nextIntervalDays(0.001), 1);  // and at least one day

    const FsrsCard card = reviewCard(500.0, 3.0, days(500));
    QCOMPARE(intervalDays(scheduler.review(card, Rating::Easy, kStart)), 100LL);

    params.enableFuzzing = true;
    for (std::uint64_t seed = 0; seed < 50; ++seed) {
        FsrsScheduler fuzzy(params, seed);
        const long long ivl = intervalDays(fuzzy.review(card, Rating::Good, kStart));
        QVERIFY(ivl <= 100);
        QVERIFY(ivl >= fuzzy.fuzzRange(100).first);
    }

    // The default cap is 36500 days.
    FsrsScheduler defaults(paramsWithoutFuzz(), 0);
    QCOMPARE(defaults.nextIntervalDays(1e9), 36500);
}

void TestFsrs::invalidParametersThrow() {
    FsrsParams tooHigh;
    tooHigh.w[6] = 100.0;
    QVERIFY_THROWS_EXCEPTION(std::invalid_argument, FsrsScheduler(tooHigh, 0));

    FsrsParams tooLow;
    tooLow.w[10] = -42.0;
    QVERIFY_THROWS_EXCEPTION(std::invalid_argument, FsrsScheduler(tooLow, 0));

    FsrsParams retention;
    retention.desiredRetention = 1.0;
    QVERIFY_THROWS_EXCEPTION(std::invalid_argument, FsrsScheduler(retention, 0));

    FsrsScheduler ok(FsrsParams{}, 0);
    QCOMPARE(ok.params().w[20], 0.1542);
}

QTEST_APPLESS_MAIN(TestFsrs)
#include "test_fsrs.moc"
