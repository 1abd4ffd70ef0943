// Fits FSRS-6's 21 weights to a learner's own review history, as fsrs-rs (Anki's optimizer)
// does in outline: each review after a card's first is a prediction of recall (the forgetting
// curve at its elapsed days, from the memory state the earlier reviews left), scored by binary
// cross-entropy; the first ratings' stabilities are pre-trained from the second reviews' recall
// (S0); then Adam on the mean cross-entropy with the weights clamped to their bounds after
// every step. Both the defaults and the fit are evaluated (log loss and RMSE over 20 bins of
// predicted recall), and the better is kept. Plain C++ (no Qt): the caller gives the history.
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

struct FsrsEvaluation {
    double logLoss = 0;   // mean binary cross-entropy of recall
    double rmseBins = 0;  // RMSE between mean predicted and observed recall, 20 bins by weight
    int predictions = 0;  // reviews scored (every review after a card's first, a day or more later)
};

struct FsrsOptimizerOptions {
    int minimumPredictions = 400;  // fewer: not offered (the fit would follow noise)
    int epochs = 5;
    double learningRate = 4e-2;  // fsrs-rs's
    FsrsDayCounter dayCounter;   // how elapsed days are counted (empty: 24-hour periods)
    // Called with (done, total) as the fit goes; returning false cancels it.
    std::function<bool(int, int)> progress;
};

struct FsrsOptimization {
    bool offered = false;  // enough predictions to fit
    bool cancelled = false;
    FsrsEvaluation defaults, fitted;
    FsrsWeights weights = kFsrsDefaultWeights;  // fitted (clamped)
    bool fittedIsBetter = false;                // fitted.logLoss < defaults.logLoss
    std::string message;                        // why not offered, or what was kept
};

FsrsEvaluation evaluateFsrs(const std::vector<FsrsCardHistory>& cards, const FsrsWeights& w,
                            const FsrsDayCounter& dayCounter = {});
FsrsOptimization optimizeFsrs(const std::vector<FsrsCardHistory>& cards,
                              const FsrsOptimizerOptions& options = {});

}  // namespace pd::study
