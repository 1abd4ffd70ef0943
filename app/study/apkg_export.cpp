// The collection follows Anki's own schema-11 definition, rslib/src/storage/schema11.sql
// (ankitects/anki), table by table and index by index; the col row's JSON follows the serde
// structs Anki reads it with when it upgrades the file on import (rslib/src/notetype/schema11.rs,
// rslib/src/decks/schema11.rs, rslib/src/deckconfig/schema11.rs: every key those require is
// written); the package layout is pylib/anki/exporting.py's AnkiPackageExporter (legacy
// "collection.anki2" plus a "media" JSON map, no "meta" entry).
#include "apkg_export.h"

#include <zip.h>

#include <QCryptographicHash>
#include <QDateTime>
#include <QFile>
#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>
#include <QRegularExpression>
#include <QSaveFile>
#include <QSqlDatabase>
#include <QSqlError>
#include <QSqlQuery>
#include <QTemporaryDir>
#include <QUuid>
#include <QVariant>
#include <algorithm>

#include "numeric_answer.h"

namespace pd::study {
namespace {

// Fixed, so every export (and every re-import) meets the same note type in Anki.
constexpr qint64 kModelId = 1714000000001;
constexpr qint64 kDefaultDeckId = 1;  // every Anki collection has deck 1, "Default"
constexpr qint64 kConfId = 1;

const QStringList& fieldNames() {
    static const QStringList names = {QStringLiteral("Question"), QStringLiteral("Options"),
                                      QStringLiteral("Answer"),   QStringLiteral("Explanations"),
                                      QStringLiteral("Sources"),  QStringLiteral("CardId")};
    return names;
}

// Plain deck text as field HTML: escaped, line breaks kept, NFC as Anki stores fields.
QString html(const QString& text) {
    QString out = text.normalized(QString::NormalizationForm_C).toHtmlEscaped();
    out.replace(QStringLiteral("\r\n"), QStringLiteral("\n"));
    out.replace(QLatin1Char('\n'), QStringLiteral("<br>"));
    return out;
}

// Anki's strip_html_preserving_media_filenames for our fields (no media): comments and tags
// dropped with no replacement, then the entities html() writes decoded, &nbsp; as a space.
QString stripHtml(QString text) {
    static const QRegularExpression comments(QStringLiteral("<!--.*?-->"),
                                             QRegularExpression::DotMatchesEverythingOption);
    static const QRegularExpression tags(QStringLiteral("<[^>]*>"));
    text.remove(comments);
    text.remove(tags);
    text.replace(QStringLiteral("&lt;"), QStringLiteral("<"));
    text.replace(QStringLiteral("&gt;"), QStringLiteral(">"));
    text.replace(QStringLiteral("&quot;"), QStringLiteral("\""));
    text.replace(QStringLiteral("&#39;"), QStringLiteral("'"));
    text.replace(QStringLiteral("&nbsp;"), QStringLiteral(" "));
    text.replace(QStringLiteral("&amp;"), QStringLiteral("&"));  // last: "&amp;lt;" is "&lt;"
    return text;
}

// Anki's field_checksum: the first 4 bytes of SHA-1, big-endian.
qint64 fieldChecksum(const QString& stripped) {
    const QByteArray d = QCryptographicHash::hash(stripped.toUtf8(), QCryptographicHash::Sha1);
    return (qint64(quint8(d[0])) << 24) | (qint64(quint8(d[1])) << 16) |
           (qint64(quint8(d[2])) << 8) | qint64(quint8(d[3]));
}

quint64 hash64(const QString& text) {
    const QByteArray d = QCryptographicHash::hash(text.toUtf8(), QCryptographicHash::Sha1);
    quint64 n = 0;
    for (int i = 0; i < 8; ++i) n = (n << 8) | quint8(d[i]);
    return n;
}

// Anki's guid alphabet (rslib notes: anki_base91), of a hash instead of a random number.
QString noteGuid(const QString& deckId, const QString& cardId) {
    static const char table[] =
        "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789!#$%&()*+,-./"
        ":;<=>?@[]^_`{|}~";
    constexpr quint64 base = sizeof(table) - 1;
    quint64 n = hash64(QStringLiteral("paralleldeck:%1/%2").arg(deckId, cardId));
    QString out;
    while (n > 0) {
        out.append(QLatin1Char(table[n % base]));
        n /= base;
    }
    std::reverse(out.begin(), out.end());
    return out;
}

// A stable deck id in the range of Anki's millisecond ids, never 1 (Default).
qint64 ankiDeckId(const QString& deckId) {
    return 1'000'000'000'000 + qint64(hash64(QStringLiteral("deck:") + deckId) % 1'000'000'000'000);
}

QString letter(int i) {
    return QString(QLatin1Char(char('A' + i)));
}

QString tagString(const QStringList& tags) {
    QStringList out;
    for (QString t : tags) {
        t = t.trimmed();
        t.replace(QRegularExpression(QStringLiteral("\\s+")), QStringLiteral("_"));  // Anki's rule
        if (!t.isEmpty() && !out.contains(t)) out.append(t);
    }
    return out.isEmpty() ? QString()
                         : QLatin1Char(' ') + out.join(QLatin1Char(' ')) + QLatin1Char(' ');
}

QString sourcesHtml(const QList<Source>& sources) {
    if (sources.isEmpty()) return {};
    QString out = QStringLiteral("<ul>");
    for (const Source& s : sources) {
        const QString title = html(s.title.isEmpty() ? s.url : s.title);
        out += QStringLiteral("<li>");
        out += s.url.isEmpty()
                   ? title
                   : QStringLiteral("<a href=\"%1\">%2</a>").arg(s.url.toHtmlEscaped(), title);
        if (!s.locator.isEmpty()) out += QStringLiteral(", ") + html(s.locator);
        out += QStringLiteral("</li>");
    }
    return out + QStringLiteral("</ul>");
}

struct NoteFields {
    QString options, answer, explanations;
};

NoteFields choiceFields(const Card& card) {
    NoteFields f;
    QStringList letters;
    QString right;
    f.options = QStringLiteral("<ol type=\"A\">");
    f.explanations = QStringLiteral("<ol type=\"A\">");
    for (int i = 0; i < card.options.size(); ++i) {
        const Option& o = card.options[i];
        f.options += QStringLiteral("<li>%1</li>").arg(html(o.text));
        f.explanations +=
            QStringLiteral("<li><b>%1</b> %2</li>")
                .arg(o.correct ? QStringLiteral("Correct.") : QStringLiteral("Incorrect."),
                     html(o.explanation));
        if (!o.correct) continue;
        letters.append(letter(i));
        right += QStringLiteral("<li>%1. %2</li>").arg(letter(i), html(o.text));
    }
    f.options += QStringLiteral("</ol>");
    f.explanations += QStringLiteral("</ol>");
    f.answer = QStringLiteral("<b>%1: %2</b><ul>%3</ul>")
                   .arg(letters.size() == 1 ? QStringLiteral("Answer") : QStringLiteral("Answers"),
                        letters.join(QStringLiteral(", ")), right);
    return f;
}

// Numeric cards, and any kind without a fixed answer: the answer is what the card's run
// measures, which only ParallelDeck can produce.
NoteFields runFields(const Card& card) {
    NoteFields f;
    f.answer = QStringLiteral("<b>Answered by a run in ParallelDeck.</b> Predict the value");
    if (card.numeric) {
        const NumericAnswer& a = *card.numeric;
        f.answer += QStringLiteral(
                        " (in %1), then run the card's scenario in ParallelDeck: it is "
                        "graded against the figure that run measures, within %2.")
                        .arg(html(answerUnitLabel(a.unit)), html(toleranceText(a)));
        if (a.textbook) {
            f.answer += QStringLiteral("<br>Textbook value: %1")
                            .arg(html(formatInUnit(*a.textbook * answerUnitScale(a.unit), a.unit)));
            if (!a.textbookFormula.isEmpty())
                f.answer += QStringLiteral(" (%1)").arg(html(a.textbookFormula));
            f.answer += QLatin1Char('.');
        }
        f.explanations = html(a.explanation);
    } else {
        f.answer += QStringLiteral(", then run the card's scenario in ParallelDeck.");
    }
    return f;
}

QStringList noteFields(const Card& card) {
    const NoteFields f = card.type == CardType::Single || card.type == CardType::Multiple
                             ? choiceFields(card)
                             : runFields(card);
    return {html(card.prompt),         f.options,    f.answer, f.explanations,
            sourcesHtml(card.sources), html(card.id)};
}

const QString kCss = QStringLiteral(
    ".card {\n  font-family: arial;\n  font-size: 20px;\n  text-align: left;\n}\n"
    ".pd-question { margin-bottom: 0.5em; }\n"
    ".pd-explanations, .pd-sources { font-size: 0.85em; margin-top: 1em; }\n");

const QString kQuestionTemplate =
    QStringLiteral("<div class=\"pd-question\">{{Question}}</div>\n{{Options}}");
const QString kAnswerTemplate = QStringLiteral(
    "{{FrontSide}}\n\n<hr id=answer>\n\n{{Answer}}\n"
    "{{#Explanations}}<div class=\"pd-explanations\">{{Explanations}}</div>{{/Explanations}}\n"
    "{{#Sources}}<div class=\"pd-sources\">Sources: {{Sources}}</div>{{/Sources}}");

QJsonObject modelJson(qint64 deckId, qint64 nowS) {
    QJsonArray flds;
    for (int i = 0; i < fieldNames().size(); ++i) {
        flds.append(QJsonObject{{QStringLiteral("name"), fieldNames()[i]},
                                {QStringLiteral("ord"), i},
                                {QStringLiteral("sticky"), false},
                                {QStringLiteral("rtl"), false},
                                {QStringLiteral("font"), QStringLiteral("Arial")},
                                {QStringLiteral("size"), 20},
                                {QStringLiteral("media"), QJsonArray()}});
    }
    const QJsonObject tmpl{{QStringLiteral("name"), QStringLiteral("Card 1")},
                           {QStringLiteral("ord"), 0},
                           {QStringLiteral("qfmt"), kQuestionTemplate},
                           {QStringLiteral("afmt"), kAnswerTemplate},
                           {QStringLiteral("bqfmt"), QString()},
                           {QStringLiteral("bafmt"), QString()},
                           {QStringLiteral("did"), QJsonValue::Null},
                           {QStringLiteral("bfont"), QString()},
                           {QStringLiteral("bsize"), 0}};
    return {
        {QStringLiteral("id"), kModelId},
        {QStringLiteral("name"), QString::fromLatin1(kApkgNoteTypeName)},
        {QStringLiteral("type"), 0},
        {QStringLiteral("mod"), nowS},
        {QStringLiteral("usn"), -1},
        {QStringLiteral("sortf"), 0},
        {QStringLiteral("did"), deckId},
        {QStringLiteral("tmpls"), QJsonArray{tmpl}},
        {QStringLiteral("flds"), flds},
        {QStringLiteral("css"), kCss},
        {QStringLiteral("latexPre"),
         QStringLiteral("\\documentclass[12pt]{article}\n\\special{papersize=3in,5in}\n"
                        "\\usepackage[utf8]{inputenc}\n\\usepackage{amssymb,amsmath}\n"
                        "\\pagestyle{empty}\n\\setlength{\\parindent}{0in}\n"
                        "\\begin{document}\n")},
        {QStringLiteral("latexPost"), QStringLiteral("\\end{document}")},
        {QStringLiteral("latexsvg"), false},
        // card 0 is generated when the Question field is not empty
        {QStringLiteral("req"), QJsonArray{QJsonArray{0, QStringLiteral("any"), QJsonArray{0}}}},
        {QStringLiteral("tags"), QJsonArray()},
        {QStringLiteral("vers"), QJsonArray()}};
}

QJsonObject deckJson(qint64 id, const QString& name, const QString& desc, qint64 nowS) {
    const QJsonArray today{0, 0};
    return {{QStringLiteral("id"), id},           {QStringLiteral("mod"), nowS},
            {QStringLiteral("name"), name},       {QStringLiteral("usn"), -1},
            {QStringLiteral("lrnToday"), today},  {QStringLiteral("revToday"), today},
            {QStringLiteral("newToday"), today},  {QStringLiteral("timeToday"), today},
            {QStringLiteral("collapsed"), false}, {QStringLiteral("browserCollapsed"), false},
            {QStringLiteral("desc"), desc},       {QStringLiteral("dyn"), 0},
            {QStringLiteral("conf"), kConfId},    {QStringLiteral("extendNew"), 0},
            {QStringLiteral("extendRev"), 0}};
}

// Anki's default options group, as its schema-11 defaults spell it.
QJsonObject dconfJson(qint64 nowS) {
    return {{QStringLiteral("id"), kConfId},
            {QStringLiteral("mod"), nowS},
            {QStringLiteral("name"), QStringLiteral("Default")},
            {QStringLiteral("usn"), -1},
            {QStringLiteral("maxTaken"), 60},
            {QStringLiteral("autoplay"), true},
            {QStringLiteral("timer"), 0},
            {QStringLiteral("replayq"), true},
            {QStringLiteral("dyn"), false},
            {QStringLiteral("new"), QJsonObject{{QStringLiteral("bury"), false},
                                                {QStringLiteral("delays"), QJsonArray{1.0, 10.0}},
                                                {QStringLiteral("initialFactor"), 2500},
                                                {QStringLiteral("ints"), QJsonArray{1, 4, 0}},
                                                {QStringLiteral("order"), 1},
                                                {QStringLiteral("perDay"), 20}}},
            {QStringLiteral("rev"), QJsonObject{{QStringLiteral("bury"), false},
                                                {QStringLiteral("ease4"), 1.3},
                                                {QStringLiteral("ivlFct"), 1.0},
                                                {QStringLiteral("maxIvl"), 36500},
                                                {QStringLiteral("perDay"), 200},
                                                {QStringLiteral("hardFactor"), 1.2}}},
            {QStringLiteral("lapse"), QJsonObject{{QStringLiteral("delays"), QJsonArray{10.0}},
                                                  {QStringLiteral("leechAction"), 1},
                                                  {QStringLiteral("leechFails"), 8},
                                                  {QStringLiteral("minInt"), 1},
                                                  {QStringLiteral("mult"), 0.0}}}};
}

// Qt binds a null QString as SQL NULL; Anki's text columns are "not null".
QString text(const QString& s) {
    return s.isNull() ? QStringLiteral("") : s;
}

QString json(const QJsonObject& o) {
    return QString::fromUtf8(QJsonDocument(o).toJson(QJsonDocument::Compact));
}

// schema11.sql, statement by statement (Qt runs one statement per exec).
const QStringList& schemaStatements() {
    static const QStringList s = {
        QStringLiteral(
            "create table col (id integer primary key, crt integer not null, mod integer "
            "not null, scm integer not null, ver integer not null, dty integer not null, "
            "usn integer not null, ls integer not null, conf text not null, models text "
            "not null, decks text not null, dconf text not null, tags text not null)"),
        QStringLiteral(
            "create table notes (id integer primary key, guid text not null, mid integer "
            "not null, mod integer not null, usn integer not null, tags text not null, "
            "flds text not null, sfld integer not null, csum integer not null, flags "
            "integer not null, data text not null)"),
        QStringLiteral(
            "create table cards (id integer primary key, nid integer not null, did "
            "integer not null, ord integer not null, mod integer not null, usn integer "
            "not null, type integer not null, queue integer not null, due integer not "
            "null, ivl integer not null, factor integer not null, reps integer not null, "
            "lapses integer not null, left integer not null, odue integer not null, odid "
            "integer not null, flags integer not null, data text not null)"),
        QStringLiteral("create table revlog (id integer primary key, cid integer not null, usn "
                       "integer not null, ease integer not null, ivl integer not null, lastIvl "
                       "integer not null, factor integer not null, time integer not null, type "
                       "integer not null)"),
        QStringLiteral("create table graves (usn integer not null, oid integer not null, type "
                       "integer not null)"),
        QStringLiteral("create index ix_notes_usn on notes (usn)"),
        QStringLiteral("create index ix_cards_usn on cards (usn)"),
        QStringLiteral("create index ix_revlog_usn on revlog (usn)"),
        QStringLiteral("create index ix_cards_nid on cards (nid)"),
        QStringLiteral("create index ix_cards_sched on cards (did, queue, due)"),
        QStringLiteral("create index ix_revlog_cid on revlog (cid)"),
        QStringLiteral("create index ix_notes_csum on notes (csum)")};
    return s;
}

bool fillCollection(QSqlDatabase& db, const Deck& deck, QString* error) {
    const qint64 nowMs = QDateTime::currentMSecsSinceEpoch();
    const qint64 nowS = nowMs / 1000;
    const qint64 did = ankiDeckId(deck.id);
    QSqlQuery q(db);
    auto fail = [error](const QString& what, const QSqlError& e) {
        *error = QStringLiteral("%1: %2").arg(what, e.text());
        return false;
    };
    for (const QString& statement : schemaStatements()) {
        if (!q.exec(statement)) return fail(QStringLiteral("creating the schema"), q.lastError());
    }
    if (!db.transaction()) return fail(QStringLiteral("starting a transaction"), db.lastError());

    QJsonObject tags;
    const QString mid = QString::number(kModelId);
    q.prepare(QStringLiteral("insert into notes values (?,?,?,?,?,?,?,?,?,?,?)"));
    QSqlQuery cq(db);
    cq.prepare(QStringLiteral("insert into cards values (?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)"));
    for (int i = 0; i < deck.cards.size(); ++i) {
        const Card& card = deck.cards[i];
        const QStringList fields = noteFields(card);
        const QString sortField = stripHtml(fields[0]);
        const QString tagText = tagString(card.tags);
        for (const QString& t : tagText.split(QLatin1Char(' '), Qt::SkipEmptyParts))
            tags.insert(t, 0);
        const qint64 id = nowMs + i;  // Anki's ids are creation times in ms
        q.addBindValue(id);
        q.addBindValue(noteGuid(deck.id, card.id));
        q.addBindValue(kModelId);
        q.addBindValue(nowS);
        q.addBindValue(-1);
        q.addBindValue(text(tagText));
        q.addBindValue(text(fields.join(QChar(0x1f))));
        q.addBindValue(text(sortField));
        q.addBindValue(fieldChecksum(sortField));
        q.addBindValue(0);
        q.addBindValue(text(QString()));
        if (!q.exec()) return fail(QStringLiteral("writing note %1").arg(card.id), q.lastError());
        // id, nid, did, ord, mod, usn, type 0 (new), queue 0 (new), due (position), ivl,
        // factor, reps, lapses, left, odue, odid, flags, data
        const QVariantList values = {id, id, did, 0, nowS, -1, 0, 0, i + 1, 0, 0, 0, 0, 0, 0, 0, 0};
        for (const QVariant& v : values) cq.addBindValue(v);
        cq.addBindValue(text(QString()));
        if (!cq.exec()) return fail(QStringLiteral("writing card %1").arg(card.id), cq.lastError());
    }

    const QString title = deck.title.trimmed().isEmpty() ? deck.id : deck.title.trimmed();
    QJsonObject decks{{QString::number(kDefaultDeckId),
                       deckJson(kDefaultDeckId, QStringLiteral("Default"), QString(), nowS)},
                      {QString::number(did), deckJson(did, title, html(deck.description), nowS)}};
    const QJsonObject conf{{QStringLiteral("activeDecks"), QJsonArray{did}},
                           {QStringLiteral("curDeck"), did},
                           {QStringLiteral("newSpread"), 0},
                           {QStringLiteral("collapseTime"), 1200},
                           {QStringLiteral("timeLim"), 0},
                           {QStringLiteral("estTimes"), true},
                           {QStringLiteral("dueCounts"), true},
                           {QStringLiteral("curModel"), mid},
                           {QStringLiteral("nextPos"), deck.cards.size() + 1},
                           {QStringLiteral("sortType"), QStringLiteral("noteFld")},
                           {QStringLiteral("sortBackwards"), false},
                           {QStringLiteral("addToCur"), true}};
    // crt: the collection's creation day (local midnight); it only matters for reviews
    const qint64 crt = QDateTime(QDate::currentDate(), QTime(0, 0)).toSecsSinceEpoch();
    q.prepare(QStringLiteral("insert into col values (1,?,?,?,11,0,0,0,?,?,?,?,?)"));
    q.addBindValue(crt);
    q.addBindValue(nowMs);
    q.addBindValue(nowMs);
    q.addBindValue(json(conf));
    q.addBindValue(json(QJsonObject{{mid, modelJson(did, nowS)}}));
    q.addBindValue(json(decks));
    q.addBindValue(json(QJsonObject{{QString::number(kConfId), dconfJson(nowS)}}));
    q.addBindValue(json(tags));
    if (!q.exec()) return fail(QStringLiteral("writing the col row"), q.lastError());
    if (!db.commit()) return fail(QStringLiteral("committing"), db.lastError());
    return true;
}

bool writeCollection(const QString& file, const Deck& deck, QString* error) {
    if (!QSqlDatabase::isDriverAvailable(QStringLiteral("QSQLITE"))) {
        *error = QStringLiteral("Qt's SQLite driver (QSQLITE) is not installed");
        return false;
    }
    const QString name =
        QStringLiteral("pd_apkg_export_") + QUuid::createUuid().toString(QUuid::WithoutBraces);
    bool ok = false;
    {
        QSqlDatabase db = QSqlDatabase::addDatabase(QStringLiteral("QSQLITE"), name);
        db.setDatabaseName(file);
        if (!db.open()) {
            *error =
                QStringLiteral("creating the SQLite collection: %1").arg(db.lastError().text());
        } else {
            ok = fillCollection(db, deck, error);
            db.close();
        }
    }
    QSqlDatabase::removeDatabase(name);
    return ok;
}

// One deflated entry of the zip.
bool addEntry(zipFile zf, const char* name, const QByteArray& bytes, QString* error) {
    const QDateTime now = QDateTime::currentDateTime();
    zip_fileinfo info{};
    info.tmz_date.tm_sec = uInt(now.time().second());
    info.tmz_date.tm_min = uInt(now.time().minute());
    info.tmz_date.tm_hour = uInt(now.time().hour());
    info.tmz_date.tm_mday = uInt(now.date().day());
    info.tmz_date.tm_mon = uInt(now.date().month() - 1);
    info.tmz_date.tm_year = uInt(now.date().year());
    if (zipOpenNewFileInZip64(zf, name, &info, nullptr, 0, nullptr, 0, nullptr, Z_DEFLATED,
                              Z_DEFAULT_COMPRESSION, bytes.size() >= 0xffffffffLL) != ZIP_OK) {
        *error = QStringLiteral("adding %1 to the zip").arg(QString::fromLatin1(name));
        return false;
    }
    bool ok = true;
    constexpr qsizetype chunk = 1 << 20;
    for (qsizetype at = 0; ok && at < bytes.size(); at += chunk) {
        const unsigned len = unsigned(std::min(chunk, bytes.size() - at));
        ok = zipWriteInFileInZip(zf, bytes.constData() + at, len) == ZIP_OK;
    }
    ok = zipCloseFileInZip(zf) == ZIP_OK && ok;
    if (!ok) *error = QStringLiteral("compressing %1").arg(QString::fromLatin1(name));
    return ok;
}

bool writeZip(const QString& zipPath, const QByteArray& collection, QString* error) {
    zipFile zf = zipOpen64(QFile::encodeName(zipPath).constData(), APPEND_STATUS_CREATE);
    if (!zf) {
        *error = QStringLiteral("creating the zip archive");
        return false;
    }
    bool ok = addEntry(zf, "collection.anki2", collection, error) &&
              addEntry(zf, "media", QByteArrayLiteral("{}"), error);
    if (zipClose(zf, nullptr) != ZIP_OK && ok) {
        *error = QStringLiteral("finishing the zip archive");
        ok = false;
    }
    return ok;
}

bool buildPackage(const Deck& deck, QByteArray* package, QString* why) {
    QTemporaryDir dir;
    if (!dir.isValid()) {
        *why = QStringLiteral("creating a temporary folder: %1").arg(dir.errorString());
        return false;
    }
    const QString collectionPath = dir.filePath(QStringLiteral("collection.anki2"));
    const QString zipPath = dir.filePath(QStringLiteral("package.apkg"));
    if (!writeCollection(collectionPath, deck, why)) return false;
    QFile collection(collectionPath);
    if (!collection.open(QIODevice::ReadOnly)) {
        *why = QStringLiteral("reading the collection back: %1").arg(collection.errorString());
        return false;
    }
    if (!writeZip(zipPath, collection.readAll(), why)) return false;
    QFile zip(zipPath);
    if (!zip.open(QIODevice::ReadOnly)) {
        *why = QStringLiteral("reading the zip back: %1").arg(zip.errorString());
        return false;
    }
    *package = zip.readAll();
    return true;
}

}  // namespace

bool exportApkg(const Deck& deck, const QString& path, QString* error) {
    QString why;
    QByteArray package;
    bool ok = buildPackage(deck, &package, &why);
    if (ok) {
        // QSaveFile writes beside the target and renames on commit: never a partial .apkg.
        QSaveFile file(path);
        ok = file.open(QIODevice::WriteOnly) && file.write(package) == package.size() &&
             file.commit();
        if (!ok) why = file.errorString();
    }
    if (!ok && error)
        *error = QStringLiteral("Could not write the Anki package %1: %2").arg(path, why);
    return ok;
}

}  // namespace pd::study
