#include "fsrs.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <stdexcept>
#include <string>

namespace pd::study {

namespace {

using std::chrono::microseconds;

// py-fsrs LOWER_BOUNDS_PARAMETERS / UPPER_BOUNDS_PARAMETERS.
// (py-fsrs's STABILITY_MIN = 0.001 for w0..w3.)
constexpr FsrsWeights kLowerBounds = {0.001, 0.001, 0.001, 0.001, 1.0,   0.001, 0.001,
                                      0.001, 0.0,   0.0,   0.001, 0.001, 0.001, 0.001,
                                      0.0,   0.0,   1.0,   0.0,   0.0,   0.0,   0.1};
constexpr FsrsWeights kUpperBounds = {100.0, 100.0, 100.0, 100.0, 10.0, 4.0,  4.0,
                                      0.75,  4.5,   0.8,   3.5,   5.0,  0.25, 0.9,
                                      4.0,   1.0,   6.0,   2.0,   2.0,  0.8,  0.8};

// py-fsrs FUZZ_RANGES.
struct FuzzRange {
    double start;
    double end;
    double factor;
};
constexpr std::array<FuzzRange, 3> kFuzzRanges = {{
    {2.5, 7.0, 0.15},
    {7.0, 20.0, 0.1},
    {20.0, std::numeric_limits<double>::infinity(), 0.05},
}};

// Python's round() for floats: round half to even.
double roundHalfEven(double x) {
    const double lower = std::floor(x);
    const double diff = x - lower;
    if (diff < 0.5) return lower;
    if (diff > 0.5) return lower + 1.0;
    return std::fmod(lower, 2.0) == 0.0 ? lower : lower + 1.0;
}

// Python's timedelta.days: whole days, floored.
long long wholeDays(FsrsClock::duration d) {
    return std::chrono::floor<std::chrono::days>(d).count();
}

// Uniform double in [0, 1) from the top 53 bits; unlike std::uniform_real_distribution this gives
// the same sequence on every standard library.
double uniform01(std::mt19937_64& rng) {
    return static_cast<double>(rng() >> 11) * 0x1.0p-53;
}

// timedelta * float and timedelta / float round to the microsecond, half to even.
microseconds scaled(microseconds d, double factor) {
    return microseconds(
        static_cast<microseconds::rep>(roundHalfEven(static_cast<double>(d.count()) * factor)));
}

microseconds hardStepInterval(const std::vector<std::chrono::seconds>& steps, int step) {
    if (step == 0 && steps.size() == 1) return scaled(steps[0], 1.5);
    if (step == 0 && steps.size() >= 2) return scaled(steps[0] + steps[1], 0.5);
    return steps[static_cast<std::size_t>(step)];
}

double g(Rating rating) {
    return static_cast<double>(static_cast<int>(rating));
}

// py-fsrs writes exponentials as `math.e ** x`, i.e. C pow() on the double nearest e; doing the
// same (rather than std::exp) keeps results bit-identical with py-fsrs on the same libm.
constexpr double kPythonE = 2.718281828459045;
double ePow(double x) {
    return std::pow(kPythonE, x);
}

void validate(const FsrsParams& params) {
    std::string errors;
    for (std::size_t i = 0; i < kFsrsWeightCount; ++i) {
        const double w = params.w[i];
        if (!(kLowerBounds[i] <= w && w <= kUpperBounds[i])) {
            errors += "w[" + std::to_string(i) + "] = " + std::to_string(w) +
                      " is out of bounds [" + std::to_string(kLowerBounds[i]) + ", " +
                      std::to_string(kUpperBounds[i]) + "]\n";
        }
    }
    if (!(params.desiredRetention > 0.0 && params.desiredRetention < 1.0)) {
        errors += "desiredRetention must be in (0, 1)\n";
    }
    if (params.maximumInterval < 1) errors += "maximumInterval must be at least 1 day\n";
    if (!errors.empty()) throw std::invalid_argument("Invalid FSRS parameters:\n" + errors);
}

}  // namespace

const FsrsWeights& fsrsLowerBounds() {
    return kLowerBounds;
}
const FsrsWeights& fsrsUpperBounds() {
    return kUpperBounds;
}

FsrsCard makeNewFsrsCard(FsrsTimePoint due) {
    FsrsCard card;
    card.due = due;
    return card;
}

FsrsScheduler::FsrsScheduler(FsrsParams params)
    : FsrsScheduler(std::move(params), (static_cast<std::uint64_t>(std::random_device{}()) << 32) ^
                                           static_cast<std::uint64_t>(std::random_device{}())) {}

FsrsScheduler::FsrsScheduler(FsrsParams params, std::uint64_t seed)
    : params_(std::move(params)), rng_(seed) {
    validate(params_);
    decay_ = -params_.w[20];
    factor_ = std::pow(0.9, 1.0 / decay_) - 1.0;
}

FsrsCard FsrsScheduler::review(const FsrsCard& card, Rating rating, FsrsTimePoint now) {
    return reviewWith(card, rating, now, rng_);
}

std::array<FsrsCard, 4> FsrsScheduler::preview(const FsrsCard& card, FsrsTimePoint now) const {
    std::array<FsrsCard, 4> result;
    for (Rating rating : kAllRatings) {
        Rng rng = rng_;  // every rating sees the RNG state the next review() will see
        result[ratingIndex(rating)] = reviewWith(card, rating, now, rng);
    }
    return result;
}

std::array<FsrsTimePoint, 4> FsrsScheduler::previewDue(const FsrsCard& card,
                                                       FsrsTimePoint now) const {
    const std::array<FsrsCard, 4> cards = preview(card, now);
    std::array<FsrsTimePoint, 4> due;
    for (std::size_t i = 0; i < cards.size(); ++i) due[i] = cards[i].due;
    return due;
}

long long FsrsScheduler::elapsedDays(const FsrsCard& card, FsrsTimePoint now) const {
    if (!card.lastReview) return 0;
    const long long days = dayCounter_ ? dayCounter_(now) - dayCounter_(*card.lastReview)
                                       : wholeDays(now - *card.lastReview);
    return std::max(0LL, days);
}

double FsrsScheduler::retrievability(const FsrsCard& card, FsrsTimePoint now) const {
    if (!card.lastReview || !card.stability) return 0.0;
    return forgettingCurve(static_cast<double>(elapsedDays(card, now)), *card.stability);
}

double FsrsScheduler::forgettingCurve(double elapsedDays, double stability) const {
    return std::pow(1.0 + factor_ * elapsedDays / stability, decay_);
}

int FsrsScheduler::nextIntervalDays(double stability) const {
    const double interval =
        stability / factor_ * (std::pow(params_.desiredRetention, 1.0 / decay_) - 1.0);
    double days = roundHalfEven(interval);
    days = std::max(days, 1.0);
    days = std::min(days, static_cast<double>(params_.maximumInterval));
    return static_cast<int>(days);
}

std::pair<int, int> FsrsScheduler::fuzzRange(int intervalDays) const {
    double delta = 1.0;
    for (const FuzzRange& range : kFuzzRanges) {
        delta +=
            range.factor *
            std::max(std::min(static_cast<double>(intervalDays), range.end) - range.start, 0.0);
    }
    int minIvl = static_cast<int>(roundHalfEven(intervalDays - delta));
    int maxIvl = static_cast<int>(roundHalfEven(intervalDays + delta));
    minIvl = std::max(2, minIvl);
    maxIvl = std::min(maxIvl, params_.maximumInterval);
    minIvl = std::min(minIvl, maxIvl);
    return {minIvl, maxIvl};
}

FsrsCard FsrsScheduler::reviewWith(const FsrsCard& input, Rating rating, FsrsTimePoint now,
                                   Rng& rng) const {
    FsrsCard card = input;
    // py-fsrs: days_since_last_review < 1, in whole (floored) days; never true for a new card.
    const bool sameDay = card.lastReview && elapsedDays(card, now) < 1;
    const bool passed = rating != Rating::Again;

    // Graduate into Review with an interval derived from the (new) stability.
    microseconds nextInterval{0};
    const auto graduate = [&] {
        card.state = CardState::Review;
        card.step.reset();
        nextInterval = std::chrono::days(nextIntervalDays(*card.stability));
    };
    bool ordered_ = false;  // Anki's order: the interval is final, fuzz included
    // Stability/difficulty update for a card that already has a memory state.
    const auto updateMemory = [&] {
        if (sameDay) {
            card.stability = shortTermStability(*card.stability, rating);
        } else {
            card.stability =
                nextStability(*card.difficulty, *card.stability, retrievability(card, now), rating);
        }
        card.difficulty = nextDifficulty(*card.difficulty, rating);
    };
    // Learning and Relearning share the step logic, each with its own list of steps.
    const auto stepThrough = [&](const std::vector<std::chrono::seconds>& steps) {
        const int step = card.step.value_or(0);
        const int count = static_cast<int>(steps.size());
        if (steps.empty() || (step >= count && passed)) {
            graduate();
            return;
        }
        switch (rating) {
            case Rating::Again:
                card.step = 0;
                nextInterval = steps[0];
                break;
            case Rating::Hard:  // the step stays the same
                nextInterval = hardStepInterval(steps, step);
                break;
            case Rating::Good:
                if (step + 1 == count) {
                    graduate();
                } else {
                    card.step = step + 1;
                    nextInterval = steps[static_cast<std::size_t>(step + 1)];
                }
                break;
            case Rating::Easy:
                graduate();
                break;
        }
    };

    switch (card.state) {
        case CardState::Learning:
            if (!card.stability || !card.difficulty) {
                card.stability = initialStability(rating);
                card.difficulty = initialDifficulty(rating, /*clamp=*/true);
            } else {
                updateMemory();
            }
            stepThrough(params_.learningSteps);
            break;

        case CardState::Review:
            updateMemory();
            if (rating == Rating::Again && !params_.relearningSteps.empty()) {
                card.state = CardState::Relearning;
                card.step = 0;
                nextInterval = params_.relearningSteps[0];
            } else if (params_.ankiIntervalOrder && rating != Rating::Again) {
                // All three from the RNG state this review starts with, as preview shows them.
                const std::array<int, 3> ordered = orderedReviewIntervals(input, now, rng);
                const std::size_t i = ratingIndex(rating) - 1;
                nextInterval = std::chrono::days(ordered[i]);
                ordered_ = true;
                // This review's fuzz draw, consumed when fuzz applied (at 3 days or more).
                const int before = std::max(unfuzzedReviewIntervals(input, now)[i],
                                            i == 0 ? 1 : ordered[i - 1] + 1);
                if (params_.enableFuzzing && before >= 3) uniform01(rng);
            } else {
                nextInterval = std::chrono::days(nextIntervalDays(*card.stability));
            }
            break;

        case CardState::Relearning:
            updateMemory();
            stepThrough(params_.relearningSteps);
            break;
    }

    if (params_.enableFuzzing && card.state == CardState::Review && !ordered_) {
        nextInterval = fuzzedInterval(nextInterval, rng);
    }

    card.due = std::chrono::time_point_cast<FsrsClock::duration>(now + nextInterval);
    card.lastReview = now;
    return card;
}

// The stability a review card would have after a passing `rating` now (updateMemory's).
double FsrsScheduler::nextMemoryStability(const FsrsCard& card, Rating rating,
                                          FsrsTimePoint now) const {
    if (card.lastReview && elapsedDays(card, now) < 1)
        return shortTermStability(*card.stability, rating);
    return nextStability(*card.difficulty, *card.stability, retrievability(card, now), rating);
}

// A review card's hard, good and easy intervals in days, before fuzz and order.
std::array<int, 3> FsrsScheduler::unfuzzedReviewIntervals(const FsrsCard& card,
                                                          FsrsTimePoint now) const {
    std::array<int, 3> days{};
    for (Rating r : {Rating::Hard, Rating::Good, Rating::Easy})
        days[ratingIndex(r) - 1] = nextIntervalDays(nextMemoryStability(card, r, now));
    return days;
}

// Anki (rslib scheduler/states/review.rs, passing_fsrs_review_intervals): hard, then good at
// least hard + 1, then easy at least good + 1, fuzzed with one draw (Anki's one fuzz factor
// per review) and kept in that order after fuzz, each within the maximum interval.
std::array<int, 3> FsrsScheduler::orderedReviewIntervals(const FsrsCard& card, FsrsTimePoint now,
                                                         const Rng& state) const {
    const std::array<int, 3> raw = unfuzzedReviewIntervals(card, now);
    std::array<int, 3> days{};
    int floor = 1;
    for (std::size_t i = 0; i < 3; ++i) {
        int d = std::max(raw[i], floor);
        if (params_.enableFuzzing) {
            Rng draw = state;
            d = static_cast<int>(
                std::chrono::floor<std::chrono::days>(fuzzedInterval(std::chrono::days(d), draw))
                    .count());
        }
        d = std::min(std::max(d, floor), params_.maximumInterval);
        days[i] = d;
        floor = d + 1;
    }
    return days;
}

std::chrono::microseconds FsrsScheduler::fuzzedInterval(microseconds interval, Rng& rng) const {
    const long long intervalDays = std::chrono::floor<std::chrono::days>(interval).count();
    if (static_cast<double>(intervalDays) < 2.5) return interval;  // no fuzz below 2.5 days

    const auto [minIvl, maxIvl] = fuzzRange(static_cast<int>(intervalDays));
    // A uniform whole number of days in [minIvl, maxIvl]. py-fsrs rounds here instead of flooring,
    // which can overshoot maxIvl by one day; fsrs-rs (Anki) and ts-fsrs floor, as done here.
    const double fuzzed = std::floor(uniform01(rng) * (maxIvl - minIvl + 1) + minIvl);
    const int days = std::min(static_cast<int>(fuzzed), params_.maximumInterval);
    return std::chrono::days(days);
}

double FsrsScheduler::initialStability(Rating rating) const {
    return std::max(params_.w[ratingIndex(rating)], kFsrsStabilityMin);
}

double FsrsScheduler::initialDifficulty(Rating rating, bool clamp) const {
    const double d = params_.w[4] - ePow(params_.w[5] * (g(rating) - 1.0)) + 1.0;
    return clamp ? std::clamp(d, kFsrsMinDifficulty, kFsrsMaxDifficulty) : d;
}

double FsrsScheduler::shortTermStability(double stability, Rating rating) const {
    const std::array<double, kFsrsWeightCount>& w = params_.w;
    double increase = ePow(w[17] * (g(rating) - 3.0 + w[18])) * std::pow(stability, -w[19]);
    const bool floored = rating == Rating::Good || rating == Rating::Easy ||
                         (rating == Rating::Hard && params_.ankiSameDayHard);
    if (floored) increase = std::max(increase, 1.0);
    return std::max(stability * increase, kFsrsStabilityMin);
}

double FsrsScheduler::nextDifficulty(double difficulty, Rating rating) const {
    const double w6 = params_.w[6];
    const double w7 = params_.w[7];
    const double deltaDifficulty = -(w6 * (g(rating) - 3.0));
    // Linear damping: the closer D is to 10, the smaller the change.
    const double damped = difficulty + (10.0 - difficulty) * deltaDifficulty / 9.0;
    // Mean reversion towards D0(Easy), unclamped.
    const double next = w7 * initialDifficulty(Rating::Easy, /*clamp=*/false) + (1.0 - w7) * damped;
    return std::clamp(next, kFsrsMinDifficulty, kFsrsMaxDifficulty);
}

double FsrsScheduler::nextStability(double difficulty, double stability, double retrievability,
                                    Rating rating) const {
    const double next = rating == Rating::Again
                            ? nextForgetStability(difficulty, stability, retrievability)
                            : nextRecallStability(difficulty, stability, retrievability, rating);
    return std::max(next, kFsrsStabilityMin);
}

double FsrsScheduler::nextForgetStability(double difficulty, double stability,
                                          double retrievability) const {
    const std::array<double, kFsrsWeightCount>& w = params_.w;
    const double longTerm = w[11] * std::pow(difficulty, -w[12]) *
                            (std::pow(stability + 1.0, w[13]) - 1.0) *
                            ePow((1.0 - retrievability) * w[14]);
    const double shortTerm = stability / ePow(w[17] * w[18]);
    return std::min(longTerm, shortTerm);
}

double FsrsScheduler::nextRecallStability(double difficulty, double stability,
                                          double retrievability, Rating rating) const {
    const std::array<double, kFsrsWeightCount>& w = params_.w;
    const double hardPenalty = rating == Rating::Hard ? w[15] : 1.0;
    const double easyBonus = rating == Rating::Easy ? w[16] : 1.0;
    return stability *
           (1.0 + ePow(w[8]) * (11.0 - difficulty) * std::pow(stability, -w[9]) *
                      (ePow((1.0 - retrievability) * w[10]) - 1.0) * hardPenalty * easyBonus);
}

}  // namespace pd::study
