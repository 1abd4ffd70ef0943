// The SQLite review store: round trip, undo, settings, WAL and migrations.
#include <QCryptographicHash>
#include <QProcess>
#include <QSqlDatabase>
#include <QSqlQuery>
#include <QTemporaryDir>
#include <QtTest>
#include <limits>

#include "app/study_test_support.h"
#include "study/review_store.h"
#include "study/study_session.h"

using namespace pd::study;

class TestReviewStore : public QObject {
    Q_OBJECT
  private slots:
    void init();
    void createsSchemaInEmptyDatabase();
    void migratesVersionOneDatabase();
    void refusesNewerSchema();
    void foreignFilesAreRefusedUnchanged_data();
    void foreignFilesAreRefusedUnchanged();
    void ownDatabasesCarryTheApplicationId();
    void aLockedDatabaseIsNamed();
    void roundTrip();
    void damagedScheduleStartsOver_data();
    void damagedScheduleStartsOver();
    void undoRestoresPreviousSchedule();
    void practiceLeavesScheduleAlone();
    void settingsPersist();
    void reviewsByRange();
    void timesPastTheClockSaturate();

  private:
    QString path() const { return dir_->filePath(QStringLiteral("store.sqlite")); }
    std::unique_ptr<QTemporaryDir> dir_;
};

namespace {

CardSchedule scheduleAt(const QDateTime& due, double stability) {
    CardSchedule s;
    s.fsrs = makeNewFsrsCard(toTimePoint(due));
    s.fsrs.state = CardState::Review;
    s.fsrs.step.reset();
    s.fsrs.stability = stability;
    s.fsrs.difficulty = 5.25;
    s.fsrs.lastReview = toTimePoint(due.addDays(-3));
    s.reps = 2;
    s.lapses = 1;
    return s;
}

ReviewEntry entry(const QString& cardId, const QDateTime& at, std::optional<CardSchedule> before,
                  std::optional<CardSchedule> after) {
    ReviewEntry e;
    e.card = {QStringLiteral("deck"), cardId};
    e.reviewedAt = at;
    e.grade = Rating::Good;
    e.chosen = {0, 2};
    e.correct = true;
    e.confidence = 3;
    e.durationMs = 4200;
    e.before = before;
    e.after = after;
    return e;
}

}  // namespace

void TestReviewStore::init() {
    dir_ = std::make_unique<QTemporaryDir>();
    QVERIFY(dir_->isValid());
}

void TestReviewStore::createsSchemaInEmptyDatabase() {
    ReviewStore store;
    QString error;
    QVERIFY2(store.open(path(), &error), qPrintable(error));
    QCOMPARE(store.schemaVersion(), ReviewStore::kSchemaVersion);
    QCOMPARE(store.journalMode().toLower(), QStringLiteral("wal"));
    QCOMPARE(store.reviewCount(), 0);
    QVERIFY(!store.schedule({QStringLiteral("deck"), QStringLiteral("x")}));
    QVERIFY(!store.lastReview());
}

void TestReviewStore::migratesVersionOneDatabase() {
    // A version-1 database as the first release wrote it, with one review.
    {
        QSqlDatabase db =
            QSqlDatabase::addDatabase(QStringLiteral("QSQLITE"), QStringLiteral("v1"));
        db.setDatabaseName(path());
        QVERIFY(db.open());
        QSqlQuery q(db);
        QVERIFY(q.exec(QStringLiteral(
            "CREATE TABLE card_state (deck_id TEXT NOT NULL, card_id TEXT NOT NULL, schedule TEXT "
            "NOT NULL, due_ms INTEGER NOT NULL, state INTEGER NOT NULL, PRIMARY KEY (deck_id, "
            "card_id))")));
        QVERIFY(q.exec(QStringLiteral(
            "CREATE TABLE review_log (id INTEGER PRIMARY KEY AUTOINCREMENT, deck_id TEXT NOT NULL, "
            "card_id TEXT NOT NULL, reviewed_ms INTEGER NOT NULL, grade INTEGER NOT NULL, chosen "
            "TEXT "
            "NOT NULL, correct INTEGER NOT NULL, confidence INTEGER, duration_ms INTEGER NOT NULL, "
            "before_schedule TEXT, after_schedule TEXT)")));
        QVERIFY(q.exec(
            QStringLiteral("CREATE TABLE settings (key TEXT PRIMARY KEY, value TEXT NOT NULL)")));
        QVERIFY(q.exec(
            QStringLiteral("INSERT INTO review_log (deck_id, card_id, reviewed_ms, grade, chosen, "
                           "correct, duration_ms) VALUES ('deck', 'old', 1000, 3, '1', 1, 500)")));
        QVERIFY(q.exec(QStringLiteral("INSERT INTO settings VALUES ('theme', 'dark')")));
        QVERIFY(q.exec(QStringLiteral("PRAGMA user_version=1")));
        db.close();
    }
    QSqlDatabase::removeDatabase(QStringLiteral("v1"));

    ReviewStore store;
    QString error;
    QVERIFY2(store.open(path(), &error), qPrintable(error));
    QCOMPARE(store.schemaVersion(), 3);
    const auto last = store.lastReview();
    QVERIFY(last);
    QCOMPARE(last->card.cardId, QStringLiteral("old"));
    QCOMPARE(last->mode, StudyMode::Review);  // the column added by migration 2 defaults to review
    QVERIFY(!last->hinted);                   // and the one added by migration 3 to "not hinted"
    QCOMPARE(store.setting(QStringLiteral("theme")), QStringLiteral("dark"));
}

void TestReviewStore::refusesNewerSchema() {
    {
        QSqlDatabase db =
            QSqlDatabase::addDatabase(QStringLiteral("QSQLITE"), QStringLiteral("future"));
        db.setDatabaseName(path());
        QVERIFY(db.open());
        QSqlQuery q(db);
        // A newer ParallelDeck's database carries the application_id; a file with a high
        // user_version and no application_id is someone else's (foreignFilesAreRefusedUnchanged).
        QVERIFY(
            q.exec(QStringLiteral("PRAGMA application_id=%1").arg(ReviewStore::kApplicationId)));
        QVERIFY(q.exec(QStringLiteral("PRAGMA user_version=99")));
        db.close();
    }
    QSqlDatabase::removeDatabase(QStringLiteral("future"));
    const QByteArray before = pd::test::fileHash(path());
    ReviewStore store;
    QString error;
    QVERIFY(!store.open(path(), &error));
    QVERIFY2(error.contains(QStringLiteral("newer")), qPrintable(error));
    QVERIFY2(error.contains(path()), qPrintable(error));
    QCOMPARE(pd::test::fileHash(path()),
             before);  // refused before anything was written (it was WAL'd)
    QVERIFY(!QFile::exists(path() + QStringLiteral("-wal")));
}

// Files that are not ParallelDeck's: an Anki collection (collection.anki2's tables, its
// user_version 18), a SQLite file with user_version 7 and a table of its own, and a text file.
// Each is refused by name and left byte-identical (the store used to switch them to WAL, set
// user_version 3 and add its tables).
void TestReviewStore::foreignFilesAreRefusedUnchanged_data() {
    QTest::addColumn<QStringList>("sql");
    QTest::addColumn<QByteArray>("text");
    QTest::newRow("anki collection")
        << QStringList{QStringLiteral("CREATE TABLE col (id integer primary key, crt integer not "
                                      "null, mod integer not null, scm integer not null, ver "
                                      "integer not null)"),
                       QStringLiteral("CREATE TABLE notes (id integer primary key, guid text not "
                                      "null, mid integer not null, flds text not null)"),
                       QStringLiteral("CREATE TABLE revlog (id integer primary key, cid integer "
                                      "not null, ease integer not null, ivl integer not null)"),
                       QStringLiteral("INSERT INTO col VALUES (1, 0, 0, 0, 18)"),
                       QStringLiteral("PRAGMA user_version=18")}
        << QByteArray();
    QTest::newRow("user_version 7")
        << QStringList{QStringLiteral("CREATE TABLE things (id INTEGER PRIMARY KEY)"),
                       QStringLiteral("PRAGMA user_version=7")}
        << QByteArray();
    QTest::newRow("user_version 2, other tables")
        << QStringList{QStringLiteral("CREATE TABLE settings (key TEXT PRIMARY KEY, value TEXT)"),
                       QStringLiteral("PRAGMA user_version=2")}
        << QByteArray();
    QTest::newRow("not SQLite") << QStringList{}
                                << QByteArray("card_id,review_time\n1,2\n").repeated(200);
}

void TestReviewStore::foreignFilesAreRefusedUnchanged() {
    QFETCH(QStringList, sql);
    QFETCH(QByteArray, text);
    const QString file = dir_->filePath(QStringLiteral("collection.anki2"));
    if (!sql.isEmpty()) {
        {
            QSqlDatabase db =
                QSqlDatabase::addDatabase(QStringLiteral("QSQLITE"), QStringLiteral("foreign"));
            db.setDatabaseName(file);
            QVERIFY(db.open());
            QSqlQuery q(db);
            for (const QString& statement : sql) QVERIFY2(q.exec(statement), qPrintable(statement));
            db.close();
        }
        QSqlDatabase::removeDatabase(QStringLiteral("foreign"));
    } else {
        QFile out(file);
        QVERIFY(out.open(QIODevice::WriteOnly));
        out.write(text);
    }
    const QByteArray before = pd::test::fileHash(file);
    QVERIFY(!before.isEmpty());
    ReviewStore store;
    QString error;
    QVERIFY(!store.open(file, &error));
    QVERIFY2(error.startsWith(file + QStringLiteral(" is not a ParallelDeck database")),
             qPrintable(error));
    QVERIFY2(error.endsWith(QStringLiteral("it was left unchanged")), qPrintable(error));
    QCOMPARE(pd::test::fileHash(file), before);
    QVERIFY(!QFile::exists(file + QStringLiteral("-wal")));

    // The headless optimizer says the same and exits 1, the file still unchanged.
    const QString app = pd::test::appBinary();
    if (app.isEmpty()) QSKIP("paralleldeck is not built beside this test");
    QProcess p;
    p.start(app, {QStringLiteral("--optimize-fsrs"), QStringLiteral("--database"), file});
    QVERIFY(p.waitForFinished(120000));
    const QByteArray err = p.readAllStandardError();
    QCOMPARE(p.exitCode(), 1);
    QVERIFY2(err.contains("is not a ParallelDeck database"), err.constData());
    QCOMPARE(pd::test::fileHash(file), before);
}

// New databases carry the application_id; one of ParallelDeck's from before it (exactly a
// ParallelDeck schema, no application_id) opens and gets it.
void TestReviewStore::ownDatabasesCarryTheApplicationId() {
    {
        ReviewStore store;
        QVERIFY(store.open(path(), nullptr));
        QCOMPARE(store.applicationId(), ReviewStore::kApplicationId);
    }
    {
        QSqlDatabase db =
            QSqlDatabase::addDatabase(QStringLiteral("QSQLITE"), QStringLiteral("older"));
        db.setDatabaseName(path());
        QVERIFY(db.open());
        QSqlQuery q(db);
        QVERIFY(q.exec(QStringLiteral("PRAGMA application_id=0")));
        db.close();
    }
    QSqlDatabase::removeDatabase(QStringLiteral("older"));
    ReviewStore store;
    QString error;
    QVERIFY2(store.open(path(), &error), qPrintable(error));
    QCOMPARE(store.applicationId(), ReviewStore::kApplicationId);
}

// A write while another process holds the database names the lock and the file (the
// optimizer said "could not save the weights to FILE" with no reason).
void TestReviewStore::aLockedDatabaseIsNamed() {
    ReviewStore store;
    QVERIFY(store.open(path(), nullptr));
    {
        QSqlDatabase other =
            QSqlDatabase::addDatabase(QStringLiteral("QSQLITE"), QStringLiteral("other"));
        other.setDatabaseName(path());
        other.setConnectOptions(QStringLiteral("QSQLITE_BUSY_TIMEOUT=0"));
        QVERIFY(other.open());
        QSqlQuery q(other);
        QVERIFY(q.exec(QStringLiteral("BEGIN EXCLUSIVE")));
        QString error;
        StudySettings settings;
        QVERIFY(!settings.save(store, &error));
        QVERIFY2(error.startsWith(path() + QStringLiteral(" is locked by another process")),
                 qPrintable(error));
        QVERIFY(q.exec(QStringLiteral("ROLLBACK")));
        other.close();
    }
    QSqlDatabase::removeDatabase(QStringLiteral("other"));
}

void TestReviewStore::roundTrip() {
    const QDateTime t = pd::test::startTime();
    const CardSchedule after = scheduleAt(t.addDays(4), 4.5);
    {
        ReviewStore store;
        QVERIFY(store.open(path(), nullptr));
        QVERIFY(store.recordReview(entry(QStringLiteral("card-a"), t, std::nullopt, after)) > 0);
        ReviewEntry hinted = entry(QStringLiteral("card-b"), t.addSecs(5), std::nullopt, after);
        hinted.hinted = true;
        QVERIFY(store.recordReview(hinted) > 0);
    }
    ReviewStore store;  // reopened: everything came from disk
    QVERIFY(store.open(path(), nullptr));
    const auto s = store.schedule({QStringLiteral("deck"), QStringLiteral("card-a")});
    QVERIFY(s);
    QVERIFY(*s == after);  // exact, to the microsecond
    const QList<ReviewEntry> log = store.reviews();
    QCOMPARE(log.size(), 2);
    QVERIFY(log.last().hinted);  // Show me was used before checking
    const ReviewEntry& e = log.first();
    QVERIFY(!e.hinted);
    QCOMPARE(e.reviewedAt, t);
    QCOMPARE(e.grade, Rating::Good);
    QCOMPARE(e.chosen, (QList<int>{0, 2}));
    QCOMPARE(e.correct, true);
    QCOMPARE(e.confidence, std::optional<int>(3));
    QCOMPARE(e.durationMs, qint64(4200));
    QVERIFY(!e.before);
    QVERIFY(e.after && *e.after == after);
    QCOMPARE(store.schedules(QStringLiteral("deck")).size(), 2);
}

void TestReviewStore::damagedScheduleStartsOver_data() {
    QTest::addColumn<QString>("json");
    QTest::addRow("not json") << QStringLiteral("{stability: 3");
    QTest::addRow("unknown state") << QStringLiteral(R"({"state": 9, "due_us": "0"})");
    QTest::addRow("zero stability")
        << QStringLiteral(R"({"state": 2, "stability": 0, "difficulty": 5, "due_us": "0"})");
    QTest::addRow("text stability")
        << QStringLiteral(R"({"state": 2, "stability": "x", "difficulty": 5, "due_us": "0"})");
    QTest::addRow("difficulty past 10")
        << QStringLiteral(R"({"state": 2, "stability": 3, "difficulty": 12, "due_us": "0"})");
    QTest::addRow("no due time") << QStringLiteral(
        R"({"state": 2, "stability": 3, "difficulty": 5})");
    // Found by fuzz_schedule: microseconds past the clock's 292 years overflowed (UB).
    QTest::addRow("due past the clock") << QStringLiteral(
        R"({"state": 2, "stability": 3, "difficulty": 5, "due_us": "17650000000070000"})");
    QTest::addRow("last review past the clock") << QStringLiteral(
        R"({"state": 2, "stability": 3, "difficulty": 5, "due_us": "0",
            "last_review_us": "-9223372036854775807"})");
}

void TestReviewStore::damagedScheduleStartsOver() {
    QFETCH(QString, json);
    const QDateTime t = pd::test::startTime();
    {
        ReviewStore store;
        QVERIFY(store.open(path(), nullptr));
        QVERIFY(store.recordReview(entry(QStringLiteral("card-a"), t, std::nullopt,
                                         scheduleAt(t.addDays(4), 4.5))) > 0);
        QVERIFY(store.schedule({QStringLiteral("deck"), QStringLiteral("card-a")}));
    }
    {  // damage the row from outside, as a hand edit or a broken disk would
        QSqlDatabase db =
            QSqlDatabase::addDatabase(QStringLiteral("QSQLITE"), QStringLiteral("damage"));
        db.setDatabaseName(path());
        QVERIFY(db.open());
        QSqlQuery q(db);
        q.prepare(QStringLiteral("UPDATE card_state SET schedule = ? WHERE card_id = 'card-a'"));
        q.addBindValue(json);
        QVERIFY(q.exec());
        QCOMPARE(q.numRowsAffected(), 1);
        q.finish();
        db.close();
    }
    QSqlDatabase::removeDatabase(QStringLiteral("damage"));
    ReviewStore store;
    QVERIFY(store.open(path(), nullptr));
    // Unusable state is not handed to FSRS: the card reads as never reviewed.
    QVERIFY(!store.schedule({QStringLiteral("deck"), QStringLiteral("card-a")}));
    QVERIFY(store.schedules(QStringLiteral("deck")).isEmpty());
}

void TestReviewStore::undoRestoresPreviousSchedule() {
    ReviewStore store;
    QVERIFY(store.open(path(), nullptr));
    const QDateTime t = pd::test::startTime();
    const CardSchedule first = scheduleAt(t.addDays(2), 2.3);
    const CardSchedule second = scheduleAt(t.addDays(11), 10.9);
    QVERIFY(store.recordReview(entry(QStringLiteral("c"), t, std::nullopt, first)));
    QVERIFY(store.recordReview(entry(QStringLiteral("c"), t.addDays(2), first, second)));
    QCOMPARE(*store.schedule({QStringLiteral("deck"), QStringLiteral("c")}), second);

    auto undone = store.undoLastReview();
    QVERIFY(undone);
    QCOMPARE(undone->reviewedAt, t.addDays(2));
    QCOMPARE(*store.schedule({QStringLiteral("deck"), QStringLiteral("c")}), first);
    QCOMPARE(store.reviewCount(), 1);

    undone = store.undoLastReview();
    QVERIFY(undone);
    QVERIFY(!store.schedule({QStringLiteral("deck"), QStringLiteral("c")}));  // new again
    QCOMPARE(store.reviewCount(), 0);

    QString error;
    QVERIFY(!store.undoLastReview(&error));
    QVERIFY(!error.isEmpty());
}

void TestReviewStore::practiceLeavesScheduleAlone() {
    ReviewStore store;
    QVERIFY(store.open(path(), nullptr));
    ReviewEntry e = entry(QStringLiteral("p"), pd::test::startTime(), std::nullopt,
                          scheduleAt(pd::test::startTime(), 1.0));
    e.mode = StudyMode::Practice;
    QVERIFY(store.recordReview(e));
    QVERIFY(!store.schedule({QStringLiteral("deck"), QStringLiteral("p")}));
    QCOMPARE(store.lastReview()->mode, StudyMode::Practice);
    QVERIFY(store.undoLastReview());
    QCOMPARE(store.reviewCount(), 0);
}

void TestReviewStore::settingsPersist() {
    {
        ReviewStore store;
        QVERIFY(store.open(path(), nullptr));
        QCOMPARE(store.setting(QStringLiteral("missing"), QStringLiteral("fallback")),
                 QStringLiteral("fallback"));
        QVERIFY(store.setSetting(QStringLiteral("desired_retention"), QStringLiteral("0.85")));
        QVERIFY(store.setSetting(QStringLiteral("desired_retention"), QStringLiteral("0.87")));
    }
    ReviewStore store;
    QVERIFY(store.open(path(), nullptr));
    QCOMPARE(store.setting(QStringLiteral("desired_retention")), QStringLiteral("0.87"));
}

void TestReviewStore::reviewsByRange() {
    ReviewStore store;
    QVERIFY(store.open(path(), nullptr));
    const QDateTime t = pd::test::startTime();
    for (int day = 0; day < 5; ++day) {
        ReviewEntry e =
            entry(QStringLiteral("r%1").arg(day), t.addDays(day), std::nullopt, std::nullopt);
        e.mode = StudyMode::MockExam;
        QVERIFY(store.recordReview(e));
    }
    QCOMPARE(store.reviews(t.addDays(1), t.addDays(3)).size(), 2);
    QCOMPARE(store.reviews().size(), 5);
    QVERIFY(store.resetDeck(QStringLiteral("deck")));
    QCOMPARE(store.reviewCount(), 0);
}

// The scheduler's clock counts nanoseconds in 64 bits (about 1677-09-21 to 2262-04-11). A
// time outside it (a stored row, an imported one) converts to the clock's nearest end: it
// overflowed before, and 2300 came back as a time in 1715.
void TestReviewStore::timesPastTheClockSaturate() {
    const QDateTime in2300(QDate(2300, 1, 1), QTime(0, 0), Qt::UTC);
    const QDateTime in1600(QDate(1600, 1, 1), QTime(0, 0), Qt::UTC);
    const QDateTime clockEnd(QDate(2262, 4, 11), QTime(0, 0), Qt::UTC);
    const QDateTime clockStart(QDate(1677, 9, 22), QTime(0, 0), Qt::UTC);
    QVERIFY(toDateTime(toTimePoint(in2300)) >= clockEnd);
    QVERIFY(toDateTime(toTimePoint(in1600)) <= clockStart);
    for (const qint64 ms :
         {std::numeric_limits<qint64>::max(), std::numeric_limits<qint64>::min()}) {
        const QDateTime extreme = QDateTime::fromMSecsSinceEpoch(ms, Qt::UTC);
        const QDateTime back = toDateTime(toTimePoint(extreme));
        QVERIFY(ms > 0 ? back >= clockEnd : back <= clockStart);
    }
    // Times the clock holds are exact to the millisecond.
    const QDateTime t = pd::test::startTime().addMSecs(123);
    QCOMPARE(toDateTime(toTimePoint(t)), t);
}

QTEST_GUILESS_MAIN(TestReviewStore)
#include "test_review_store.moc"
