// The FSRS optimizer on synthetic review histories drawn from known weights: recall at each
// review is sampled from those weights' forgetting curve, so a good fit predicts what the
// generator would. The fitted weights' predictions must come within 0.02 mean absolute
// recall of the generator's (the defaults are further off), their log loss must beat the
// defaults', and too short a history is not offered.
#include <QFile>
#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>
#include <QTemporaryDir>
#include <QtTest>

#include <chrono>
#include <cmath>
#include <map>
#include <random>

#include "study/fsrs.h"
#include "study/fsrs_history.h"
#include "study/fsrs_optimizer.h"
#include "study/review_store.h"
#include "study/study_session.h"

using namespace std::chrono;
using namespace pd::study;

namespace {

// Weights unlike the defaults: stronger first memories, slower growth, a steeper curve.
FsrsWeights generatorWeights() {
    FsrsWeights w = kFsrsDefaultWeights;
    w[0] = 0.6;
    w[1] = 2.0;
    w[2] = 5.0;
    w[3] = 15.0;
    w[8] = 1.3;
    w[11] = 2.2;
    w[20] = 0.35;
    return w;
}

// Each card: a first rating, then reviews at the generator's own intervals stretched by a
// random factor (learners are late and early), recall drawn from its forgetting curve.
std::vector<FsrsCardHistory> synthetic(int cards, int reviews, std::uint64_t seed) {
    std::mt19937_64 rng(seed);
    std::uniform_real_distribution<double> u(0.0, 1.0);
    FsrsParams p;
    p.w = generatorWeights();
    p.enableFuzzing = false;
    FsrsScheduler truth(p, 0);
    std::vector<FsrsCardHistory> out;
    const FsrsTimePoint start = sys_days{2025y / January / 1} + 9h;
    for (int c = 0; c < cards; ++c) {
        FsrsCardHistory h;
        FsrsTimePoint t = start + hours(c % 97);
        const double first = u(rng);
        Rating r = first < 0.2    ? Rating::Again
                   : first < 0.3  ? Rating::Hard
                   : first < 0.85 ? Rating::Good
                                  : Rating::Easy;
        FsrsCard card = truth.review(makeNewFsrsCard(t), r, t);
        h.push_back({t, r});
        for (int i = 1; i < reviews; ++i) {
            const double days = std::max(1.0, *card.stability * (0.3 + 1.7 * u(rng)));
            t += hours(static_cast<long long>(std::round(days * 24)));
            const double recall = truth.forgettingCurve(
                static_cast<double>(truth.elapsedDays(card, t)), *card.stability);
            const double pass = u(rng);
            r = u(rng) >= recall ? Rating::Again
                : pass < 0.1     ? Rating::Hard
                : pass < 0.9     ? Rating::Good
                                 : Rating::Easy;
            card = truth.review(card, r, t);
            h.push_back({t, r});
        }
        out.push_back(std::move(h));
    }
    return out;
}

// Mean |R_w - R_generator| over every scored review.
double recallGap(const std::vector<FsrsCardHistory>& cards, const FsrsWeights& w) {
    FsrsParams a, b;
    a.w = w;
    b.w = generatorWeights();
    a.enableFuzzing = b.enableFuzzing = false;
    FsrsScheduler fit(a, 0), truth(b, 0);
    double sum = 0;
    long long n = 0;
    for (const FsrsCardHistory& h : cards) {
        FsrsCard cf = makeNewFsrsCard(h.front().at), ct = cf;
        for (std::size_t i = 0; i < h.size(); ++i) {
            if (i > 0 && fit.elapsedDays(cf, h[i].at) >= 1) {
                const double days = static_cast<double>(fit.elapsedDays(cf, h[i].at));
                sum += std::abs(fit.forgettingCurve(days, *cf.stability) -
                                truth.forgettingCurve(days, *ct.stability));
                ++n;
            }
            cf = fit.review(cf, h[i].rating, h[i].at);
            ct = truth.review(ct, h[i].rating, h[i].at);
        }
    }
    return sum / static_cast<double>(n);
}

// A fixture revlog.csv (card_id, review_time in ms, review_rating, ...) as card histories in
// the order fsrsHistories gives them (by first review).
std::vector<FsrsCardHistory> readRevlog(const QString& path) {
    QFile f(path);
    if (!f.open(QIODevice::ReadOnly)) qFatal("cannot read %s", qPrintable(path));
    std::map<long long, FsrsCardHistory> byCard;
    f.readLine();
    while (!f.atEnd()) {
        const QList<QByteArray> cells = f.readLine().trimmed().split(',');
        if (cells.size() < 3) continue;
        byCard[cells[0].toLongLong()].push_back({FsrsTimePoint(milliseconds(cells[1].toLongLong())),
                                                 static_cast<Rating>(cells[2].toInt())});
    }
    std::vector<FsrsCardHistory> out;
    for (auto& [id, h] : byCard) out.push_back(std::move(h));
    std::stable_sort(out.begin(), out.end(),
                     [](const auto& a, const auto& b) { return a.front().at < b.front().at; });
    return out;
}

// The fixtures' days: UTC, a day starting at 04:00 (Anki's default hour).
long long utcDayAt4(FsrsTimePoint t) {
    return floor<days>(t - 4h).time_since_epoch().count();
}

QJsonObject fsrsRsReference() {
    QFile f(QFINDTESTDATA("../fixtures/fsrs/fsrs_rs_reference.json"));
    if (!f.open(QIODevice::ReadOnly)) qFatal("fsrs_rs_reference.json is missing");
    return QJsonDocument::fromJson(f.readAll()).object();
}

}  // namespace

class TestFsrsOptimizer : public QObject {
    Q_OBJECT
  private slots:
    void recoversTheGeneratorsPredictions() {
        const std::vector<FsrsCardHistory> cards = synthetic(600, 8, 7);
        int calls = 0;
        FsrsOptimizerOptions options;
        options.progress = [&](int done, int total) {
            ++calls;
            return done <= total;
        };
        const FsrsOptimization r = optimizeFsrs(cards, options);
        QVERIFY2(r.offered, r.message.c_str());
        QVERIFY(calls > 0);
        QVERIFY(r.fittedIsBetter);
        QVERIFY(r.fitted.logLoss < r.current.logLoss);
        const double fitted = recallGap(cards, r.weights);
        const double defaults = recallGap(cards, kFsrsDefaultWeights);
        qInfo(
            "mean |R - R_generator|: fitted %.4f, defaults %.4f; log loss fitted %.4f, "
            "defaults %.4f, generator %.4f; RMSE(bins) fitted %.4f, defaults %.4f",
            fitted, defaults, r.fitted.logLoss, r.current.logLoss,
            evaluateFsrs(cards, generatorWeights()).logLoss, r.fitted.rmseBins, r.current.rmseBins);
        QVERIFY2(fitted < 0.02, qPrintable(QString::number(fitted)));
        QVERIFY(fitted < defaults);
        QVERIFY(r.fitted.rmseBins < r.current.rmseBins);
    }

    // The same revlog.csv through fsrs-rs 6.5 (scripts/fsrs_reference.mjs wrote the figures):
    // one history with 1m/10m learning steps and a relearning step, one without. The app's
    // fit must predict as well as fsrs-rs's (log loss within 0.003 of it, by fsrs-rs's own
    // evaluation of the same items) and start from the same S0 pre-training (w0..w3 within 15%
    // of fsrs-rs's fitted ones, or 0.15 days for the small ones). Before (the pre-training on
    // second reviews only, no pull toward the defaults): w3 = 25.17 where fsrs-rs fits 16.85
    // without steps, w1 = 1.01 where it fits 1.25 with them.
    void matchesFsrsRs_data() {
        QTest::addColumn<QString>("history");
        QTest::newRow("learning steps") << QStringLiteral("steps");
        QTest::newRow("no learning steps") << QStringLiteral("nosteps");
    }
    void matchesFsrsRs() {
        QFETCH(QString, history);
        const QJsonObject ref = fsrsRsReference()[QStringLiteral("histories")][history].toObject();
        const std::vector<FsrsCardHistory> cards = readRevlog(
            QFINDTESTDATA(QStringLiteral("../fixtures/fsrs/%1.revlog.csv").arg(history)));
        FsrsOptimizerOptions options;
        options.dayCounter = utcDayAt4;
        const FsrsOptimization r = optimizeFsrs(cards, options);
        QVERIFY2(r.offered, r.message.c_str());
        const QJsonArray refW = ref[QStringLiteral("fitted_weights")].toArray();
        FsrsWeights theirs{};
        for (std::size_t i = 0; i < kFsrsWeightCount; ++i)
            theirs[i] = refW[static_cast<int>(i)].toDouble();
        const double theirLoss =
            ref[QStringLiteral("fitted")][QStringLiteral("log_loss")].toDouble();
        const double theirDefaults =
            ref[QStringLiteral("defaults")][QStringLiteral("log_loss")].toDouble();
        // fsrs-rs's binding evaluates the items its outlier filter keeps; so does this
        // comparison. Its figures and ours of the same weights agree to 5e-4 (float32 against
        // double; the defaults on the learning-steps history differ most: 0.3649 vs 0.3652).
        const auto filtered = FsrsEvaluationItems::AfterOutlierFilter;
        const FsrsEvaluation ourTheirs = evaluateFsrs(cards, theirs, utcDayAt4, filtered);
        const FsrsEvaluation ourDefaults =
            evaluateFsrs(cards, kFsrsDefaultWeights, utcDayAt4, filtered);
        const FsrsEvaluation ourFit = evaluateFsrs(cards, r.weights, utcDayAt4, filtered);
        qInfo(
            "%s: w0..w3 app %.3f %.3f %.3f %.3f (S0 pre-training %.3f %.3f %.3f %.3f), fsrs-rs "
            "%.3f %.3f %.3f %.3f; log loss (fsrs-rs's items) app %.4f, fsrs-rs %.4f (ours of "
            "its weights %.4f), defaults %.4f (fsrs-rs %.4f); all items: app %.4f, defaults "
            "%.4f; %s",
            qPrintable(history), r.weights[0], r.weights[1], r.weights[2], r.weights[3],
            r.initialStability[0], r.initialStability[1], r.initialStability[2],
            r.initialStability[3], theirs[0], theirs[1], theirs[2], theirs[3], ourFit.logLoss,
            theirLoss, ourTheirs.logLoss, ourDefaults.logLoss, theirDefaults, r.fitted.logLoss,
            r.current.logLoss, r.message.c_str());
        const QJsonObject theirFit = ref[QStringLiteral("fitted")].toObject();
        QVERIFY(std::abs(ourTheirs.logLoss - theirLoss) < 5e-4);
        QVERIFY(std::abs(ourDefaults.logLoss - theirDefaults) < 5e-4);
        QVERIFY(std::abs(ourTheirs.rmseBins - theirFit[QStringLiteral("rmse_bins")].toDouble()) <
                5e-4);
        QVERIFY2(std::abs(ourFit.logLoss - theirLoss) < 0.003,
                 qPrintable(QString::number(ourFit.logLoss)));
        QVERIFY(r.fitted.logLoss < r.current.logLoss);
        for (std::size_t i = 0; i < 4; ++i)
            QVERIFY2(std::abs(r.weights[i] - theirs[i]) <= std::max(0.15, 0.15 * theirs[i]),
                     qPrintable(QStringLiteral("w%1 = %2, fsrs-rs %3")
                                    .arg(i)
                                    .arg(r.weights[i])
                                    .arg(theirs[i])));
        QVERIFY(r.fittedIsBetter);
    }

    // Weights that already fit are not replaced by a fit that predicts held-out cards worse:
    // with fsrs-rs's own fitted weights as the current ones, the message says which are kept
    // and why, with the figures.
    void aWorseFitIsNotKept() {
        const QJsonObject ref =
            fsrsRsReference()[QStringLiteral("histories")][QStringLiteral("steps")].toObject();
        const std::vector<FsrsCardHistory> cards =
            readRevlog(QFINDTESTDATA(QStringLiteral("../fixtures/fsrs/steps.revlog.csv")));
        FsrsOptimizerOptions options;
        options.dayCounter = utcDayAt4;
        options.epochs = 1;
        options.learningRate = 0.2;  // a poor fit on purpose
        for (std::size_t i = 0; i < kFsrsWeightCount; ++i)
            options.current[i] =
                ref[QStringLiteral("fitted_weights")][static_cast<int>(i)].toDouble();
        const FsrsOptimization r = optimizeFsrs(cards, options);
        QVERIFY2(r.offered, r.message.c_str());
        const QString message = QString::fromStdString(r.message);
        qInfo("%s", qPrintable(message));
        QVERIFY2(r.heldOutFitted.logLoss > r.heldOutCurrent.logLoss,
                 "the poor fit predicts the held-out cards no worse: the test shows nothing");
        QVERIFY(!r.fittedIsBetter);
        QVERIFY(message.startsWith(QStringLiteral("the current weights are kept")));
        QVERIFY(message.contains(QStringLiteral("not fitted to worse")));
    }

    void aShortHistoryIsNotOffered() {
        const FsrsOptimization r = optimizeFsrs(synthetic(20, 4, 1));
        QVERIFY(!r.offered);
        QVERIFY(QString::fromStdString(r.message).contains(QStringLiteral("at least 400")));
    }

    // The history the optimizer reads: per card, review mode only, oldest first; fitted weights
    // kept by the settings drive the scheduler.
    void historyAndKeptWeights() {
        QTemporaryDir dir;
        ReviewStore store;
        QString error;
        QVERIFY2(store.open(dir.filePath(QStringLiteral("s.sqlite")), &error), qPrintable(error));
        const QDateTime t0(QDate(2026, 1, 5), QTime(10, 0), Qt::UTC);
        auto add = [&](const QString& card, int day, Rating r, StudyMode mode) {
            ReviewEntry e;
            e.card = {QStringLiteral("d"), card};
            e.reviewedAt = t0.addDays(day);
            e.grade = r;
            e.mode = mode;
            QVERIFY(store.recordReview(e) > 0);
        };
        add(QStringLiteral("b"), 3, Rating::Good, StudyMode::Review);
        add(QStringLiteral("a"), 2, Rating::Again, StudyMode::Review);
        add(QStringLiteral("b"), 1, Rating::Hard, StudyMode::Review);
        add(QStringLiteral("a"), 4, Rating::Easy, StudyMode::Practice);  // schedules nothing
        const std::vector<FsrsCardHistory> h = fsrsHistories(store);
        QCOMPARE(h.size(), std::size_t{2});
        QCOMPARE(h[0].size(), std::size_t{2});  // b, first reviewed on day 1
        QCOMPARE(h[0][0].rating, Rating::Hard);
        QCOMPARE(h[0][1].rating, Rating::Good);
        QCOMPARE(h[1].size(), std::size_t{1});

        StudySettings s = StudySettings::load(store);
        QVERIFY(!s.weights);
        s.weights = generatorWeights();
        QVERIFY(s.save(store));
        const StudySettings again = StudySettings::load(store);
        QVERIFY(again.weights);
        for (std::size_t i = 0; i < kFsrsWeightCount; ++i)
            QVERIFY(std::abs((*again.weights)[i] - generatorWeights()[i]) < 1e-7);
        QCOMPARE(again.fsrsParams().w[20], generatorWeights()[20]);
        // A damaged value (a word, or a weight out of bounds) reads as the defaults.
        QString damaged = weightsText(generatorWeights());
        QVERIFY(store.setSetting(
            QStringLiteral("fsrs_weights"),
            damaged.replace(0, damaged.indexOf(QLatin1Char(' ')), QStringLiteral("x"))));
        QVERIFY(!StudySettings::load(store).weights);
        FsrsWeights outOfBounds = generatorWeights();
        outOfBounds[20] = 5.0;
        QVERIFY(store.setSetting(QStringLiteral("fsrs_weights"), weightsText(outOfBounds)));
        QVERIFY(!StudySettings::load(store).weights);
    }

    void cancelStopsTheFit() {
        FsrsOptimizerOptions options;
        options.progress = [](int, int) { return false; };
        const FsrsOptimization r = optimizeFsrs(synthetic(200, 6, 3), options);
        QVERIFY(r.cancelled);
    }
};

QTEST_GUILESS_MAIN(TestFsrsOptimizer)
#include "test_fsrs_optimizer.moc"
