// The bank of cards as decks by audience: each bundled deck is valid on its own, a card shared
// by two decks is the same card in both, the bank holds 200+ cards in the 35/40/25 mix, and a
// learner's history of the retired single deck moves to the decks that now hold its cards,
// nothing lost and nothing counted twice.
#include <QDir>
#include <QJsonDocument>
#include <QJsonObject>
#include <QRegularExpression>
#include <QSet>
#include <QTemporaryDir>
#include <QtTest>

#include "study/bundled_decks.h"
#include "study/deck.h"
#include "study/deck_library.h"
#include "study/fsrs.h"
#include "study/review_store.h"
#include "study/study_session.h"

using pd::study::Card;
using pd::study::CardKey;
using pd::study::CardSchedule;
using pd::study::Deck;
using pd::study::ReviewEntry;
using pd::study::ReviewStore;

namespace {

QList<Deck> bundledDecks() {
    QList<Deck> decks;
    for (const QString& file : pd::study::bundledDeckFiles()) {
        const auto r = pd::study::loadDeckFile(QDir(QStringLiteral(PD_DECK_DIR)).filePath(file));
        if (!r.deck) qFatal("%s", qPrintable(r.errorText()));
        decks.append(*r.deck);
    }
    return decks;
}

bool sameCard(const Card& a, const Card& b) {
    if (a.prompt != b.prompt || a.type != b.type || a.difficulty != b.difficulty ||
        a.tags != b.tags || a.scenarioJson != b.scenarioJson || a.scenarioNote != b.scenarioNote ||
        a.sources != b.sources || a.options.size() != b.options.size())
        return false;
    for (int i = 0; i < a.options.size(); ++i)
        if (a.options[i].text != b.options[i].text ||
            a.options[i].correct != b.options[i].correct ||
            a.options[i].explanation != b.options[i].explanation)
            return false;
    return true;
}

ReviewEntry review(const QString& deck, const QString& card, int day) {
    ReviewEntry e;
    e.card = {deck, card};
    e.reviewedAt = QDateTime(QDate(2026, 11, day), QTime(9, 0), Qt::UTC);
    e.grade = pd::study::Rating::Good;
    e.chosen = {0};
    e.correct = true;
    e.durationMs = 3000;
    CardSchedule after;
    after.fsrs = pd::study::makeNewFsrsCard(pd::study::toTimePoint(e.reviewedAt.addDays(3)));
    after.reps = day;
    e.after = after;
    return e;
}

}  // namespace

class TestDeckSplit : public QObject {
    Q_OBJECT
  private slots:
    void everyBundledDeckIsValidAlone() {
        for (const QString& file : pd::study::bundledDeckFiles()) {
            const auto r =
                pd::study::loadDeckFile(QDir(QStringLiteral(PD_DECK_DIR)).filePath(file));
            QVERIFY2(r.deck, qPrintable(r.errorText()));
            QVERIFY2(r.warnings.isEmpty(),
                     qPrintable(r.warnings.isEmpty() ? QString() : r.warnings.first().toString()));
            QVERIFY2(r.deck->id + QStringLiteral(".json") == file, qPrintable(file));
        }
    }

    void sharedCardsAreTheSameCard() {
        const QList<Deck> decks = bundledDecks();
        QHash<QString, const Card*> seen;
        int shared = 0;
        for (const Deck& deck : decks)
            for (const Card& card : deck.cards) {
                if (const Card* other = seen.value(card.id)) {
                    QVERIFY2(sameCard(card, *other), qPrintable(card.id));
                    ++shared;
                } else {
                    seen.insert(card.id, &card);
                }
            }
        QVERIFY(shared > 0);
    }

    // The bank, each card once: at least 200 cards, 35/40/25 within 5 points.
    void theBankHasTwoHundredCardsInTheMix() {
        const QList<Deck> decks = bundledDecks();
        QHash<QString, pd::study::Difficulty> bank;
        for (const Deck& deck : decks)
            for (const Card& card : deck.cards) bank.insert(card.id, card.difficulty);
        QVERIFY2(bank.size() >= 200, qPrintable(QString::number(bank.size())));
        int count[3] = {0, 0, 0};
        for (auto d : bank) ++count[static_cast<int>(d)];
        const double n = bank.size();
        QVERIFY(std::abs(100 * count[0] / n - 35) <= 5);
        QVERIFY(std::abs(100 * count[1] / n - 40) <= 5);
        QVERIFY(std::abs(100 * count[2] / n - 25) <= 5);
    }

    // A learner reviewed cards of the single deck the bank used to be: a card now in both
    // decks (its schedule in each, its log once), one in one deck, and one the bank dropped
    // (kept under the old id). Carrying over twice changes nothing the second time.
    void historyOfTheRetiredDeckMovesToTheSplitDecks() {
        const QList<Deck> decks = bundledDecks();
        QString both, one;
        for (const Card& c : decks[0].cards) {
            const bool inSecond = decks[1].card(c.id) != nullptr;
            if (inSecond && both.isEmpty()) both = c.id;
            if (!inSecond && one.isEmpty()) one = c.id;
        }
        QVERIFY(!both.isEmpty() && !one.isEmpty());
        const QString old = pd::study::retiredBundledDecks().front().id;
        const QString dropped = QStringLiteral("a-card-no-deck-has");
        QTemporaryDir dir;
        ReviewStore store;
        QString error;
        QVERIFY2(store.open(dir.filePath(QStringLiteral("s.sqlite")), &error), qPrintable(error));
        for (const auto& [card, day] : {std::pair{both, 1}, {both, 4}, {one, 2}, {dropped, 3}})
            QVERIFY(store.recordReview(review(old, card, day), &error) > 0);
        QCOMPARE(store.reviewCount(), 4);

        pd::study::DeckLibrary library;
        QVERIFY(pd::study::addBundledDecks(library, QStringLiteral(PD_DECK_DIR)).isEmpty());
        QCOMPARE(pd::study::carryOverRetiredHistory(store, library), QString());
        const QString first = decks[0].id, second = decks[1].id;
        // The shared card's latest schedule (after its second review) is in both decks.
        for (const QString& deck : {first, second}) {
            const auto s = store.schedule(CardKey{deck, both});
            QVERIFY2(s, qPrintable(deck));
            QCOMPARE(s->reps, 4);
        }
        QVERIFY(store.schedule(CardKey{first, one}));
        QVERIFY(!store.schedule(CardKey{second, one}));
        QCOMPARE(store.cardReviews(CardKey{first, both}).size(), 2);
        QCOMPARE(store.cardReviews(CardKey{second, both}).size(), 0);
        QCOMPARE(store.reviewCount(), 4);  // nothing lost, nothing doubled
        QVERIFY(store.schedule(CardKey{old, dropped}));
        QVERIFY(!store.schedule(CardKey{old, both}));
        QCOMPARE(store.deckReviewCount(old), 1);

        QCOMPARE(pd::study::carryOverRetiredHistory(store, library), QString());
        QCOMPARE(store.reviewCount(), 4);
        QCOMPARE(store.cardReviews(CardKey{first, both}).size(), 2);
    }

    // Context parallelism and mixture of experts are concepts of their own: every card about
    // them (a cp or ep run, or a prompt on ring attention, Ulysses, experts) is filed there in
    // both decks, not under "Why model parallelism", and a mock exam scores them there.
    void contextParallelAndExpertCardsHaveTheirOwnConcepts() {
        QVERIFY(pd::study::conceptNames().contains(QStringLiteral("context-parallelism")));
        QVERIFY(pd::study::conceptNames().contains(QStringLiteral("mixture-of-experts")));
        QCOMPARE(pd::study::tagDisplayName(QStringLiteral("concept::context-parallelism")),
                 QStringLiteral("Context parallelism"));
        QCOMPARE(pd::study::tagDisplayName(QStringLiteral("concept::mixture-of-experts")),
                 QStringLiteral("Mixture of experts / expert parallelism"));
        const QRegularExpression cpPrompt(QStringLiteral("context parallel|ring attention|Ulysses"),
                                          QRegularExpression::CaseInsensitiveOption);
        const QRegularExpression moePrompt(
            QStringLiteral(
                "expert parallel|mixture-of-experts|\\bMoE\\b|Switch Transformer|GShard"),
            QRegularExpression::CaseInsensitiveOption);
        for (const Deck& deck : bundledDecks()) {
            int cp = 0, moe = 0;
            for (const Card& card : deck.cards) {
                const QString strategy =
                    QJsonDocument::fromJson(card.scenarioJson.toUtf8())[QStringLiteral("strategy")]
                        .toString();
                const QStringList concepts = card.concepts();
                const QString where = deck.id + QLatin1Char('/') + card.id;
                if (strategy == QStringLiteral("cp") || cpPrompt.match(card.prompt).hasMatch()) {
                    QVERIFY2(concepts.value(0) == QStringLiteral("context-parallelism"),
                             qPrintable(where));
                    ++cp;
                }
                if (strategy == QStringLiteral("ep") || moePrompt.match(card.prompt).hasMatch()) {
                    QVERIFY2(concepts.value(0) == QStringLiteral("mixture-of-experts"),
                             qPrintable(where));
                    ++moe;
                }
                if (concepts.contains(QStringLiteral("context-parallelism")) ||
                    concepts.contains(QStringLiteral("mixture-of-experts")))
                    QVERIFY2(!concepts.contains(QStringLiteral("why-model-parallelism")),
                             qPrintable(where));
            }
            QVERIFY2(cp >= 5 && moe >= 5, qPrintable(deck.id));  // the deck-wide minimum
        }
        // A mock exam's per-concept breakdown names them.
        QTemporaryDir dir;
        ReviewStore store;
        QVERIFY(store.open(dir.filePath(QStringLiteral("e.sqlite")), nullptr));
        const Deck deck = bundledDecks().front();
        for (const QString& tag : {QStringLiteral("concept::context-parallelism"),
                                   QStringLiteral("concept::mixture-of-experts")}) {
            pd::study::SessionOptions options;
            options.mode = pd::study::StudyMode::MockExam;
            options.filter.tag = tag;
            options.seed = 7;
            const QDateTime now(QDate(2026, 11, 1), QTime(9, 0), Qt::UTC);
            pd::study::StudySession exam(deck, store, {}, options, now);
            QVERIFY(exam.total() > 0);
            while (!exam.finished())
                QVERIFY(exam.answer({0}, std::nullopt, std::nullopt, 1000, now));
            QStringList scored;
            for (const pd::study::ConceptScore& s : exam.conceptScores()) scored.append(s.name);
            QVERIFY2(scored.contains(tag.mid(9)), qPrintable(scored.join(QLatin1Char(','))));
            QVERIFY2(!scored.contains(QStringLiteral("why-model-parallelism")),
                     qPrintable(scored.join(QLatin1Char(','))));
        }
    }
};

QTEST_GUILESS_MAIN(TestDeckSplit)
#include "test_deck_split.moc"
