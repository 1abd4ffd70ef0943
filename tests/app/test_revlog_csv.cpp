// The review log as fsrs-optimizer's CSV: an export lists every scheduling review with the
// ecosystem's five columns (and ParallelDeck's two), an import into a fresh database restores
// the log and rebuilds the schedules, importing again adds nothing, a file of the five columns
// alone imports for the library's cards, and a bad line is named while nothing is written.
#include <QCryptographicHash>
#include <QProcess>
#include <QTemporaryDir>
#include <QtTest>
#include <limits>

#include "app/study_test_support.h"
#include "study/deck_library.h"
#include "study/review_store.h"
#include "study/revlog_csv.h"
#include "study/study_session.h"

using namespace pd::study;

namespace {

struct Fixture {
    QTemporaryDir dir;
    DeckLibrary library;
    StudySettings settings;
    Fixture() {
        library.loadUserDecks(dir.filePath(QStringLiteral("decks")));
        if (!library.importDeck(pd::test::smallDeck(), nullptr)) qFatal("no deck");
        settings.fuzz = false;
    }
    std::unique_ptr<ReviewStore> store(const QString& name) {
        auto s = std::make_unique<ReviewStore>();
        QString error;
        if (!s->open(dir.filePath(name), &error)) qFatal("%s", qPrintable(error));
        return s;
    }
};

// Three days of reviews of two cards through a real session's scheduler, and one practice
// answer (which schedules nothing and is not exported).
void review(ReviewStore& store, const StudySettings& settings) {
    FsrsScheduler scheduler(settings.fsrsParams(), 1);
    scheduler.setDayCounter(settings.dayCounter());
    QDateTime t = pd::test::startTime();
    for (const QString& card : {QStringLiteral("card-one"), QStringLiteral("card-two")}) {
        std::optional<CardSchedule> schedule;
        for (Rating r : {Rating::Good, Rating::Good, Rating::Again, Rating::Easy}) {
            ReviewEntry e;
            e.card = {QStringLiteral("test-deck"), card};
            e.reviewedAt = t;
            e.grade = r;
            e.correct = r != Rating::Again;
            e.durationMs = 4000;
            e.before = schedule;
            CardSchedule next =
                schedule.value_or(CardSchedule{makeNewFsrsCard(toTimePoint(t)), 0, 0});
            next.fsrs = scheduler.review(next.fsrs, r, toTimePoint(t));
            ++next.reps;
            if (r == Rating::Again && schedule && schedule->fsrs.state == CardState::Review)
                ++next.lapses;  // as StudySession counts a lapse
            e.after = next;
            schedule = next;
            QVERIFY(store.recordReview(e) > 0);
            t = t.addSecs(26 * 3600);
        }
    }
    ReviewEntry practice;
    practice.card = {QStringLiteral("test-deck"), QStringLiteral("card-one")};
    practice.reviewedAt = t;
    practice.mode = StudyMode::Practice;
    QVERIFY(store.recordReview(practice) > 0);
}

const QString kHeader = QStringLiteral(
    "card_id,review_time,review_rating,review_state,review_duration,deck_id,card_key\n");

QString row(const QString& card, qint64 time, int rating = 3) {
    return QStringLiteral("%1,%2,%3,0,4000,test-deck,%4\n")
        .arg(revlogCardNumber(QStringLiteral("test-deck"), card))
        .arg(time)
        .arg(rating)
        .arg(card);
}

}  // namespace

class TestRevlogCsv : public QObject {
    Q_OBJECT
  private slots:
    void exportHasTheOptimizersColumns() {
        Fixture f;
        auto store = f.store(QStringLiteral("a.sqlite"));
        review(*store, f.settings);
        const QByteArray csv = exportRevlogCsv(*store);
        const QList<QByteArray> lines = csv.trimmed().split('\n');
        QCOMPARE(lines.front(), QByteArray("card_id,review_time,review_rating,review_state,"
                                           "review_duration,deck_id,card_key"));
        QCOMPARE(lines.size(), 1 + 8);  // the practice answer is not a scheduling review
        const QList<QByteArray> first = lines[1].split(',');
        QCOMPARE(first[0].toLongLong(),
                 revlogCardNumber(QStringLiteral("test-deck"), QStringLiteral("card-one")));
        QCOMPARE(first[1].toLongLong(), pd::test::startTime().toMSecsSinceEpoch());
        QCOMPARE(first[2], QByteArray("3"));
        QCOMPARE(first[3], QByteArray("0"));  // new before its first review
        QCOMPARE(first[4], QByteArray("4000"));
        QCOMPARE(lines[2].split(',')[3], QByteArray("1"));  // learning before the second
    }

    void roundTripRestoresTheLogAndSchedules() {
        Fixture f;
        auto source = f.store(QStringLiteral("a.sqlite"));
        review(*source, f.settings);
        const QByteArray csv = exportRevlogCsv(*source);
        auto target = f.store(QStringLiteral("b.sqlite"));
        const RevlogImport r =
            importRevlogCsv(csv, QStringLiteral("revlog.csv"), *target, f.library, f.settings);
        QVERIFY2(r.errors.isEmpty(), qPrintable(r.errors.join(QLatin1Char('\n'))));
        QCOMPARE(r.added, 8);
        QCOMPARE(r.cards, 2);
        QCOMPARE(exportRevlogCsv(*target), csv);
        // The replayed schedule is the one the reviews produced (same scheduler, no fuzz).
        for (const QString& card : {QStringLiteral("card-one"), QStringLiteral("card-two")}) {
            const CardKey key{QStringLiteral("test-deck"), card};
            QCOMPARE(target->schedule(key), source->schedule(key));
        }
        const RevlogImport again =
            importRevlogCsv(csv, QStringLiteral("revlog.csv"), *target, f.library, f.settings);
        QCOMPARE(again.added, 0);
        QCOMPARE(again.duplicates, 8);
        QCOMPARE(target->reviewCount(), 8);
    }

    void theFiveColumnsAloneImportForKnownCards() {
        Fixture f;
        auto source = f.store(QStringLiteral("a.sqlite"));
        review(*source, f.settings);
        QByteArray five;
        for (const QByteArray& line : exportRevlogCsv(*source).trimmed().split('\n')) {
            QList<QByteArray> fields = line.split(',');
            five += fields.mid(0, 5).join(',') + '\n';
        }
        auto target = f.store(QStringLiteral("b.sqlite"));
        const RevlogImport r =
            importRevlogCsv(five, QStringLiteral("five.csv"), *target, f.library, f.settings);
        QVERIFY2(r.errors.isEmpty(), qPrintable(r.errors.join(QLatin1Char('\n'))));
        QCOMPARE(r.added, 8);
    }

    void aBadLineIsNamedAndNothingIsWritten() {
        Fixture f;
        auto source = f.store(QStringLiteral("a.sqlite"));
        review(*source, f.settings);
        QByteArray csv = exportRevlogCsv(*source);
        csv += "123,456,7,0,10,test-deck,card-one\n";  // rating 7, and a card_id that lies
        auto target = f.store(QStringLiteral("b.sqlite"));
        const RevlogImport r =
            importRevlogCsv(csv, QStringLiteral("bad.csv"), *target, f.library, f.settings);
        QVERIFY(!r.errors.isEmpty());
        QVERIFY2(r.errors.front().startsWith(QStringLiteral("bad.csv: line 10: ")),
                 qPrintable(r.errors.front()));
        QCOMPARE(target->reviewCount(), 0);
        const RevlogImport header = importRevlogCsv(
            "card_id,review_time\n1,2\n", QStringLiteral("h.csv"), *target, f.library, f.settings);
        QVERIFY(header.errors.join(QLatin1Char('\n'))
                    .contains(QStringLiteral("missing column 'review_rating'")));
    }

    // A card_id that names no card says how card_id is made, precisely enough to compute it:
    // FNV-1a (64 bits) of "deck_id\ncard_key" in UTF-8, shifted right by 2 bits. The rule the
    // message states is checked here against revlogCardNumber, and a card_id that disagrees
    // with its deck_id and card_key says the number they give.
    void anUnknownCardIdSaysHowCardIdIsMade() {
        Fixture f;
        auto target = f.store(QStringLiteral("b.sqlite"));
        const RevlogImport r = importRevlogCsv(
            "card_id,review_time,review_rating,review_state,review_duration\n"
            "12345,1669725000000,3,0,4000\n12346,1669725000000,3,0,4000\n",
            QStringLiteral("five.csv"), *target, f.library, f.settings);
        QCOMPARE(r.errors.size(), 2);
        const QString first = r.errors.front();
        QVERIFY2(first.startsWith(QStringLiteral("five.csv: line 2: card_id 12345")),
                 qPrintable(first));
        for (const QString& part :
             {QStringLiteral("64-bit FNV-1a hash"), QStringLiteral("UTF-8 text deck_id"),
              QStringLiteral("a line feed, card_key"), QStringLiteral("shifted right by 2 bits"),
              QStringLiteral("add deck_id and card_key columns")})
            QVERIFY2(first.contains(part), qPrintable(first));
        // The rule as stated, computed here: it gives the number the export writes.
        const QByteArray text = QByteArrayLiteral("test-deck\ncard-one");
        quint64 h = 14695981039346656037ULL;
        for (const char c : text) {
            h ^= static_cast<unsigned char>(c);
            h *= 1099511628211ULL;
        }
        QCOMPARE(static_cast<qint64>(h >> 2),
                 revlogCardNumber(QStringLiteral("test-deck"), QStringLiteral("card-one")));
        // The second such row refers to the first's explanation instead of repeating it.
        QVERIFY2(r.errors.back().contains(QStringLiteral("card_id 12346 is no card")),
                 qPrintable(r.errors.back()));

        const RevlogImport named = importRevlogCsv(
            "card_id,review_time,review_rating,review_state,review_duration,deck_id,card_key\n"
            "12345,1669725000000,3,0,4000,test-deck,card-one\n",
            QStringLiteral("seven.csv"), *target, f.library, f.settings);
        QCOMPARE(named.errors.size(), 1);
        const QString expected = QString::number(
            revlogCardNumber(QStringLiteral("test-deck"), QStringLiteral("card-one")));
        QVERIFY2(named.errors.front().contains(QStringLiteral("which is ") + expected),
                 qPrintable(named.errors.front()));
        QVERIFY2(named.errors.front().contains(QStringLiteral("FNV-1a")),
                 qPrintable(named.errors.front()));
        QCOMPARE(target->reviewCount(), 0);
    }

    // A review_time the scheduler's clock cannot hold with the intervals after it (a row of
    // 2300 overflowed the 64-bit nanosecond count and stored a schedule due in 1715) is
    // refused by line, naming the value and the accepted range; nothing is written. The last
    // accepted millisecond imports with a schedule due after the review.
    void aTimeOutsideTheRangeIsRefusedByLine() {
        Fixture f;
        auto target = f.store(QStringLiteral("b.sqlite"));
        const QString header = QStringLiteral(
            "card_id,review_time,review_rating,review_state,review_duration,deck_id,card_key\n");
        const auto row = [](const QString& card, qint64 ms) {
            return QStringLiteral("%1,%2,3,0,4000,test-deck,%3\n")
                .arg(revlogCardNumber(QStringLiteral("test-deck"), card))
                .arg(ms)
                .arg(card);
        };
        const qint64 in2300 = 10413792000000;  // 2300-01-01T00:00:00Z
        const RevlogImport far =
            importRevlogCsv((header + row(QStringLiteral("card-one"), 1669725000000) +
                             row(QStringLiteral("card-two"), in2300))
                                .toUtf8(),
                            QStringLiteral("far.csv"), *target, f.library, f.settings);
        QCOMPARE(far.errors.size(), 1);
        const QString error = far.errors.front();
        QVERIFY2(error.startsWith(QStringLiteral("far.csv: line 3: review_time 10413792000000 "
                                                 "(2300-01-01T00:00:00Z)")),
                 qPrintable(error));
        QVERIFY2(error.contains(QStringLiteral("1973-03-03T09:46:40Z")) &&
                     error.contains(QStringLiteral("2099-12-31")),
                 qPrintable(error));
        QCOMPARE(target->reviewCount(), 0);
        // Found by fuzz_revlog: a time read as seconds that lands before 10^11 ms (review_time 1
        // is 1970-01-01T00:00:01Z) was imported, exported as 1000 and read back as seconds: the
        // export did not come back as itself. Such early times are refused.
        const RevlogImport early =
            importRevlogCsv((header + row(QStringLiteral("card-one"), 1)).toUtf8(),
                            QStringLiteral("early.csv"), *target, f.library, f.settings);
        QCOMPARE(early.errors.size(), 1);
        QVERIFY2(early.errors.front().contains(QStringLiteral("read as seconds")),
                 qPrintable(early.errors.front()));
        QCOMPARE(target->reviewCount(), 0);

        for (const qint64 ms : {qint64(0), qint64(-5), std::numeric_limits<qint64>::max(),
                                std::numeric_limits<qint64>::min()}) {
            const RevlogImport r =
                importRevlogCsv((header + row(QStringLiteral("card-one"), ms)).toUtf8(),
                                QStringLiteral("odd.csv"), *target, f.library, f.settings);
            QCOMPARE(r.errors.size(), 1);
            QVERIFY2(r.errors.front().startsWith(
                         QStringLiteral("odd.csv: line 2: review_time %1 ").arg(ms)),
                     qPrintable(r.errors.front()));
        }
        QCOMPARE(target->reviewCount(), 0);

        const qint64 last = 4102444799999;  // 2099-12-31T23:59:59.999Z
        const RevlogImport edge =
            importRevlogCsv((header + row(QStringLiteral("card-one"), last)).toUtf8(),
                            QStringLiteral("edge.csv"), *target, f.library, f.settings);
        QVERIFY2(edge.errors.isEmpty(), qPrintable(edge.errors.join(QLatin1Char('\n'))));
        const auto schedule =
            target->schedule({QStringLiteral("test-deck"), QStringLiteral("card-one")});
        QVERIFY(schedule);
        QVERIFY(toDateTime(schedule->fsrs.due) > QDateTime::fromMSecsSinceEpoch(last, Qt::UTC));
    }

    // Some exporters write review_time in seconds: 1669725000 was imported as 1970-01-20. A
    // file whose times are below 10^11 is read as seconds (10^11 ms is 1973, 10^11 s 5138).
    void aTimeInSecondsIsReadAsSeconds() {
        Fixture f;
        auto target = f.store(QStringLiteral("s.sqlite"));
        const RevlogImport r =
            importRevlogCsv((kHeader + row(QStringLiteral("card-one"), 1669725000) +
                             row(QStringLiteral("card-one"), 1669725000 + 3 * 86400))
                                .toUtf8(),
                            QStringLiteral("s.csv"), *target, f.library, f.settings);
        QVERIFY2(r.errors.isEmpty(), qPrintable(r.errors.join(QLatin1Char('\n'))));
        QCOMPARE(r.added, 2);
        const QList<ReviewEntry> log = target->reviews();
        QCOMPARE(log.size(), 2);
        QCOMPARE(log.front().reviewedAt,
                 QDateTime(QDate(2022, 11, 29), QTime(12, 30), QTimeZone::utc()));
        QCOMPARE(log.back().reviewedAt, log.front().reviewedAt.addDays(3));
    }

    // Seconds and milliseconds in one file: refused at the first line that differs, naming
    // both lines' units; nothing is written.
    void mixedTimeUnitsAreRefusedByLine() {
        Fixture f;
        auto target = f.store(QStringLiteral("m.sqlite"));
        const RevlogImport r =
            importRevlogCsv((kHeader + row(QStringLiteral("card-one"), 1669725000000) +
                             row(QStringLiteral("card-two"), 1669725000))
                                .toUtf8(),
                            QStringLiteral("m.csv"), *target, f.library, f.settings);
        QCOMPARE(r.errors.size(), 1);
        QVERIFY2(r.errors.front().startsWith(QStringLiteral(
                     "m.csv: line 3: review_time 1669725000 reads as seconds (is below "
                     "100000000000) where line 2's reads as milliseconds")),
                 qPrintable(r.errors.front()));
        QCOMPARE(target->reviewCount(), 0);
    }

    // `paralleldeck --import-revlog FILE --database DB`: exit 0 imported; exit 2 refused with
    // the line named on stderr and the database unchanged (byte for byte).
    void theHeadlessImport() {
        const QString app = pd::test::appBinary();
        if (app.isEmpty()) QSKIP("paralleldeck is not built beside this test");
        Fixture f;  // its deck is saved in <dir>/decks, where the app looks beside the database
        const QString db = f.dir.filePath(QStringLiteral("h.sqlite"));
        { auto store = f.store(QStringLiteral("h.sqlite")); }
        const QString good = f.dir.filePath(QStringLiteral("good.csv"));
        const QString bad = f.dir.filePath(QStringLiteral("bad.csv"));
        auto write = [](const QString& path, const QString& text) {
            QFile out(path);
            QVERIFY(out.open(QIODevice::WriteOnly));
            out.write(text.toUtf8());
        };
        write(good, kHeader + row(QStringLiteral("card-one"), 1669725000000));
        write(bad, kHeader + row(QStringLiteral("card-two"), 1669725000000) +
                       row(QStringLiteral("card-two"), 1669725000000 + 86400000, 7));
        auto run = [&](const QString& csv, QByteArray* err) {
            QProcess p;
            QProcessEnvironment env = QProcessEnvironment::systemEnvironment();
            env.insert(QStringLiteral("QT_QPA_PLATFORM"), QStringLiteral("offscreen"));
            p.setProcessEnvironment(env);
            p.start(app,
                    {QStringLiteral("--import-revlog"), csv, QStringLiteral("--database"), db});
            if (!p.waitForFinished(120000)) return -1;
            *err = p.readAllStandardError();
            return p.exitCode();
        };
        QByteArray err;
        QCOMPARE(run(good, &err), 0);
        const QByteArray before = pd::test::fileHash(db);
        QCOMPARE(run(bad, &err), 2);
        QVERIFY2(err.contains("bad.csv: line 3: review_rating 7 is not 1 to 4"), err.constData());
        QCOMPARE(pd::test::fileHash(db), before);
        // A file of many bad rows names the first 20 and counts the rest.
        QString many = kHeader;
        for (int i = 0; i < 30; ++i)
            many += row(QStringLiteral("card-two"), 1669725000000 + i * 86400000LL, 9);
        write(bad, many);
        QCOMPARE(run(bad, &err), 2);
        QVERIFY2(err.contains("bad.csv: line 21: review_rating 9"), err.constData());
        QVERIFY2(!err.contains("bad.csv: line 22:"), err.constData());
        QVERIFY2(err.contains("... and 10 more problems"), err.constData());
        QCOMPARE(pd::test::fileHash(db), before);
        ReviewStore check;
        QString error;
        QVERIFY(check.open(db, &error));
        QCOMPARE(check.reviewCount(), 1);
    }

    void aNegativeDurationIsRefusedByLine() {
        Fixture f;
        auto target = f.store(QStringLiteral("b.sqlite"));
        const RevlogImport r = importRevlogCsv(
            QStringLiteral("card_id,review_time,review_rating,review_state,review_duration,"
                           "deck_id,card_key\n%1,1669725000000,3,0,-4,test-deck,card-one\n")
                .arg(revlogCardNumber(QStringLiteral("test-deck"), QStringLiteral("card-one")))
                .toUtf8(),
            QStringLiteral("d.csv"), *target, f.library, f.settings);
        QCOMPARE(r.errors.size(), 1);
        QVERIFY2(r.errors.front().startsWith(QStringLiteral("d.csv: line 2: review_duration -4")),
                 qPrintable(r.errors.front()));
    }
};

QTEST_GUILESS_MAIN(TestRevlogCsv)
#include "test_revlog_csv.moc"
