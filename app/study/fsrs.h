// FSRS-6 spaced-repetition scheduler, ported from py-fsrs 6.3.1 (fsrs/scheduler.py).
//
// Three of today's Anki rules (fsrs-rs 6.x, Anki 26.08 and later) can be switched on
// (StudySettings does by default; py-fsrs's behaviour, and its published test vectors, stay
// the default here): days counted as local day rollovers at a "next day starts at" hour
// (setDayCounter), review intervals kept in order, good at least hard + 1 day and easy at
// least good + 1 (FsrsParams::ankiIntervalOrder), and a same-day Hard that keeps stability
// (FsrsParams::ankiSameDayHard).
//
// Plain C++20 with no Qt dependency. All times are std::chrono::system_clock time points, which
// are UTC. The scheduler reproduces py-fsrs 6.3.1's Scheduler.review_card, including its use of
// whole elapsed days (Python's timedelta.days, i.e. floor) for retrievability and for choosing
// the short-term (same-day) stability update, and Python's round-half-to-even rounding.
#pragma once

#include <array>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <optional>
#include <random>
#include <utility>
#include <vector>

namespace pd::study {

using FsrsClock = std::chrono::system_clock;
using FsrsTimePoint = FsrsClock::time_point;

// Grades a learner can give; the numeric values are FSRS's G used in the formulas.
enum class Rating : int { Again = 1, Hard = 2, Good = 3, Easy = 4 };

// Card states; the numeric values match py-fsrs's State enum.
enum class CardState : int { Learning = 1, Review = 2, Relearning = 3 };

inline constexpr std::array<Rating, 4> kAllRatings = {Rating::Again, Rating::Hard, Rating::Good,
                                                      Rating::Easy};

// Index of a rating into the arrays returned by FsrsScheduler::preview (Again = 0 ... Easy = 3).
constexpr std::size_t ratingIndex(Rating rating) {
    return static_cast<std::size_t>(rating) - 1;
}

inline constexpr std::size_t kFsrsWeightCount = 21;
using FsrsWeights = std::array<double, kFsrsWeightCount>;

// FSRS-6 default weights w0..w20 (py-fsrs DEFAULT_PARAMETERS).
inline constexpr FsrsWeights kFsrsDefaultWeights = {
    0.212,  1.2931, 2.3065, 8.2956, 6.4133, 0.8334, 3.0194, 0.001,  1.8722, 0.1666, 0.796,
    1.4835, 0.0614, 0.2629, 1.6483, 0.6014, 1.8729, 0.5425, 0.0912, 0.0658, 0.1542};

// The bounds py-fsrs (and fsrs-rs's clamps) hold every weight within.
const FsrsWeights& fsrsLowerBounds();
const FsrsWeights& fsrsUpperBounds();

inline constexpr double kFsrsStabilityMin = 0.001;
inline constexpr double kFsrsMinDifficulty = 1.0;
inline constexpr double kFsrsMaxDifficulty = 10.0;

struct FsrsParams {
    FsrsWeights w = kFsrsDefaultWeights;
    double desiredRetention = 0.9;
    std::vector<std::chrono::seconds> learningSteps = {std::chrono::minutes(1),
                                                       std::chrono::minutes(10)};
    std::vector<std::chrono::seconds> relearningSteps = {std::chrono::minutes(10)};
    int maximumInterval = 36500;  // days
    bool enableFuzzing = true;
    // Anki's order of a review card's passing intervals: good >= hard + 1, easy >= good + 1
    // (days, before fuzz; fuzz never goes below them). Off: py-fsrs, where good may equal hard.
    bool ankiIntervalOrder = false;
    // fsrs-rs 6.x (model.rs stability_short_term: `if rating >= 2 { sinc.max(1.0) }`), as
    // ts-fsrs: a same-day Hard never lowers stability. Off: py-fsrs 6.3.1 (and fsrs-rs <= 5.2),
    // where only Good and Easy are floored at the old stability and Hard may lower it.
    bool ankiSameDayHard = false;

    bool operator==(const FsrsParams&) const = default;
};

// Memory state of one card. A new card is in Learning at step 0 with no stability/difficulty and
// no last review (py-fsrs Card()).
struct FsrsCard {
    CardState state = CardState::Learning;
    std::optional<int> step = 0;  // empty while in Review
    std::optional<double> stability;
    std::optional<double> difficulty;
    FsrsTimePoint due{};
    std::optional<FsrsTimePoint> lastReview;

    bool operator==(const FsrsCard&) const = default;
};

// A never-reviewed card that is due at `due`.
FsrsCard makeNewFsrsCard(FsrsTimePoint due);

// The number of the day a time point falls in; elapsed days are then day(now) - day(last
// review). Anki numbers local calendar days that start at its "next day starts at" hour.
using FsrsDayCounter = std::function<long long(FsrsTimePoint)>;

class FsrsScheduler {
  public:
    // Fuzz RNG seeded from std::random_device. Throws std::invalid_argument on invalid params
    // (weights outside py-fsrs's bounds, desiredRetention outside (0, 1), maximumInterval < 1).
    explicit FsrsScheduler(FsrsParams params = {});
    // Deterministic fuzz: the same seed and the same review sequence give the same due dates.
    FsrsScheduler(FsrsParams params, std::uint64_t seed);

    const FsrsParams& params() const { return params_; }
    void reseed(std::uint64_t seed) { rng_.seed(seed); }
    // Days as `counter` numbers them; empty (the default, py-fsrs): whole 24-hour periods
    // since the last review (timedelta.days).
    void setDayCounter(FsrsDayCounter counter) { dayCounter_ = std::move(counter); }
    // Days between the last review and `now` as the scheduler counts them (at least 0).
    long long elapsedDays(const FsrsCard& card, FsrsTimePoint now) const;

    // py-fsrs Scheduler.review_card: the card after being graded `rating` at `now`. Advances the
    // fuzz RNG only when fuzz is applied (fuzzing on and the card lands in Review).
    FsrsCard review(const FsrsCard& card, Rating rating, FsrsTimePoint now);

    // The card review() would return for each rating if called now (index with ratingIndex).
    // Does not advance the RNG, so preview(card, now)[ratingIndex(r)] == review(card, r, now).
    std::array<FsrsCard, 4> preview(const FsrsCard& card, FsrsTimePoint now) const;
    // Just the due times of preview(), e.g. for labelling the grade buttons.
    std::array<FsrsTimePoint, 4> previewDue(const FsrsCard& card, FsrsTimePoint now) const;

    // py-fsrs get_card_retrievability: R with t = elapsedDays (whole days since the last
    // review, floored, at least 0); 0 for a card never reviewed.
    double retrievability(const FsrsCard& card, FsrsTimePoint now) const;
    // The FSRS-6 forgetting curve R(t, S) = (1 + F t / S)^(-w20), F = 0.9^(-1/w20) - 1, for any
    // (fractional) t in days.
    double forgettingCurve(double elapsedDays, double stability) const;

    // py-fsrs _next_interval: round(S / F * (r^(-1/w20) - 1)) clamped to [1, maximumInterval].
    int nextIntervalDays(double stability) const;
    // py-fsrs _get_fuzz_range: inclusive [min, max] days a fuzzed interval of `intervalDays`
    // may take (only used for intervals of at least 3 days).
    std::pair<int, int> fuzzRange(int intervalDays) const;

  private:
    using Rng = std::mt19937_64;

    FsrsCard reviewWith(const FsrsCard& card, Rating rating, FsrsTimePoint now, Rng& rng) const;
    std::chrono::microseconds fuzzedInterval(std::chrono::microseconds interval, Rng& rng) const;
    // Anki's order (FsrsParams::ankiIntervalOrder): a review card's hard, good and easy
    // intervals in days, fuzzed from the RNG state `state` and strictly increasing.
    std::array<int, 3> orderedReviewIntervals(const FsrsCard& card, FsrsTimePoint now,
                                              const Rng& state) const;
    std::array<int, 3> unfuzzedReviewIntervals(const FsrsCard& card, FsrsTimePoint now) const;
    double nextMemoryStability(const FsrsCard& card, Rating rating, FsrsTimePoint now) const;

    double initialStability(Rating rating) const;
    double initialDifficulty(Rating rating, bool clamp) const;
    double shortTermStability(double stability, Rating rating) const;
    double nextDifficulty(double difficulty, Rating rating) const;
    double nextStability(double difficulty, double stability, double retrievability,
                         Rating rating) const;
    double nextForgetStability(double difficulty, double stability, double retrievability) const;
    double nextRecallStability(double difficulty, double stability, double retrievability,
                               Rating rating) const;

    FsrsParams params_;
    double decay_;   // -w20
    double factor_;  // 0.9^(1/decay) - 1
    Rng rng_;
    FsrsDayCounter dayCounter_;
};

}  // namespace pd::study
