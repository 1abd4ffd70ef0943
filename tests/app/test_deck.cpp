// The deck loader: the bundled deck is valid and every scenario parses with the engine's own
// parser, expectations included; broken decks are rejected with messages that name the file,
// card and field, whether the deck's own rules or the engine's found the problem.
#include <QDir>
#include <QFile>
#include <QTemporaryDir>
#include <QtTest>

#include "app/study_test_support.h"
#include "pd/error.h"
#include "pd/expectations.h"
#include "pd/run_config.h"
#include "pd/scenario.h"
#include "study/deck.h"
#include "study/deck_library.h"

using pd::study::Deck;
using pd::study::DeckLoadResult;
using pd::study::parseDeck;

class TestDeck : public QObject {
    Q_OBJECT
  private slots:
    void bundledDeckIsValid();
    void bundledScenariosParse_data();
    void bundledScenariosParse();
    void brokenDecks_data();
    void brokenDecks();
    void deckWideRules();
    void versionOneIsReadWithAWarning();
    void sourcesAreKeptAndOptionalBeforeVersionThree();
    void noRetiredApiIsACorrectAnswer();
    void roundTrip();
    void tagNames();
    void libraryOrderIsStable();
    void reimportPlansAnUpdate();
    void reimportOfBundledCardsChangesNothing();
    void renameAndDelete();
};

namespace {

QString bundledPath() {
    return QStringLiteral(PD_DECK_DIR "/ml-systems-parallelism.json");
}

const Deck& bundled() {
    static const Deck deck = [] {
        DeckLoadResult r = pd::study::loadDeckFile(bundledPath());
        if (!r.deck) qFatal("%s", qPrintable(r.errorText()));
        return *r.deck;
    }();
    return deck;
}

}  // namespace

void TestDeck::bundledDeckIsValid() {
    const DeckLoadResult r = pd::study::loadDeckFile(bundledPath());
    QVERIFY2(r.deck.has_value(), qPrintable(r.errorText()));
    QVERIFY2(r.warnings.isEmpty(),
             qPrintable(r.warnings.isEmpty() ? QString() : r.warnings.first().toString()));
    const Deck& deck = *r.deck;
    QCOMPARE(deck.id, QStringLiteral("ml-systems-parallelism"));
    QVERIFY(deck.cards.size() >= 60);

    // Every concept of the syllabus is covered, by at least five cards each.
    QHash<QString, int> perConcept;
    int withScenario = 0;
    for (const auto& card : deck.cards) {
        for (const QString& c : card.concepts()) ++perConcept[c];
        if (card.hasScenario()) {
            ++withScenario;
            QVERIFY(!card.scenarioNote.isEmpty());
        }
        if (card.isNumeric()) {
            // Predict, then run: no options; the answer is measured on the card's run.
            QVERIFY(card.options.isEmpty());
            QVERIFY(card.hasScenario());
            QVERIFY(card.numeric && card.numeric->explanation.size() >= 40);
        } else {
            QVERIFY(card.options.size() >= 3 && card.options.size() <= 6);
            for (const auto& o : card.options) QVERIFY(o.explanation.size() >= 40);
        }
    }
    for (const QString& c : pd::study::conceptNames())
        QVERIFY2(perConcept.value(c) >= 5, qPrintable(c));
    QVERIFY(withScenario * 100 >= 40 * deck.cards.size());
}

void TestDeck::bundledScenariosParse_data() {
    QTest::addColumn<QString>("scenario");
    for (const auto& card : bundled().cards) {
        if (card.hasScenario()) QTest::newRow(qPrintable(card.id)) << card.scenarioJson;
    }
}

void TestDeck::bundledScenariosParse() {
    QFETCH(QString, scenario);
    pd::RunConfig config;
    pd::ConfigSources sources;
    pd::Expectations expect;
    const std::string origin = QTest::currentDataTag();
    try {
        pd::apply_scenario_json(scenario.toStdString(), origin, config, sources, &expect);
        pd::validate(config, sources);
        for (std::size_t i = 0; i < expect.variants.size(); ++i)
            if (!pd::expects_refusal(expect, i)) pd::variant_config(config, expect, i, origin);
    } catch (const pd::BadInput& e) {
        QFAIL(e.what());
    }
    QVERIFY2(!expect.empty(), "a version 2 scenario carries expectations");
}

void TestDeck::brokenDecks_data() {
    using pd::test::deckJson;
    using pd::test::option;
    using pd::test::singleCard;
    QTest::addColumn<QByteArray>("json");
    QTest::addColumn<QString>("where");
    QTest::addColumn<QString>("message");

    const QString good = singleCard(QStringLiteral("good-card"), QStringLiteral("gradient-sync"));
    const auto card = [&](const QString& from, const QString& to) {
        QString c = good;
        c.replace(from, to);
        return c;
    };

    QTest::newRow("not json") << QByteArray("{\"format\": ") << QStringLiteral("file")
                              << QStringLiteral("cannot read deck");
    QTest::newRow("duplicate key")
        << deckJson({card(QStringLiteral("\"type\": \"single\""),
                          QStringLiteral("\"type\": \"single\", \"type\": \"single\""))})
        << QStringLiteral("file") << QStringLiteral("duplicate key 'type'");
    // Issue 41: an escaped NUL imported U+0000 into the prompt (one rule with the scenarios').
    QTest::newRow("NUL escaped in a string")
        << deckJson({card(QStringLiteral("\"prompt\": \"Question good-card?\""),
                          QStringLiteral("\"prompt\": \"Question\\u0000 good-card?\""))})
        << QStringLiteral("file")
        << QStringLiteral("a NUL character (\\u0000) in the string at cards[0].prompt");
    QTest::newRow("wrong format") << deckJson({good}).replace("paralleldeck-deck", "other")
                                  << QStringLiteral("deck.format")
                                  << QStringLiteral("format must be");
    QTest::newRow("unknown top key")
        << deckJson({good}).replace("\"title\"", "\"titel\": 1, \"title\"")
        << QStringLiteral("deck") << QStringLiteral("unknown key 'titel'");
    QTest::newRow("bad card id") << deckJson({card(QStringLiteral("good-card"),
                                                   QStringLiteral("Good_Card"))})
                                 << QStringLiteral("cards[0] (Good_Card).id")
                                 << QStringLiteral("kebab-case");
    const QString cited = QStringLiteral(
        "\"sources\": [{\"title\": \"Paper\", \"url\": \"https://arxiv.org/abs/1910.02054\", "
        "\"locator\": \"Section 5\"}], \"tags\"");
    const auto sourced = [&](const QString& from, const QString& to) {
        QString c = card(QStringLiteral("\"tags\""), cited);
        c.replace(from, to);
        return c;
    };
    QTest::newRow("version 3 card without sources")
        << deckJson({good}).replace("\"version\": 1", "\"version\": 3")
        << QStringLiteral("cards[0] (good-card)")
        << QStringLiteral("missing required key 'sources'");
    QTest::newRow("source not https")
        << deckJson({sourced(QStringLiteral("https://arxiv"), QStringLiteral("http://arxiv"))})
        << QStringLiteral("cards[0] (good-card).sources[0].url")
        << QStringLiteral("starting with https://");
    QTest::newRow("source without locator")
        << deckJson({sourced(QStringLiteral(", \"locator\": \"Section 5\""), QString())})
        << QStringLiteral("cards[0] (good-card).sources[0]")
        << QStringLiteral("missing required key 'locator'");
    QTest::newRow("source with unknown key")
        << deckJson(
               {sourced(QStringLiteral("\"locator\""), QStringLiteral("\"page\": 3, \"locator\""))})
        << QStringLiteral("cards[0] (good-card).sources[0]")
        << QStringLiteral("unknown key 'page'");
    QTest::newRow("empty sources")
        << deckJson({card(QStringLiteral("\"tags\""), QStringLiteral("\"sources\": [], \"tags\""))})
        << QStringLiteral("cards[0] (good-card).sources") << QStringLiteral("1 to 3 references");
    QTest::newRow("empty title") << deckJson({sourced(QStringLiteral("\"Paper\""),
                                                      QStringLiteral("\"\""))})
                                 << QStringLiteral("cards[0] (good-card).sources[0].title")
                                 << QStringLiteral("non-empty string");
    QTest::newRow("two right answers on single")
        << deckJson(
               {card(QStringLiteral("\"correct\": false"), QStringLiteral("\"correct\": true"))})
        << QStringLiteral("cards[0] (good-card).type") << QStringLiteral("exactly one correct");
    QTest::newRow("too few options")
        << deckJson({card(QStringLiteral(", ") + option(QStringLiteral("C"), false), QString())})
        << QStringLiteral("cards[0] (good-card).options") << QStringLiteral("3 to 6 entries");
    QTest::newRow("short explanation")
        << deckJson(
               {card(QStringLiteral("Because A is right, which this explanation states at length."),
                     QStringLiteral("Too short."))})
        << QStringLiteral("cards[0] (good-card).options[0].explanation")
        << QStringLiteral("too short");
    QTest::newRow("correct as number")
        << deckJson({card(QStringLiteral("\"correct\": true"), QStringLiteral("\"correct\": 1"))})
        << QStringLiteral("cards[0] (good-card).options[0].correct")
        << QStringLiteral("true or false");
    QTest::newRow("unknown concept")
        << deckJson(
               {card(QStringLiteral("concept::gradient-sync"), QStringLiteral("concept::magic"))})
        << QStringLiteral("cards[0] (good-card).tags") << QStringLiteral("unknown concept tag");
    QTest::newRow("no concept tag")
        << deckJson({card(QStringLiteral("concept::gradient-sync"), QStringLiteral("topic::x"))})
        << QStringLiteral("cards[0] (good-card).tags") << QStringLiteral("at least one concept");
    QTest::newRow("bad difficulty")
        << deckJson({card(QStringLiteral("\"foundation\""), QStringLiteral("\"easy\""))})
        << QStringLiteral("cards[0] (good-card).difficulty")
        << QStringLiteral("difficulty must be one of: foundation, application, expert");
    // A readable list, not a Python one ("['multiple', 'single']").
    QTest::newRow("bad type") << deckJson({card(QStringLiteral("\"type\": \"single\""),
                                                QStringLiteral("\"type\": \"one\""))})
                              << QStringLiteral("cards[0] (good-card).type")
                              << QStringLiteral("type must be one of: multiple, numeric, single");
    QTest::newRow("choose on single")
        << deckJson(
               {card(QStringLiteral("Question good-card?"), QStringLiteral("Pick? (Choose two.)"))})
        << QStringLiteral("cards[0] (good-card).prompt") << QStringLiteral("must not contain");
    QTest::newRow("multiple count mismatch")
        << deckJson(
               {pd::test::multipleCard(QStringLiteral("multi"), QStringLiteral("data-parallelism"))
                    .replace(QStringLiteral("(Choose two.)"), QStringLiteral("(Choose three.)"))})
        << QStringLiteral("cards[0] (multi).prompt") << QStringLiteral("choose 3 but 2");
    QTest::newRow("note without scenario")
        << deckJson({card(QStringLiteral("\"tags\""),
                          QStringLiteral("\"scenario_note\": \"x\", \"tags\""))})
        << QStringLiteral("cards[0] (good-card).scenario_note")
        << QStringLiteral("without a scenario");
    QTest::newRow("scenario without note")
        << deckJson({card(
               QStringLiteral("\"tags\""),
               QStringLiteral("\"scenario\": {\"strategy\": \"dp\", \"devices\": 2}, \"tags\""))})
        << QStringLiteral("cards[0] (good-card).scenario_note") << QStringLiteral("is required");
    const auto withScenario = [&](const QString& scenario) {
        return deckJson(
            {card(QStringLiteral("\"tags\""),
                  QStringLiteral("\"scenario\": %1, \"scenario_note\": \"Look.\", \"tags\"")
                      .arg(scenario))});
    };
    // Version 2: scenarios carry `expect`.
    const auto v2 = [](QByteArray deck) {
        return deck.replace("\"version\": 1", "\"version\": 2");
    };
    const auto withExpect = [&](const QString& keys, const QString& expect) {
        return v2(withScenario(QStringLiteral("{%1, \"expect\": %2}").arg(keys, expect)));
    };
    QTest::newRow("scenario unknown key")
        << withScenario(QStringLiteral("{\"strategy\": \"dp\", \"devices\": 2, \"gpus\": 2}"))
        << QStringLiteral("cards[0] (good-card).scenario.gpus")
        << QStringLiteral("is not a known setting");
    QTest::newRow("scenario wrong type")
        << withScenario(QStringLiteral("{\"strategy\": \"dp\", \"devices\": \"two\"}"))
        << QStringLiteral("cards[0] (good-card).scenario.devices")
        << QStringLiteral("must be an integer");
    QTest::newRow("scenario without strategy")
        << withScenario(QStringLiteral("{\"devices\": 2}"))
        << QStringLiteral("cards[0] (good-card).scenario.strategy") << QStringLiteral("required");
    QTest::newRow("scenario batch not divisible")
        << withScenario(QStringLiteral("{\"strategy\": \"dp\", \"devices\": 3, \"batch\": 32}"))
        << QStringLiteral("cards[0] (good-card).scenario.batch")
        << QStringLiteral("does not divide evenly");
    QTest::newRow("scenario too wide")
        << withScenario(
               QStringLiteral("{\"strategy\": \"single\", \"devices\": 1, \"width\": 512}"))
        << QStringLiteral("cards[0] (good-card).scenario.width") << QStringLiteral("laptop-sized");
    QTest::newRow("scenario unknown schedule")
        << withScenario(QStringLiteral(
               "{\"strategy\": \"pipeline\", \"devices\": 2, \"schedule\": \"zigzag\"}"))
        << QStringLiteral("cards[0] (good-card).scenario.schedule")
        << QStringLiteral("unknown schedule 'zigzag'");
    QTest::newRow("hybrid mesh mismatch")
        << withScenario(QStringLiteral(
               "{\"strategy\": \"hybrid\", \"devices\": 8, \"dp\": 2, \"pp\": 2, \"tp\": 1}"))
        << QStringLiteral("cards[0] (good-card).scenario.devices")
        << QStringLiteral("does not match the device count");
    QTest::newRow("interleaved micro-batches")
        << withScenario(QStringLiteral(
               "{\"strategy\": \"pipeline\", \"devices\": 2, \"layers\": 8, \"batch\": 30, "
               "\"schedule\": \"interleaved\", \"chunks\": 2, \"microbatches\": 3}"))
        << QStringLiteral("cards[0] (good-card).scenario.microbatches")
        << QStringLiteral("multiple of the 2 pipeline stages");
    QTest::newRow("version 2 scenario without expect")
        << v2(withScenario(QStringLiteral("{\"strategy\": \"dp\", \"devices\": 2}")))
        << QStringLiteral("cards[0] (good-card).scenario.expect")
        << QStringLiteral("expect is required");
    QTest::newRow("version 2 accepts expect")  // another problem, to see that expect passed
        << withExpect(QStringLiteral("\"strategy\": \"dp\", \"devices\": 2, \"width\": 999"),
                      QStringLiteral("[{\"status\": \"ok\"}]"))
        << QStringLiteral("cards[0] (good-card).scenario.width") << QStringLiteral("laptop-sized");
    QTest::newRow("unknown metric")
        << withExpect(QStringLiteral("\"strategy\": \"dp\", \"devices\": 2"),
                      QStringLiteral("[{\"status\": \"ok\"}, {\"metric\": \"speed\", "
                                     "\"at_least\": 1}]"))
        << QStringLiteral("cards[0] (good-card).scenario.expect[1].metric")
        << QStringLiteral("unknown metric 'speed'");
    QTest::newRow("compare_with breaks the config")
        << withExpect(QStringLiteral("\"strategy\": \"dp\", \"devices\": 2, \"batch\": 32"),
                      QStringLiteral("[{\"metric\": \"step_time\", \"compare_with\": "
                                     "{\"devices\": 3}, \"relative_to\": {\"run\": \"other\"}, "
                                     "\"at_most\": 1}]"))
        << QStringLiteral("cards[0] (good-card).scenario.expect[0].compare_with.batch")
        << QStringLiteral("does not divide evenly");
    // A refused claim: its comparison must be refused, and for the setting it names.
    QTest::newRow("refused claim accepted")
        << withExpect(QStringLiteral("\"strategy\": \"dp\", \"devices\": 2, \"batch\": 32"),
                      QStringLiteral("[{\"status\": \"refused\", \"key\": \"batch\", "
                                     "\"compare_with\": {\"devices\": 4}}]"))
        << QStringLiteral("cards[0] (good-card).scenario.expect[0].compare_with")
        << QStringLiteral("refused, but it is accepted");
    QTest::newRow("refused claim names another key")
        << withExpect(QStringLiteral("\"strategy\": \"dp\", \"devices\": 2, \"batch\": 32"),
                      QStringLiteral("[{\"status\": \"refused\", \"key\": \"devices\", "
                                     "\"compare_with\": {\"devices\": 3}}]"))
        << QStringLiteral("cards[0] (good-card).scenario.expect[0].compare_with")
        << QStringLiteral("a refusal naming devices; it is refused naming batch");
    QTest::newRow("compare_with too big")
        << withExpect(QStringLiteral("\"strategy\": \"dp\", \"devices\": 2"),
                      QStringLiteral("[{\"metric\": \"step_time\", \"compare_with\": "
                                     "{\"layers\": 64}, \"relative_to\": {\"run\": \"other\"}, "
                                     "\"at_most\": 1}]"))
        << QStringLiteral("cards[0] (good-card).scenario.expect[0].compare_with.layers")
        << QStringLiteral("laptop-sized");
    QTest::newRow("unknown version")
        << deckJson({good}).replace("\"version\": 1", "\"version\": 4")
        << QStringLiteral("deck.version") << QStringLiteral("version must be the integer 3");
    QTest::newRow("duplicate card id")
        << deckJson({good, good}) << QStringLiteral("cards[1] (good-card).id")
        << QStringLiteral("first used by cards[0]");
}

void TestDeck::brokenDecks() {
    QFETCH(QByteArray, json);
    QFETCH(QString, where);
    QFETCH(QString, message);
    const DeckLoadResult r = parseDeck(json, QStringLiteral("broken.json"), {true});
    QVERIFY(!r.deck.has_value());
    QVERIFY(!r.errors.isEmpty());
    bool found = false;
    for (const auto& e : r.errors) {
        QCOMPARE(e.file, QStringLiteral("broken.json"));
        if (e.where == where && e.message.contains(message)) found = true;
    }
    QVERIFY2(found, qPrintable(r.errorText()));
    // The text form is "file: where: message".
    QVERIFY(r.errorText().startsWith(QStringLiteral("broken.json: ")));
}

void TestDeck::deckWideRules() {
    const QByteArray json = pd::test::deckJson(
        {pd::test::singleCard(QStringLiteral("only-card"), QStringLiteral("gradient-sync"))});
    const DeckLoadResult strict = parseDeck(json, QStringLiteral("d.json"));
    QVERIFY(!strict.deck);
    QVERIFY(strict.errorText().contains(QStringLiteral("concept::gradient-sync is on 1 card(s)")));
    // The scenario share is an aim: a card no run can show has no scenario.
    QVERIFY(!strict.errorText().contains(QStringLiteral("have a scenario")));
    bool aimed = false;
    for (const auto& w : strict.warnings)
        aimed = aimed || w.message.contains(QStringLiteral("have a scenario"));
    QVERIFY(aimed);
    const DeckLoadResult lenient = parseDeck(json, QStringLiteral("d.json"), {true});
    QVERIFY(lenient.deck);
    // The concept rule, the scenario aim, and the version 1 deck's uncited card.
    QCOMPARE(lenient.warnings.size(), 3);
}

// A version 1 deck (before expectations) is read as version 2 whose scenarios may lack
// `expect`, with one warning that nothing checks those runs; saved again it stays version 1.
void TestDeck::versionOneIsReadWithAWarning() {
    QString card =
        pd::test::singleCard(QStringLiteral("old-card"), QStringLiteral("gradient-sync"));
    card.replace(QStringLiteral("\"tags\""),
                 QStringLiteral("\"scenario\": {\"strategy\": \"dp\", \"devices\": 2}, "
                                "\"scenario_note\": \"Look.\", \"tags\""));
    const QByteArray json = pd::test::deckJson({card});
    const DeckLoadResult r = parseDeck(json, QStringLiteral("old.json"), {true});
    QVERIFY2(r.deck, qPrintable(r.errorText()));
    bool warned = false;
    for (const auto& w : r.warnings)
        warned = warned || (w.where == QStringLiteral("deck.version") &&
                            w.message.contains(QStringLiteral("carry no expectations")));
    QVERIFY(warned);
    QVERIFY(pd::study::deckToJson(*r.deck).contains("\"version\": 1"));
    // The bundled deck, with expectations and sources everywhere, is written as version 3.
    QVERIFY(pd::study::deckToJson(bundled()).contains("\"version\": 3"));
}

// Sources survive a save and load; a deck before version 3 may leave them out, with one
// warning naming how many cards cite nothing.
void TestDeck::sourcesAreKeptAndOptionalBeforeVersionThree() {
    QString cited =
        pd::test::singleCard(QStringLiteral("cited-card"), QStringLiteral("gradient-sync"));
    cited.replace(QStringLiteral("\"tags\""),
                  QStringLiteral("\"sources\": [{\"title\": \"ZeRO\", \"url\": "
                                 "\"https://arxiv.org/abs/1910.02054\", \"locator\": \"Section "
                                 "5.1\"}], \"tags\""));
    const QString plain =
        pd::test::singleCard(QStringLiteral("plain-card"), QStringLiteral("gradient-sync"));
    const DeckLoadResult r =
        parseDeck(pd::test::deckJson({cited, plain}), QStringLiteral("d.json"), {true});
    QVERIFY2(r.deck, qPrintable(r.errorText()));
    const pd::study::Card* c = r.deck->card(QStringLiteral("cited-card"));
    QVERIFY(c);
    QCOMPARE(c->sources.size(), 1);
    QCOMPARE(c->sources[0].url, QStringLiteral("https://arxiv.org/abs/1910.02054"));
    QCOMPARE(c->sources[0].locator, QStringLiteral("Section 5.1"));
    bool warned = false;
    for (const auto& w : r.warnings)
        warned = warned || w.message.contains(QStringLiteral("1 card(s) cite no sources"));
    QVERIFY2(warned, "a card without sources is counted");
    const DeckLoadResult again =
        parseDeck(pd::study::deckToJson(*r.deck), QStringLiteral("again.json"), {true});
    QVERIFY2(again.deck, qPrintable(again.errorText()));
    QCOMPARE(again.deck->card(QStringLiteral("cited-card"))->sources, c->sources);
}

// Names the seeds' pages got wrong must never be a keyed answer: no PipelineMirroredStrategy
// (tf.distribute has none), no torch.distributed.pipeline.sync.Pipe (removed in PyTorch 2.4)
// and no --worker-machine-count (Vertex AI takes worker pool specs).
void TestDeck::noRetiredApiIsACorrectAnswer() {
    const QStringList wrong = {QStringLiteral("PipelineMirroredStrategy"),
                               QStringLiteral("torch.distributed.pipeline.sync"),
                               QStringLiteral("--worker-machine-count")};
    const QDir dir(QStringLiteral(PD_DECK_DIR));
    const QStringList files = dir.entryList({QStringLiteral("*.json")}, QDir::Files);
    QVERIFY(!files.isEmpty());
    for (const QString& name : files) {
        const DeckLoadResult r = pd::study::loadDeckFile(dir.filePath(name));
        QVERIFY2(r.deck, qPrintable(r.errorText()));
        for (const pd::study::Card& card : r.deck->cards)
            for (const pd::study::Option& o : card.options)
                for (const QString& w : wrong)
                    QVERIFY2(
                        !o.correct || !o.text.contains(w),
                        qPrintable(QStringLiteral("%1: %2 in a correct option").arg(card.id, w)));
    }
}

void TestDeck::roundTrip() {
    const Deck& deck = bundled();
    const DeckLoadResult again =
        parseDeck(pd::study::deckToJson(deck), QStringLiteral("again.json"));
    QVERIFY2(again.deck, qPrintable(again.errorText()));
    QCOMPARE(again.deck->cards.size(), deck.cards.size());
    for (int i = 0; i < deck.cards.size(); ++i) {
        QCOMPARE(again.deck->cards[i].id, deck.cards[i].id);
        QCOMPARE(again.deck->cards[i].scenarioJson, deck.cards[i].scenarioJson);
        QCOMPARE(again.deck->cards[i].options.size(), deck.cards[i].options.size());
    }
}

void TestDeck::tagNames() {
    QCOMPARE(pd::study::tagDisplayName(QStringLiteral("concept::gradient-sync")),
             QStringLiteral("Gradient synchronisation"));
    QCOMPARE(pd::study::tagDisplayName(QStringLiteral("concept::pipeline-parallelism")),
             QStringLiteral("Pipeline parallelism"));
    QCOMPARE(pd::study::tagDisplayName(QStringLiteral("framework::pytorch")),
             QStringLiteral("PyTorch"));
}

namespace {

Deck titled(Deck deck, const QString& id, const QString& title) {
    deck.id = id;
    deck.title = title;
    return deck;
}

QStringList idsOf(const pd::study::DeckLibrary& library) {
    QStringList ids;
    for (const Deck& d : library.decks()) ids.append(d.id);
    return ids;
}

}  // namespace

void TestDeck::libraryOrderIsStable() {
    // Imported in the order zeta, alpha: shown bundled first, then by title, today and after a
    // restart (the folder lists files by name, which must not decide the order).
    QTemporaryDir dir;
    const QString folder = dir.filePath(QStringLiteral("decks"));
    pd::study::DeckLibrary library;
    QVERIFY(library.addBundled(bundledPath()).isEmpty());
    library.loadUserDecks(folder);
    QVERIFY(library.importDeck(
        titled(pd::test::smallDeck(), QStringLiteral("a-first-file"), QStringLiteral("Zeta")),
        nullptr));
    QVERIFY(library.importDeck(
        titled(pd::test::smallDeck(), QStringLiteral("z-last-file"), QStringLiteral("alpha")),
        nullptr));
    const QStringList expected = {QStringLiteral("ml-systems-parallelism"),
                                  QStringLiteral("z-last-file"), QStringLiteral("a-first-file")};
    QCOMPARE(idsOf(library), expected);
    pd::study::DeckLibrary restarted;
    QVERIFY(restarted.addBundled(bundledPath()).isEmpty());
    QVERIFY(restarted.loadUserDecks(folder).isEmpty());
    QCOMPARE(idsOf(restarted), expected);
}

void TestDeck::reimportPlansAnUpdate() {
    QTemporaryDir dir;
    pd::study::DeckLibrary library;
    library.loadUserDecks(dir.path());
    QVERIFY(library.importDeck(pd::test::smallDeck(), nullptr));  // test-deck, four cards
    const pd::study::Deck* before = library.deck(QStringLiteral("test-deck"));

    // The exported file under another name: card-two edited, card-four gone, card-five new.
    Deck incoming =
        titled(pd::test::smallDeck(), QStringLiteral("my-export"), QStringLiteral("my-export"));
    incoming.cards[1].prompt = QStringLiteral("An edited prompt?");
    incoming.cards.removeAt(3);
    pd::study::Card five = incoming.cards[0];
    five.id = QStringLiteral("card-five");
    incoming.cards.append(five);

    const pd::study::ImportPlan plan = library.planImport(incoming);
    QCOMPARE(plan.targetId, QStringLiteral("test-deck"));
    QVERIFY(!plan.targetIsBundled);
    QCOMPARE(plan.changed, 1);
    QCOMPARE(plan.unchanged, 2);
    QCOMPARE(plan.added, 1);
    QCOMPARE(plan.kept, 1);
    QCOMPARE(plan.newOrChangedIds,
             (QStringList{QStringLiteral("card-two"), QStringLiteral("card-five")}));

    QString error;
    QVERIFY2(library.mergeInto(plan.targetId, incoming, &error), qPrintable(error));
    QCOMPARE(idsOf(library), QStringList{QStringLiteral("test-deck")});  // no duplicate deck
    const pd::study::Deck* merged = library.deck(QStringLiteral("test-deck"));
    QCOMPARE(merged, before);  // a session's pointer still holds
    QCOMPARE(merged->title, QStringLiteral("Test deck"));
    QStringList cardIds;
    for (const pd::study::Card& c : merged->cards) cardIds.append(c.id);
    // Known cards keep their place (a session counts by position); the kept card stays.
    QCOMPARE(cardIds, (QStringList{QStringLiteral("card-one"), QStringLiteral("card-two"),
                                   QStringLiteral("card-three"), QStringLiteral("card-four"),
                                   QStringLiteral("card-five")}));
    QCOMPARE(merged->card(QStringLiteral("card-two"))->prompt, QStringLiteral("An edited prompt?"));
    // Saved: a restart reads the merged deck.
    pd::study::DeckLibrary restarted;
    restarted.loadUserDecks(dir.path());
    QCOMPARE(restarted.deck(QStringLiteral("test-deck"))->cards.size(), 5);
    // The same file again changes nothing.
    QVERIFY(library.planImport(incoming).changesNothing());
}

void TestDeck::reimportOfBundledCardsChangesNothing() {
    QTemporaryDir dir;
    pd::study::DeckLibrary library;
    QVERIFY(library.addBundled(bundledPath()).isEmpty());
    library.loadUserDecks(dir.path());
    // An exported copy of the bundled deck, saved under another file name.
    DeckLoadResult copy =
        parseDeck(pd::study::deckToJson(bundled()), QStringLiteral("copy.json"), {true});
    QVERIFY(copy.deck);
    copy.deck->id = QStringLiteral("copy");
    const pd::study::ImportPlan plan = library.planImport(*copy.deck);
    QCOMPARE(plan.targetId, QStringLiteral("ml-systems-parallelism"));
    QVERIFY(plan.targetIsBundled);
    QVERIFY(plan.changesNothing());
    QCOMPARE(plan.unchanged, bundled().cards.size());
    QString error;
    QVERIFY(!library.mergeInto(plan.targetId, *copy.deck, &error));
    QVERIFY(error.contains(QStringLiteral("cannot be changed")));
    QCOMPARE(library.unusedId(QStringLiteral("ml-systems-parallelism")),
             QStringLiteral("ml-systems-parallelism-2"));
    QCOMPARE(library.unusedId(QStringLiteral("fresh")), QStringLiteral("fresh"));
}

void TestDeck::renameAndDelete() {
    QTemporaryDir dir;
    pd::study::DeckLibrary library;
    QVERIFY(library.addBundled(bundledPath()).isEmpty());
    library.loadUserDecks(dir.path());
    QVERIFY(library.importDeck(pd::test::smallDeck(), nullptr));
    QString error;
    QVERIFY(
        library.renameDeck(QStringLiteral("test-deck"), QStringLiteral("  My   cards "), &error));
    QCOMPARE(library.deck(QStringLiteral("test-deck"))->title, QStringLiteral("My cards"));
    QVERIFY(!library.renameDeck(QStringLiteral("test-deck"), QStringLiteral("  "), &error));
    QVERIFY(error.contains(QStringLiteral("empty")));
    QVERIFY(
        !library.renameDeck(QStringLiteral("ml-systems-parallelism"), QStringLiteral("X"), &error));
    QVERIFY(error.contains(QStringLiteral("bundled")));
    {
        pd::study::DeckLibrary restarted;
        restarted.loadUserDecks(dir.path());
        QCOMPARE(restarted.deck(QStringLiteral("test-deck"))->title, QStringLiteral("My cards"));
    }

    QVERIFY(!library.removeDeck(QStringLiteral("ml-systems-parallelism"), &error));
    QVERIFY(error.contains(QStringLiteral("cannot be deleted")));
    const pd::study::Deck* held = library.deck(QStringLiteral("test-deck"));
    QVERIFY(library.removeDeck(QStringLiteral("test-deck"), &error));
    QVERIFY(!library.deck(QStringLiteral("test-deck")));
    QCOMPARE(idsOf(library), QStringList{QStringLiteral("ml-systems-parallelism")});
    QCOMPARE(held->cards.size(), 4);  // what a study session holds is still there
    QVERIFY(!QFile::exists(dir.filePath(QStringLiteral("test-deck.json"))));
    pd::study::DeckLibrary restarted;
    restarted.loadUserDecks(dir.path());
    QVERIFY(restarted.decks().isEmpty());
}

QTEST_APPLESS_MAIN(TestDeck)
#include "test_deck.moc"
