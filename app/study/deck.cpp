#include "deck.h"

#include <QFile>
#include <QRegularExpression>
#include <QSet>
#include <QUrl>
#include <cmath>
#include <cstring>
#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include <string>
#include <vector>

#include "deck_json.h"
#include "pd/error.h"
#include "pd/expectations.h"
#include "pd/run_config.h"
#include "pd/scenario.h"
#include "pd/strict_json.h"

namespace pd::study {

using nlohmann::json;

namespace {

const QStringList kConcepts = {
    QStringLiteral("why-model-parallelism"), QStringLiteral("data-parallelism"),
    QStringLiteral("gradient-sync"),         QStringLiteral("pipeline-parallelism"),
    QStringLiteral("tensor-parallelism"),    QStringLiteral("context-parallelism"),
    QStringLiteral("mixture-of-experts"),    QStringLiteral("sharded-data-parallelism"),
    QStringLiteral("memory-savers"),         QStringLiteral("strategy-and-hardware"),
    QStringLiteral("framework-apis"),
};

const std::set<std::string> kTopKeys = {"format", "version", "id", "title", "description", "cards"};
const std::vector<std::string> kTopRequired = {"cards", "format", "id", "title", "version"};
const std::set<std::string> kCardKeys = {
    "id",         "prompt", "type",     "options",       "answer",
    "difficulty", "tags",   "scenario", "scenario_note", "sources"};
const std::set<std::string> kAnswerKeys = {
    "metric",   "device",           "unit",       "tolerance", "relative_tolerance",
    "textbook", "textbook_formula", "explanation"};
constexpr double kMaxRelativeTolerance = 0.25;
const std::set<std::string> kSourceKeys = {"title", "url", "locator"};
constexpr int kMaxSources = 3;
constexpr int kMaxLocatorChars = 160;
// `options` for single and multiple, `answer` (and a scenario) for numeric cards.
const std::vector<std::string> kCardRequired = {"difficulty", "id", "prompt", "tags", "type"};
const std::vector<std::string> kOptionKeys = {"correct", "explanation", "text"};
const std::set<std::string> kTagNamespaces = {"concept", "framework", "platform", "style", "topic"};
// Shipped-deck policy for scenarios (see checkShippedLimits).
constexpr int kShippedMaxDevices = 8;
constexpr int kShippedMaxWidth = 256;
constexpr int kShippedMaxLayers = 8;
constexpr int kShippedMaxBatch = 256;
constexpr int kShippedMinSteps = 2;
constexpr int kShippedMaxSteps = 6;
// Versions the loader reads: 3 requires `sources` on every card, 2 `expect` on every scenario;
// 1 predates both.
constexpr int kDeckVersion = 3;
constexpr int kExpectVersion = 2;
constexpr int kOldestDeckVersion = 1;
constexpr int kMinExplanationChars = 40;
constexpr double kMinScenarioShare = 0.4;
constexpr int kMinCardsPerConcept = 5;

QString q(const std::string& s) {
    return QString::fromStdString(s);
}
QString quotedKey(const std::string& s) {
    return QStringLiteral("'") + q(s) + QStringLiteral("'");
}

bool isInt(const json& v) {
    return v.is_number_integer();  // booleans are not numbers in nlohmann::json
}
bool nonEmptyString(const json& v) {
    return v.is_string() && !q(v.get<std::string>()).trimmed().isEmpty();
}
QString collapsed(const QString& s) {
    return s.simplified().toCaseFolded();
}

const QRegularExpression& idRe() {
    static const QRegularExpression re(QStringLiteral("^[a-z0-9]+(?:-[a-z0-9]+)*$"));
    return re;
}
const QRegularExpression& tagRe() {
    static const QRegularExpression re(
        QStringLiteral("^([a-z0-9]+(?:-[a-z0-9]+)*)::([a-z0-9]+(?:-[a-z0-9]+)*)$"));
    return re;
}
const QRegularExpression& chooseRe() {
    static const QRegularExpression re(
        QStringLiteral("\\(Choose (two|three|four|five|[2-5])\\.\\)"));
    return re;
}
const QRegularExpression& chooseAnyRe() {
    static const QRegularExpression re(QStringLiteral("\\(\\s*choose\\b"),
                                       QRegularExpression::CaseInsensitiveOption);
    return re;
}

int countMatches(const QRegularExpression& re, const QString& text) {
    int n = 0;
    auto it = re.globalMatch(text);
    while (it.hasNext()) {
        it.next();
        ++n;
    }
    return n;
}

// The engine's one rule for a user's JSON (pd/strict_json.h): RFC 8259, no key twice in an
// object (nlohmann keeps the last one silently), as scenario files are read.
json parseStrict(const QByteArray& bytes, QString* error) {
    std::string why;
    json doc = pd::parse_strict_json(
        std::string_view(bytes.constData(), static_cast<std::size_t>(bytes.size())), &why);
    if (!why.empty()) {
        *error = q(why);
        return json();
    }
    return doc;
}

}  // namespace

// ---------------------------------------------------------------------------------- validator

void DeckValidator::err(const QString& where, const QString& message) {
    errors.append({file, where, message});
}
void DeckValidator::warn(const QString& where, const QString& message) {
    warnings.append({file, where, message});
}

std::optional<Card> DeckValidator::checkCard(const QString& where, const json& card) {
    const int before = static_cast<int>(errors.size());
    if (!card.is_object()) {
        err(where, QStringLiteral("card must be a JSON object"));
        return std::nullopt;
    }
    for (const auto& [key, value] : card.items()) {
        if (!kCardKeys.count(key)) err(where, QStringLiteral("unknown key ") + quotedKey(key));
    }
    for (const auto& key : kCardRequired) {
        if (!card.contains(key))
            err(where, QStringLiteral("missing required key ") + quotedKey(key));
    }

    Card out;
    if (card.contains("id")) {
        if (card["id"].is_string() && isKebabId(q(card["id"].get<std::string>()))) {
            out.id = q(card["id"].get<std::string>());
        } else {
            err(where + QStringLiteral(".id"),
                QStringLiteral("id must be lowercase kebab-case ([a-z0-9] words joined by '-')"));
        }
    }
    std::optional<QString> prompt;
    if (card.contains("prompt")) {
        if (nonEmptyString(card["prompt"])) {
            prompt = q(card["prompt"].get<std::string>());
            out.prompt = *prompt;
        } else {
            err(where + QStringLiteral(".prompt"),
                QStringLiteral("prompt must be a non-empty string"));
        }
    }
    std::optional<CardType> type;
    if (card.contains("type")) {
        const json& t = card["type"];
        if (t == "single") {
            type = CardType::Single;
        } else if (t == "multiple") {
            type = CardType::Multiple;
        } else if (t == "numeric") {
            type = CardType::Numeric;
        } else {
            err(where + QStringLiteral(".type"),
                QStringLiteral("type must be one of: multiple, numeric, single"));
        }
        if (type) out.type = *type;
    }
    if (card.contains("difficulty")) {
        const json& d = card["difficulty"];
        std::optional<Difficulty> diff;
        if (d.is_string()) diff = difficultyFromName(q(d.get<std::string>()));
        if (diff) {
            out.difficulty = *diff;
        } else {
            err(where + QStringLiteral(".difficulty"),
                QStringLiteral("difficulty must be one of: foundation, application, expert"));
        }
    }
    if (type == CardType::Numeric) {
        if (card.contains("options"))
            err(where + QStringLiteral(".options"),
                QStringLiteral("a numeric card has no options: its answer is measured by its "
                               "scenario's run ('answer')"));
        if (!card.contains("answer"))
            err(where, QStringLiteral("missing required key 'answer' (type numeric)"));
        else
            checkNumericAnswer(where + QStringLiteral(".answer"), card["answer"], out);
        if (!card.contains("scenario"))
            err(where, QStringLiteral("missing required key 'scenario': a numeric card's answer "
                                      "is measured on its run"));
    } else {
        if (card.contains("answer"))
            err(where + QStringLiteral(".answer"),
                QStringLiteral("'answer' belongs to numeric cards; this card's options say "
                               "which are correct"));
        if (!card.contains("options"))
            err(where, QStringLiteral("missing required key 'options'"));
        else
            checkOptions(where, card["options"], type, prompt, out);
    }
    if (card.contains("tags")) checkTags(where, card["tags"], out);

    if (card.contains("scenario")) {
        checkScenario(where + QStringLiteral(".scenario"), card["scenario"]);
        out.scenarioJson = q(card["scenario"].dump());
        const json note = card.contains("scenario_note") ? card["scenario_note"] : json();
        if (!nonEmptyString(note)) {
            err(where + QStringLiteral(".scenario_note"),
                QStringLiteral("scenario_note is required (non-empty string) when scenario is "
                               "present"));
        } else {
            out.scenarioNote = q(note.get<std::string>());
            if (out.scenarioNote.contains(QLatin1Char('\n')) ||
                out.scenarioNote.contains(QLatin1Char('\r'))) {
                err(where + QStringLiteral(".scenario_note"),
                    QStringLiteral("scenario_note must be a single line"));
            }
        }
    } else if (card.contains("scenario_note")) {
        err(where + QStringLiteral(".scenario_note"),
            QStringLiteral("scenario_note without a scenario"));
    }
    if (card.contains("sources"))
        checkSources(where + QStringLiteral(".sources"), card["sources"], out);
    else if (version >= kDeckVersion)
        err(where, QStringLiteral("missing required key 'sources' (1 to %1 references: an "
                                  "official docs page, a paper or a framework source file)")
                       .arg(kMaxSources));
    else
        ++cardsWithoutSources;
    if (static_cast<int>(errors.size()) != before) return std::nullopt;
    return out;
}

// A numeric card's answer: which metric of the run answers it, in which unit the learner
// types it, and how close counts as right.
void DeckValidator::checkNumericAnswer(const QString& where, const json& a, Card& out) {
    if (!a.is_object()) {
        err(where, QStringLiteral("answer must be an object with metric, unit, a tolerance and "
                                  "an explanation"));
        return;
    }
    for (const auto& [key, value] : a.items())
        if (!kAnswerKeys.count(key)) err(where, QStringLiteral("unknown key ") + quotedKey(key));
    for (const char* key : {"metric", "unit", "explanation"})
        if (!a.contains(key))
            err(where, QStringLiteral("missing required key '%1'").arg(QLatin1String(key)));
    NumericAnswer n;
    const pd::MetricInfo* info = nullptr;
    if (a.contains("metric")) {
        const std::string name = a["metric"].is_string() ? a["metric"].get<std::string>() : "";
        for (const auto& m : pd::expectation_metrics())
            if (m.name == name) info = &m;
        if (!info)
            err(where + QStringLiteral(".metric"),
                QStringLiteral("metric must be one of the expectation metric names (README, "
                               "Expectations), got %1")
                    .arg(q(a["metric"].dump())));
        else
            n.metric = q(name);
    }
    if (info && info->per_device) {
        if (!a.contains("device") || !isInt(a["device"]) || a["device"].get<long long>() < 0)
            err(where + QStringLiteral(".device"),
                QStringLiteral("metric '%1' is per device: device must be a device index")
                    .arg(n.metric));
        else
            n.device = static_cast<int>(a["device"].get<long long>());
    } else if (info && a.contains("device")) {
        err(where + QStringLiteral(".device"),
            QStringLiteral("metric '%1' is run-wide: it takes no device").arg(n.metric));
    }
    if (a.contains("unit")) {
        const auto unit = a["unit"].is_string()
                              ? answerUnitFromName(q(a["unit"].get<std::string>()))
                              : std::nullopt;
        if (!unit)
            err(where + QStringLiteral(".unit"),
                QStringLiteral("unit must be one of: percent, bytes, KiB, MiB, GiB, ms, s, "
                               "count"));
        else
            n.unit = *unit;
    }
    const bool absolute = a.contains("tolerance"), relative = a.contains("relative_tolerance");
    if (absolute == relative) {
        err(where, QStringLiteral("give exactly one of 'tolerance' (in the unit) and "
                                  "'relative_tolerance' (a fraction of the measured value)"));
    } else {
        const json& t = absolute ? a["tolerance"] : a["relative_tolerance"];
        const QString tw = where + (absolute ? QStringLiteral(".tolerance")
                                             : QStringLiteral(".relative_tolerance"));
        const double v = t.is_number() ? t.get<double>() : -1.0;
        if (!(v > 0) || (relative && v > kMaxRelativeTolerance))
            err(tw, relative ? QStringLiteral("relative_tolerance must be a number above 0 and "
                                              "at most %1")
                                   .arg(kMaxRelativeTolerance)
                             : QStringLiteral("tolerance must be a number above 0"));
        n.tolerance = v;
        n.toleranceIsRelative = relative;
    }
    if (a.contains("textbook")) {
        if (!a["textbook"].is_number() || !std::isfinite(a["textbook"].get<double>()))
            err(where + QStringLiteral(".textbook"), QStringLiteral("textbook must be a number"));
        else
            n.textbook = a["textbook"].get<double>();
        if (!a.contains("textbook_formula") || !nonEmptyString(a["textbook_formula"]))
            err(where + QStringLiteral(".textbook_formula"),
                QStringLiteral("textbook_formula is required with textbook: say where the "
                               "number comes from"));
        else
            n.textbookFormula = q(a["textbook_formula"].get<std::string>());
    } else if (a.contains("textbook_formula")) {
        err(where + QStringLiteral(".textbook_formula"),
            QStringLiteral("textbook_formula without textbook"));
    }
    if (a.contains("explanation")) {
        if (!a["explanation"].is_string()) {
            err(where + QStringLiteral(".explanation"),
                QStringLiteral("explanation must be a string"));
        } else {
            n.explanation = q(a["explanation"].get<std::string>());
            if (n.explanation.trimmed().size() < kMinExplanationChars)
                err(where + QStringLiteral(".explanation"),
                    QStringLiteral("explanation is too short (%1 chars, minimum %2): say why the "
                                   "run measures what it does")
                        .arg(n.explanation.trimmed().size())
                        .arg(kMinExplanationChars));
        }
    }
    out.numeric = n;
}

// Each source: where a card's facts can be checked. A web address the study page can open
// (https only) and a locator that says where on it.
void DeckValidator::checkSources(const QString& where, const json& sources, Card& out) {
    if (!sources.is_array() || sources.empty() || sources.size() > kMaxSources) {
        err(where,
            QStringLiteral("sources must be an array of 1 to %1 references").arg(kMaxSources));
        return;
    }
    for (std::size_t i = 0; i < sources.size(); ++i) {
        const json& s = sources[i];
        const QString sw = QStringLiteral("%1[%2]").arg(where).arg(i);
        if (!s.is_object()) {
            err(sw, QStringLiteral("a source must be an object with title, url and locator"));
            continue;
        }
        for (const auto& [key, value] : s.items())
            if (!kSourceKeys.count(key)) err(sw, QStringLiteral("unknown key ") + quotedKey(key));
        Source source;
        for (const char* key : {"title", "url", "locator"}) {
            if (!s.contains(key)) {
                err(sw, QStringLiteral("missing required key ") + quotedKey(key));
                continue;
            }
            if (!nonEmptyString(s[key])) {
                err(sw + QLatin1Char('.') + QLatin1String(key),
                    QStringLiteral("%1 must be a non-empty string").arg(QLatin1String(key)));
                continue;
            }
            const QString value = q(s[key].get<std::string>()).trimmed();
            if (!std::strcmp(key, "title")) source.title = value;
            if (!std::strcmp(key, "url")) source.url = value;
            if (!std::strcmp(key, "locator")) source.locator = value;
        }
        if (!source.url.isEmpty()) {
            const QUrl url(source.url, QUrl::StrictMode);
            if (!url.isValid() || url.scheme() != QStringLiteral("https") || url.host().isEmpty() ||
                source.url.contains(QLatin1Char(' ')))
                err(sw + QStringLiteral(".url"),
                    QStringLiteral("url must be a web address starting with https:// (got '%1')")
                        .arg(source.url));
        }
        if (source.locator.size() > kMaxLocatorChars)
            err(sw + QStringLiteral(".locator"),
                QStringLiteral("locator must be short (at most %1 characters): a section, table "
                               "or function, not a quotation")
                    .arg(kMaxLocatorChars));
        out.sources.append(source);
    }
}

void DeckValidator::checkOptions(const QString& where, const json& options,
                                 std::optional<CardType> type, std::optional<QString> prompt,
                                 Card& out) {
    const QString ow0 = where + QStringLiteral(".options");
    if (!options.is_array()) {
        err(ow0, QStringLiteral("options must be an array"));
        return;
    }
    if (options.size() < 3 || options.size() > 6) {
        err(ow0, QStringLiteral("options must have 3 to 6 entries (has %1)").arg(options.size()));
    }
    QSet<QString> texts;
    int correct = 0;
    for (std::size_t i = 0; i < options.size(); ++i) {
        const json& opt = options[i];
        const QString ow = QStringLiteral("%1[%2]").arg(ow0).arg(i);
        if (!opt.is_object()) {
            err(ow, QStringLiteral("option must be a JSON object"));
            continue;
        }
        for (const auto& [key, value] : opt.items()) {
            if (key != "text" && key != "correct" && key != "explanation")
                err(ow, QStringLiteral("unknown key ") + quotedKey(key));
        }
        for (const auto& key : kOptionKeys) {
            if (!opt.contains(key))
                err(ow, QStringLiteral("missing required key ") + quotedKey(key));
        }
        Option o;
        if (opt.contains("text")) {
            if (!nonEmptyString(opt["text"])) {
                err(ow + QStringLiteral(".text"),
                    QStringLiteral("text must be a non-empty string"));
            } else {
                o.text = q(opt["text"].get<std::string>());
                const QString norm = collapsed(o.text);
                if (texts.contains(norm)) {
                    err(ow + QStringLiteral(".text"),
                        QStringLiteral("duplicate option text '%1'").arg(o.text));
                }
                texts.insert(norm);
            }
        }
        if (opt.contains("correct")) {
            if (!opt["correct"].is_boolean()) {
                err(ow + QStringLiteral(".correct"),
                    QStringLiteral("correct must be true or false"));
            } else {
                o.correct = opt["correct"].get<bool>();
                if (o.correct) ++correct;
            }
        }
        if (opt.contains("explanation")) {
            const json& e = opt["explanation"];
            if (!e.is_string()) {
                err(ow + QStringLiteral(".explanation"),
                    QStringLiteral("explanation must be a string"));
            } else {
                o.explanation = q(e.get<std::string>());
                const qsizetype len = o.explanation.trimmed().size();
                if (len < kMinExplanationChars) {
                    err(ow + QStringLiteral(".explanation"),
                        QStringLiteral("explanation is too short (%1 chars, minimum %2): say why "
                                       "this option is right or wrong")
                            .arg(len)
                            .arg(kMinExplanationChars));
                }
            }
        }
        out.options.append(o);
    }

    const QString tw = where + QStringLiteral(".type");
    if (type == CardType::Single) {
        if (correct != 1) {
            err(tw, QStringLiteral("type 'single' needs exactly one correct option (has %1)")
                        .arg(correct));
        }
        if (prompt && chooseAnyRe().match(*prompt).hasMatch()) {
            err(where + QStringLiteral(".prompt"),
                QStringLiteral("a 'single' prompt must not contain a '(Choose N.)' instruction"));
        }
    } else if (type == CardType::Multiple) {
        if (correct < 2) {
            err(tw, QStringLiteral("type 'multiple' needs at least two correct options (has %1)")
                        .arg(correct));
        }
        if (correct >= static_cast<int>(options.size())) {
            err(tw, QStringLiteral("type 'multiple' needs at least one incorrect option"));
        }
        if (prompt) {
            const int found = countMatches(chooseRe(), *prompt);
            if (found != 1 || countMatches(chooseAnyRe(), *prompt) != 1) {
                err(where + QStringLiteral(".prompt"),
                    QStringLiteral("a 'multiple' prompt must contain exactly one '(Choose N.)', N "
                                   "written as two..five or 2..5"));
            } else {
                const QString word = chooseRe().match(*prompt).captured(1);
                static const QStringList words = {QStringLiteral("two"), QStringLiteral("three"),
                                                  QStringLiteral("four"), QStringLiteral("five")};
                const int stated =
                    words.contains(word) ? int(words.indexOf(word)) + 2 : word.toInt();
                if (stated != correct) {
                    err(where + QStringLiteral(".prompt"),
                        QStringLiteral("prompt says choose %1 but %2 options are correct")
                            .arg(stated)
                            .arg(correct));
                }
            }
        }
    }
}

void DeckValidator::checkTags(const QString& where, const json& tags, Card& out) {
    const QString tw = where + QStringLiteral(".tags");
    if (!tags.is_array() || tags.empty()) {
        err(tw, QStringLiteral("tags must be a non-empty array of strings"));
        return;
    }
    QSet<QString> seen;
    int concepts = 0;
    for (const json& t : tags) {
        if (!t.is_string()) {
            err(tw, QStringLiteral("tag %1 is not a string").arg(q(t.dump())));
            continue;
        }
        const QString tag = q(t.get<std::string>());
        if (seen.contains(tag)) err(tw, QStringLiteral("duplicate tag '%1'").arg(tag));
        seen.insert(tag);
        out.tags.append(tag);
        const auto m = tagRe().match(tag);
        if (!m.hasMatch()) {
            err(tw, QStringLiteral("tag '%1' must look like namespace::kebab-name").arg(tag));
            continue;
        }
        const QString ns = m.captured(1);
        if (!kTagNamespaces.count(ns.toStdString())) {
            err(tw, QStringLiteral("tag '%1' uses unknown namespace '%2' (allowed: concept, "
                                   "framework, platform, style, topic)")
                        .arg(tag, ns));
        }
        if (ns == QStringLiteral("concept")) {
            ++concepts;
            if (!kConcepts.contains(m.captured(2)))
                err(tw, QStringLiteral("unknown concept tag '%1'").arg(tag));
        }
    }
    if (concepts == 0) err(tw, QStringLiteral("at least one concept:: tag is required"));
}

// The engine's scenario parser and validate() are the only judges of a scenario's keys and
// values; this maps their messages onto the card and key. What is added here is deck policy.
void DeckValidator::checkScenario(const QString& where, const json& sc) {
    if (!sc.is_object()) {
        err(where, QStringLiteral("scenario must be a JSON object"));
        return;
    }
    // Explicit in every card, so a change of an engine default cannot change a card's run.
    for (const char* key : {"strategy", "devices"})
        if (!sc.contains(key))
            err(where + QLatin1Char('.') + QLatin1String(key),
                QStringLiteral("%1 is required").arg(QLatin1String(key)));
    if (!sc.contains("expect") && version >= kExpectVersion)
        err(where + QStringLiteral(".expect"),
            QStringLiteral("expect is required: the claims a run of this scenario must show "
                           "(resources/decks/README.md, \"Expectations\")"));
    if (!sc.contains("expect")) ++scenariosWithoutExpect;

    const std::string origin = (file + QStringLiteral(": ") + where).toStdString();
    pd::RunConfig config;
    pd::ConfigSources sources;
    pd::Expectations expect;
    try {
        pd::apply_scenario_json(sc.dump(), origin, config, sources, &expect);
        pd::validate(config, sources);
    } catch (const pd::BadInput& e) {
        engineError(where, e);
        return;
    }
    checkShippedLimits(where, config);
    for (std::size_t i = 0; i < expect.variants.size(); ++i) {
        // The first claim that names this variant, for the message's key.
        QString at = where + QStringLiteral(".expect");
        const json& claims = sc["expect"];
        for (std::size_t c = 0; c < claims.size(); ++c)
            if (claims[c].contains("compare_with") &&
                claims[c]["compare_with"].dump() == expect.variants[i]) {
                at = where + QStringLiteral(".expect[%1].compare_with").arg(c);
                break;
            }
        if (pd::expects_refusal(expect, i)) {
            // A claim says this comparison is refused: it must be, and for the setting named.
            const auto refusal = pd::variant_refusal(config, expect, i, origin);
            for (const pd::Claim& c : expect.claims) {
                if (c.kind != pd::Claim::Kind::refused || c.subject.variant != static_cast<int>(i))
                    continue;
                if (!refusal)
                    err(at, QStringLiteral("the claim expects this comparison run refused, but "
                                           "it is accepted"));
                else if (refusal->key != c.refused_key)
                    err(at, QStringLiteral("the claim expects a refusal naming %1; it is refused "
                                           "naming %2: %3")
                                .arg(QString::fromStdString(c.refused_key),
                                     QString::fromStdString(refusal->key),
                                     QString::fromStdString(refusal->reason)));
            }
            continue;
        }
        try {
            // Limits only: the scenario's own warnings would repeat for every variant.
            checkShippedLimits(at, pd::variant_config(config, expect, i, origin), false);
        } catch (const pd::BadInput& e) {
            engineError(at, e);
        }
    }
}

// A BadInput names its key as "scenario key 'k' in <origin>" (parser), or as the flag "--k"
// when validate() blames a key the scenario left at its default.
void DeckValidator::engineError(const QString& where, const pd::BadInput& e) {
    static const QRegularExpression scenarioKey(QStringLiteral("^scenario key '([^']+)' in "));
    const QString key = q(e.key());
    QString field;
    if (const auto m = scenarioKey.match(key); m.hasMatch())
        field = m.captured(1);
    else if (key.startsWith(QStringLiteral("--")))
        field = key.mid(2).replace(QLatin1Char('-'), QLatin1Char('_'));
    QString message = q(e.what());
    if (message.startsWith(key + QStringLiteral(": "))) message = message.mid(key.size() + 2);
    err(field.isEmpty() ? where : where + QLatin1Char('.') + field, message);
}

// Deck policy, not engine rules: shipped runs stay laptop-sized so "Show me" answers in well
// under a second on a CPU.
void DeckValidator::checkShippedLimits(const QString& where, const pd::RunConfig& c,
                                       bool withWarnings) {
    const auto at = [&](const char* key) { return where + QLatin1Char('.') + QLatin1String(key); };
    const std::pair<const char*, std::pair<int, int>> limits[] = {
        {"devices", {c.devices, kShippedMaxDevices}},
        {"width", {c.width, kShippedMaxWidth}},
        {"layers", {c.layers, kShippedMaxLayers}},
        {"batch", {c.batch, kShippedMaxBatch}}};
    for (const auto& [key, value] : limits)
        if (value.first > value.second)
            err(at(key), QStringLiteral("%1 %2 is above the laptop-sized limit %3")
                             .arg(QLatin1String(key))
                             .arg(value.first)
                             .arg(value.second));
    if (!withWarnings) return;
    if (c.steps < kShippedMinSteps || c.steps > kShippedMaxSteps)
        warn(at("steps"), QStringLiteral("steps %1 is outside the recommended %2..%3")
                              .arg(c.steps)
                              .arg(kShippedMinSteps)
                              .arg(kShippedMaxSteps));
    if (c.strategy != pd::StrategyKind::single && c.strategy != pd::StrategyKind::ps &&
        c.devices < 2)
        warn(at("devices"), QStringLiteral("strategy '%1' with 1 device shows nothing distributed")
                                .arg(q(std::string(pd::name_of(c.strategy)))));
}

std::optional<Deck> DeckValidator::checkDeck(const json& deck) {
    if (!deck.is_object()) {
        err(QStringLiteral("deck"), QStringLiteral("top level must be a JSON object"));
        return std::nullopt;
    }
    const QString dw = QStringLiteral("deck");
    for (const auto& [key, value] : deck.items()) {
        if (!kTopKeys.count(key)) err(dw, QStringLiteral("unknown key ") + quotedKey(key));
    }
    for (const auto& key : kTopRequired) {
        if (!deck.contains(key)) err(dw, QStringLiteral("missing required key ") + quotedKey(key));
    }
    Deck out;
    if (deck.contains("format") && deck["format"] != "paralleldeck-deck")
        err(dw + QStringLiteral(".format"), QStringLiteral("format must be 'paralleldeck-deck'"));
    if (deck.contains("version")) {
        const json& v = deck["version"];
        if (isInt(v) && v.get<long long>() >= kOldestDeckVersion &&
            v.get<long long>() <= kDeckVersion)
            version = v.get<int>();
        else
            err(dw + QStringLiteral(".version"),
                QStringLiteral("version must be the integer %1 (or %2, read without sources, "
                               "or %3, read without sources and expectations)")
                    .arg(kDeckVersion)
                    .arg(kExpectVersion)
                    .arg(kOldestDeckVersion));
    }

    if (deck.contains("id")) {
        if (deck["id"].is_string() && isKebabId(q(deck["id"].get<std::string>())))
            out.id = q(deck["id"].get<std::string>());
        else
            err(dw + QStringLiteral(".id"), QStringLiteral("id must be lowercase kebab-case"));
    }
    if (deck.contains("title")) {
        if (nonEmptyString(deck["title"]))
            out.title = q(deck["title"].get<std::string>());
        else
            err(dw + QStringLiteral(".title"), QStringLiteral("title must be a non-empty string"));
    }
    if (deck.contains("description")) {
        if (deck["description"].is_string())
            out.description = q(deck["description"].get<std::string>());
        else
            err(dw + QStringLiteral(".description"),
                QStringLiteral("description must be a string"));
    }
    if (!deck.contains("cards") || !deck["cards"].is_array() || deck["cards"].empty()) {
        err(dw + QStringLiteral(".cards"), QStringLiteral("cards must be a non-empty array"));
        return std::nullopt;
    }
    const json& cards = deck["cards"];
    std::map<std::string, std::size_t> seen;
    std::map<QString, int> conceptCounts;
    int withScenario = 0;
    for (std::size_t i = 0; i < cards.size(); ++i) {
        const json& card = cards[i];
        QString where = QStringLiteral("cards[%1]").arg(i);
        if (card.is_object() && card.contains("id") && card["id"].is_string()) {
            const std::string id = card["id"].get<std::string>();
            where += QStringLiteral(" (%1)").arg(q(id));
            if (const auto it = seen.find(id); it != seen.end()) {
                err(where + QStringLiteral(".id"),
                    QStringLiteral("duplicate id, first used by cards[%1]").arg(it->second));
            } else {
                seen.emplace(id, i);
            }
        }
        if (auto parsed = checkCard(where, card)) {
            if (parsed->hasScenario()) ++withScenario;
            for (const QString& c : parsed->concepts()) ++conceptCounts[c];
            out.cards.append(std::move(*parsed));
        }
    }
    const auto deckRule = [&](const QString& message) {
        if (lenient)
            warn(dw, message);
        else
            err(dw, message);
    };
    for (const QString& c : kConcepts) {
        const int count = conceptCounts[c];
        if (count > 0 && count < kMinCardsPerConcept) {
            deckRule(
                QStringLiteral("concept::%1 is on %2 card(s); each concept the deck uses needs "
                               "at least %3")
                    .arg(c)
                    .arg(count)
                    .arg(kMinCardsPerConcept));
        }
    }
    // An aim, not a rule: a card whose point no run can show has no scenario (no pretence).
    const double share = double(withScenario) / double(cards.size());
    if (share < kMinScenarioShare) {
        warn(dw, QStringLiteral("only %1 of %2 cards (%3%) have a scenario; a deck should aim "
                                "for %4% where the engine can show their point")
                     .arg(withScenario)
                     .arg(cards.size())
                     .arg(qRound(100 * share))
                     .arg(qRound(100 * kMinScenarioShare)));
    }
    if (version < kExpectVersion && scenariosWithoutExpect > 0)
        warn(dw + QStringLiteral(".version"),
             QStringLiteral("version %1 deck: %2 scenario(s) carry no expectations, so nothing "
                            "checks what their runs show; add expect to each and set version %3")
                 .arg(version)
                 .arg(scenariosWithoutExpect)
                 .arg(kExpectVersion));
    if (version < kDeckVersion && cardsWithoutSources > 0)
        warn(dw + QStringLiteral(".version"),
             QStringLiteral("version %1 deck: %2 card(s) cite no sources, so a learner cannot "
                            "check where their facts come from; add sources to each and set "
                            "version %3")
                 .arg(version)
                 .arg(cardsWithoutSources)
                 .arg(kDeckVersion));
    if (!errors.isEmpty()) return std::nullopt;
    return out;
}

json cardToJson(const Card& card) {
    json c = json::object();
    c["id"] = card.id.toStdString();
    c["prompt"] = card.prompt.toStdString();
    c["type"] = card.type == CardType::Single     ? "single"
                : card.type == CardType::Multiple ? "multiple"
                                                  : "numeric";
    if (card.numeric) {
        const NumericAnswer& n = *card.numeric;
        json a = {{"metric", n.metric.toStdString()},
                  {"unit", answerUnitName(n.unit).toStdString()},
                  {n.toleranceIsRelative ? "relative_tolerance" : "tolerance", n.tolerance},
                  {"explanation", n.explanation.toStdString()}};
        if (n.device >= 0) a["device"] = n.device;
        if (n.textbook) {
            a["textbook"] = *n.textbook;
            a["textbook_formula"] = n.textbookFormula.toStdString();
        }
        c["answer"] = a;
    } else {
        json opts = json::array();
        for (const Option& o : card.options) {
            opts.push_back({{"text", o.text.toStdString()},
                            {"correct", o.correct},
                            {"explanation", o.explanation.toStdString()}});
        }
        c["options"] = opts;
    }
    c["difficulty"] = difficultyName(card.difficulty).toStdString();
    json tags = json::array();
    for (const QString& t : card.tags) tags.push_back(t.toStdString());
    c["tags"] = tags;
    if (card.hasScenario()) {
        c["scenario"] = json::parse(card.scenarioJson.toStdString());
        c["scenario_note"] = card.scenarioNote.toStdString();
    }
    if (!card.sources.isEmpty()) {
        json sources = json::array();
        for (const Source& s : card.sources)
            sources.push_back({{"title", s.title.toStdString()},
                               {"url", s.url.toStdString()},
                               {"locator", s.locator.toStdString()}});
        c["sources"] = sources;
    }
    return c;
}

json parseJsonText(const QByteArray& bytes, QString* error) {
    return parseStrict(bytes, error);
}

// ---------------------------------------------------------------------------------- public API

int Card::correctCount() const {
    int n = 0;
    for (const Option& o : options) n += o.correct ? 1 : 0;
    return n;
}

QStringList Card::concepts() const {
    QStringList out;
    for (const QString& t : tags) {
        if (t.startsWith(QStringLiteral("concept::"))) out.append(t.mid(9));
    }
    return out;
}

bool Card::isCorrectAnswer(const QList<int>& chosen) const {
    QSet<int> set(chosen.begin(), chosen.end());
    for (int i = 0; i < options.size(); ++i) {
        if (options[i].correct != set.contains(i)) return false;
    }
    for (int i : set) {
        if (i < 0 || i >= options.size()) return false;
    }
    return true;
}

const Card* Deck::card(const QString& cardId) const {
    for (const Card& c : cards) {
        if (c.id == cardId) return &c;
    }
    return nullptr;
}

QString DeckIssue::toString() const {
    return QStringLiteral("%1: %2: %3").arg(file, where, message);
}

QString DeckLoadResult::errorText() const {
    QStringList lines;
    for (const DeckIssue& e : errors) lines.append(e.toString());
    return lines.join(QLatin1Char('\n'));
}

DeckLoadResult parseDeck(const QByteArray& bytes, const QString& origin, DeckLoadOptions options) {
    DeckLoadResult result;
    QString error;
    const json doc = parseStrict(bytes, &error);
    if (!error.isEmpty()) {
        result.errors.append(
            {origin, QStringLiteral("file"), QStringLiteral("cannot read deck: ") + error});
        return result;
    }
    DeckValidator validator;
    validator.file = origin;
    validator.lenient = options.lenient;
    result.deck = validator.checkDeck(doc);
    result.errors = validator.errors;
    result.warnings = validator.warnings;
    if (!result.errors.isEmpty()) result.deck.reset();
    return result;
}

DeckLoadResult loadDeckFile(const QString& path, DeckLoadOptions options) {
    QFile file(path);
    if (!file.open(QIODevice::ReadOnly)) {
        DeckLoadResult result;
        result.errors.append({path, QStringLiteral("file"),
                              QStringLiteral("cannot read deck: ") + file.errorString()});
        return result;
    }
    return parseDeck(file.readAll(), path, options);
}

QByteArray deckToJson(const Deck& deck) {
    json d = json::object();
    d["format"] = "paralleldeck-deck";
    // Version 2 needs expectations on every scenario, 3 also sources on every card; a deck
    // imported without them keeps the version it can be read as.
    bool everyScenarioExpects = true, everyCardCites = true;
    for (const Card& c : deck.cards) {
        if (c.hasScenario() && !json::parse(c.scenarioJson.toStdString()).contains("expect"))
            everyScenarioExpects = false;
        if (c.sources.isEmpty()) everyCardCites = false;
    }
    d["version"] = !everyScenarioExpects ? kOldestDeckVersion
                   : everyCardCites      ? kDeckVersion
                                         : kExpectVersion;
    d["id"] = deck.id.toStdString();
    d["title"] = deck.title.toStdString();
    if (!deck.description.isEmpty()) d["description"] = deck.description.toStdString();
    json cards = json::array();
    for (const Card& c : deck.cards) cards.push_back(cardToJson(c));
    d["cards"] = cards;
    return QByteArray::fromStdString(d.dump(2)) + '\n';
}

QString difficultyName(Difficulty difficulty) {
    switch (difficulty) {
        case Difficulty::Foundation:
            return QStringLiteral("foundation");
        case Difficulty::Application:
            return QStringLiteral("application");
        case Difficulty::Expert:
            return QStringLiteral("expert");
    }
    return {};
}

std::optional<Difficulty> difficultyFromName(const QString& name) {
    if (name == QStringLiteral("foundation")) return Difficulty::Foundation;
    if (name == QStringLiteral("application")) return Difficulty::Application;
    if (name == QStringLiteral("expert")) return Difficulty::Expert;
    return std::nullopt;
}

QString difficultyDisplayName(Difficulty difficulty) {
    QString n = difficultyName(difficulty);
    n[0] = n[0].toUpper();
    return n;
}

const QStringList& conceptNames() {
    return kConcepts;
}

QString tagDisplayName(const QString& tag) {
    QString name = tag;
    QString ns;
    if (const qsizetype sep = tag.indexOf(QStringLiteral("::")); sep >= 0) {
        ns = tag.left(sep);
        name = tag.mid(sep + 2);
    }
    static const QHash<QString, QString> special = {
        {QStringLiteral("why-model-parallelism"), QStringLiteral("Why model parallelism")},
        {QStringLiteral("gradient-sync"), QStringLiteral("Gradient synchronisation")},
        {QStringLiteral("strategy-and-hardware"), QStringLiteral("Strategy and hardware")},
        {QStringLiteral("framework-apis"), QStringLiteral("Framework APIs")},
        {QStringLiteral("sharded-data-parallelism"), QStringLiteral("Sharded data parallelism")},
        {QStringLiteral("mixture-of-experts"),
         QStringLiteral("Mixture of experts / expert parallelism")},
        {QStringLiteral("pytorch"), QStringLiteral("PyTorch")},
        {QStringLiteral("tensorflow"), QStringLiteral("TensorFlow")},
        {QStringLiteral("vertex-ai"), QStringLiteral("Vertex AI")},
    };
    QString text = special.value(name);
    if (text.isEmpty()) {
        text = name;
        text.replace(QLatin1Char('-'), QLatin1Char(' '));
        if (!text.isEmpty()) text[0] = text[0].toUpper();
    }
    return text;
}

bool isKebabId(const QString& id) {
    return idRe().match(id).hasMatch();
}

}  // namespace pd::study
