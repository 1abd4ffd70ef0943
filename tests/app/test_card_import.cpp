// Anki-style CSV/TSV import and export: good files, broken files (nothing imported, the line and
// the reason named), partial rows, and round trips with the bundled deck.
#include <QTemporaryDir>
#include <QtTest>

#include "app/study_test_support.h"
#include "study/card_import.h"

using namespace pd::study;

class TestCardImport : public QObject {
    Q_OBJECT
  private slots:
    void goodFiles_data();
    void goodFiles();
    void brokenFiles_data();
    void brokenFiles();
    void partialFileImportsNothing();
    void textThatIsNotUtf8IsRefusedByLine_data();
    void textThatIsNotUtf8IsRefusedByLine();
    void utf8TextImportsAsWritten();
    void manyBadLinesAreCounted();
    void quotedFieldsAndScenario();
    void exportRoundTrip_data();
    void exportRoundTrip();
    void importFileByExtension();
    void deckIds_data();
    void deckIds();
};

namespace {

const QString kExpl =
    QStringLiteral("This explanation says exactly why and runs past forty characters.");

QByteArray tsv(const QStringList& lines) {
    return lines.join(QLatin1Char('\n')).toUtf8() + '\n';
}

QString row(const QStringList& fields, const QString& sep = QStringLiteral("\t")) {
    return fields.join(sep);
}

// A line in the exported column order: id, prompt, type, difficulty, correct, option1..6 with
// explanations, tags, scenario, scenario_note.
QString exportedRow(const QString& id, const QString& prompt, const QString& correct,
                    const QString& sep) {
    QStringList f = {id,
                     prompt,
                     QStringLiteral("single"),
                     QStringLiteral("foundation"),
                     correct,
                     QStringLiteral("A"),
                     kExpl,
                     QStringLiteral("B"),
                     kExpl,
                     QStringLiteral("C"),
                     kExpl};
    for (int i = 0; i < 6; ++i) f << QString();
    f << QStringLiteral("concept::data-parallelism") << QString() << QString();
    return f.join(sep);
}

}  // namespace

void TestCardImport::goodFiles_data() {
    QTest::addColumn<QByteArray>("bytes");
    QTest::addColumn<int>("cards");
    QTest::addColumn<QString>("firstPrompt");
    QTest::addColumn<int>("firstCorrect");

    QTest::newRow("tsv with headers")
        << tsv({QStringLiteral("#separator:tab"), QStringLiteral("#html:false"),
                QStringLiteral(
                    "#columns:"
                    "prompt\tcorrect\toption1\texplanation1\toption2\texplanation2\toption3\t"
                    "explanation3\ttags"),
                QStringLiteral("#tags column:9"),
                row({QStringLiteral("What does all-reduce leave on each rank?"),
                     QStringLiteral("2"), QStringLiteral("Its own gradient"), kExpl,
                     QStringLiteral("The sum of all gradients"), kExpl, QStringLiteral("Nothing"),
                     kExpl, QStringLiteral("concept::gradient-sync topic::x")})})
        << 1 << QStringLiteral("What does all-reduce leave on each rank?") << 1;
    QTest::newRow("csv semicolon, two right answers")
        << tsv({QStringLiteral("#separator:Semicolon"),
                QStringLiteral(
                    "#columns:id;prompt;correct;option1;explanation1;option2;explanation2;option3;"
                    "explanation3;tags;difficulty"),
                row({QStringLiteral("two-right"), QStringLiteral("Which two? (Choose two.)"),
                     QStringLiteral("1,3"), QStringLiteral("A"), kExpl, QStringLiteral("B"), kExpl,
                     QStringLiteral("C"), kExpl, QStringLiteral("concept::memory-savers"),
                     QStringLiteral("expert")},
                    QStringLiteral(";")),
                row({QStringLiteral("one-right"), QStringLiteral("Which one?"), QStringLiteral("3"),
                     QStringLiteral("A"), kExpl, QStringLiteral("B"), kExpl, QStringLiteral("C"),
                     kExpl, QStringLiteral("concept::memory-savers"),
                     QStringLiteral("application")},
                    QStringLiteral(";"))})
        << 2 << QStringLiteral("Which two? (Choose two.)") << 2;
    QTest::newRow("no headers, exported column order, CRLF")
        << (exportedRow(QStringLiteral("no-header"), QStringLiteral("Plain?"), QStringLiteral("1"),
                        QStringLiteral("\t")) +
            QStringLiteral("\r\n"))
               .toUtf8()
        << 1 << QStringLiteral("Plain?") << 1;
}

void TestCardImport::goodFiles() {
    QFETCH(QByteArray, bytes);
    QFETCH(int, cards);
    QFETCH(QString, firstPrompt);
    QFETCH(int, firstCorrect);
    const ImportResult r = importDelimited(bytes, QStringLiteral("/tmp/My Cards.tsv"));
    QVERIFY2(r.deck, qPrintable(r.errorText()));
    QCOMPARE(r.deck->id, QStringLiteral("my-cards"));
    QCOMPARE(r.deck->title, QStringLiteral("My Cards"));
    QCOMPARE(r.deck->cards.size(), cards);
    QCOMPARE(r.deck->cards.first().prompt, firstPrompt);
    QCOMPARE(r.deck->cards.first().correctCount(), firstCorrect);
}

void TestCardImport::brokenFiles_data() {
    QTest::addColumn<QByteArray>("bytes");
    QTest::addColumn<QString>("where");
    QTest::addColumn<QString>("message");
    const QString header = QStringLiteral(
        "#separator:tab\n#columns:"
        "prompt\tcorrect\toption1\texplanation1\toption2\texplanation2\toption3\t"
        "explanation3\ttags");
    const auto good = [&](const QString& correct = QStringLiteral("1")) {
        return row({QStringLiteral("Q?"), correct, QStringLiteral("A"), kExpl, QStringLiteral("B"),
                    kExpl, QStringLiteral("C"), kExpl, QStringLiteral("concept::gradient-sync")});
    };
    QTest::newRow("unknown separator")
        << tsv({QStringLiteral("#separator:double-tab"), good()}) << QStringLiteral("line 1")
        << QStringLiteral("unknown #separator");
    QTest::newRow("unknown column")
        << tsv({QStringLiteral("#separator:tab"), QStringLiteral("#columns:prompt\tanswer"),
                good()})
        << QStringLiteral("line 2") << QStringLiteral("unknown column 'answer'");
    QTest::newRow("missing required column")
        << tsv({QStringLiteral("#separator:tab"),
                QStringLiteral("#columns:prompt\toption1\texplanation1"),
                QStringLiteral("Q?\tA\tB")})
        << QStringLiteral("line 2") << QStringLiteral("required column 'correct'");
    QTest::newRow("wrong field count")
        << tsv({header, good(), QStringLiteral("Q?\t1\tA")}) << QStringLiteral("line 4")
        << QStringLiteral("has 3 fields");
    QTest::newRow("bad correct column")
        << tsv({header, good(QStringLiteral("first"))}) << QStringLiteral("line 3")
        << QStringLiteral("column 'correct'");
    QTest::newRow("correct names empty option")
        << tsv({header, good(QStringLiteral("5"))}) << QStringLiteral("line 3")
        << QStringLiteral("option 5");
    QTest::newRow("unclosed quote") << tsv({header, good(), QStringLiteral("\"Q?\t1")})
                                    << QStringLiteral("line 4") << QStringLiteral("never closed");
    QTest::newRow("card rule: short explanation")
        << tsv({header, good().replace(kExpl, QStringLiteral("short"))})
        << QStringLiteral("line 3.options[0].explanation") << QStringLiteral("too short");
    QTest::newRow("card rule: no concept")
        << tsv({header, good().replace(QStringLiteral("concept::gradient-sync"),
                                       QStringLiteral("topic::x"))})
        << QStringLiteral("line 3.tags") << QStringLiteral("concept::");
    QTest::newRow("empty file") << QByteArray("#separator:tab\n") << QStringLiteral("line 2")
                                << QStringLiteral("no cards");
    // A file with its own header row: named as such, with the #columns line that would work.
    QTest::newRow("own header row")
        << tsv({QStringLiteral("Front\tBack"), QStringLiteral("What is 2+2?\tFour")})
        << QStringLiteral("line 1")
        << QStringLiteral(
               "looks like a header row (Front, Back); ParallelDeck reads column "
               "names only from a '#columns:' line: name the columns in a line "
               "'#columns:front<tab>back' before the cards (after '#separator:tab')");
    QTest::newRow("own header row of known names")
        << tsv({QStringLiteral("prompt\tcorrect\toption1\texplanation1"), good()})
        << QStringLiteral("line 1")
        << QStringLiteral("'#columns:prompt<tab>correct<tab>option1<tab>explanation1'");
    QTest::newRow("field count without #columns names the #columns syntax")
        << tsv({QStringLiteral("What is 2+2?\tFour")}) << QStringLiteral("line 1")
        << QStringLiteral(
               "has 2 fields but the columns are 20 (id, prompt, type, difficulty, "
               "correct, option1, explanation1, option2, explanation2, option3, "
               "explanation3, option4, explanation4, option5, explanation5, option6, "
               "explanation6, tags, scenario, scenario_note); if the file has other "
               "columns, name the columns in a line '#columns:prompt<tab>correct<tab>"
               "option1<tab>explanation1<tab>…' before the cards");
    QTest::newRow("own header row, comma separated")
        << QByteArray("Front,Back\nWhat is 2+2?,Four\n") << QStringLiteral("line 1")
        << QStringLiteral("'#columns:front,back' before the cards (after '#separator:comma')");
    QTest::newRow("unknown column lists the known ones")
        << tsv({QStringLiteral("#separator:comma"), QStringLiteral("#columns:question,answer"),
                QStringLiteral("Q?,A")})
        << QStringLiteral("line 2")
        << QStringLiteral("unknown column 'question' (the columns are: id, prompt, type");
}

void TestCardImport::brokenFiles() {
    QFETCH(QByteArray, bytes);
    QFETCH(QString, where);
    QFETCH(QString, message);
    const ImportResult r = importDelimited(bytes, QStringLiteral("bad.tsv"));
    QVERIFY(!r.deck);
    bool found = false;
    for (const DeckIssue& e : r.errors) {
        if (e.where == where && e.message.contains(message)) found = true;
    }
    QVERIFY2(found, qPrintable(r.errorText()));
}

void TestCardImport::partialFileImportsNothing() {
    // Lines 2 and 4 are fine, line 3 is not: nothing is imported and only line 3 is blamed.
    const QByteArray bytes = tsv({QStringLiteral("#separator:comma"),
                                  exportedRow(QStringLiteral("ok-1"), QStringLiteral("Fine?"),
                                              QStringLiteral("1"), QStringLiteral(",")),
                                  exportedRow(QStringLiteral("bad-2"), QStringLiteral("Broken?"),
                                              QStringLiteral("\"1,2\""), QStringLiteral(",")),
                                  exportedRow(QStringLiteral("ok-3"), QStringLiteral("Also fine?"),
                                              QStringLiteral("2"), QStringLiteral(","))});
    const ImportResult r = importDelimited(bytes, QStringLiteral("partial.csv"));
    QVERIFY(!r.deck);
    QCOMPARE(r.errors.size(), 1);
    QCOMPARE(r.errors.first().where, QStringLiteral("line 3.type"));
    QVERIFY(r.errors.first().message.contains(QStringLiteral("exactly one correct")));
    QVERIFY(r.errorText().startsWith(QStringLiteral("partial.csv: line 3")));
}

// A NUL byte or bytes that are not UTF-8 are refused with the line and the character (from
// 1) named, and the byte; the file imported as "2 cards" with U+0000 and
// U+FFFD in the prompt before.
void TestCardImport::textThatIsNotUtf8IsRefusedByLine_data() {
    QTest::addColumn<QByteArray>("bytes");
    QTest::addColumn<QString>("error");  // the whole first error, as errorText() writes it
    const QByteArray header =
        "#separator:tab\n#columns:prompt\tcorrect\toption1\texplanation1\toption2\t"
        "explanation2\toption3\texplanation3\ttags\n";
    const auto card = [](const QByteArray& prompt) {
        return prompt + "\t1\tA\t" + kExpl.toUtf8() + "\tB\t" + kExpl.toUtf8() + "\tC\t" +
               kExpl.toUtf8() + "\tconcept::gradient-sync\n";
    };
    const auto notUtf8 = [](int line, int character, const char* byte) {
        return QStringLiteral(
                   "bad.csv: line %1: character %2 is not UTF-8 (byte %3): save the "
                   "file as UTF-8 text")
            .arg(line)
            .arg(character)
            .arg(QLatin1String(byte));
    };
    const QByteArray good = card("Fine?");
    QTest::newRow("NUL byte") << header + good + card(QByteArray("Wh\0at?", 6))
                              << QStringLiteral(
                                     "bad.csv: line 4: character 3 is a NUL byte "
                                     "(0x00): the file is binary, or text that is "
                                     "not UTF-8");
    QTest::newRow("invalid byte") << header +
                                         card(
                                             "Wh\xff"
                                             "at?") +
                                         good
                                  << notUtf8(3, 3, "0xFF");
    // Characters, not bytes, are counted: "Ü" is two bytes, one character.
    QTest::newRow("cut after two-byte characters")
        << header + good + good + card("\xc3\x9c\xc3\x9c\xe2") + good << notUtf8(5, 3, "0xE2");
    QTest::newRow("overlong slash") << header + card("a\xc0\xaf") << notUtf8(3, 2, "0xC0");
    QTest::newRow("surrogate") << header + card("\xed\xa0\x80") << notUtf8(3, 1, "0xED");
    QTest::newRow("past U+10FFFF") << header + card("\xf4\x90\x80\x80") << notUtf8(3, 1, "0xF4");
    QTest::newRow("in a header line")
        << QByteArray("#separator:t\xe9\n") + good << notUtf8(1, 13, "0xE9");
    QTest::newRow("UTF-16") << QByteArray("\xff\xfeQ\0?\0", 6)
                            << QStringLiteral(
                                   "bad.csv: line 1: the file is UTF-16 (it starts "
                                   "with a UTF-16 byte-order mark): save it as UTF-8");
}

void TestCardImport::textThatIsNotUtf8IsRefusedByLine() {
    QFETCH(QByteArray, bytes);
    QFETCH(QString, error);
    const ImportResult r = importDelimited(bytes, QStringLiteral("bad.csv"));
    QVERIFY(!r.deck);
    QVERIFY(!r.errors.isEmpty());
    QCOMPARE(r.errors.first().toString(), error);
}

// Every character UTF-8 can hold imports as written, U+FFFD written in the file included.
void TestCardImport::utf8TextImportsAsWritten() {
    const QString prompt = QStringLiteral("Ünïcödé ✓ \U0001F680 \uFFFD ok?");
    const QByteArray bytes =
        "\xef\xbb\xbf#separator:tab\n#columns:prompt\tcorrect\toption1\t"
        "explanation1\toption2\texplanation2\toption3\texplanation3\ttags\n" +
        prompt.toUtf8() + "\t1\tA\t" + kExpl.toUtf8() + "\tB\t" + kExpl.toUtf8() + "\tC\t" +
        kExpl.toUtf8() + "\tconcept::gradient-sync\n";
    const ImportResult r = importDelimited(bytes, QStringLiteral("good.csv"));
    QVERIFY2(r.deck, qPrintable(r.errorText()));
    QCOMPARE(r.deck->cards.first().prompt, prompt);
}

// A binary file is not listed line by line: ten lines are named, then how many more.
void TestCardImport::manyBadLinesAreCounted() {
    QByteArray bytes;
    for (int i = 0; i < 50; ++i) bytes += QByteArray("ok\xff\n");
    const ImportResult r = importDelimited(bytes, QStringLiteral("bin.csv"));
    QVERIFY(!r.deck);
    QCOMPARE(r.errors.size(), 11);
    QCOMPARE(r.errors[9].where, QStringLiteral("line 10"));
    QCOMPARE(r.errors[10].toString(),
             QStringLiteral("bin.csv: line 11: 40 more lines from here on have a NUL byte or "
                            "bytes that are not UTF-8"));
}

void TestCardImport::quotedFieldsAndScenario() {
    const QByteArray bytes =
        QStringLiteral(
            "#separator:comma\n"
            "#columns:id,prompt,correct,option1,explanation1,option2,explanation2,option3,"
            "explanation3,tags,scenario,scenario_note\n"
            "quoted,\"A prompt, with a comma\nand a second line\",1,\"Say "
            "\"\"hi\"\"\",%1,B,%1,C,%1,"
            "concept::pipeline-parallelism,\"{\"\"strategy\"\": \"\"dp\"\", \"\"devices\"\": 2}\","
            "Watch the comm lane.\n"
            "after,Next?,2,A,%1,B,%1,C,%1,concept::pipeline-parallelism,,\n")
            .arg(kExpl)
            .toUtf8();
    const ImportResult r = importDelimited(bytes, QStringLiteral("q.csv"));
    QVERIFY2(r.deck, qPrintable(r.errorText()));
    QCOMPARE(r.deck->cards.size(), 2);
    const Card& c = r.deck->cards.first();
    QCOMPARE(c.prompt, QStringLiteral("A prompt, with a comma\nand a second line"));
    QCOMPARE(c.options.first().text, QStringLiteral("Say \"hi\""));
    QVERIFY(c.hasScenario());
    QCOMPARE(c.scenarioNote, QStringLiteral("Watch the comm lane."));
    QVERIFY(!r.deck->cards[1].hasScenario());
}

void TestCardImport::exportRoundTrip_data() {
    QTest::addColumn<QChar>("separator");
    QTest::newRow("tsv") << QChar(QLatin1Char('\t'));
    QTest::newRow("csv") << QChar(QLatin1Char(','));
}

void TestCardImport::exportRoundTrip() {
    QFETCH(QChar, separator);
    const DeckLoadResult bundled =
        loadDeckFile(QStringLiteral(PD_DECK_DIR "/ml-systems-parallelism.json"));
    QVERIFY(bundled.deck);
    int leftOut = -1;
    const QByteArray text = exportDelimited(*bundled.deck, separator, &leftOut);
    const ImportResult again = importDelimited(text, QStringLiteral("ml-systems-parallelism.tsv"));
    QVERIFY2(again.deck, qPrintable(again.errorText()));
    // Numeric cards have no columns: left out, and counted.
    QList<Card> exported;
    for (const Card& c : bundled.deck->cards)
        if (!c.isNumeric()) exported.append(c);
    QCOMPARE(leftOut, static_cast<int>(bundled.deck->cards.size() - exported.size()));
    QCOMPARE(again.deck->cards.size(), exported.size());
    for (int i = 0; i < exported.size(); ++i) {
        const Card& a = exported[i];
        const Card& b = again.deck->cards[i];
        QCOMPARE(b.id, a.id);
        QCOMPARE(b.prompt, a.prompt);
        QCOMPARE(b.type, a.type);
        QCOMPARE(b.difficulty, a.difficulty);
        QCOMPARE(b.tags, a.tags);
        QCOMPARE(b.scenarioJson, a.scenarioJson);
        QCOMPARE(b.scenarioNote, a.scenarioNote);
        QCOMPARE(b.options.size(), a.options.size());
        for (int k = 0; k < a.options.size(); ++k) {
            QCOMPARE(b.options[k].text, a.options[k].text);
            QCOMPARE(b.options[k].correct, a.options[k].correct);
            QCOMPARE(b.options[k].explanation, a.options[k].explanation);
        }
    }
}

void TestCardImport::importFileByExtension() {
    QTemporaryDir dir;
    QVERIFY(dir.isValid());
    const QString json = dir.filePath(QStringLiteral("small.json"));
    QFile f(json);
    QVERIFY(f.open(QIODevice::WriteOnly));
    f.write(pd::test::deckJson(
        {pd::test::singleCard(QStringLiteral("only"), QStringLiteral("gradient-sync"))}));
    f.close();
    const ImportResult r = importFile(json);
    QVERIFY2(r.deck, qPrintable(r.errorText()));  // deck-wide rules are lenient for imports
    QCOMPARE(r.deck->id, QStringLiteral("test-deck"));
    const ImportResult missing = importFile(dir.filePath(QStringLiteral("nope.csv")));
    QVERIFY(!missing.deck);
    QCOMPARE(missing.errors.first().where, QStringLiteral("file"));
}

void TestCardImport::deckIds_data() {
    QTest::addColumn<QString>("file");
    QTest::addColumn<QString>("id");
    QTest::newRow("spaces") << QStringLiteral("/x/My Cards (v2).csv")
                            << QStringLiteral("my-cards-v2");
    QTest::newRow("plain") << QStringLiteral("deck.tsv") << QStringLiteral("deck");
    QTest::newRow("symbols only") << QStringLiteral("___.csv") << QStringLiteral("imported");
}

void TestCardImport::deckIds() {
    QFETCH(QString, file);
    QFETCH(QString, id);
    QCOMPARE(deckIdFromFileName(file), id);
}

QTEST_APPLESS_MAIN(TestCardImport)
#include "test_card_import.moc"
