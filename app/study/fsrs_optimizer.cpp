#include "fsrs_optimizer.h"

#include <algorithm>
#include <array>
#include <cfloat>
#include <cmath>
#include <cstdio>
#include <map>
#include <numbers>
#include <numeric>
#include <optional>
#include <random>
#include <set>

namespace pd::study {

namespace {

// fsrs-rs 6.5 constants (simulation.rs, parameter_initialization.rs, training.rs).
constexpr double kSMin = 0.001;
constexpr double kSMax = 36500.0;
constexpr double kInitSMax = 100.0;
constexpr double kDMin = 1.0;
constexpr double kDMax = 10.0;
constexpr int kBatchPredictions = 512;
constexpr int kMaxSeqLen = 256;
constexpr double kGamma = 1.0;
constexpr double kProbEpsilon = 1e-7;
constexpr std::array<double, kFsrsWeightCount> kParamsStddev = {
    6.43, 9.66, 17.58, 27.85, 0.57, 0.28, 0.6,  0.12, 0.39, 0.18, 0.33,
    0.3,  0.09, 0.16,  0.57,  0.25, 1.03, 0.31, 0.32, 0.14, 0.27};

// A card as fsrs-rs sees it: ratings and elapsed days (the first review's is 0).
struct TrainCard {
    std::vector<int> rating;
    std::vector<int> days;
    std::vector<FsrsTimePoint> at;
};
// One prediction: the review at `pos` (days > 0) of `card`, from the reviews before it.
struct TrainItem {
    std::size_t card = 0;
    int pos = 0;
    double weight = 1.0;
};

struct MemoryState {
    double s = 0;
    double d = 0;
};

double curve(const FsrsWeights& w, double t, double s) {
    const double decay = -w[20];
    const double factor = std::pow(0.9, 1.0 / decay) - 1.0;
    return std::pow(t / s * factor + 1.0, decay);
}

double initDifficulty(const FsrsWeights& w, int rating) {
    return w[4] - std::exp(w[5] * (rating - 1)) + 1.0;
}

// fsrs-rs model.rs step(): same-day (0 days) reviews take the short-term rule, where only
// Again may lower stability.
MemoryState step(const FsrsWeights& w, const MemoryState* state, int days, int rating) {
    if (!state) {
        return {std::clamp(w[static_cast<std::size_t>(rating - 1)], kSMin, kSMax),
                std::clamp(initDifficulty(w, rating), kDMin, kDMax)};
    }
    const double s = std::clamp(state->s, kSMin, kSMax);
    const double d = std::clamp(state->d, kDMin, kDMax);
    double next;
    if (days == 0) {
        const double sinc = std::exp(w[17] * (rating - 3.0 + w[18])) * std::pow(s, -w[19]);
        next = s * (rating >= 2 ? std::max(sinc, 1.0) : sinc);
    } else {
        const double r = curve(w, days, s);
        if (rating == 1) {
            next = std::min(w[11] * std::pow(d, -w[12]) * (std::pow(s + 1.0, w[13]) - 1.0) *
                                std::exp((1.0 - r) * w[14]),
                            s / std::exp(w[17] * w[18]));
        } else {
            next = s * (std::exp(w[8]) * (11.0 - d) * std::pow(s, -w[9]) *
                            (std::exp((1.0 - r) * w[10]) - 1.0) * (rating == 2 ? w[15] : 1.0) *
                            (rating == 4 ? w[16] : 1.0) +
                        1.0);
        }
    }
    double nd = d + (10.0 - d) * (-w[6] * (rating - 3.0)) / 9.0;
    nd = std::clamp(w[7] * (initDifficulty(w, 4) - nd) + nd, kDMin, kDMax);
    return {std::clamp(next, kSMin, kSMax), nd};
}

double crossEntropy(double p, double recalled) {
    p = std::clamp(p, kProbEpsilon, 1.0 - kProbEpsilon);
    return -(recalled * std::log(p) + (1.0 - recalled) * std::log(1.0 - p));
}

std::vector<TrainCard> toCards(const std::vector<FsrsCardHistory>& histories,
                               const FsrsDayCounter& dayCounter) {
    std::vector<TrainCard> cards;
    cards.reserve(histories.size());
    for (const FsrsCardHistory& h : histories) {
        TrainCard c;
        for (std::size_t i = 0; i < h.size(); ++i) {
            long long days = 0;
            if (i > 0)
                days = dayCounter
                           ? dayCounter(h[i].at) - dayCounter(h[i - 1].at)
                           : std::chrono::floor<std::chrono::days>(h[i].at - h[i - 1].at).count();
            c.rating.push_back(static_cast<int>(h[i].rating));
            c.days.push_back(static_cast<int>(std::clamp(days, 0LL, 1LL << 30)));
            c.at.push_back(h[i].at);
        }
        cards.push_back(std::move(c));
    }
    return cards;
}

// fsrs-rs's recency weights over items in time order: 0.25 + 0.75 (rank / (n - 1))^3.
void weighByRecency(std::vector<TrainItem>& items) {
    const double length = std::max(1.0, static_cast<double>(items.size()) - 1.0);
    for (std::size_t i = 0; i < items.size(); ++i)
        items[i].weight = 0.25 + 0.75 * std::pow(static_cast<double>(i) / length, 3);
}

// Every review a day or more after the card's previous one, ordered by when it happened.
std::vector<TrainItem> itemsOf(const std::vector<TrainCard>& cards,
                               const std::vector<std::size_t>& which) {
    std::vector<TrainItem> items;
    for (std::size_t c : which)
        for (std::size_t i = 1; i < cards[c].days.size(); ++i)
            if (cards[c].days[i] > 0) items.push_back({c, static_cast<int>(i), 1.0});
    std::stable_sort(items.begin(), items.end(), [&](const TrainItem& a, const TrainItem& b) {
        const FsrsTimePoint ta = cards[a.card].at[static_cast<std::size_t>(a.pos)];
        const FsrsTimePoint tb = cards[b.card].at[static_cast<std::size_t>(b.pos)];
        return ta != tb ? ta < tb : a.card < b.card;
    });
    weighByRecency(items);
    return items;
}

int longTermCount(const TrainCard& c, int pos) {
    int n = 0;
    for (int i = 0; i <= pos; ++i) n += c.days[static_cast<std::size_t>(i)] > 0;
    return n;
}

int firstLongTerm(const TrainCard& c) {
    for (std::size_t i = 1; i < c.days.size(); ++i)
        if (c.days[i] > 0) return static_cast<int>(i);
    return -1;
}

// The predicted recall of each of `items` under `w`, replaying each card once.
template <class Visit>
void predict(const std::vector<TrainCard>& cards, const std::vector<TrainItem>& items,
             const FsrsWeights& w, Visit&& visit) {
    std::map<std::size_t, std::vector<std::size_t>> byCard;
    for (std::size_t k = 0; k < items.size(); ++k) byCard[items[k].card].push_back(k);
    for (auto& [c, list] : byCard) {
        std::sort(list.begin(), list.end(),
                  [&](std::size_t a, std::size_t b) { return items[a].pos < items[b].pos; });
        const TrainCard& card = cards[c];
        MemoryState m{};
        std::size_t next = 0;
        for (std::size_t i = 0; i < card.days.size() && next < list.size(); ++i) {
            while (next < list.size() && static_cast<std::size_t>(items[list[next]].pos) == i) {
                visit(items[list[next]], curve(w, card.days[i], std::clamp(m.s, kSMin, kSMax)));
                ++next;
            }
            m = step(w, i == 0 ? nullptr : &m, card.days[i], card.rating[i]);
        }
    }
}

FsrsEvaluation evaluateItems(const std::vector<TrainCard>& cards,
                             const std::vector<TrainItem>& items, const FsrsWeights& w) {
    FsrsEvaluation e;
    struct Bin {
        double predicted = 0, actual = 0, count = 0, weight = 0;
    };
    std::map<std::array<long long, 3>, Bin> bins;
    double loss = 0, weights = 0;
    predict(cards, items, w, [&](const TrainItem& item, double p) {
        const TrainCard& c = cards[item.card];
        const double y = c.rating[static_cast<std::size_t>(item.pos)] > 1 ? 1.0 : 0.0;
        loss += crossEntropy(p, y) * item.weight;
        weights += item.weight;
        ++e.predictions;
        // fsrs-rs dataset.rs r_matrix_index.
        const double dt = c.days[static_cast<std::size_t>(item.pos)];
        const auto dtBin =
            std::llround(2.48 * std::pow(3.62, std::floor(std::log(dt) / std::log(3.62))) * 100.0);
        const double length = longTermCount(c, item.pos) + 1.0;
        const auto lengthBin =
            std::llround(1.99 * std::pow(1.89, std::floor(std::log(length) / std::log(1.89))));
        int lapses = 0;
        for (int i = 0; i < item.pos; ++i)
            lapses += c.rating[static_cast<std::size_t>(i)] == 1 &&
                      c.days[static_cast<std::size_t>(i)] > 0;
        const auto lapseBin =
            lapses == 0 ? 0LL
                        : std::llround(
                              1.65 * std::pow(1.73, std::floor(std::log(lapses) / std::log(1.73))));
        Bin& b = bins[{dtBin, lengthBin, lapseBin}];
        b.predicted += p;
        b.actual += y;
        b.count += 1;
        b.weight += item.weight;
    });
    if (!e.predictions) return e;
    e.logLoss = loss / weights;
    double squares = 0, total = 0;
    for (const auto& [key, b] : bins) {
        const double gap = b.predicted / b.count - b.actual / b.count;
        squares += gap * gap * b.weight;
        total += b.weight;
    }
    e.rmseBins = std::sqrt(squares / total);
    return e;
}

FsrsWeights clipped(FsrsWeights w) {
    // fsrs-rs parameter_clipper.rs with one relearning step and short-term memory on.
    static constexpr std::array<std::pair<double, double>, kFsrsWeightCount> kClamps = {{
        {kSMin, kInitSMax}, {kSMin, kInitSMax}, {kSMin, kInitSMax}, {kSMin, kInitSMax},
        {kDMin, kDMax},     {0.001, 4.0},       {0.001, 4.0},       {0.001, 0.75},
        {0.0, 4.5},         {0.0, 0.8},         {0.001, 3.5},       {0.001, 5.0},
        {0.001, 0.25},      {0.001, 0.9},       {0.0, 4.0},         {0.0, 1.0},
        {1.0, 6.0},         {0.0, 2.0},         {0.0, 2.0},         {0.01, 0.8},
        {0.1, 0.8},
    }};
    for (std::size_t i = 0; i < kFsrsWeightCount; ++i)
        w[i] = std::clamp(w[i], kClamps[i].first, kClamps[i].second);
    return w;
}

// fsrs-rs parameter_initialization.rs smooth_and_fill: the four initial stabilities in order
// (a pair out of order takes the value of the rating with more cards), missing ones filled from
// the others. `stability` and `count` are indexed by rating 1..4 (0 unused); a rating absent
// from `count` is dropped first. Returns false when no rating has a value.
bool smoothAndFill(std::array<std::optional<double>, 5> s, const std::array<int, 5>& count,
                   std::array<double, 4>& out) {
    for (int r = 1; r <= 4; ++r)
        if (!count[static_cast<std::size_t>(r)]) s[static_cast<std::size_t>(r)].reset();
    for (auto [small, big] :
         std::array<std::pair<int, int>, 6>{{{1, 2}, {2, 3}, {3, 4}, {1, 3}, {2, 4}, {1, 4}}}) {
        auto& a = s[static_cast<std::size_t>(small)];
        auto& b = s[static_cast<std::size_t>(big)];
        if (a && b && *a > *b) {
            if (count[static_cast<std::size_t>(small)] > count[static_cast<std::size_t>(big)])
                b = *a;
            else
                a = *b;
        }
    }
    const double w1 = 0.41, w2 = 0.54;
    int present = 0;
    for (int r = 1; r <= 4; ++r) present += s[static_cast<std::size_t>(r)].has_value();
    auto P = [](double x, double e) { return std::pow(x, e); };
    auto& r1 = s[1];
    auto& r2 = s[2];
    auto& r3 = s[3];
    auto& r4 = s[4];
    if (present == 0) return false;
    if (present == 1) {
        int r = 1;
        while (!s[static_cast<std::size_t>(r)]) ++r;
        const double factor = *s[static_cast<std::size_t>(r)] / kFsrsDefaultWeights[r - 1];
        for (int i = 1; i <= 4; ++i)
            s[static_cast<std::size_t>(i)] = kFsrsDefaultWeights[i - 1] * factor;
    } else if (present == 2) {
        const double m = w1 * -w2 + (w1 + w2);  // w1.mul_add(-w2, w1 + w2)
        if (!r1 && !r2 && r3 && r4) {
            r2 = P(*r3, 1.0 / (1.0 - w2)) * P(*r4, 1.0 - 1.0 / (1.0 - w2));
            r1 = P(*r2, 1.0 / w1) * P(*r3, 1.0 - 1.0 / w1);
        } else if (!r1 && r2 && !r3 && r4) {
            r3 = P(*r2, 1.0 - w2) * P(*r4, w2);
            r1 = P(*r2, 1.0 / w1) * P(*r3, 1.0 - 1.0 / w1);
        } else if (!r1 && r2 && r3 && !r4) {
            r4 = P(*r2, 1.0 - 1.0 / w2) * P(*r3, 1.0 / w2);
            r1 = P(*r2, 1.0 / w1) * P(*r3, 1.0 - 1.0 / w1);
        } else if (r1 && !r2 && !r3 && r4) {
            r2 = P(*r1, w1 / m) * P(*r4, 1.0 - w1 / m);
            r3 = P(*r1, 1.0 - w2 / m) * P(*r4, w2 / m);
        } else if (r1 && !r2 && r3 && !r4) {
            r2 = P(*r1, w1) * P(*r3, 1.0 - w1);
            r4 = P(*r2, 1.0 - 1.0 / w2) * P(*r3, 1.0 / w2);
        } else if (r1 && r2 && !r3 && !r4) {
            r3 = P(*r1, 1.0 - 1.0 / (1.0 - w1)) * P(*r2, 1.0 / (1.0 - w1));
            r4 = P(*r2, 1.0 - 1.0 / w2) * P(*r3, 1.0 / w2);
        }
    } else if (present == 3) {
        if (!r1 && r2 && r3)
            r1 = P(*r2, 1.0 / w1) * P(*r3, 1.0 - 1.0 / w1);
        else if (r1 && !r2 && r3)
            r2 = P(*r1, w1) * P(*r3, 1.0 - w1);
        else if (r2 && !r3 && r4)
            r3 = P(*r2, 1.0 - w2) * P(*r4, w2);
        else if (r2 && r3 && !r4)
            r4 = P(*r2, 1.0 - 1.0 / w2) * P(*r3, 1.0 / w2);
    }
    for (int r = 1; r <= 4; ++r)
        out[static_cast<std::size_t>(r - 1)] =
            std::clamp(s[static_cast<std::size_t>(r)].value_or(kSMin), kSMin, kInitSMax);
    return true;
}

// What one fit starts from and trains on (fsrs-rs compute_parameters up to train()).
struct PreparedFit {
    std::string notEnough;  // non-empty: nothing to fit, with why
    FsrsWeights start = kFsrsDefaultWeights;
    std::array<int, 5> ratingCount{};  // first long-term reviews per first rating (S0 samples)
    bool train = false;                // false: the S0 pre-training is the whole fit
    std::vector<std::vector<TrainItem>> batches;
    std::size_t total = 0;                 // training items
    std::vector<TrainItem> afterOutliers;  // every item the outlier filter keeps
};

PreparedFit prepare(const std::vector<TrainCard>& cards, const std::vector<TrainItem>& all) {
    PreparedFit p;
    // Outliers (dataset.rs compute_outlier_analysis): per first rating, groups by the days to
    // the first long-term review of the items that are a card's first long-term review.
    std::map<int, std::map<int, std::vector<std::size_t>>> groups;
    for (std::size_t k = 0; k < all.size(); ++k) {
        const TrainCard& c = cards[all[k].card];
        if (longTermCount(c, all[k].pos) != 1) continue;
        groups[c.rating[0]][c.days[static_cast<std::size_t>(all[k].pos)]].push_back(k);
    }
    std::array<std::set<int>, 5> removed;
    std::vector<std::size_t> init;
    for (auto& [rating, byDays] : groups) {
        std::vector<std::pair<int, std::vector<std::size_t>>> sub(byDays.begin(), byDays.end());
        // Smallest first, then fewest days first (fsrs-rs sorts the other way and walks back).
        std::sort(sub.begin(), sub.end(), [](const auto& a, const auto& b) {
            return a.second.size() != b.second.size() ? a.second.size() < b.second.size()
                                                      : a.first < b.first;
        });
        std::size_t total = 0;
        for (const auto& g : sub) total += g.second.size();
        std::size_t gone = 0;
        for (const auto& [days, indices] : sub) {
            if (gone + indices.size() >= std::max<std::size_t>(20, total / 20)) {
                if (indices.size() >= 6 && days <= (rating != 4 ? 100 : 365))
                    init.insert(init.end(), indices.begin(), indices.end());
                else
                    removed[static_cast<std::size_t>(rating)].insert(days);
            } else {
                gone += indices.size();
                removed[static_cast<std::size_t>(rating)].insert(days);
            }
        }
    }
    std::vector<TrainItem> train;
    for (const TrainItem& item : all) {
        const TrainCard& c = cards[item.card];
        const int first = firstLongTerm(c);
        if (!removed[static_cast<std::size_t>(c.rating[0])].count(
                c.days[static_cast<std::size_t>(first)]))
            train.push_back(item);
    }
    p.afterOutliers = train;
    if (train.size() < 8) {
        p.notEnough = "fewer than 8 reviews remain after fsrs-rs's outlier filter";
        return p;
    }
    double recalled = 0;
    for (const TrainItem& item : train)
        recalled += cards[item.card].rating[static_cast<std::size_t>(item.pos)] > 1;
    const double averageRecall = recalled / static_cast<double>(train.size());

    // S0 (parameter_initialization.rs): per first rating, recall by days, Laplace-smoothed.
    std::array<std::map<int, std::pair<double, double>>, 5> byRating;  // days -> (passes, n)
    for (std::size_t k : init) {
        const TrainCard& c = cards[all[k].card];
        auto& cell = byRating[static_cast<std::size_t>(c.rating[0])]
                             [c.days[static_cast<std::size_t>(all[k].pos)]];
        cell.first += c.rating[static_cast<std::size_t>(all[k].pos)] > 1;
        cell.second += 1;
    }
    std::array<std::optional<double>, 5> s0;
    const double decay = -kFsrsDefaultWeights[20];
    const double factor = std::pow(0.9, 1.0 / decay) - 1.0;
    for (int r = 1; r <= 4; ++r) {
        const auto& data = byRating[static_cast<std::size_t>(r)];
        if (data.empty()) continue;
        double n = 0;
        for (const auto& [days, cell] : data) n += cell.second;
        p.ratingCount[static_cast<std::size_t>(r)] = static_cast<int>(n);
        const double defaultS0 = kFsrsDefaultWeights[static_cast<std::size_t>(r - 1)];
        auto loss = [&](double s) {
            double sum = 0;
            for (const auto& [days, cell] : data) {
                const double recall = (cell.first + averageRecall) / (cell.second + 1.0);
                const double y = std::pow(days / s * factor + 1.0, decay);
                sum += -(recall * std::log(y) + (1.0 - recall) * std::log(1.0 - y)) * cell.second;
            }
            return sum + std::abs(s - defaultS0) / 16.0;
        };
        double low = kSMin, high = kInitSMax, best = defaultS0;
        for (int it = 0; high - low > DBL_EPSILON && it < 1000; ++it) {
            const double m1 = low + (high - low) / 3.0, m2 = high - (high - low) / 3.0;
            if (loss(m1) < loss(m2))
                high = m2;
            else
                low = m1;
            best = (high + low) / 2.0;
        }
        s0[static_cast<std::size_t>(r)] = best;
    }
    std::array<double, 4> initial{};
    if (!smoothAndFill(s0, p.ratingCount, initial)) {
        p.notEnough = "no card has a first review followed by one on a later day";
        return p;
    }
    for (std::size_t i = 0; i < 4; ++i) p.start[i] = initial[i];
    if (train.size() == init.size() || train.size() < 64) return p;

    // Training items: recency-weighted in time order, at most 256 reviews long; batches of
    // whole cards, about 512 predictions each (training.rs build_windowed_batches).
    weighByRecency(train);
    std::erase_if(train, [](const TrainItem& item) { return item.pos + 1 > kMaxSeqLen; });
    p.total = train.size();
    std::map<std::size_t, std::vector<TrainItem>> byCard;
    for (const TrainItem& item : train) byCard[item.card].push_back(item);
    std::vector<std::vector<TrainItem>> perCard;
    for (auto& [c, list] : byCard) perCard.push_back(std::move(list));
    std::stable_sort(perCard.begin(), perCard.end(),
                     [](const auto& a, const auto& b) { return a.back().pos < b.back().pos; });
    std::vector<TrainItem> batch;
    for (auto& card : perCard) {
        if (!batch.empty() && batch.size() + card.size() > kBatchPredictions) {
            p.batches.push_back(std::move(batch));
            batch.clear();
        }
        batch.insert(batch.end(), card.begin(), card.end());
    }
    if (!batch.empty()) p.batches.push_back(std::move(batch));
    p.train = true;
    return p;
}

int trainingSteps(const PreparedFit& p, int epochs) {
    return p.train ? epochs * static_cast<int>(p.batches.size()) : 0;
}

// The weighted cross-entropy summed over one batch (analytic.rs batch_loss_and_grad sums; the
// L2 pull is scaled by the batch's share of the items, so the sum is what balances it).
double batchLoss(const std::vector<TrainCard>& cards, const std::vector<TrainItem>& batch,
                 const FsrsWeights& w) {
    double loss = 0;
    predict(cards, batch, w, [&](const TrainItem& item, double p) {
        loss += crossEntropy(p, cards[item.card].rating[static_cast<std::size_t>(item.pos)] > 1) *
                item.weight;
    });
    return loss;
}

// training.rs train(): Adam, cosine-annealed learning rate, fsrs-rs's L2 pull toward the
// starting weights, clipped after every step; then S0 smoothed as compute_parameters does.
// Gradients by central differences (21 weights: cheap next to a replay). Returns false if
// cancelled.
bool fit(const std::vector<TrainCard>& cards, const PreparedFit& p,
         const FsrsOptimizerOptions& options, int& done, int total, FsrsWeights& out) {
    out = p.start;
    if (!p.train) return true;
    FsrsWeights w = p.start;
    std::array<double, kFsrsWeightCount> m{}, v{};
    const double tMax = static_cast<double>((p.total / kBatchPredictions + 1) *
                                            static_cast<std::size_t>(options.epochs));
    double lr = options.learningRate;
    long long stepCount = -1;
    std::mt19937_64 rng(2023);
    std::vector<std::size_t> order(p.batches.size());
    int t = 0;
    for (int epoch = 0; epoch < options.epochs; ++epoch) {
        std::iota(order.begin(), order.end(), 0);
        std::shuffle(order.begin(), order.end(), rng);
        for (std::size_t b : order) {
            const std::vector<TrainItem>& batch = p.batches[b];
            // cosine_annealing.rs
            ++stepCount;
            const double sc = static_cast<double>(stepCount);
            if (stepCount == 0)
                lr = options.learningRate;
            else if (std::fmod(sc - 1.0 - tMax, 2.0 * tMax) == 0.0)
                lr = options.learningRate * (1.0 - std::cos(std::numbers::pi / tMax)) / 2.0;
            else
                lr = (1.0 + std::cos(std::numbers::pi * sc / tMax)) /
                     (1.0 + std::cos(std::numbers::pi * (sc - 1.0) / tMax)) * lr;
            std::array<double, kFsrsWeightCount> grad{};
            for (std::size_t i = 0; i < kFsrsWeightCount; ++i) {
                const double h = 1e-5 * std::max(1.0, std::abs(w[i]));
                FsrsWeights up = w, down = w;
                up[i] += h;
                down[i] -= h;
                grad[i] = (batchLoss(cards, batch, up) - batchLoss(cards, batch, down)) / (2 * h);
                const double scale =
                    kGamma * static_cast<double>(batch.size()) / static_cast<double>(p.total);
                grad[i] +=
                    2.0 * (w[i] - p.start[i]) / (kParamsStddev[i] * kParamsStddev[i]) * scale;
            }
            ++t;
            for (std::size_t i = 0; i < kFsrsWeightCount; ++i) {
                m[i] = 0.9 * m[i] + 0.1 * grad[i];
                v[i] = 0.999 * v[i] + 0.001 * grad[i] * grad[i];
                const double mHat = m[i] / (1 - std::pow(0.9, t));
                const double vHat = v[i] / (1 - std::pow(0.999, t));
                w[i] -= lr * mHat / (std::sqrt(vHat) + 1e-8);
            }
            w = clipped(w);
            ++done;
            if (options.progress && !options.progress(done, total)) return false;
        }
    }
    std::array<std::optional<double>, 5> s0;
    for (int r = 1; r <= 4; ++r)
        s0[static_cast<std::size_t>(r)] = w[static_cast<std::size_t>(r - 1)];
    std::array<double, 4> initial{};
    if (smoothAndFill(s0, p.ratingCount, initial))
        for (std::size_t i = 0; i < 4; ++i) w[i] = initial[i];
    out = w;
    return true;
}

std::string figure(double x) {
    char text[32];
    std::snprintf(text, sizeof text, "%.4f", x);
    return text;
}

}  // namespace

FsrsEvaluation evaluateFsrs(const std::vector<FsrsCardHistory>& histories, const FsrsWeights& w,
                            const FsrsDayCounter& dayCounter, FsrsEvaluationItems which) {
    const std::vector<TrainCard> cards = toCards(histories, dayCounter);
    std::vector<std::size_t> all(cards.size());
    std::iota(all.begin(), all.end(), 0);
    std::vector<TrainItem> items = itemsOf(cards, all);
    if (which == FsrsEvaluationItems::AfterOutlierFilter) {
        items = prepare(cards, items).afterOutliers;
        weighByRecency(items);
    }
    return evaluateItems(cards, items, w);
}

FsrsOptimization optimizeFsrs(const std::vector<FsrsCardHistory>& histories,
                              const FsrsOptimizerOptions& options) {
    FsrsOptimization out;
    out.weights = options.current;
    const std::vector<TrainCard> cards = toCards(histories, options.dayCounter);
    std::vector<std::size_t> all(cards.size()), fitting, heldOut;
    std::iota(all.begin(), all.end(), 0);
    for (std::size_t c : all) (c % 5 == 4 ? heldOut : fitting).push_back(c);
    const std::vector<TrainItem> items = itemsOf(cards, all);
    out.current = evaluateItems(cards, items, options.current);
    if (out.current.predictions < options.minimumPredictions) {
        out.message = "needs at least " + std::to_string(options.minimumPredictions) +
                      " reviews a day or more after a card's previous one (has " +
                      std::to_string(out.current.predictions) + ")";
        return out;
    }
    const PreparedFit whole = prepare(cards, items);
    const PreparedFit part = prepare(cards, itemsOf(cards, fitting));
    if (!whole.notEnough.empty()) {
        out.message = "not fitted: " + whole.notEnough + "; the current weights are kept";
        return out;
    }
    out.offered = true;
    out.initialStability = whole.start;
    const int total = trainingSteps(whole, options.epochs) +
                      (part.notEnough.empty() ? trainingSteps(part, options.epochs) : 0);
    int done = 0;
    FsrsWeights partWeights = options.current;
    if (part.notEnough.empty() && !fit(cards, part, options, done, total, partWeights)) {
        out.cancelled = true;
        out.message = "cancelled";
        return out;
    }
    FsrsWeights fitted;
    if (!fit(cards, whole, options, done, total, fitted)) {
        out.cancelled = true;
        out.message = "cancelled";
        return out;
    }
    out.weights = fitted;
    out.fitted = evaluateItems(cards, items, fitted);
    const std::vector<TrainItem> held = itemsOf(cards, heldOut);
    out.heldOutCurrent = evaluateItems(cards, held, options.current);
    out.heldOutFitted = evaluateItems(cards, held, partWeights);
    const bool heldOutWorse = !part.notEnough.empty() || held.empty() ||
                              out.heldOutFitted.logLoss > out.heldOutCurrent.logLoss;
    const bool wholeWorse = out.fitted.logLoss > out.current.logLoss;
    out.fittedIsBetter = !heldOutWorse && !wholeWorse;
    const std::string heldFigures = "log loss " + figure(out.heldOutFitted.logLoss) +
                                    " fitted vs " + figure(out.heldOutCurrent.logLoss) +
                                    " current on the " + std::to_string(held.size()) +
                                    " reviews of every fifth card, left out of a second fit";
    if (out.fittedIsBetter)
        out.message =
            "the fitted weights are kept: they predict reviews they were not fitted to "
            "better than the current weights (" +
            heldFigures + "; " + figure(out.fitted.logLoss) + " vs " + figure(out.current.logLoss) +
            " over the whole history)";
    else if (heldOutWorse)
        out.message = "the current weights are kept: " +
                      (part.notEnough.empty() && !held.empty()
                           ? "a fit predicts reviews it was not fitted to worse than they do (" +
                                 heldFigures + ")"
                           : std::string("too few reviews to check a fit on cards left out of it"));
    else
        out.message =
            "the current weights are kept: the fit predicts the whole history worse "
            "(log loss " +
            figure(out.fitted.logLoss) + " vs " + figure(out.current.logLoss) + ")";
    return out;
}

}  // namespace pd::study
