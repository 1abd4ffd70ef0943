// Numeric "predict, then run" cards: typed answers with units, grading within the card's
// tolerance, the deck validator's rules for the `answer` object, and a card graded against a
// real run of its scenario.
#include <QtTest>
#include <cmath>

#include "pd/expectations.h"
#include "pd/metrics.h"
#include "pd/scenario.h"
#include "study/deck.h"
#include "study/numeric_answer.h"
#include "study_test_support.h"

using namespace pd::study;

class TestNumericAnswer : public QObject {
    Q_OBJECT
  private slots:
    void typedAnswers_data() {
        QTest::addColumn<QString>("text");
        QTest::addColumn<int>("unit");
        QTest::addColumn<double>("base");
        const int pct = int(AnswerUnit::Percent), mib = int(AnswerUnit::MiB);
        const int ms = int(AnswerUnit::Milliseconds), count = int(AnswerUnit::Count);
        QTest::newRow("bare percent") << "27" << pct << 0.27;
        QTest::newRow("percent sign") << " 27.5 % " << pct << 0.275;
        QTest::newRow("bare MiB") << "16" << mib << 16.0 * 1048576;
        QTest::newRow("GiB typed for MiB") << "1 GiB" << mib << 1073741824.0;
        QTest::newRow("decimal MB") << "2MB" << mib << 2e6;
        QTest::newRow("bytes") << "4,194,304 bytes" << mib << 4194304.0;
        QTest::newRow("lowercase kib") << "512 kib" << mib << 524288.0;
        QTest::newRow("ms") << "12.5" << ms << 0.0125;
        QTest::newRow("seconds typed") << "0.5 s" << ms << 0.5;
        QTest::newRow("microseconds") << "250us" << ms << 250e-6;
        QTest::newRow("count") << "7" << count << 7.0;
        QTest::newRow("exponent") << "1e3" << count << 1000.0;
    }
    void typedAnswers() {
        QFETCH(QString, text);
        QFETCH(int, unit);
        QFETCH(double, base);
        QString error;
        const auto v = parseTypedAnswer(text, static_cast<AnswerUnit>(unit), &error);
        QVERIFY2(v, qPrintable(error));
        QVERIFY2(std::abs(*v - base) <= 1e-9 * std::abs(base),
                 qPrintable(QStringLiteral("%1 -> %2").arg(text).arg(*v)));
    }

    void badTypedAnswersSayWhy_data() {
        QTest::addColumn<QString>("text");
        QTest::addColumn<int>("unit");
        QTest::addColumn<QString>("says");
        QTest::newRow("empty") << "  " << int(AnswerUnit::MiB) << "type a number";
        QTest::newRow("words") << "about half" << int(AnswerUnit::Percent) << "not a number";
        QTest::newRow("time for bytes") << "3 ms" << int(AnswerUnit::MiB) << "not a unit";
        QTest::newRow("percent for count") << "5%" << int(AnswerUnit::Count) << "not a unit";
        QTest::newRow("two numbers") << "3 4" << int(AnswerUnit::Count) << "not a number";
    }
    void badTypedAnswersSayWhy() {
        QFETCH(QString, text);
        QFETCH(int, unit);
        QFETCH(QString, says);
        QString error;
        QVERIFY(!parseTypedAnswer(text, static_cast<AnswerUnit>(unit), &error));
        QVERIFY2(error.contains(says), qPrintable(error));
    }

    void formatsInTheCardsUnit() {
        QCOMPARE(formatInUnit(0.2561, AnswerUnit::Percent), QStringLiteral("25.6%"));
        QCOMPARE(formatInUnit(16.0625 * 1048576, AnswerUnit::MiB), QStringLiteral("16.063 MiB"));
        QCOMPARE(formatInUnit(4194304, AnswerUnit::Bytes), QStringLiteral("4194304 bytes"));
        QCOMPARE(formatInUnit(0.0123, AnswerUnit::Milliseconds), QStringLiteral("12.3 ms"));
        QCOMPARE(formatInUnit(7, AnswerUnit::Count), QStringLiteral("7"));
    }

    void gradesWithinTheTolerance() {
        NumericAnswer a;
        a.unit = AnswerUnit::Percent;
        a.tolerance = 4;  // percentage points
        a.textbook = 27.3;
        NumericGrade g = gradeNumeric(a, 0.27, 0.256);
        QVERIFY(g.correct);
        QVERIFY(g.nearTextbook && *g.nearTextbook);
        g = gradeNumeric(a, 0.30, 0.256);  // 4.4 points off
        QVERIFY(!g.correct);
        QVERIFY(*g.nearTextbook);
        QVERIFY(gradeNumeric(a, 0.296, 0.256).correct);  // exactly 4 points: inclusive

        NumericAnswer r;
        r.unit = AnswerUnit::MiB;
        r.tolerance = 0.02;
        r.toleranceIsRelative = true;
        const double measured = 16.0 * 1048576;
        QVERIFY(gradeNumeric(r, measured * 1.019, measured).correct);
        QVERIFY(!gradeNumeric(r, measured * 1.03, measured).correct);
        QVERIFY(!gradeNumeric(r, measured, NAN).correct);
        QCOMPARE(toleranceText(a), QStringLiteral("\u00b1 4 percentage points"));
        QCOMPARE(toleranceText(r), QStringLiteral("\u00b1 2%"));
    }

    // predict-gpipe-bubble-4x8 on a busy machine: the run measures 34.5% against the textbook
    // 27.3%. The textbook answer is right when the run's own stage times account for the
    // difference, and the grade says so; without that explanation only the measured figure
    // counts.
    void theTextbookFigureCountsWhereTheRunExplainsTheDifference() {
        NumericAnswer a;
        a.metric = QStringLiteral("bubble");
        a.unit = AnswerUnit::Percent;
        a.tolerance = 6;
        a.textbook = 27.3;
        const RunExplanation why{0.341,
                                 QStringLiteral("+5.1 points stage imbalance, +2.0 launch gaps")};
        NumericGrade g = gradeNumeric(a, 0.273, 0.345);
        QVERIFY(!g.correct);
        QVERIFY(g.textbookNote.isEmpty());
        g = gradeNumeric(a, 0.273, 0.345, why);
        QVERIFY(g.correct);
        QVERIFY(g.byTextbook);
        QVERIFY2(g.textbookNote.startsWith(
                     QStringLiteral("textbook right; this run measured 34.5% because its own "
                                    "times predict 34.1%")),
                 qPrintable(g.textbookNote));
        QVERIFY(g.textbookNote.contains(QStringLiteral("stage imbalance")));
        // The measured figure still counts on its own, not as the textbook's.
        g = gradeNumeric(a, 0.35, 0.345, why);
        QVERIFY(g.correct && !g.byTextbook);
        // An answer near neither is wrong, explanation or not.
        QVERIFY(!gradeNumeric(a, 0.11, 0.345, why).correct);
        // A prediction that misses the measured figure explains nothing.
        const RunExplanation off{0.25, QStringLiteral("+0.0 points schedule")};
        g = gradeNumeric(a, 0.273, 0.345, off);
        QVERIFY(!g.correct);
        QVERIFY(g.textbookNote.isEmpty());
    }

    // The explanation is the bubble predicted from the run's stage times and its causes,
    // largest first; other metrics have none.
    void theRunExplainsItsBubble() {
        NumericAnswer a;
        a.metric = QStringLiteral("bubble");
        a.unit = AnswerUnit::Percent;
        pd::RunMetrics m;
        QVERIFY(!explainMeasured(a, m));
        pd::BubbleMetrics b;
        b.measured = 0.33;
        b.theoretical = 3.0 / 11.0;
        b.schedule = pd::PipelineSchedule::gpipe;
        pd::BubblePrediction p;
        p.fraction = 0.329;
        p.causes.stage_imbalance = 0.04;
        p.causes.untraced_gaps = 0.015;
        p.causes.optimizer_tail = -0.0007;
        b.predicted = p;
        m.bubble = b;
        const auto why = explainMeasured(a, m);
        QVERIFY(why);
        QCOMPARE(why->predicted, 0.329);
        QCOMPARE(why->causes, QStringLiteral("+4.0 points stage imbalance, +1.5 launch gaps, "
                                             "\u22120.1 optimizer tail"));
        a.metric = QStringLiteral("exposed_comm_fraction");
        QVERIFY(!explainMeasured(a, m));
    }

    void validatorReadsANumericCard() {
        const DeckLoadResult r =
            parseDeck(pd::test::deckJson({pd::test::numericCard(QStringLiteral("predict-grads"))}),
                      QStringLiteral("numeric.json"), {true});
        QVERIFY2(r.deck, qPrintable(r.errorText()));
        const Card& c = r.deck->cards.first();
        QVERIFY(c.isNumeric());
        QVERIFY(c.options.isEmpty());
        QVERIFY(c.numeric);
        QCOMPARE(c.numeric->metric, QStringLiteral("model_state.gradients"));
        QCOMPARE(c.numeric->device, 0);
        QCOMPARE(c.numeric->unit, AnswerUnit::KiB);
        QVERIFY(c.numeric->toleranceIsRelative);
        QCOMPARE(c.numeric->textbook.value_or(0), 49.5);
        // Round trip through the file form.
        const DeckLoadResult again =
            parseDeck(deckToJson(*r.deck), QStringLiteral("again.json"), {true});
        QVERIFY2(again.deck, qPrintable(again.errorText()));
        QCOMPARE(again.deck->cards.first().numeric, c.numeric);
        QCOMPARE(again.deck->cards.first().type, CardType::Numeric);
    }

    void validatorRejectsBadAnswers_data() {
        QTest::addColumn<QString>("card");
        QTest::addColumn<QString>("says");
        const QString tail = QStringLiteral(
            R"json(, "explanation": "An explanation that is long enough for the rule here."})json");
        auto card = [](const QString& answer) {
            return pd::test::numericCard(QStringLiteral("bad"), answer);
        };
        QTest::newRow("unknown metric")
            << card(QStringLiteral(
                        R"json({"metric": "speed", "unit": "count", "tolerance": 1)json") +
                    tail)
            << "answer.metric";
        QTest::newRow("per-device without device")
            << card(QStringLiteral(
                        R"json({"metric": "peak.total", "unit": "MiB", "tolerance": 1)json") +
                    tail)
            << "answer.device";
        QTest::newRow("run-wide with device")
            << card(
                   QStringLiteral(
                       R"json({"metric": "parameter_count", "device": 0, "unit": "count", "tolerance": 1)json") +
                   tail)
            << "takes no device";
        QTest::newRow("both tolerances")
            << card(
                   QStringLiteral(
                       R"json({"metric": "parameter_count", "unit": "count", "tolerance": 1, "relative_tolerance": 0.1)json") +
                   tail)
            << "exactly one";
        QTest::newRow("wide relative tolerance")
            << card(
                   QStringLiteral(
                       R"json({"metric": "parameter_count", "unit": "count", "relative_tolerance": 0.5)json") +
                   tail)
            << "at most 0.25";
        QTest::newRow("bad unit")
            << card(
                   QStringLiteral(
                       R"json({"metric": "parameter_count", "unit": "parsecs", "tolerance": 1)json") +
                   tail)
            << "answer.unit";
        QTest::newRow("textbook without formula")
            << card(
                   QStringLiteral(
                       R"json({"metric": "parameter_count", "unit": "count", "tolerance": 1, "textbook": 3)json") +
                   tail)
            << "textbook_formula";
        QTest::newRow("short explanation")
            << card(QStringLiteral(
                   R"json({"metric": "parameter_count", "unit": "count", "tolerance": 1, "explanation": "short"})json"))
            << "too short";
        QString withOptions = pd::test::numericCard(QStringLiteral("opts"));
        withOptions.replace(QStringLiteral("\"type\": \"numeric\","),
                            QStringLiteral("\"type\": \"numeric\", \"options\": [],"));
        QTest::newRow("options on a numeric card") << withOptions << "has no options";
        QString noScenario = pd::test::numericCard(QStringLiteral("noscn"));
        noScenario =
            noScenario.left(noScenario.indexOf(QStringLiteral(",\n        \"scenario\""))) +
            QStringLiteral("}");
        QTest::newRow("no scenario") << noScenario << "measured on its run";
        QString answerOnSingle =
            pd::test::singleCard(QStringLiteral("single"), QStringLiteral("data-parallelism"));
        answerOnSingle.insert(1, QStringLiteral("\"answer\": {}, "));
        QTest::newRow("answer on a single card") << answerOnSingle << "belongs to numeric cards";
    }
    void validatorRejectsBadAnswers() {
        QFETCH(QString, card);
        QFETCH(QString, says);
        const DeckLoadResult r =
            parseDeck(pd::test::deckJson({card}), QStringLiteral("bad.json"), {true});
        QVERIFY(!r.deck);
        QVERIFY2(r.errorText().contains(says), qPrintable(r.errorText()));
    }

    // The answer comes from the run: the figure the card names, read as claims read it, and
    // graded right at the measured value and wrong well outside the tolerance.
    void gradedAgainstARealRun() {
        const DeckLoadResult r =
            parseDeck(pd::test::deckJson({pd::test::numericCard(QStringLiteral("predict-grads"))}),
                      QStringLiteral("numeric.json"), {true});
        QVERIFY2(r.deck, qPrintable(r.errorText()));
        const Card& card = r.deck->cards.first();
        pd::RunConfig config;
        pd::ConfigSources sources;
        pd::apply_scenario_json(card.scenarioJson.toStdString(), "numeric.json", config, sources);
        pd::validate(config, sources);
        const pd::RunEvidence run = pd::run_for_evidence(config);
        QCOMPARE(run.result.status, pd::RunStatus::ok);
        const auto measured =
            pd::read_metric(card.numeric->metric.toStdString(), run, card.numeric->device);
        QVERIFY(measured);
        // dp keeps the whole gradient on each device: 4 bytes a parameter.
        QVERIFY(run.metrics.parameter_count > 0);
        QCOMPARE(*measured, 4.0 * static_cast<double>(run.metrics.parameter_count));
        QVERIFY(gradeNumeric(*card.numeric, *measured, *measured).correct);
        QString error;
        const auto typed =
            parseTypedAnswer(formatInUnit(*measured, AnswerUnit::KiB), card.numeric->unit, &error);
        QVERIFY2(typed, qPrintable(error));
        QVERIFY(gradeNumeric(*card.numeric, *typed, *measured).correct);
        QVERIFY(!gradeNumeric(*card.numeric, *measured * 1.2, *measured).correct);
        QVERIFY(!gradeNumeric(*card.numeric, *measured * 0.5, *measured).correct);
        QVERIFY(!pd::read_metric("no.such.metric", run, 0));
        QVERIFY(!pd::read_metric("model_state.gradients", run, 7));  // no device 7
    }
};

QTEST_APPLESS_MAIN(TestNumericAnswer)
#include "test_numeric_answer.moc"
