#include "fsrs_optimizer.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <numeric>
#include <random>

namespace pd::study {

namespace {

constexpr int kBins = 20;
constexpr int kBatchCards = 64;
constexpr int kMinS0Samples = 8;
constexpr double kEpsilon = 1e-6;

FsrsScheduler schedulerFor(const FsrsWeights& w, const FsrsDayCounter& days) {
    FsrsParams p;
    p.w = w;
    p.enableFuzzing = false;
    FsrsScheduler s(p, 0);
    s.setDayCounter(days);
    return s;
}

// Replays one card with the scheduler's weights; `score(predicted recall, recalled)` for each
// review a day or more after the one before (same-day reviews shape the memory state only).
template <class Score>
void replay(const FsrsCardHistory& h, FsrsScheduler& s, Score&& score) {
    if (h.empty()) return;
    FsrsCard card = makeNewFsrsCard(h.front().at);
    for (std::size_t i = 0; i < h.size(); ++i) {
        if (i > 0) {
            const long long days = s.elapsedDays(card, h[i].at);
            if (days >= 1)
                score(s.forgettingCurve(static_cast<double>(days), *card.stability),
                      h[i].rating != Rating::Again);
        }
        card = s.review(card, h[i].rating, h[i].at);
    }
}

double crossEntropy(double p, bool recalled) {
    p = std::clamp(p, kEpsilon, 1.0 - kEpsilon);
    return recalled ? -std::log(p) : -std::log(1.0 - p);
}

// Mean cross-entropy over the cards [first, last) of `order`.
double batchLoss(const std::vector<FsrsCardHistory>& cards, const std::vector<std::size_t>& order,
                 std::size_t first, std::size_t last, const FsrsWeights& w,
                 const FsrsDayCounter& days) {
    FsrsScheduler s = schedulerFor(w, days);
    double sum = 0;
    long long n = 0;
    for (std::size_t k = first; k < last; ++k)
        replay(cards[order[k]], s, [&](double p, bool recalled) {
            sum += crossEntropy(p, recalled);
            ++n;
        });
    return n ? sum / static_cast<double>(n) : 0.0;
}

FsrsWeights clamped(FsrsWeights w) {
    for (std::size_t i = 0; i < kFsrsWeightCount; ++i)
        w[i] = std::clamp(w[i], fsrsLowerBounds()[i], fsrsUpperBounds()[i]);
    return w;
}

// S0: per first rating, the stability whose forgetting curve best explains the second
// reviews' recall (golden-section search on log S), where there are enough of them; the four
// kept in order (a better first rating never means a weaker memory).
void pretrainInitialStability(const std::vector<FsrsCardHistory>& cards, FsrsWeights& w,
                              const FsrsDayCounter& days) {
    std::array<std::vector<std::pair<double, bool>>, 4> samples;
    const FsrsScheduler s = schedulerFor(w, days);
    for (const FsrsCardHistory& h : cards) {
        if (h.size() < 2) continue;
        FsrsCard first = makeNewFsrsCard(h[0].at);
        first.lastReview = h[0].at;
        const long long elapsed = s.elapsedDays(first, h[1].at);
        if (elapsed < 1) continue;
        samples[ratingIndex(h[0].rating)].push_back(
            {static_cast<double>(elapsed), h[1].rating != Rating::Again});
    }
    for (std::size_t r = 0; r < 4; ++r) {
        if (static_cast<int>(samples[r].size()) < kMinS0Samples) continue;
        auto loss = [&](double logS) {
            double sum = 0;
            for (const auto& [t, recalled] : samples[r])
                sum += crossEntropy(s.forgettingCurve(t, std::exp(logS)), recalled);
            return sum;
        };
        double lo = std::log(0.01), hi = std::log(100.0);
        const double phi = (std::sqrt(5.0) - 1.0) / 2.0;
        for (int it = 0; it < 80; ++it) {
            const double a = hi - phi * (hi - lo), b = lo + phi * (hi - lo);
            if (loss(a) < loss(b))
                hi = b;
            else
                lo = a;
        }
        w[r] = std::exp((lo + hi) / 2.0);
    }
    for (std::size_t r = 1; r < 4; ++r) w[r] = std::max(w[r], w[r - 1]);
    w = clamped(w);
}

}  // namespace

FsrsEvaluation evaluateFsrs(const std::vector<FsrsCardHistory>& cards, const FsrsWeights& w,
                            const FsrsDayCounter& dayCounter) {
    FsrsScheduler s = schedulerFor(clamped(w), dayCounter);
    FsrsEvaluation e;
    double sum = 0;
    std::array<double, kBins> predicted{}, observed{};
    std::array<int, kBins> count{};
    for (const FsrsCardHistory& h : cards)
        replay(h, s, [&](double p, bool recalled) {
            sum += crossEntropy(p, recalled);
            ++e.predictions;
            const int bin = std::min(kBins - 1, static_cast<int>(p * kBins));
            predicted[static_cast<std::size_t>(bin)] += p;
            observed[static_cast<std::size_t>(bin)] += recalled ? 1.0 : 0.0;
            ++count[static_cast<std::size_t>(bin)];
        });
    if (e.predictions == 0) return e;
    e.logLoss = sum / e.predictions;
    double squares = 0;
    for (int b = 0; b < kBins; ++b) {
        const auto i = static_cast<std::size_t>(b);
        if (!count[i]) continue;
        const double gap = (predicted[i] - observed[i]) / count[i];
        squares += count[i] * gap * gap;
    }
    e.rmseBins = std::sqrt(squares / e.predictions);
    return e;
}

FsrsOptimization optimizeFsrs(const std::vector<FsrsCardHistory>& cards,
                              const FsrsOptimizerOptions& options) {
    FsrsOptimization out;
    out.defaults = evaluateFsrs(cards, kFsrsDefaultWeights, options.dayCounter);
    if (out.defaults.predictions < options.minimumPredictions) {
        out.message = "needs at least " + std::to_string(options.minimumPredictions) +
                      " reviews a day or more after a card's previous one (has " +
                      std::to_string(out.defaults.predictions) + ")";
        return out;
    }
    out.offered = true;
    FsrsWeights w = kFsrsDefaultWeights;
    pretrainInitialStability(cards, w, options.dayCounter);

    // Adam on the mean cross-entropy of batches of cards, with central-difference gradients
    // (21 weights: cheap next to a replay), clamped after every step.
    std::vector<std::size_t> order(cards.size());
    std::iota(order.begin(), order.end(), 0);
    std::mt19937_64 rng(42);
    std::array<double, kFsrsWeightCount> m{}, v{};
    const double beta1 = 0.9, beta2 = 0.999;
    const std::size_t batches = (cards.size() + kBatchCards - 1) / kBatchCards;
    const int total = options.epochs * static_cast<int>(batches);
    int step = 0;
    for (int epoch = 0; epoch < options.epochs; ++epoch) {
        std::shuffle(order.begin(), order.end(), rng);
        for (std::size_t b = 0; b < batches; ++b) {
            const std::size_t first = b * kBatchCards;
            const std::size_t last = std::min(cards.size(), first + kBatchCards);
            std::array<double, kFsrsWeightCount> grad{};
            for (std::size_t i = 0; i < kFsrsWeightCount; ++i) {
                const double h = 1e-4 * std::max(1.0, std::abs(w[i]));
                FsrsWeights up = w, down = w;
                up[i] = std::min(w[i] + h, fsrsUpperBounds()[i]);
                down[i] = std::max(w[i] - h, fsrsLowerBounds()[i]);
                if (up[i] == down[i]) continue;
                grad[i] = (batchLoss(cards, order, first, last, up, options.dayCounter) -
                           batchLoss(cards, order, first, last, down, options.dayCounter)) /
                          (up[i] - down[i]);
            }
            ++step;
            for (std::size_t i = 0; i < kFsrsWeightCount; ++i) {
                m[i] = beta1 * m[i] + (1 - beta1) * grad[i];
                v[i] = beta2 * v[i] + (1 - beta2) * grad[i] * grad[i];
                const double mHat = m[i] / (1 - std::pow(beta1, step));
                const double vHat = v[i] / (1 - std::pow(beta2, step));
                w[i] -= options.learningRate * mHat / (std::sqrt(vHat) + 1e-8);
            }
            w = clamped(w);
            if (options.progress && !options.progress(step, total)) {
                out.cancelled = true;
                out.message = "cancelled";
                return out;
            }
        }
    }
    out.weights = w;
    out.fitted = evaluateFsrs(cards, w, options.dayCounter);
    out.fittedIsBetter = out.fitted.logLoss < out.defaults.logLoss;
    out.message = out.fittedIsBetter ? "the fitted weights predict this history better"
                                     : "the default weights predict this history as well or "
                                       "better; they are kept";
    return out;
}

}  // namespace pd::study
