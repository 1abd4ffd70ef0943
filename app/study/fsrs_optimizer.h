// Fits FSRS-6's 21 weights to a learner's own review history with fsrs-rs's recipe (the
// optimizer in Anki; fsrs 6.5: training.rs compute_parameters, dataset.rs, and
// parameter_initialization.rs), checked against fsrs-rs on the same revlog.csv in
// test_fsrs_optimizer:
// - items: one per review a day or more after the card's previous one (delta_t > 0 in the
//   day counter's days), holding the card's reviews up to it; same-day reviews shape the memory
//   state through the short-term rule (a same-day Again lowers S, Hard/Good/Easy never do);
// - outliers: per first rating, the (first rating, days to the first long-term review) groups
//   that are smallest (5% of the rating's cards, at least 20) or have under 6 cards or wait past
//   100 days (365 for Easy) are dropped, with every item of those cards;
// - S0 (w0..w3): per first rating, the first long-term review's recall grouped by elapsed days,
//   Laplace-smoothed toward the average recall, fitted by ternary search with a pull |S - S0
//   default| / 16 toward the default; kept in order and missing ratings filled from the others
//   (smooth_and_fill);
// - the fit: Adam (cosine-annealed from 0.04, 5 epochs, about 512 predictions a batch) on the
//   recency-weighted cross-entropy (an item's weight 0.25 + 0.75 (rank / n)^3 in time order)
//   plus fsrs-rs's L2 pull toward the starting weights, clamped after every step by fsrs-rs's
//   clipper; S0 smoothed again after.
// Which weights are kept: the fit is repeated without every fifth card; if those held-out cards
// are predicted worse by that fit than by the current weights, or the whole history is, the
// current weights are kept, and the message says which and why. Plain C++ (no Qt).
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "fsrs.h"

namespace pd::study {

struct FsrsReview {
    FsrsTimePoint at;
    Rating rating = Rating::Good;
};
// One card's scheduling reviews, oldest first.
using FsrsCardHistory = std::vector<FsrsReview>;

// As fsrs-rs's evaluate: over every item (each review a day or more after the card's previous),
// recency-weighted.
struct FsrsEvaluation {
    double logLoss = 0;   // weighted mean binary cross-entropy of recall
    double rmseBins = 0;  // fsrs-rs's RMSE(bins): by elapsed days, review count and lapses
    int predictions = 0;  // items scored
};

struct FsrsOptimizerOptions {
    int minimumPredictions = 400;  // fewer: not offered (the fit would follow noise)
    int epochs = 5;
    double learningRate = 4e-2;                 // fsrs-rs's
    FsrsWeights current = kFsrsDefaultWeights;  // the weights in use, kept unless beaten
    FsrsDayCounter dayCounter;                  // elapsed days (empty: 24-hour periods)
    // Called with (done, total) as the fit goes; returning false cancels it.
    std::function<bool(int, int)> progress;
};

struct FsrsOptimization {
    bool offered = false;  // enough predictions to fit
    bool cancelled = false;
    FsrsEvaluation current, fitted;                // the whole history, current and fitted weights
    FsrsEvaluation heldOutCurrent, heldOutFitted;  // every fifth card, fit without them
    FsrsWeights weights = kFsrsDefaultWeights;     // fitted (clamped)
    FsrsWeights initialStability = kFsrsDefaultWeights;  // after S0 pre-training (w0..w3)
    bool fittedIsBetter = false;                         // the fit is kept
    std::string message;  // why not offered, or which weights are kept and why
};

// Which items an evaluation scores: every one (the app's figures), or those fsrs-rs's outlier
// filter keeps, as fsrs-rs's Node binding (@open-spaced-repetition/binding) evaluates.
enum class FsrsEvaluationItems { All, AfterOutlierFilter };

FsrsEvaluation evaluateFsrs(const std::vector<FsrsCardHistory>& cards, const FsrsWeights& w,
                            const FsrsDayCounter& dayCounter = {},
                            FsrsEvaluationItems which = FsrsEvaluationItems::All);
FsrsOptimization optimizeFsrs(const std::vector<FsrsCardHistory>& cards,
                              const FsrsOptimizerOptions& options = {});

}  // namespace pd::study
