#include "card_import.h"

#include <QFile>
#include <QFileInfo>
#include <QRegularExpression>
#include <QStringList>
#include <algorithm>

#include "deck_json.h"

namespace pd::study {

using nlohmann::json;

namespace {

QStringList defaultColumns() {
    QStringList cols = {QStringLiteral("id"), QStringLiteral("prompt"), QStringLiteral("type"),
                        QStringLiteral("difficulty"), QStringLiteral("correct")};
    for (int i = 1; i <= 6; ++i) {
        cols << QStringLiteral("option%1").arg(i) << QStringLiteral("explanation%1").arg(i);
    }
    cols << QStringLiteral("tags") << QStringLiteral("scenario") << QStringLiteral("scenario_note");
    return cols;
}

bool knownColumn(const QString& name) {
    return defaultColumns().contains(name);
}

// How a separator is written inside a message: a tab is invisible, so it is named.
QString shownSeparator(QChar sep) {
    return sep == QLatin1Char('\t') ? QStringLiteral("<tab>") : QString(sep);
}

// The #separator value that names `sep` ("tab", "comma", ...).
QString separatorName(QChar sep) {
    switch (sep.unicode()) {
        case '\t':
            return QStringLiteral("tab");
        case ',':
            return QStringLiteral("comma");
        case ';':
            return QStringLiteral("semicolon");
        case ' ':
            return QStringLiteral("space");
        case '|':
            return QStringLiteral("pipe");
        case ':':
            return QStringLiteral("colon");
        default:
            return QString(sep);
    }
}

// The #columns line a file with its own column names needs, with `names` as the example.
QString columnsLineHint(const QStringList& names, QChar sep) {
    return QStringLiteral(
               "name the columns in a line '#columns:%1' before the cards (after "
               "'#separator:%2'); column names: %3")
        .arg(names.join(shownSeparator(sep)), separatorName(sep),
             defaultColumns().join(QStringLiteral(", ")));
}

// A first record whose fields are all short labels ("Front", "Back", "prompt") rather than
// card text: most likely the file's own header row.
bool looksLikeHeaderRow(const QStringList& fields) {
    return std::all_of(fields.begin(), fields.end(), [](const QString& f) {
        const QString t = f.trimmed();
        return !t.isEmpty() && t.size() <= 24 && !t.contains(QLatin1Char('?')) &&
               (knownColumn(t.toLower()) || !t.contains(QLatin1Char(' ')));
    });
}

std::optional<QChar> separatorFromName(const QString& value) {
    const QString v = value.trimmed();
    const QString lower = v.toLower();
    if (lower == QStringLiteral("tab")) return QLatin1Char('\t');
    if (lower == QStringLiteral("comma")) return QLatin1Char(',');
    if (lower == QStringLiteral("semicolon")) return QLatin1Char(';');
    if (lower == QStringLiteral("space")) return QLatin1Char(' ');
    if (lower == QStringLiteral("pipe")) return QLatin1Char('|');
    if (lower == QStringLiteral("colon")) return QLatin1Char(':');
    if (value.size() == 1) return value[0];
    return std::nullopt;
}

struct Record {
    int line = 0;
    QStringList fields;
};

// Splits RFC 4180 records. Returns false with *error and *errorLine on an unterminated quote or
// a stray character after a closing quote.
bool splitRecords(const QString& text, int firstLine, QChar sep, QList<Record>* out, QString* error,
                  int* errorLine) {
    int line = firstLine;
    qsizetype i = 0;
    const qsizetype n = text.size();
    while (i < n) {
        Record rec;
        rec.line = line;
        QString field;
        bool inQuotes = false;
        bool quoted = false;
        bool endOfRecord = false;
        while (i < n && !endOfRecord) {
            const QChar c = text[i];
            if (inQuotes) {
                if (c == QLatin1Char('"')) {
                    if (i + 1 < n && text[i + 1] == QLatin1Char('"')) {
                        field += QLatin1Char('"');
                        i += 2;
                        continue;
                    }
                    inQuotes = false;
                    ++i;
                    if (i < n && text[i] != sep && text[i] != QLatin1Char('\n') &&
                        text[i] != QLatin1Char('\r')) {
                        *error = QStringLiteral("unexpected character after a closing quote");
                        *errorLine = line;
                        return false;
                    }
                    continue;
                }
                if (c == QLatin1Char('\n')) ++line;
                field += c;
                ++i;
                continue;
            }
            if (c == QLatin1Char('"') && field.isEmpty() && !quoted) {
                inQuotes = true;
                quoted = true;
                ++i;
            } else if (c == sep) {
                rec.fields.append(field);
                field.clear();
                quoted = false;
                ++i;
            } else if (c == QLatin1Char('\r') || c == QLatin1Char('\n')) {
                if (c == QLatin1Char('\r') && i + 1 < n && text[i + 1] == QLatin1Char('\n')) ++i;
                ++i;
                ++line;
                endOfRecord = true;
            } else {
                field += c;
                ++i;
            }
        }
        if (inQuotes) {
            *error = QStringLiteral("a quoted field is never closed");
            *errorLine = rec.line;
            return false;
        }
        rec.fields.append(field);
        const bool blank = rec.fields.size() == 1 && rec.fields[0].trimmed().isEmpty() && !quoted;
        if (!blank) out->append(rec);
    }
    return true;
}

// The length of the UTF-8 sequence at bytes[i] when it is one (Unicode's table 3-7: no
// overlong forms, no surrogates, nothing past U+10FFFF), else 0.
int utf8SequenceLength(const QByteArray& bytes, qsizetype i) {
    const auto at = [&](qsizetype k) {
        return k < bytes.size() ? static_cast<unsigned char>(bytes[k]) : 0u;
    };
    const auto in = [](unsigned b, unsigned lo, unsigned hi) { return b >= lo && b <= hi; };
    const unsigned b0 = at(i), b1 = at(i + 1), b2 = at(i + 2), b3 = at(i + 3);
    if (b0 < 0x80) return 1;
    if (in(b0, 0xC2, 0xDF)) return in(b1, 0x80, 0xBF) ? 2 : 0;
    if (in(b0, 0xE0, 0xEF)) {
        const unsigned lo = b0 == 0xE0 ? 0xA0 : 0x80, hi = b0 == 0xED ? 0x9F : 0xBF;
        return in(b1, lo, hi) && in(b2, 0x80, 0xBF) ? 3 : 0;
    }
    if (in(b0, 0xF0, 0xF4)) {
        const unsigned lo = b0 == 0xF0 ? 0x90 : 0x80, hi = b0 == 0xF4 ? 0x8F : 0xBF;
        return in(b1, lo, hi) && in(b2, 0x80, 0xBF) && in(b3, 0x80, 0xBF) ? 4 : 0;
    }
    return 0;
}

// Text the import can hold: UTF-8 without NUL bytes. Decoded as it was, a NUL stayed in a
// prompt as U+0000 and bytes that are not UTF-8 became U+FFFD, and the file imported. One
// error per line (its first problem: the line, the character counted from 1, and the byte),
// for the first kMaxLines such lines, then how many more there are.
QList<DeckIssue> textProblems(const QByteArray& bytes, const QString& origin) {
    constexpr int kMaxLines = 10;
    QList<DeckIssue> problems;
    const auto where = [](int line) { return QStringLiteral("line %1").arg(line); };
    if (bytes.startsWith("\xff\xfe") || bytes.startsWith("\xfe\xff")) {
        problems.append({origin, where(1),
                         QStringLiteral("the file is UTF-16 (it starts with a UTF-16 byte-order "
                                        "mark): save it as UTF-8")});
        return problems;
    }
    int line = 1, character = 1, more = 0, firstMore = 0;
    qsizetype i = bytes.startsWith("\xef\xbb\xbf") ? 3 : 0;  // the UTF-8 byte-order mark
    while (i < bytes.size()) {
        const auto byte = static_cast<unsigned char>(bytes[i]);
        const int length = byte == 0 ? 0 : utf8SequenceLength(bytes, i);
        if (length > 0) {
            if (byte == '\n') {
                ++line;
                character = 1;
            } else {
                ++character;
            }
            i += length;
            continue;
        }
        if (problems.size() < kMaxLines) {
            const QString message =
                byte == 0 ? QStringLiteral(
                                "character %1 is a NUL byte (0x00): the file is binary, or "
                                "text that is not UTF-8")
                                .arg(character)
                          : QStringLiteral(
                                "character %1 is not UTF-8 (byte 0x%2): save the file as "
                                "UTF-8 text")
                                .arg(character)
                                .arg(QString::number(byte, 16).toUpper());
            problems.append({origin, where(line), message});
        } else if (more++ == 0) {
            firstMore = line;
        }
        // The line's first problem is enough: on to the next line.
        const qsizetype next = bytes.indexOf('\n', i);
        if (next < 0) break;
        i = next + 1;
        ++line;
        character = 1;
    }
    if (more > 0) {
        problems.append({origin, where(firstMore),
                         QStringLiteral("%1 more lines from here on have a NUL byte or bytes "
                                        "that are not UTF-8")
                             .arg(more)});
    }
    return problems;
}

QString csvField(const QString& value, QChar sep) {
    if (value.contains(sep) || value.contains(QLatin1Char('"')) ||
        value.contains(QLatin1Char('\n')) || value.contains(QLatin1Char('\r')) ||
        value.startsWith(QLatin1Char('#'))) {
        QString escaped = value;
        escaped.replace(QStringLiteral("\""), QStringLiteral("\"\""));
        return QLatin1Char('"') + escaped + QLatin1Char('"');
    }
    return value;
}

}  // namespace

QString ImportResult::errorText() const {
    QStringList lines;
    for (const DeckIssue& e : errors) lines.append(e.toString());
    return lines.join(QLatin1Char('\n'));
}

QString deckIdFromFileName(const QString& fileName) {
    QString base = QFileInfo(fileName).completeBaseName().toLower();
    base.replace(QRegularExpression(QStringLiteral("[^a-z0-9]+")), QStringLiteral("-"));
    base.remove(QRegularExpression(QStringLiteral("^-+|-+$")));
    return base.isEmpty() ? QStringLiteral("imported") : base;
}

ImportResult importDelimited(const QByteArray& bytes, const QString& origin) {
    ImportResult result;
    const auto fail = [&](int line, const QString& message) {
        result.errors.append({origin, QStringLiteral("line %1").arg(line), message});
    };
    result.errors = textProblems(bytes, origin);
    if (!result.errors.isEmpty()) return result;
    QString text = QString::fromUtf8(bytes);
    if (text.startsWith(QChar(0xFEFF))) text.remove(0, 1);

    // Header lines (Anki's "#key:value"), before the first record.
    std::optional<QChar> sep;
    QStringList columns;
    int tagsColumn = 0;
    int line = 1;
    qsizetype pos = 0;
    while (pos < text.size() && text[pos] == QLatin1Char('#')) {
        qsizetype end = text.indexOf(QLatin1Char('\n'), pos);
        if (end < 0) end = text.size();
        QString header = text.mid(pos + 1, end - pos - 1);
        if (header.endsWith(QLatin1Char('\r'))) header.chop(1);
        const qsizetype colon = header.indexOf(QLatin1Char(':'));
        const QString key = colon < 0 ? header.trimmed() : header.left(colon).trimmed().toLower();
        const QString value = colon < 0 ? QString() : header.mid(colon + 1);
        if (key == QStringLiteral("separator")) {
            sep = separatorFromName(value);
            if (!sep) {
                fail(line, QStringLiteral("unknown #separator '%1' (use Tab, Comma, Semicolon, "
                                          "Space, Pipe, Colon or one character)")
                               .arg(value));
            }
        } else if (key == QStringLiteral("columns")) {
            if (!sep) {
                fail(line, QStringLiteral("#columns must come after #separator"));
            } else {
                columns = value.split(*sep);
                for (QString& c : columns) c = c.trimmed().toLower();
            }
        } else if (key == QStringLiteral("tags column")) {
            bool ok = false;
            tagsColumn = value.trimmed().toInt(&ok);
            if (!ok || tagsColumn < 1) {
                fail(line, QStringLiteral("#tags column must be a column number from 1"));
                tagsColumn = 0;
            }
        } else if (key != QStringLiteral("html") && key != QStringLiteral("notetype") &&
                   key != QStringLiteral("deck") && key != QStringLiteral("guid column") &&
                   key != QStringLiteral("notetype column") &&
                   key != QStringLiteral("deck column") && key != QStringLiteral("if matches")) {
            fail(line, QStringLiteral("unknown header '#%1'").arg(key));
        }
        pos = end + 1;
        ++line;
    }
    const int columnsLine = line - 1;
    const QString body = text.mid(pos);
    if (!sep)
        sep = body.section(QLatin1Char('\n'), 0, 0).contains(QLatin1Char('\t')) ? QLatin1Char('\t')
                                                                                : QLatin1Char(',');
    const bool columnsNamed = !columns.isEmpty();
    if (!columnsNamed) columns = defaultColumns();
    if (tagsColumn > 0) {
        if (tagsColumn > columns.size()) {
            fail(columnsLine, QStringLiteral("#tags column %1 is past the last column (%2)")
                                  .arg(tagsColumn)
                                  .arg(columns.size()));
        } else {
            columns[tagsColumn - 1] = QStringLiteral("tags");
        }
    }
    for (const QString& c : columns) {
        if (!knownColumn(c))
            fail(columnsLine, QStringLiteral("unknown column '%1' (the columns are: %2)")
                                  .arg(c, defaultColumns().join(QStringLiteral(", "))));
        if (columns.count(c) > 1) {
            fail(columnsLine, QStringLiteral("column '%1' is named twice").arg(c));
            break;
        }
    }
    for (const QString& required : {QStringLiteral("prompt"), QStringLiteral("correct"),
                                    QStringLiteral("option1"), QStringLiteral("explanation1")}) {
        if (!columns.contains(required))
            fail(columnsLine, QStringLiteral("the required column '%1' is missing").arg(required));
    }
    if (!result.errors.isEmpty()) return result;

    QList<Record> records;
    QString splitError;
    int errorLine = 0;
    if (!splitRecords(body, line, *sep, &records, &splitError, &errorLine)) {
        fail(errorLine, splitError);
        return result;
    }
    if (records.isEmpty()) {
        fail(line, QStringLiteral("the file has no cards"));
        return result;
    }

    // A header row of the file's own is read as a card otherwise; say how to name columns.
    if (!columnsNamed && looksLikeHeaderRow(records.first().fields)) {
        QStringList names;
        for (const QString& f : records.first().fields) names.append(f.trimmed().toLower());
        fail(records.first().line,
             QStringLiteral("looks like a header row (%1); ParallelDeck reads column names "
                            "only from a '#columns:' line: ")
                     .arg(records.first().fields.join(QStringLiteral(", "))) +
                 columnsLineHint(names, *sep));
        return result;
    }

    DeckValidator validator;
    validator.file = origin;
    Deck deck;
    deck.id = deckIdFromFileName(origin);
    deck.title = QFileInfo(origin).completeBaseName();
    QHash<QString, int> seenIds;
    bool hinted = false;
    for (const Record& rec : records) {
        const QString where = QStringLiteral("line %1").arg(rec.line);
        if (rec.fields.size() != columns.size()) {
            QString message = QStringLiteral("has %1 fields but the columns are %2 (%3)")
                                  .arg(rec.fields.size())
                                  .arg(columns.size())
                                  .arg(columns.join(QStringLiteral(", ")));
            // Once per file: without #columns the columns are the exported ones.
            if (!columnsNamed && !hinted) {
                message += QStringLiteral("; if the file has other columns, ") +
                           columnsLineHint({QStringLiteral("prompt"), QStringLiteral("correct"),
                                            QStringLiteral("option1"),
                                            QStringLiteral("explanation1"), QStringLiteral("…")},
                                           *sep);
                hinted = true;
            }
            fail(rec.line, message);
            continue;
        }
        QHash<QString, QString> f;
        for (int i = 0; i < columns.size(); ++i) f.insert(columns[i], rec.fields[i].trimmed());

        json card = json::object();
        const QString id = f.value(QStringLiteral("id"));
        card["id"] =
            (id.isEmpty() ? QStringLiteral("card-line-%1").arg(rec.line) : id).toStdString();
        card["prompt"] = f.value(QStringLiteral("prompt")).toStdString();
        card["difficulty"] = (f.value(QStringLiteral("difficulty")).isEmpty()
                                  ? QStringLiteral("foundation")
                                  : f.value(QStringLiteral("difficulty")))
                                 .toStdString();
        // "correct": option numbers separated by commas or spaces.
        QSet<int> correct;
        bool correctOk = !f.value(QStringLiteral("correct")).isEmpty();
        for (const QString& part :
             f.value(QStringLiteral("correct"))
                 .split(QRegularExpression(QStringLiteral("[,\\s]+")), Qt::SkipEmptyParts)) {
            bool ok = false;
            const int n = part.toInt(&ok);
            if (!ok || n < 1 || n > 6) correctOk = false;
            correct.insert(n);
        }
        if (!correctOk) {
            fail(rec.line, QStringLiteral("column 'correct' must list option numbers 1-6, such as "
                                          "\"2\" or \"1,3\" (has \"%1\")")
                               .arg(f.value(QStringLiteral("correct"))));
            continue;
        }
        json options = json::array();
        bool optionsOk = true;
        for (int i = 1; i <= 6; ++i) {
            const QString t = f.value(QStringLiteral("option%1").arg(i));
            const QString e = f.value(QStringLiteral("explanation%1").arg(i));
            if (t.isEmpty() && e.isEmpty()) continue;
            if (t.isEmpty()) {
                fail(rec.line, QStringLiteral("column 'explanation%1' has text but 'option%1' is "
                                              "empty")
                                   .arg(i));
                optionsOk = false;
                continue;
            }
            options.push_back({{"text", t.toStdString()},
                               {"correct", correct.contains(i)},
                               {"explanation", e.toStdString()}});
        }
        for (int n : correct) {
            if (f.value(QStringLiteral("option%1").arg(n)).isEmpty()) {
                fail(rec.line,
                     QStringLiteral("column 'correct' names option %1, which is empty").arg(n));
                optionsOk = false;
            }
        }
        if (!optionsOk) continue;
        card["options"] = options;
        const QString type = f.value(QStringLiteral("type"));
        card["type"] = (type.isEmpty() ? (correct.size() > 1 ? QStringLiteral("multiple")
                                                             : QStringLiteral("single"))
                                       : type)
                           .toStdString();
        json tags = json::array();
        for (const QString& t :
             f.value(QStringLiteral("tags")).split(QLatin1Char(' '), Qt::SkipEmptyParts))
            tags.push_back(t.toStdString());
        card["tags"] = tags;
        const QString scenario = f.value(QStringLiteral("scenario"));
        if (!scenario.isEmpty()) {
            QString jsonError;
            const json sc = parseJsonText(scenario.toUtf8(), &jsonError);
            if (!jsonError.isEmpty()) {
                fail(rec.line, QStringLiteral("column 'scenario' is not valid JSON: ") + jsonError);
                continue;
            }
            card["scenario"] = sc;
        }
        if (!f.value(QStringLiteral("scenario_note")).isEmpty())
            card["scenario_note"] = f.value(QStringLiteral("scenario_note")).toStdString();

        if (auto parsed = validator.checkCard(where, card)) {
            if (const auto it = seenIds.constFind(parsed->id); it != seenIds.constEnd()) {
                fail(rec.line, QStringLiteral("duplicate id '%1', first used on line %2")
                                   .arg(parsed->id)
                                   .arg(*it));
            } else {
                seenIds.insert(parsed->id, rec.line);
                deck.cards.append(*parsed);
            }
        }
    }
    // The validator's messages carry "line N" already; its field paths follow it.
    for (const DeckIssue& e : validator.errors) result.errors.append(e);
    std::sort(
        result.errors.begin(), result.errors.end(), [](const DeckIssue& a, const DeckIssue& b) {
            const auto lineOf = [](const QString& w) {
                return w.section(QLatin1Char(' '), 1, 1).section(QLatin1Char('.'), 0, 0).toInt();
            };
            return lineOf(a.where) < lineOf(b.where);
        });
    if (result.errors.isEmpty()) result.deck = deck;
    return result;
}

ImportResult importFile(const QString& path) {
    QFile file(path);
    ImportResult result;
    if (!file.open(QIODevice::ReadOnly)) {
        result.errors.append(
            {path, QStringLiteral("file"), QStringLiteral("cannot read: ") + file.errorString()});
        return result;
    }
    const QByteArray bytes = file.readAll();
    if (path.endsWith(QStringLiteral(".json"), Qt::CaseInsensitive)) {
        DeckLoadResult loaded = parseDeck(bytes, path, {true});
        result.deck = loaded.deck;
        result.errors = loaded.errors;
        return result;
    }
    return importDelimited(bytes, path);
}

QByteArray exportDelimited(const Deck& deck, QChar sep, int* numericLeftOut) {
    if (numericLeftOut) *numericLeftOut = 0;
    const QStringList columns = defaultColumns();
    QString out;
    out += QStringLiteral("#separator:%1\n")
               .arg(sep == QLatin1Char('\t') ? QStringLiteral("tab") : QStringLiteral("comma"));
    out += QStringLiteral("#html:false\n");
    out += QStringLiteral("#columns:") + columns.join(sep) + QLatin1Char('\n');
    out += QStringLiteral("#tags column:%1\n").arg(columns.indexOf(QStringLiteral("tags")) + 1);
    for (const Card& c : deck.cards) {
        // The columns hold options; a numeric card's answer is a metric of its run.
        if (c.isNumeric()) {
            if (numericLeftOut) ++*numericLeftOut;
            continue;
        }
        QStringList fields;
        QStringList correct;
        for (int i = 0; i < c.options.size(); ++i) {
            if (c.options[i].correct) correct.append(QString::number(i + 1));
        }
        fields << c.id << c.prompt
               << (c.type == CardType::Single ? QStringLiteral("single")
                                              : QStringLiteral("multiple"))
               << difficultyName(c.difficulty) << correct.join(QLatin1Char(','));
        for (int i = 0; i < 6; ++i) {
            fields << (i < c.options.size() ? c.options[i].text : QString())
                   << (i < c.options.size() ? c.options[i].explanation : QString());
        }
        fields << c.tags.join(QLatin1Char(' ')) << c.scenarioJson << c.scenarioNote;
        for (QString& f : fields) f = csvField(f, sep);
        out += fields.join(sep) + QLatin1Char('\n');
    }
    return out.toUtf8();
}

}  // namespace pd::study
