// The Anki package (.apkg) writer: the zip's entries, the SQLite content checked against Anki's
// schema 11 (rslib/src/storage/schema11.sql) and against the deck it came from (fields, tags,
// checksums computed here independently), the bundled deck whole, stable guids, and a failure
// that leaves no file.
#include <unzip.h>

#include <QCryptographicHash>
#include <QDir>
#include <QFile>
#include <QFileInfo>
#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>
#include <QMap>
#include <QSet>
#include <QSqlDatabase>
#include <QSqlError>
#include <QSqlQuery>
#include <QTemporaryDir>
#include <QtTest>

#include "study/apkg_export.h"
#include "study/deck.h"

using namespace pd::study;

class TestApkgExport : public QObject {
    Q_OBJECT
  private slots:
    void zipHoldsCollectionAndMedia();
    void schemaIsAnkis();
    void colRowHoldsTheNoteType();
    void notesCarryTheCards();
    void cardsReferenceNotes();
    void runCardsAreExportedWithARunAnswer();
    void bundledDeckExportsWhole();
    void guidsAreStable();
    void unwritablePathLeavesNoFile();
};

namespace {

const QChar kSep(0x1f);

Option opt(const QString& text, bool correct, const QString& explanation) {
    return Option{text, correct, explanation};
}

// Three cards: a single with text that needs escaping, a multiple, a numeric run card.
Deck smallDeck() {
    Deck d;
    d.id = QStringLiteral("apkg-test");
    d.title = QStringLiteral("APKG test deck");
    d.description = QStringLiteral("Cards for the exporter's test.");
    Card single;
    single.id = QStringLiteral("escaping-card");
    single.prompt = QStringLiteral("Is 2 < 3 & \"true\" in <b>bold</b>?");
    single.type = CardType::Single;
    single.options = {opt(QStringLiteral("Yes"), false, QStringLiteral("Not in this deck.")),
                      opt(QStringLiteral("No & never"), true, QStringLiteral("Because a < b.")),
                      opt(QStringLiteral("Maybe"), false, QStringLiteral("Guessing."))};
    single.tags = {QStringLiteral("concept::pipeline-parallelism"), QStringLiteral("topic::demo")};
    single.sources = {Source{QStringLiteral("GPipe"),
                             QStringLiteral("https://arxiv.org/abs/1811.06965"),
                             QStringLiteral("Section 2")}};
    Card multiple;
    multiple.id = QStringLiteral("multiple-card");
    multiple.prompt = QStringLiteral("Which two hold? (Choose two.)");
    multiple.type = CardType::Multiple;
    multiple.options = {opt(QStringLiteral("First"), true, QStringLiteral("First is right.")),
                        opt(QStringLiteral("Second"), false, QStringLiteral("Second is wrong.")),
                        opt(QStringLiteral("Third"), true, QStringLiteral("Third is right.")),
                        opt(QStringLiteral("Fourth"), false, QStringLiteral("Fourth is wrong."))};
    multiple.tags = {QStringLiteral("concept::data-parallelism")};
    Card run;
    run.id = QStringLiteral("numeric-card");
    run.prompt = QStringLiteral("How many KiB of gradients does device 0 hold? (Answer in KiB.)");
    run.type = CardType::Numeric;
    NumericAnswer a;
    a.metric = QStringLiteral("model_state.gradients");
    a.device = 0;
    a.unit = AnswerUnit::KiB;
    a.tolerance = 0.05;
    a.toleranceIsRelative = true;
    a.textbook = 49.5;
    a.textbookFormula = QStringLiteral("4 bytes x parameters");
    a.explanation = QStringLiteral("Data parallelism keeps a whole gradient on every device.");
    run.numeric = a;
    run.tags = {QStringLiteral("concept::data-parallelism")};
    d.cards = {single, multiple, run};
    return d;
}

// Every entry of the zip, read with minizip's unzip side.
QMap<QString, QByteArray> unzipAll(const QString& path) {
    QMap<QString, QByteArray> out;
    unzFile uf = unzOpen64(QFile::encodeName(path).constData());
    if (!uf) return out;
    for (int rc = unzGoToFirstFile(uf); rc == UNZ_OK; rc = unzGoToNextFile(uf)) {
        char name[256];
        unz_file_info64 info;
        if (unzGetCurrentFileInfo64(uf, &info, name, sizeof name, nullptr, 0, nullptr, 0) !=
                UNZ_OK ||
            unzOpenCurrentFile(uf) != UNZ_OK)
            break;
        QByteArray bytes(qsizetype(info.uncompressed_size), Qt::Uninitialized);
        const int n = unzReadCurrentFile(uf, bytes.data(), unsigned(bytes.size()));
        unzCloseCurrentFile(uf);
        if (n != bytes.size()) break;
        out.insert(QString::fromUtf8(name), bytes);
    }
    unzClose(uf);
    return out;
}

// The exported package of `deck`, unzipped, with its collection open as `db`.
class Package {
  public:
    explicit Package(const Deck& deck) : name_(QStringLiteral("test_apkg_%1").arg(++count_)) {
        const QString path = dir_.filePath(QStringLiteral("deck.apkg"));
        exported_ = exportApkg(deck, path, &error_);
        entries_ = unzipAll(path);
        QFile f(dir_.filePath(QStringLiteral("collection.anki2")));
        if (!f.open(QIODevice::WriteOnly)) return;
        f.write(entries_.value(QStringLiteral("collection.anki2")));
        f.close();
        QSqlDatabase db = QSqlDatabase::addDatabase(QStringLiteral("QSQLITE"), name_);
        db.setDatabaseName(f.fileName());
        opened_ = db.open();
    }
    ~Package() {
        QSqlDatabase::database(name_).close();
        QSqlDatabase::removeDatabase(name_);
    }
    bool ok() const { return exported_ && opened_; }
    QString error() const { return error_; }
    const QMap<QString, QByteArray>& entries() const { return entries_; }
    QSqlQuery query(const QString& sql) const {
        QSqlQuery q(QSqlDatabase::database(name_));
        if (!q.exec(sql)) qWarning() << sql << q.lastError().text();
        return q;
    }
    QVariant scalar(const QString& sql) const {
        QSqlQuery q = query(sql);
        return q.next() ? q.value(0) : QVariant();
    }
    QJsonObject colJson(const QString& column) const {
        return QJsonDocument::fromJson(
                   scalar(QStringLiteral("select %1 from col").arg(column)).toString().toUtf8())
            .object();
    }

  private:
    static inline int count_ = 0;
    QTemporaryDir dir_;
    QString name_;
    QString error_;
    bool exported_ = false;
    bool opened_ = false;
    QMap<QString, QByteArray> entries_;
};

QStringList columns(const Package& p, const QString& table) {
    QStringList out;
    QSqlQuery q = p.query(QStringLiteral("pragma table_info(%1)").arg(table));
    while (q.next()) out.append(q.value(1).toString());
    return out;
}

// Anki's fieldChecksum, computed here from the card's plain text: int(sha1hex[:8], 16).
qint64 checksum(const QString& plain) {
    return QCryptographicHash::hash(plain.toUtf8(), QCryptographicHash::Sha1)
        .toHex()
        .left(8)
        .toLongLong(nullptr, 16);
}

struct Note {
    qint64 id = 0;
    QString guid;
    qint64 mid = 0;
    QString tags;
    QStringList fields;
    QString sfld;
    qint64 csum = 0;
};

QList<Note> notes(const Package& p) {
    QList<Note> out;
    QSqlQuery q =
        p.query(QStringLiteral("select id, guid, mid, tags, flds, sfld, csum from notes "
                               "order by id"));
    while (q.next()) {
        out.append(Note{q.value(0).toLongLong(), q.value(1).toString(), q.value(2).toLongLong(),
                        q.value(3).toString(), q.value(4).toString().split(kSep),
                        q.value(5).toString(), q.value(6).toLongLong()});
    }
    return out;
}

QString ankiTags(const QStringList& tags) {
    return QLatin1Char(' ') + tags.join(QLatin1Char(' ')) + QLatin1Char(' ');
}

}  // namespace

void TestApkgExport::zipHoldsCollectionAndMedia() {
    const Package p(smallDeck());
    QVERIFY2(p.ok(), qPrintable(p.error()));
    QCOMPARE(p.entries().keys(),
             (QStringList{QStringLiteral("collection.anki2"), QStringLiteral("media")}));
    QCOMPARE(p.entries().value(QStringLiteral("media")), QByteArrayLiteral("{}"));
    QVERIFY(p.entries().value(QStringLiteral("collection.anki2")).startsWith("SQLite format 3"));
    QCOMPARE(p.scalar(QStringLiteral("pragma integrity_check")).toString(), QStringLiteral("ok"));
}

void TestApkgExport::schemaIsAnkis() {
    const Package p(smallDeck());
    QVERIFY2(p.ok(), qPrintable(p.error()));
    const auto list = [](const char* names) {
        return QString::fromLatin1(names).split(QLatin1Char(' '));
    };
    QCOMPARE(columns(p, QStringLiteral("col")),
             list("id crt mod scm ver dty usn ls conf models decks dconf tags"));
    QCOMPARE(columns(p, QStringLiteral("notes")),
             list("id guid mid mod usn tags flds sfld csum flags data"));
    QCOMPARE(columns(p, QStringLiteral("cards")),
             list("id nid did ord mod usn type queue due ivl factor reps lapses left odue odid "
                  "flags data"));
    QCOMPARE(columns(p, QStringLiteral("revlog")),
             list("id cid usn ease ivl lastIvl factor time type"));
    QCOMPARE(columns(p, QStringLiteral("graves")), list("usn oid type"));
    QStringList indexes;
    QSqlQuery q =
        p.query(QStringLiteral("select name from sqlite_master where type = 'index' and "
                               "name like 'ix_%' order by name"));
    while (q.next()) indexes.append(q.value(0).toString());
    QCOMPARE(indexes, list("ix_cards_nid ix_cards_sched ix_cards_usn ix_notes_csum ix_notes_usn "
                           "ix_revlog_cid ix_revlog_usn"));
    QCOMPARE(p.scalar(QStringLiteral("select count(*) from revlog")).toInt(), 0);
    QCOMPARE(p.scalar(QStringLiteral("select count(*) from graves")).toInt(), 0);
}

void TestApkgExport::colRowHoldsTheNoteType() {
    const Deck deck = smallDeck();
    const Package p(deck);
    QVERIFY2(p.ok(), qPrintable(p.error()));
    QCOMPARE(p.scalar(QStringLiteral("select count(*) from col")).toInt(), 1);
    QCOMPARE(p.scalar(QStringLiteral("select ver from col")).toInt(), 11);

    const QJsonObject models = p.colJson(QStringLiteral("models"));
    QCOMPARE(models.size(), 1);
    const QJsonObject m = models.begin()->toObject();
    QCOMPARE(m.value(QStringLiteral("name")).toString(), QString::fromLatin1(kApkgNoteTypeName));
    QCOMPARE(QString::number(m.value(QStringLiteral("id")).toInteger()), models.begin().key());
    QCOMPARE(m.value(QStringLiteral("type")).toInt(), 0);
    QCOMPARE(m.value(QStringLiteral("sortf")).toInt(), 0);
    QStringList fieldNames;
    for (const QJsonValue& f : m.value(QStringLiteral("flds")).toArray()) {
        QCOMPARE(f[QStringLiteral("ord")].toInt(), fieldNames.size());
        fieldNames.append(f[QStringLiteral("name")].toString());
    }
    QCOMPARE(fieldNames, QString::fromLatin1("Question Options Answer Explanations Sources CardId")
                             .split(QLatin1Char(' ')));
    const QJsonArray tmpls = m.value(QStringLiteral("tmpls")).toArray();
    QCOMPARE(tmpls.size(), 1);
    const QString qfmt = tmpls[0][QStringLiteral("qfmt")].toString();
    const QString afmt = tmpls[0][QStringLiteral("afmt")].toString();
    QVERIFY(qfmt.contains(QStringLiteral("{{Question}}")) &&
            qfmt.contains(QStringLiteral("{{Options}}")));
    QVERIFY(afmt.startsWith(QStringLiteral("{{FrontSide}}")));
    for (const char* f : {"{{Answer}}", "{{Explanations}}", "{{Sources}}", "<hr id=answer>"})
        QVERIFY2(afmt.contains(QString::fromLatin1(f)), f);
    QVERIFY(!m.value(QStringLiteral("css")).toString().isEmpty());

    const QJsonObject decks = p.colJson(QStringLiteral("decks"));
    QVERIFY(decks.contains(QStringLiteral("1")));  // Anki's Default deck
    QCOMPARE(decks.size(), 2);
    bool titled = false;
    for (auto it = decks.begin(); it != decks.end(); ++it) {
        const QJsonObject d = it->toObject();
        QCOMPARE(QString::number(d.value(QStringLiteral("id")).toInteger()), it.key());
        QCOMPARE(d.value(QStringLiteral("dyn")).toInt(), 0);
        titled |= d.value(QStringLiteral("name")).toString() == deck.title;
    }
    QVERIFY(titled);
    QVERIFY(p.colJson(QStringLiteral("dconf")).contains(QStringLiteral("1")));
    QCOMPARE(p.colJson(QStringLiteral("conf")).value(QStringLiteral("curModel")).toString(),
             models.begin().key());
    const QJsonObject tags = p.colJson(QStringLiteral("tags"));
    QVERIFY(tags.contains(QStringLiteral("concept::pipeline-parallelism")));
    QVERIFY(tags.contains(QStringLiteral("topic::demo")));
}

void TestApkgExport::notesCarryTheCards() {
    const Deck deck = smallDeck();
    const Package p(deck);
    QVERIFY2(p.ok(), qPrintable(p.error()));
    const QList<Note> ns = notes(p);
    QCOMPARE(ns.size(), deck.cards.size());
    const qint64 mid = p.colJson(QStringLiteral("models")).begin().key().toLongLong();
    for (int i = 0; i < ns.size(); ++i) {
        const Note& n = ns[i];
        const Card& c = deck.cards[i];
        QCOMPARE(n.fields.size(), 6);
        QCOMPARE(n.mid, mid);
        QCOMPARE(n.fields[5], c.id);
        QCOMPARE(n.tags, ankiTags(c.tags));
        // the sort field is the question's plain text, and csum its checksum
        QCOMPARE(n.sfld, c.prompt);
        QCOMPARE(n.csum, checksum(c.prompt));
        QVERIFY(!n.guid.isEmpty());
    }
    const Note& single = ns[0];
    QCOMPARE(single.fields[0],
             QStringLiteral("Is 2 &lt; 3 &amp; &quot;true&quot; in &lt;b&gt;bold&lt;/b&gt;?"));
    QCOMPARE(
        single.fields[1],
        QStringLiteral("<ol type=\"A\"><li>Yes</li><li>No &amp; never</li><li>Maybe</li></ol>"));
    QVERIFY2(single.fields[2].contains(QStringLiteral("Answer: B")), qPrintable(single.fields[2]));
    QVERIFY(single.fields[2].contains(QStringLiteral("No &amp; never")));
    QVERIFY(single.fields[3].contains(QStringLiteral("<b>Correct.</b> Because a &lt; b.")));
    QVERIFY(single.fields[3].contains(QStringLiteral("<b>Incorrect.</b> Guessing.")));
    QVERIFY(single.fields[4].contains(QStringLiteral("href=\"https://arxiv.org/abs/1811.06965\"")));
    QVERIFY(single.fields[4].contains(QStringLiteral("GPipe</a>, Section 2")));

    const Note& multiple = ns[1];
    QVERIFY2(multiple.fields[2].contains(QStringLiteral("Answers: A, C")),
             qPrintable(multiple.fields[2]));
    QVERIFY(multiple.fields[2].contains(QStringLiteral("First")));
    QVERIFY(multiple.fields[2].contains(QStringLiteral("Third")));
    QVERIFY(!multiple.fields[2].contains(QStringLiteral("Second")));
    QCOMPARE(multiple.fields[3].count(QStringLiteral("<li>")), 4);
    QVERIFY(multiple.fields[4].isEmpty());  // no sources: the template's section stays empty
}

void TestApkgExport::cardsReferenceNotes() {
    const Deck deck = smallDeck();
    const Package p(deck);
    QVERIFY2(p.ok(), qPrintable(p.error()));
    QCOMPARE(p.scalar(QStringLiteral("select count(*) from cards")).toInt(), deck.cards.size());
    QCOMPARE(p.scalar(QStringLiteral("select count(*) from cards where nid not in "
                                     "(select id from notes)"))
                 .toInt(),
             0);
    QCOMPARE(p.scalar(QStringLiteral("select count(distinct nid) from cards")).toInt(),
             deck.cards.size());
    // every card new (type 0, queue 0), ord 0, in the exported deck, due in deck order
    QSqlQuery q =
        p.query(QStringLiteral("select c.did, c.ord, c.type, c.queue, c.due from cards c "
                               "join notes n on n.id = c.nid order by n.id"));
    const QJsonObject decks = p.colJson(QStringLiteral("decks"));
    int position = 0;
    while (q.next()) {
        ++position;
        const QString did = q.value(0).toString();
        QVERIFY(decks.contains(did));
        QCOMPARE(decks.value(did)[QStringLiteral("name")].toString(), deck.title);
        QCOMPARE(q.value(1).toInt(), 0);
        QCOMPARE(q.value(2).toInt(), 0);
        QCOMPARE(q.value(3).toInt(), 0);
        QCOMPARE(q.value(4).toInt(), position);
    }
    QCOMPARE(position, deck.cards.size());
}

void TestApkgExport::runCardsAreExportedWithARunAnswer() {
    const Package p(smallDeck());
    QVERIFY2(p.ok(), qPrintable(p.error()));
    const Note n = notes(p).at(2);
    QCOMPARE(n.fields[5], QStringLiteral("numeric-card"));
    QVERIFY(n.fields[1].isEmpty());  // no options
    QVERIFY2(n.fields[2].contains(QStringLiteral("Answered by a run in ParallelDeck")),
             qPrintable(n.fields[2]));
    QVERIFY2(n.fields[2].contains(QStringLiteral("Textbook value: 49.5")), qPrintable(n.fields[2]));
    QVERIFY(n.fields[2].contains(QStringLiteral("4 bytes x parameters")));
    QVERIFY(n.fields[3].contains(QStringLiteral("whole gradient")));
}

void TestApkgExport::bundledDeckExportsWhole() {
    const DeckLoadResult r =
        loadDeckFile(QStringLiteral(PD_DECK_DIR "/ml-systems-parallelism.json"));
    QVERIFY2(r.deck, qPrintable(r.errorText()));
    const Deck& deck = *r.deck;
    const Package p(deck);
    QVERIFY2(p.ok(), qPrintable(p.error()));
    QCOMPARE(p.scalar(QStringLiteral("pragma integrity_check")).toString(), QStringLiteral("ok"));
    const QList<Note> ns = notes(p);
    QCOMPARE(ns.size(), deck.cards.size());
    QCOMPARE(p.scalar(QStringLiteral("select count(*) from cards")).toInt(), deck.cards.size());
    QSet<QString> guids;
    for (int i = 0; i < ns.size(); ++i) {
        const Card& c = deck.cards[i];
        QCOMPARE(ns[i].fields.size(), 6);
        QCOMPARE(ns[i].fields[5], c.id);
        QCOMPARE(ns[i].fields[0], c.prompt.toHtmlEscaped());
        QCOMPARE(ns[i].tags, ankiTags(c.tags));
        QCOMPARE(ns[i].sfld, c.prompt);
        QCOMPARE(ns[i].csum, checksum(c.prompt));
        int correct = 0;
        for (int o = 0; o < c.options.size(); ++o) {
            QVERIFY(ns[i].fields[1].contains(
                QStringLiteral("<li>%1</li>").arg(c.options[o].text.toHtmlEscaped())));
            QVERIFY(ns[i].fields[3].contains(c.options[o].explanation.toHtmlEscaped()));
            if (c.options[o].correct) ++correct;
        }
        QCOMPARE(ns[i].fields[2].count(QStringLiteral("<li>")), correct);
        guids.insert(ns[i].guid);
    }
    QCOMPARE(guids.size(), ns.size());
}

void TestApkgExport::guidsAreStable() {
    const Deck deck = smallDeck();
    QStringList first, second;
    {
        const Package p(deck);
        QVERIFY2(p.ok(), qPrintable(p.error()));
        for (const Note& n : notes(p)) first.append(n.guid);
    }
    {
        const Package p(deck);
        QVERIFY2(p.ok(), qPrintable(p.error()));
        for (const Note& n : notes(p)) second.append(n.guid);
    }
    QCOMPARE(first, second);
    QCOMPARE(QSet<QString>(first.begin(), first.end()).size(), first.size());
}

void TestApkgExport::unwritablePathLeavesNoFile() {
    QTemporaryDir dir;
    const QString missing = dir.filePath(QStringLiteral("no-such-folder/deck.apkg"));
    QString error;
    QVERIFY(!exportApkg(smallDeck(), missing, &error));
    QVERIFY2(error.contains(missing), qPrintable(error));
    QVERIFY(!QFile::exists(missing));
    // A folder in the target's place: refused, and the folder is left as it was.
    const QString folder = dir.filePath(QStringLiteral("a-folder.apkg"));
    QVERIFY(QDir().mkdir(folder));
    error.clear();
    QVERIFY(!exportApkg(smallDeck(), folder, &error));
    QVERIFY2(error.contains(folder), qPrintable(error));
    QVERIFY(QFileInfo(folder).isDir());
    QCOMPARE(QDir(dir.path()).entryList(QDir::Files | QDir::Hidden).size(), 0);  // no temp left
}

QTEST_GUILESS_MAIN(TestApkgExport)
#include "test_apkg_export.moc"
