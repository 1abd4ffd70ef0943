#include "deck.h"

#include <QFile>
#include <QRegularExpression>
#include <QSet>
#include <cmath>
#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include <string>
#include <vector>

#include "deck_json.h"

namespace pd::study {

using nlohmann::json;

namespace {

const QStringList kConcepts = {
    QStringLiteral("why-model-parallelism"), QStringLiteral("data-parallelism"),
    QStringLiteral("gradient-sync"),         QStringLiteral("pipeline-parallelism"),
    QStringLiteral("tensor-parallelism"),    QStringLiteral("sharded-data-parallelism"),
    QStringLiteral("memory-savers"),         QStringLiteral("strategy-and-hardware"),
    QStringLiteral("framework-apis"),
};

const std::set<std::string> kTopKeys = {"format", "version", "id", "title", "description", "cards"};
const std::vector<std::string> kTopRequired = {"cards", "format", "id", "title", "version"};
const std::set<std::string> kCardKeys = {"id",         "prompt", "type",     "options",
                                         "difficulty", "tags",   "scenario", "scenario_note"};
const std::vector<std::string> kCardRequired = {"difficulty", "id",   "options",
                                                "prompt",     "tags", "type"};
const std::vector<std::string> kOptionKeys = {"correct", "explanation", "text"};
const std::set<std::string> kTagNamespaces = {"concept", "framework", "platform", "style", "topic"};
const std::set<std::string> kStrategies = {"single", "dp",    "ps",    "pipeline", "tp",
                                           "zero1",  "zero2", "zero3", "hybrid"};
const std::set<std::string> kScenarioKeys = {
    "strategy",  "devices",  "layers",       "width",      "batch",    "steps", "seed",
    "optimizer", "lr",       "bucket_bytes", "no_overlap", "capacity", "clock", "link_latency_us",
    "link_gbps", "schedule", "microbatches", "chunks",     "dp",       "pp",    "tp"};
constexpr int kMinExplanationChars = 40;
constexpr double kMinScenarioShare = 0.75;
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
bool isNumber(const json& v) {
    return v.is_number() && std::isfinite(v.get<double>());
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
const QRegularExpression& capacityRe() {
    static const QRegularExpression re(QStringLiteral("^[1-9][0-9]*(?:B|KiB|MiB|GiB)$"));
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

// Parses strict RFC 8259 JSON, rejecting duplicate keys (nlohmann keeps the last one silently).
json parseStrict(const QByteArray& bytes, QString* error) {
    std::vector<std::set<std::string>> keysPerObject;
    std::string duplicate;
    const json::parser_callback_t cb = [&](int, json::parse_event_t event, json& parsed) {
        if (event == json::parse_event_t::object_start) {
            keysPerObject.emplace_back();
        } else if (event == json::parse_event_t::object_end) {
            if (!keysPerObject.empty()) keysPerObject.pop_back();
        } else if (event == json::parse_event_t::key && !keysPerObject.empty()) {
            const auto key = parsed.get<std::string>();
            if (!keysPerObject.back().insert(key).second && duplicate.empty()) duplicate = key;
        }
        return true;
    };
    try {
        json doc = json::parse(bytes.constData(), bytes.constData() + bytes.size(), cb);
        if (!duplicate.empty()) {
            *error = QStringLiteral("duplicate key ") + quotedKey(duplicate);
            return json();
        }
        return doc;
    } catch (const json::exception& e) {
        *error = q(e.what());
        return json();
    }
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
        } else {
            err(where + QStringLiteral(".type"),
                QStringLiteral("type must be one of ['multiple', 'single']"));
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
                QStringLiteral(
                    "difficulty must be one of ['foundation', 'application', 'expert']"));
        }
    }
    if (card.contains("options")) checkOptions(where, card["options"], type, prompt, out);
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
    if (static_cast<int>(errors.size()) != before) return std::nullopt;
    return out;
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

void DeckValidator::checkScenario(const QString& where, const json& sc) {
    if (!sc.is_object()) {
        err(where, QStringLiteral("scenario must be a JSON object"));
        return;
    }
    const auto at = [&](const char* key) { return where + QLatin1Char('.') + QLatin1String(key); };
    for (const auto& [key, value] : sc.items()) {
        if (!kScenarioKeys.count(key)) err(where, QStringLiteral("unknown key ") + quotedKey(key));
    }
    std::optional<std::string> strategy;
    if (sc.contains("strategy") && sc["strategy"].is_string() &&
        kStrategies.count(sc["strategy"].get<std::string>())) {
        strategy = sc["strategy"].get<std::string>();
    } else {
        err(at("strategy"), QStringLiteral("strategy is required and must be one of ['dp', "
                                           "'hybrid', 'pipeline', 'ps', 'single', 'tp', 'zero1', "
                                           "'zero2', 'zero3']"));
    }
    if (!sc.contains("devices")) err(at("devices"), QStringLiteral("devices is required"));

    for (const char* key : {"devices", "layers", "width", "batch", "steps", "seed", "bucket_bytes",
                            "microbatches", "chunks", "dp", "pp", "tp"}) {
        if (sc.contains(key) && !isInt(sc[key]))
            err(at(key), QStringLiteral("%1 must be an integer").arg(QLatin1String(key)));
    }
    const auto intOf = [&](const char* key) -> std::optional<long long> {
        if (sc.contains(key) && isInt(sc[key])) return sc[key].get<long long>();
        return std::nullopt;
    };
    const std::map<std::string, std::pair<int, int>> ranges = {
        {"devices", {1, 8}}, {"layers", {1, 16}}, {"width", {16, 512}}, {"steps", {1, 20}}};
    for (const auto& [key, range] : ranges) {
        const auto v = intOf(key.c_str());
        if (v && (*v < range.first || *v > range.second)) {
            err(at(key.c_str()), QStringLiteral("%1 must be in %2..%3")
                                     .arg(q(key))
                                     .arg(range.first)
                                     .arg(range.second));
        }
    }
    for (const char* key : {"batch", "bucket_bytes", "microbatches", "chunks", "dp", "pp", "tp"}) {
        const auto v = intOf(key);
        if (v && *v < 1)
            err(at(key), QStringLiteral("%1 must be at least 1").arg(QLatin1String(key)));
    }
    const std::map<std::string, int> laptop = {{"width", 256}, {"layers", 8}, {"batch", 64}};
    for (const auto& [key, hi] : laptop) {
        const auto v = intOf(key.c_str());
        if (v && *v > hi) {
            err(at(key.c_str()), QStringLiteral("%1 %2 is above the laptop-sized limit %3")
                                     .arg(q(key))
                                     .arg(*v)
                                     .arg(hi));
        }
    }
    if (const auto steps = intOf("steps"); steps && (*steps < 2 || *steps > 6)) {
        warn(at("steps"), QStringLiteral("steps %1 is outside the recommended 2..6").arg(*steps));
    }
    if (sc.contains("optimizer") && sc["optimizer"] != "sgd" && sc["optimizer"] != "adamw")
        err(at("optimizer"), QStringLiteral("optimizer must be one of ['adamw', 'sgd']"));
    if (sc.contains("lr") && !(isNumber(sc["lr"]) && sc["lr"].get<double>() > 0))
        err(at("lr"), QStringLiteral("lr must be a positive number"));
    for (const char* key : {"link_latency_us", "link_gbps"}) {
        if (sc.contains(key) && !(isNumber(sc[key]) && sc[key].get<double>() > 0))
            err(at(key), QStringLiteral("%1 must be a positive number").arg(QLatin1String(key)));
    }
    if (sc.contains("no_overlap") && !sc["no_overlap"].is_boolean())
        err(at("no_overlap"), QStringLiteral("no_overlap must be true or false"));
    if (sc.contains("capacity") &&
        !(sc["capacity"].is_string() &&
          capacityRe().match(q(sc["capacity"].get<std::string>())).hasMatch())) {
        err(at("capacity"),
            QStringLiteral("capacity must be a string like '64MiB' (units B, KiB, MiB, GiB)"));
    }
    if (sc.contains("clock") && sc["clock"] != "wall" && sc["clock"] != "device" &&
        sc["clock"] != "auto")
        err(at("clock"), QStringLiteral("clock must be one of ['auto', 'device', 'wall']"));
    if (sc.contains("schedule") && sc["schedule"] != "gpipe" && sc["schedule"] != "1f1b" &&
        sc["schedule"] != "interleaved")
        err(at("schedule"),
            QStringLiteral("schedule must be one of ['1f1b', 'gpipe', 'interleaved']"));

    const auto devices = intOf("devices");
    if (!strategy || !devices) return;
    const std::string& s = *strategy;
    const long long n = *devices;
    const auto layers = intOf("layers");
    const auto width = intOf("width");
    const auto batch = intOf("batch");
    const auto mb = intOf("microbatches");
    const auto chunks = intOf("chunks");
    const std::string schedule = sc.contains("schedule") && sc["schedule"].is_string()
                                     ? sc["schedule"].get<std::string>()
                                     : "";

    if (s != "dp") {
        for (const char* key : {"bucket_bytes", "no_overlap"}) {
            if (sc.contains(key))
                err(at(key),
                    QStringLiteral("%1 applies only to strategy 'dp'").arg(QLatin1String(key)));
        }
    }
    if (s != "pipeline" && s != "hybrid") {
        for (const char* key : {"schedule", "microbatches", "chunks"}) {
            if (sc.contains(key)) {
                err(at(key), QStringLiteral("%1 applies only to strategies 'pipeline' and 'hybrid'")
                                 .arg(QLatin1String(key)));
            }
        }
    }
    if (s != "hybrid") {
        for (const char* key : {"dp", "pp", "tp"}) {
            if (sc.contains(key))
                err(at(key),
                    QStringLiteral("%1 applies only to strategy 'hybrid'").arg(QLatin1String(key)));
        }
    }
    if (sc.contains("chunks") && schedule != "interleaved")
        err(at("chunks"), QStringLiteral("chunks applies only to schedule 'interleaved'"));

    std::optional<long long> replicas;
    if (s == "single" || s == "pipeline" || s == "tp") replicas = 1;
    if (s == "dp" || s == "zero1" || s == "zero2" || s == "zero3") replicas = n;
    if (s == "ps") replicas = n - 1;

    if (s == "single" && n != 1)
        err(at("devices"), QStringLiteral("strategy 'single' needs devices 1"));
    if ((s == "dp" || s == "tp" || s == "pipeline" || s == "zero1" || s == "zero2" ||
         s == "zero3") &&
        n < 2) {
        warn(at("devices"),
             QStringLiteral("strategy '%1' with 1 device shows nothing distributed").arg(q(s)));
    }
    if (s == "ps" && n < 2) {
        err(at("devices"),
            QStringLiteral("strategy 'ps' needs at least 2 devices (device 0 is the server)"));
    }
    const auto checkPipeline = [&](long long stages, long long dpReplicas) {
        if (layers && *layers < stages) {
            err(at("layers"), QStringLiteral("pipeline needs layers (%1) >= stages (%2)")
                                  .arg(*layers)
                                  .arg(stages));
        }
        if (mb && batch && *batch % (dpReplicas * *mb) != 0) {
            err(at("batch"),
                QStringLiteral("batch %1 is not divisible by microbatches %2%3")
                    .arg(*batch)
                    .arg(*mb)
                    .arg(dpReplicas == 1 ? QString() : QStringLiteral(" x dp %1").arg(dpReplicas)));
        }
        if (schedule == "interleaved") {
            if (!chunks || *chunks < 2) {
                err(at("chunks"), QStringLiteral("schedule 'interleaved' needs chunks >= 2"));
                return;
            }
            if (!mb || *mb % stages != 0) {
                err(at("microbatches"),
                    QStringLiteral("interleaved needs microbatches to be a multiple of the stages "
                                   "(%1)")
                        .arg(stages));
            }
            if (layers && *layers % (stages * *chunks) != 0) {
                err(at("layers"),
                    QStringLiteral("interleaved needs layers (%1) divisible by stages*chunks (%2)")
                        .arg(*layers)
                        .arg(stages * *chunks));
            }
        }
    };
    if (s == "pipeline") checkPipeline(n, 1);
    if (s == "tp" && width && (*width * 4) % n != 0) {
        err(at("width"), QStringLiteral("tp needs width*4 (%1) divisible by devices (%2)")
                             .arg(*width * 4)
                             .arg(n));
    }
    if (s == "hybrid") {
        const auto dp = intOf("dp");
        const auto pp = intOf("pp");
        const auto tp = intOf("tp");
        if (!dp || !pp || !tp || *dp < 1 || *pp < 1 || *tp < 1) {
            err(where, QStringLiteral("hybrid needs integer dp, pp and tp (each >= 1)"));
            return;
        }
        if (*dp * *pp * *tp != n) {
            err(at("devices"), QStringLiteral("hybrid needs dp*pp*tp (%1) == devices (%2)")
                                   .arg(*dp * *pp * *tp)
                                   .arg(n));
        }
        if (*tp > 1 && width && (*width * 4) % *tp != 0) {
            err(at("width"), QStringLiteral("hybrid tp needs width*4 (%1) divisible by tp (%2)")
                                 .arg(*width * 4)
                                 .arg(*tp));
        }
        if (*pp > 1) {
            checkPipeline(*pp, *dp);
        } else if (sc.contains("schedule") || sc.contains("microbatches") ||
                   sc.contains("chunks")) {
            err(where, QStringLiteral("schedule/microbatches/chunks need pp > 1"));
        }
        replicas = *dp;
    }
    if (replicas && *replicas > 0 && batch && *batch % *replicas != 0) {
        err(at("batch"), QStringLiteral("batch %1 is not divisible by the %2 data-parallel "
                                        "replica(s)")
                             .arg(*batch)
                             .arg(*replicas));
    }
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
    if (deck.contains("version") && !(isInt(deck["version"]) && deck["version"] == 1))
        err(dw + QStringLiteral(".version"), QStringLiteral("version must be the integer 1"));
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
    const double share = double(withScenario) / double(cards.size());
    if (share < kMinScenarioShare) {
        deckRule(QStringLiteral("only %1 of %2 cards (%3%) have a scenario; at least %4% must")
                     .arg(withScenario)
                     .arg(cards.size())
                     .arg(qRound(100 * share))
                     .arg(qRound(100 * kMinScenarioShare)));
    }
    if (!errors.isEmpty()) return std::nullopt;
    return out;
}

json cardToJson(const Card& card) {
    json c = json::object();
    c["id"] = card.id.toStdString();
    c["prompt"] = card.prompt.toStdString();
    c["type"] = card.type == CardType::Single ? "single" : "multiple";
    json opts = json::array();
    for (const Option& o : card.options) {
        opts.push_back({{"text", o.text.toStdString()},
                        {"correct", o.correct},
                        {"explanation", o.explanation.toStdString()}});
    }
    c["options"] = opts;
    c["difficulty"] = difficultyName(card.difficulty).toStdString();
    json tags = json::array();
    for (const QString& t : card.tags) tags.push_back(t.toStdString());
    c["tags"] = tags;
    if (card.hasScenario()) {
        c["scenario"] = json::parse(card.scenarioJson.toStdString());
        c["scenario_note"] = card.scenarioNote.toStdString();
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
    d["version"] = 1;
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
