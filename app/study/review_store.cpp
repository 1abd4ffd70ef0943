#include "review_store.h"

#include <QDir>
#include <QFileInfo>
#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>
#include <QSet>
#include <QSqlDatabase>
#include <QSqlError>
#include <QSqlQuery>
#include <QStandardPaths>
#include <QTimeZone>
#include <QUuid>
#include <QVariant>
#include <cmath>
#include <limits>

namespace pd::study {

namespace {

qint64 toMs(FsrsTimePoint t) {
    return std::chrono::duration_cast<std::chrono::milliseconds>(t.time_since_epoch()).count();
}
// The clock counts nanoseconds in 64 bits (libstdc++): it holds 1677-09-21 to 2262-04-11. A
// time outside that (a damaged row, a hand-edited one) becomes the clock's nearest end instead
// of overflowing the multiplication (2300 came back as 1715). Imports refuse such times first
// (importRevlogCsv's range), so only damaged data saturates here.
FsrsTimePoint fromMs(qint64 ms) {
    constexpr qint64 kMaxMs =
        std::chrono::duration_cast<std::chrono::milliseconds>(FsrsClock::duration::max()).count();
    constexpr qint64 kMinMs =
        std::chrono::duration_cast<std::chrono::milliseconds>(FsrsClock::duration::min()).count();
    if (ms > kMaxMs) return FsrsTimePoint::max();
    if (ms < kMinMs) return FsrsTimePoint::min();
    return FsrsTimePoint(
        std::chrono::duration_cast<FsrsClock::duration>(std::chrono::milliseconds(ms)));
}

}  // namespace

QString scheduleToJson(const std::optional<CardSchedule>& s) {
    if (!s) return {};
    QJsonObject o;
    o[QStringLiteral("state")] = static_cast<int>(s->fsrs.state);
    if (s->fsrs.step) o[QStringLiteral("step")] = *s->fsrs.step;
    if (s->fsrs.stability) o[QStringLiteral("stability")] = *s->fsrs.stability;
    if (s->fsrs.difficulty) o[QStringLiteral("difficulty")] = *s->fsrs.difficulty;
    // Microseconds keep the FSRS due time exact (py-fsrs works in microseconds).
    o[QStringLiteral("due_us")] = QString::number(
        std::chrono::duration_cast<std::chrono::microseconds>(s->fsrs.due.time_since_epoch())
            .count());
    if (s->fsrs.lastReview) {
        o[QStringLiteral("last_review_us")] =
            QString::number(std::chrono::duration_cast<std::chrono::microseconds>(
                                s->fsrs.lastReview->time_since_epoch())
                                .count());
    }
    o[QStringLiteral("reps")] = s->reps;
    o[QStringLiteral("lapses")] = s->lapses;
    return QString::fromUtf8(QJsonDocument(o).toJson(QJsonDocument::Compact));
}

namespace {

// A stored time in microseconds, where it fits the clock (nanoseconds in 64 bits: about 292
// years either side of 1970); a damaged row may hold any number.
std::optional<FsrsTimePoint> fromUs(qint64 us) {
    constexpr qint64 kMax =
        std::chrono::duration_cast<std::chrono::microseconds>(FsrsClock::duration::max()).count();
    if (us > kMax || us < -kMax) return std::nullopt;
    return FsrsTimePoint(
        std::chrono::duration_cast<FsrsClock::duration>(std::chrono::microseconds(us)));
}

// An optional field of a stored schedule: absent leaves `out` alone; present, it must be a
// finite number in [lo, hi], else the row is damaged (false).
bool readBounded(const QJsonObject& o, const QString& key, double lo, double hi,
                 std::optional<double>& out) {
    if (!o.contains(key)) return true;
    const QJsonValue v = o.value(key);
    const double d = v.toDouble();
    if (!v.isDouble() || !std::isfinite(d) || d < lo || d > hi) return false;
    out = d;
    return true;
}

}  // namespace

// A stored schedule that does not parse into a usable FSRS state (a damaged row, a hand
// edit) is treated as absent: the card starts over as new instead of feeding NaN or a zero
// stability into the scheduler.
std::optional<CardSchedule> scheduleFromJson(const QString& text) {
    if (text.isEmpty()) return std::nullopt;
    QJsonParseError parseError{};
    const QJsonDocument doc = QJsonDocument::fromJson(text.toUtf8(), &parseError);
    if (parseError.error != QJsonParseError::NoError || !doc.isObject()) return std::nullopt;
    const QJsonObject o = doc.object();
    CardSchedule s;
    const int state = o.value(QStringLiteral("state")).toInt(0);
    if (state < static_cast<int>(CardState::Learning) ||
        state > static_cast<int>(CardState::Relearning))
        return std::nullopt;
    s.fsrs.state = static_cast<CardState>(state);
    s.fsrs.step = o.contains(QStringLiteral("step"))
                      ? std::optional<int>(o.value(QStringLiteral("step")).toInt())
                      : std::nullopt;
    if (!readBounded(o, QStringLiteral("stability"), kFsrsStabilityMin,
                     std::numeric_limits<double>::max(), s.fsrs.stability) ||
        !readBounded(o, QStringLiteral("difficulty"), kFsrsMinDifficulty, kFsrsMaxDifficulty,
                     s.fsrs.difficulty))
        return std::nullopt;
    bool ok = false;
    const auto due = fromUs(o.value(QStringLiteral("due_us")).toString().toLongLong(&ok));
    if (!ok || !due) return std::nullopt;
    s.fsrs.due = *due;
    if (o.contains(QStringLiteral("last_review_us"))) {
        s.fsrs.lastReview =
            fromUs(o.value(QStringLiteral("last_review_us")).toString().toLongLong(&ok));
        if (!ok || !s.fsrs.lastReview) return std::nullopt;
    }
    s.reps = o.value(QStringLiteral("reps")).toInt();
    s.lapses = o.value(QStringLiteral("lapses")).toInt();
    return s;
}

namespace {

QString chosenToText(const QList<int>& chosen) {
    QStringList parts;
    for (int i : chosen) parts.append(QString::number(i));
    return parts.join(QLatin1Char(','));
}
QList<int> chosenFromText(const QString& text) {
    QList<int> out;
    for (const QString& p : text.split(QLatin1Char(','), Qt::SkipEmptyParts)) out.append(p.toInt());
    return out;
}

StudyMode modeFromName(const QString& name) {
    if (name == QStringLiteral("practice")) return StudyMode::Practice;
    if (name == QStringLiteral("mock-exam")) return StudyMode::MockExam;
    return StudyMode::Review;
}

// Runs `sql` and reports the error.
bool exec(QSqlQuery& query, const QString& sql, QString* error) {
    if (query.exec(sql)) return true;
    if (error) *error = query.lastError().text() + QStringLiteral(" (") + sql + QLatin1Char(')');
    return false;
}

bool exec(QSqlQuery& query, QString* error) {
    if (query.exec()) return true;
    if (error) *error = query.lastError().text();
    return false;
}

// Migration i brings the schema from version i to i + 1.
const QList<QStringList>& migrations() {
    static const QList<QStringList> steps = {
        // 0 -> 1: the first schema.
        {QStringLiteral("CREATE TABLE card_state (deck_id TEXT NOT NULL, card_id TEXT NOT NULL, "
                        "schedule TEXT NOT NULL, due_ms INTEGER NOT NULL, state INTEGER NOT NULL, "
                        "PRIMARY KEY (deck_id, card_id))"),
         QStringLiteral(
             "CREATE TABLE review_log (id INTEGER PRIMARY KEY AUTOINCREMENT, "
             "deck_id TEXT NOT NULL, card_id TEXT NOT NULL, reviewed_ms INTEGER NOT NULL, "
             "grade INTEGER NOT NULL, chosen TEXT NOT NULL, correct INTEGER NOT NULL, "
             "confidence INTEGER, duration_ms INTEGER NOT NULL, "
             "before_schedule TEXT, after_schedule TEXT)"),
         QStringLiteral("CREATE TABLE settings (key TEXT PRIMARY KEY, value TEXT NOT NULL)")},
        // 1 -> 2: the study mode of each logged answer (older rows were all reviews), and an
        // index for the statistics' date ranges.
        {QStringLiteral("ALTER TABLE review_log ADD COLUMN mode TEXT NOT NULL DEFAULT 'review'"),
         QStringLiteral("CREATE INDEX review_log_time ON review_log (reviewed_ms)"),
         QStringLiteral("CREATE INDEX card_state_due ON card_state (deck_id, due_ms)")},
        // 2 -> 3: whether Show me was used before the answer was checked (older rows: no).
        {QStringLiteral("ALTER TABLE review_log ADD COLUMN hinted INTEGER NOT NULL DEFAULT 0")},
    };
    return steps;
}

}  // namespace

QString studyModeName(StudyMode mode) {
    switch (mode) {
        case StudyMode::Review:
            return QStringLiteral("review");
        case StudyMode::Practice:
            return QStringLiteral("practice");
        case StudyMode::MockExam:
            return QStringLiteral("mock-exam");
    }
    return {};
}

QDateTime toDateTime(FsrsTimePoint t) {
    return QDateTime::fromMSecsSinceEpoch(toMs(t), Qt::UTC);
}
FsrsTimePoint toTimePoint(const QDateTime& t) {
    return fromMs(t.toMSecsSinceEpoch());
}

ReviewStore::~ReviewStore() {
    if (connection_.isEmpty()) return;
    {
        QSqlDatabase db = QSqlDatabase::database(connection_, false);
        db.close();
    }
    QSqlDatabase::removeDatabase(connection_);
}

QString ReviewStore::defaultPath() {
    const QString dir = QStandardPaths::writableLocation(QStandardPaths::AppDataLocation);
    return QDir(dir).filePath(QStringLiteral("paralleldeck.sqlite"));
}

namespace {

bool isLockError(const QString& nativeCode, const QString& text) {
    // SQLITE_BUSY (5), SQLITE_LOCKED (6), and their extended codes (low byte).
    bool ok = false;
    const int code = nativeCode.toInt(&ok);
    if (ok && ((code & 0xff) == 5 || (code & 0xff) == 6)) return true;
    return text.contains(QStringLiteral("database is locked")) ||
           text.contains(QStringLiteral("database table is locked"));
}

using SchemaRows = QStringList;  // "type name sql" of each sqlite_master row, sorted

SchemaRows schemaRows(QSqlDatabase& db, QString* error) {
    SchemaRows rows;
    QSqlQuery q(db);
    if (!q.exec(QStringLiteral("SELECT type, name, tbl_name, sql FROM sqlite_master"))) {
        if (error) *error = q.lastError().text();
        return {QStringLiteral("?")};
    }
    while (q.next())
        rows << q.value(0).toString() + QLatin1Char(' ') + q.value(1).toString() +
                    QLatin1Char(' ') + q.value(2).toString() + QLatin1Char(' ') +
                    q.value(3).toString();
    rows.sort();
    return rows;
}

// The tables each schema version of ParallelDeck's leaves, as SQLite records them.
SchemaRows ownSchema(int version) {
    static QHash<int, SchemaRows> cache;
    if (cache.contains(version)) return cache.value(version);
    const QString name =
        QStringLiteral("pd-schema-") + QUuid::createUuid().toString(QUuid::WithoutBraces);
    SchemaRows rows;
    {
        QSqlDatabase db = QSqlDatabase::addDatabase(QStringLiteral("QSQLITE"), name);
        db.setDatabaseName(QStringLiteral(":memory:"));
        if (db.open()) {
            QSqlQuery q(db);
            for (int v = 0; v < version; ++v)
                for (const QString& sql : migrations()[v]) q.exec(sql);
            rows = schemaRows(db, nullptr);
        }
        db.close();
    }
    QSqlDatabase::removeDatabase(name);
    cache.insert(version, rows);
    return rows;
}

}  // namespace

QString ReviewStore::describeFailure(const QString& path, const QString& message) {
    if (isLockError(QString(), message))
        return QStringLiteral(
                   "%1 is locked by another process (another ParallelDeck, or a "
                   "program with the database open); close it and try again (%2)")
            .arg(path, message);
    return message;
}

// What the file at `path` is, read without writing to it: empty (new), ParallelDeck's (and
// its schema version), or something else, with why.
namespace {
enum class FileKind { New, Own, Foreign };
FileKind inspect(const QString& path, bool* predatesId, QString* error) {
    *predatesId = false;
    const QFileInfo info(path);
    if (!info.exists()) return FileKind::New;
    if (!info.isFile()) {
        *error = QStringLiteral("%1 is not a file").arg(path);
        return FileKind::Foreign;
    }
    if (info.size() == 0) return FileKind::New;
    const QString name =
        QStringLiteral("pd-probe-") + QUuid::createUuid().toString(QUuid::WithoutBraces);
    FileKind kind = FileKind::Foreign;
    {
        QSqlDatabase db = QSqlDatabase::addDatabase(QStringLiteral("QSQLITE"), name);
        db.setDatabaseName(path);
        db.setConnectOptions(QStringLiteral("QSQLITE_OPEN_READONLY"));
        if (!db.open()) {
            *error = QStringLiteral("cannot open %1: %2").arg(path, db.lastError().text());
        } else {
            QSqlQuery q(db);
            int applicationId = 0, userVersion = 0;
            bool read = q.exec(QStringLiteral("PRAGMA application_id")) && q.next();
            if (read) applicationId = q.value(0).toInt();
            read = read && q.exec(QStringLiteral("PRAGMA user_version")) && q.next();
            if (read) userVersion = q.value(0).toInt();
            QString schemaError;
            const SchemaRows rows = read ? schemaRows(db, &schemaError) : SchemaRows{};
            if (!read || !schemaError.isEmpty()) {
                const QSqlError e = q.lastError();
                const QString text = schemaError.isEmpty() ? e.text() : schemaError;
                if (isLockError(e.nativeErrorCode(), text))
                    *error = ReviewStore::describeFailure(path, text);
                else
                    *error = QStringLiteral(
                                 "%1 is not a ParallelDeck database (SQLite cannot "
                                 "read it: %2); it was left unchanged")
                                 .arg(path, text);
            } else if (applicationId == ReviewStore::kApplicationId) {
                kind = FileKind::Own;
                if (userVersion > ReviewStore::kSchemaVersion) {
                    kind = FileKind::Foreign;
                    *error = QStringLiteral(
                                 "%1 was written by a newer ParallelDeck (schema %2, "
                                 "this version reads up to %3); it was left unchanged")
                                 .arg(path)
                                 .arg(userVersion)
                                 .arg(ReviewStore::kSchemaVersion);
                }
            } else if (applicationId == 0 && userVersion == 0 && rows.isEmpty()) {
                kind = FileKind::New;  // an empty SQLite database
            } else if (applicationId == 0 && userVersion >= 1 &&
                       userVersion <= ReviewStore::kSchemaVersion &&
                       rows == ownSchema(userVersion)) {
                kind = FileKind::Own;  // from before the application_id
                *predatesId = true;
            } else {
                *error = QStringLiteral(
                             "%1 is not a ParallelDeck database (application_id %2, "
                             "user_version %3, %4 schema objects, none of "
                             "ParallelDeck's schemas); it was left unchanged")
                             .arg(path)
                             .arg(applicationId)
                             .arg(userVersion)
                             .arg(rows.size());
            }
        }
        db.close();
    }
    QSqlDatabase::removeDatabase(name);
    return kind;
}
}  // namespace

bool ReviewStore::open(const QString& path, QString* error) {
    if (!connection_.isEmpty()) {
        if (error) *error = QStringLiteral("the store is already open");
        return false;
    }
    bool predatesId = false;
    QString why;
    if (inspect(path, &predatesId, &why) == FileKind::Foreign || !why.isEmpty()) {
        if (error) *error = why;
        return false;
    }
    QDir().mkpath(QFileInfo(path).absolutePath());
    const QString name =
        QStringLiteral("pd-store-") + QUuid::createUuid().toString(QUuid::WithoutBraces);
    {
        QSqlDatabase db = QSqlDatabase::addDatabase(QStringLiteral("QSQLITE"), name);
        db.setDatabaseName(path);
        if (!db.open()) {
            if (error)
                *error = QStringLiteral("cannot open %1: %2").arg(path, db.lastError().text());
        } else {
            connection_ = name;
            path_ = path;
        }
    }
    if (connection_.isEmpty()) {
        QSqlDatabase::removeDatabase(name);
        return false;
    }
    QSqlDatabase db = QSqlDatabase::database(connection_);
    QSqlQuery q(db);
    QString failure;
    const bool ok =
        exec(q, QStringLiteral("PRAGMA journal_mode=WAL"), &failure) &&
        exec(q, QStringLiteral("PRAGMA foreign_keys=ON"), &failure) && migrate(&failure) &&
        ((!predatesId && applicationId() == kApplicationId) ||
         exec(q, QStringLiteral("PRAGMA application_id=%1").arg(kApplicationId), &failure));
    if (!ok && error) *error = describeFailure(path, failure);
    return ok;
}

bool ReviewStore::migrate(QString* error) {
    QSqlDatabase db = QSqlDatabase::database(connection_);
    int version = schemaVersion();
    if (version > kSchemaVersion) {
        if (error) {
            *error = QStringLiteral(
                         "the database was written by a newer ParallelDeck (schema %1, "
                         "this version reads up to %2)")
                         .arg(version)
                         .arg(kSchemaVersion);
        }
        return false;
    }
    while (version < kSchemaVersion) {
        if (!db.transaction()) {
            if (error) *error = db.lastError().text();
            return false;
        }
        QSqlQuery q(db);
        bool ok = true;
        for (const QString& sql : migrations()[version]) ok = ok && exec(q, sql, error);
        ok = ok && exec(q, QStringLiteral("PRAGMA user_version=%1").arg(version + 1), error);
        if (!ok || !db.commit()) {
            db.rollback();
            return false;
        }
        ++version;
    }
    return true;
}

int ReviewStore::schemaVersion() const {
    QSqlQuery q(QSqlDatabase::database(connection_));
    if (q.exec(QStringLiteral("PRAGMA user_version")) && q.next()) return q.value(0).toInt();
    return -1;
}

int ReviewStore::applicationId() const {
    QSqlQuery q(QSqlDatabase::database(connection_));
    if (q.exec(QStringLiteral("PRAGMA application_id")) && q.next()) return q.value(0).toInt();
    return -1;
}

QString ReviewStore::journalMode() const {
    QSqlQuery q(QSqlDatabase::database(connection_));
    if (q.exec(QStringLiteral("PRAGMA journal_mode")) && q.next()) return q.value(0).toString();
    return {};
}

std::optional<CardSchedule> ReviewStore::schedule(const CardKey& key) const {
    QSqlQuery q(QSqlDatabase::database(connection_));
    q.prepare(QStringLiteral("SELECT schedule FROM card_state WHERE deck_id = ? AND card_id = ?"));
    q.addBindValue(key.deckId);
    q.addBindValue(key.cardId);
    if (q.exec() && q.next()) return scheduleFromJson(q.value(0).toString());
    return std::nullopt;
}

QHash<QString, CardSchedule> ReviewStore::schedules(const QString& deckId) const {
    QHash<QString, CardSchedule> out;
    QSqlQuery q(QSqlDatabase::database(connection_));
    q.prepare(QStringLiteral("SELECT card_id, schedule FROM card_state WHERE deck_id = ?"));
    q.addBindValue(deckId);
    if (q.exec()) {
        while (q.next()) {
            if (auto s = scheduleFromJson(q.value(1).toString()))
                out.insert(q.value(0).toString(), *s);
        }
    }
    return out;
}

namespace {

bool insertLogRow(QSqlDatabase& db, const ReviewEntry& e, QString* error, qint64* id) {
    QSqlQuery q(db);
    q.prepare(QStringLiteral(
        "INSERT INTO review_log (deck_id, card_id, reviewed_ms, grade, chosen, correct, "
        "confidence, "
        "duration_ms, before_schedule, after_schedule, mode, hinted) VALUES (?, ?, ?, ?, ?, ?, ?, "
        "?, ?, ?, ?, ?)"));
    q.addBindValue(e.card.deckId);
    q.addBindValue(e.card.cardId);
    q.addBindValue(e.reviewedAt.toMSecsSinceEpoch());
    q.addBindValue(static_cast<int>(e.grade));
    // An empty list (an imported review) is "", not NULL: the column is NOT NULL.
    const QString chosen = chosenToText(e.chosen);
    q.addBindValue(chosen.isNull() ? QStringLiteral("") : chosen);
    q.addBindValue(e.correct ? 1 : 0);
    q.addBindValue(e.confidence ? QVariant(*e.confidence) : QVariant());
    q.addBindValue(e.durationMs);
    const bool review = e.mode == StudyMode::Review;
    q.addBindValue(review && e.before ? QVariant(scheduleToJson(e.before)) : QVariant());
    q.addBindValue(review && e.after ? QVariant(scheduleToJson(e.after)) : QVariant());
    q.addBindValue(studyModeName(e.mode));
    q.addBindValue(e.hinted ? 1 : 0);
    const bool ok = exec(q, error);
    if (id) *id = q.lastInsertId().toLongLong();
    return ok;
}

bool storeSchedule(QSqlDatabase& db, const CardKey& key, const CardSchedule& schedule,
                   QString* error) {
    QSqlQuery s(db);
    s.prepare(
        QStringLiteral("INSERT OR REPLACE INTO card_state (deck_id, card_id, schedule, "
                       "due_ms, state) VALUES (?, ?, ?, ?, ?)"));
    s.addBindValue(key.deckId);
    s.addBindValue(key.cardId);
    s.addBindValue(scheduleToJson(schedule));
    s.addBindValue(toMs(schedule.fsrs.due));
    s.addBindValue(static_cast<int>(schedule.fsrs.state));
    return exec(s, error);
}

}  // namespace

qint64 ReviewStore::recordReview(const ReviewEntry& e, QString* error) {
    QSqlDatabase db = QSqlDatabase::database(connection_);
    if (!db.transaction()) {
        if (error) *error = db.lastError().text();
        return 0;
    }
    qint64 id = 0;
    bool ok = insertLogRow(db, e, error, &id);
    if (ok && e.mode == StudyMode::Review && e.after)
        ok = storeSchedule(db, e.card, *e.after, error);
    if (!ok || !db.commit()) {
        if (error && error->isEmpty()) *error = db.lastError().text();
        db.rollback();
        return 0;
    }
    return id;
}

namespace {
const QString kSelectLog = QStringLiteral(
    "SELECT id, deck_id, card_id, reviewed_ms, grade, chosen, correct, confidence, duration_ms, "
    "mode, before_schedule, after_schedule, hinted FROM review_log ");

ReviewEntry entryFrom(const QSqlQuery& q) {
    ReviewEntry e;
    e.id = q.value(0).toLongLong();
    e.card = {q.value(1).toString(), q.value(2).toString()};
    e.reviewedAt = QDateTime::fromMSecsSinceEpoch(q.value(3).toLongLong(), Qt::UTC);
    e.grade = static_cast<Rating>(q.value(4).toInt());
    e.chosen = chosenFromText(q.value(5).toString());
    e.correct = q.value(6).toInt() != 0;
    if (!q.value(7).isNull()) e.confidence = q.value(7).toInt();
    e.durationMs = q.value(8).toLongLong();
    e.mode = modeFromName(q.value(9).toString());
    e.before = scheduleFromJson(q.value(10).toString());
    e.after = scheduleFromJson(q.value(11).toString());
    e.hinted = q.value(12).toInt() != 0;
    return e;
}
}  // namespace

std::optional<ReviewEntry> ReviewStore::lastReview() const {
    QSqlQuery q(QSqlDatabase::database(connection_));
    if (q.exec(kSelectLog + QStringLiteral("ORDER BY id DESC LIMIT 1")) && q.next())
        return entryFrom(q);
    return std::nullopt;
}

std::optional<ReviewEntry> ReviewStore::undoLastReview(QString* error) {
    const std::optional<ReviewEntry> last = lastReview();
    if (!last) {
        if (error) *error = QStringLiteral("nothing to undo");
        return std::nullopt;
    }
    QSqlDatabase db = QSqlDatabase::database(connection_);
    if (!db.transaction()) {
        if (error) *error = db.lastError().text();
        return std::nullopt;
    }
    QSqlQuery q(db);
    q.prepare(QStringLiteral("DELETE FROM review_log WHERE id = ?"));
    q.addBindValue(last->id);
    bool ok = exec(q, error);
    if (ok && last->mode == StudyMode::Review) {
        QSqlQuery s(db);
        if (last->before) {
            s.prepare(
                QStringLiteral("INSERT OR REPLACE INTO card_state (deck_id, card_id, "
                               "schedule, due_ms, state) VALUES (?, ?, ?, ?, ?)"));
            s.addBindValue(last->card.deckId);
            s.addBindValue(last->card.cardId);
            s.addBindValue(scheduleToJson(last->before));
            s.addBindValue(toMs(last->before->fsrs.due));
            s.addBindValue(static_cast<int>(last->before->fsrs.state));
        } else {
            s.prepare(QStringLiteral("DELETE FROM card_state WHERE deck_id = ? AND card_id = ?"));
            s.addBindValue(last->card.deckId);
            s.addBindValue(last->card.cardId);
        }
        ok = exec(s, error);
    }
    if (!ok || !db.commit()) {
        db.rollback();
        return std::nullopt;
    }
    return last;
}

QList<ReviewEntry> ReviewStore::reviews(const QDateTime& from, const QDateTime& to) const {
    QList<ReviewEntry> out;
    QSqlQuery q(QSqlDatabase::database(connection_));
    q.prepare(kSelectLog +
              QStringLiteral("WHERE reviewed_ms >= ? AND reviewed_ms < ? ORDER BY id"));
    q.addBindValue(from.isValid() ? from.toMSecsSinceEpoch() : std::numeric_limits<qint64>::min());
    q.addBindValue(to.isValid() ? to.toMSecsSinceEpoch() : std::numeric_limits<qint64>::max());
    if (q.exec()) {
        while (q.next()) out.append(entryFrom(q));
    }
    return out;
}

QList<ReviewEntry> ReviewStore::cardReviews(const CardKey& key) const {
    QList<ReviewEntry> out;
    QSqlQuery q(QSqlDatabase::database(connection_));
    q.prepare(kSelectLog + QStringLiteral("WHERE deck_id = ? AND card_id = ? ORDER BY id"));
    q.addBindValue(key.deckId);
    q.addBindValue(key.cardId);
    if (q.exec()) {
        while (q.next()) out.append(entryFrom(q));
    }
    return out;
}

int ReviewStore::deckReviewCount(const QString& deckId) const {
    QSqlQuery q(QSqlDatabase::database(connection_));
    q.prepare(QStringLiteral("SELECT COUNT(*) FROM review_log WHERE deck_id = ?"));
    q.addBindValue(deckId);
    if (q.exec() && q.next()) return q.value(0).toInt();
    return 0;
}

int ReviewStore::reviewCount() const {
    QSqlQuery q(QSqlDatabase::database(connection_));
    if (q.exec(QStringLiteral("SELECT COUNT(*) FROM review_log")) && q.next())
        return q.value(0).toInt();
    return 0;
}

QString ReviewStore::setting(const QString& key, const QString& fallback) const {
    QSqlQuery q(QSqlDatabase::database(connection_));
    q.prepare(QStringLiteral("SELECT value FROM settings WHERE key = ?"));
    q.addBindValue(key);
    if (q.exec() && q.next()) return q.value(0).toString();
    return fallback;
}

bool ReviewStore::setSetting(const QString& key, const QString& value) {
    return setSettings({{key, value}});
}

bool ReviewStore::setSettings(const QList<std::pair<QString, QString>>& values, QString* error) {
    QSqlDatabase db = QSqlDatabase::database(connection_);
    if (!db.transaction()) {
        if (error) *error = describeFailure(path_, db.lastError().text());
        return false;
    }
    QSqlQuery q(db);
    bool ok =
        q.prepare(QStringLiteral("INSERT OR REPLACE INTO settings (key, value) VALUES (?, ?)"));
    if (!ok && error) *error = q.lastError().text();
    for (const auto& [key, value] : values) {
        if (!ok) break;
        q.bindValue(0, key);
        // The column is NOT NULL: an empty value is "", not NULL.
        q.bindValue(1, value.isNull() ? QStringLiteral("") : value);
        ok = exec(q, error);
    }
    if (!ok || !db.commit()) {
        if (ok && error) *error = db.lastError().text();
        if (error) *error = describeFailure(path_, *error);
        db.rollback();
        return false;
    }
    return true;
}

bool ReviewStore::addReviews(const QList<ReviewEntry>& entries,
                             const QList<std::pair<CardKey, CardSchedule>>& schedules,
                             QString* error) {
    QSqlDatabase db = QSqlDatabase::database(connection_);
    if (!db.transaction()) {
        if (error) *error = db.lastError().text();
        return false;
    }
    bool ok = true;
    for (const ReviewEntry& e : entries) ok = ok && insertLogRow(db, e, error, nullptr);
    for (const auto& [key, schedule] : schedules)
        ok = ok && storeSchedule(db, key, schedule, error);
    if (!ok || !db.commit()) {
        if (ok && error) *error = db.lastError().text();
        db.rollback();
        return false;
    }
    return true;
}

std::optional<int> ReviewStore::moveHistory(const QString& fromDeck,
                                            const QList<DeckCards>& targets, QString* error) {
    QSqlDatabase db = QSqlDatabase::database(connection_);
    if (!db.transaction()) {
        if (error) *error = db.lastError().text();
        return std::nullopt;
    }
    QSet<QString> moved;
    bool ok = true;
    for (const DeckCards& target : targets) {
        for (const QString& card : target.cardIds) {
            QSqlQuery copy(db);
            ok = ok && copy.prepare(QStringLiteral(
                           "INSERT OR IGNORE INTO card_state (deck_id, card_id, schedule, due_ms, "
                           "state) SELECT ?, card_id, schedule, due_ms, state FROM card_state "
                           "WHERE deck_id = ? AND card_id = ?"));
            copy.addBindValue(target.deckId);
            copy.addBindValue(fromDeck);
            copy.addBindValue(card);
            ok = ok && exec(copy, error);
            // The log goes once, to the first target: no review is counted twice.
            QSqlQuery log(db);
            ok = ok && log.prepare(QStringLiteral(
                           "UPDATE review_log SET deck_id = ? WHERE deck_id = ? AND card_id = ?"));
            log.addBindValue(target.deckId);
            log.addBindValue(fromDeck);
            log.addBindValue(card);
            ok = ok && exec(log, error);
            moved.insert(card);
        }
    }
    for (const QString& card : moved) {
        QSqlQuery drop(db);
        ok = ok && drop.prepare(
                       QStringLiteral("DELETE FROM card_state WHERE deck_id = ? AND card_id = ?"));
        drop.addBindValue(fromDeck);
        drop.addBindValue(card);
        ok = ok && exec(drop, error);
    }
    if (!ok || !db.commit()) {
        if (ok && error) *error = db.lastError().text();
        db.rollback();
        return std::nullopt;
    }
    return static_cast<int>(moved.size());
}

bool ReviewStore::resetDeck(const QString& deckId) {
    QSqlDatabase db = QSqlDatabase::database(connection_);
    if (!db.transaction()) return false;
    QSqlQuery q(db);
    bool ok = q.prepare(QStringLiteral("DELETE FROM card_state WHERE deck_id = ?"));
    q.addBindValue(deckId);
    ok = ok && q.exec();
    QSqlQuery l(db);
    ok = ok && l.prepare(QStringLiteral("DELETE FROM review_log WHERE deck_id = ?"));
    l.addBindValue(deckId);
    ok = ok && l.exec();
    if (!ok || !db.commit()) {
        db.rollback();
        return false;
    }
    return true;
}

}  // namespace pd::study
