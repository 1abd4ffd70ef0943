#include "numeric_answer.h"

#include <QRegularExpression>
#include <QStringList>
#include <algorithm>
#include <cmath>
#include <utility>
#include <vector>

#include "pd/metrics.h"

namespace pd::study {

namespace {

enum class Kind { Fraction, Bytes, Time, Count };

Kind kindOf(AnswerUnit unit) {
    switch (unit) {
        case AnswerUnit::Percent:
            return Kind::Fraction;
        case AnswerUnit::Bytes:
        case AnswerUnit::KiB:
        case AnswerUnit::MiB:
        case AnswerUnit::GiB:
            return Kind::Bytes;
        case AnswerUnit::Milliseconds:
        case AnswerUnit::Seconds:
            return Kind::Time;
        case AnswerUnit::Count:
            return Kind::Count;
    }
    return Kind::Count;
}

// A unit the learner may type after the number, and the base units it stands for.
std::optional<std::pair<Kind, double>> typedUnit(const QString& text) {
    const QString u = text.toLower();
    if (u == QStringLiteral("%")) return std::pair{Kind::Fraction, 0.01};
    if (u == QStringLiteral("b") || u == QStringLiteral("byte") || u == QStringLiteral("bytes"))
        return std::pair{Kind::Bytes, 1.0};
    if (u == QStringLiteral("kb")) return std::pair{Kind::Bytes, 1e3};
    if (u == QStringLiteral("mb")) return std::pair{Kind::Bytes, 1e6};
    if (u == QStringLiteral("gb")) return std::pair{Kind::Bytes, 1e9};
    if (u == QStringLiteral("kib")) return std::pair{Kind::Bytes, 1024.0};
    if (u == QStringLiteral("mib")) return std::pair{Kind::Bytes, 1048576.0};
    if (u == QStringLiteral("gib")) return std::pair{Kind::Bytes, 1073741824.0};
    if (u == QStringLiteral("ns")) return std::pair{Kind::Time, 1e-9};
    if (u == QStringLiteral("us") || u == QStringLiteral("\u00b5s") ||
        u == QStringLiteral("\u03bcs"))
        return std::pair{Kind::Time, 1e-6};
    if (u == QStringLiteral("ms")) return std::pair{Kind::Time, 1e-3};
    if (u == QStringLiteral("s")) return std::pair{Kind::Time, 1.0};
    return std::nullopt;
}

// Fixed decimals without trailing zeros: "16.06", "27.3", "7".
QString trimmed(double v, int decimals) {
    QString s = QString::number(v, 'f', decimals);
    if (s.contains(QLatin1Char('.'))) {
        while (s.endsWith(QLatin1Char('0'))) s.chop(1);
        if (s.endsWith(QLatin1Char('.'))) s.chop(1);
    }
    return s;
}

}  // namespace

std::optional<AnswerUnit> answerUnitFromName(const QString& name) {
    for (AnswerUnit u :
         {AnswerUnit::Percent, AnswerUnit::Bytes, AnswerUnit::KiB, AnswerUnit::MiB, AnswerUnit::GiB,
          AnswerUnit::Milliseconds, AnswerUnit::Seconds, AnswerUnit::Count})
        if (answerUnitName(u) == name) return u;
    return std::nullopt;
}

QString answerUnitName(AnswerUnit unit) {
    switch (unit) {
        case AnswerUnit::Percent:
            return QStringLiteral("percent");
        case AnswerUnit::Bytes:
            return QStringLiteral("bytes");
        case AnswerUnit::KiB:
            return QStringLiteral("KiB");
        case AnswerUnit::MiB:
            return QStringLiteral("MiB");
        case AnswerUnit::GiB:
            return QStringLiteral("GiB");
        case AnswerUnit::Milliseconds:
            return QStringLiteral("ms");
        case AnswerUnit::Seconds:
            return QStringLiteral("s");
        case AnswerUnit::Count:
            return QStringLiteral("count");
    }
    return {};
}

double answerUnitScale(AnswerUnit unit) {
    switch (unit) {
        case AnswerUnit::Percent:
            return 0.01;
        case AnswerUnit::Bytes:
            return 1.0;
        case AnswerUnit::KiB:
            return 1024.0;
        case AnswerUnit::MiB:
            return 1048576.0;
        case AnswerUnit::GiB:
            return 1073741824.0;
        case AnswerUnit::Milliseconds:
            return 1e-3;
        case AnswerUnit::Seconds:
            return 1.0;
        case AnswerUnit::Count:
            return 1.0;
    }
    return 1.0;
}

QString typedAnswerExamples(AnswerUnit unit) {
    switch (kindOf(unit)) {
        case Kind::Fraction:
            return QStringLiteral("27%");
        case Kind::Bytes:
            return QStringLiteral("16 MiB, 4194304 bytes");
        case Kind::Time:
            return QStringLiteral("12 ms, 0.5 s");
        case Kind::Count:
            break;
    }
    return QStringLiteral("8");
}

QString answerUnitLabel(AnswerUnit unit) {
    return unit == AnswerUnit::Count ? QStringLiteral("a plain number") : answerUnitName(unit);
}

std::optional<double> parseTypedAnswer(const QString& text, AnswerUnit unit, QString* error) {
    static const QRegularExpression re(QStringLiteral(
        "^\\s*([+-]?(?:\\d+(?:\\.\\d*)?|\\.\\d+)(?:[eE][+-]?\\d+)?)\\s*([^\\d\\s.+-]*)\\s*$"));
    // Thousands separators between groups of three digits: "4,194,304".
    static const QRegularExpression grouped(QStringLiteral("^\\s*[+-]?\\d{1,3}(,\\d{3})+(\\D|$)"));
    QString plain = text;
    if (grouped.match(plain).hasMatch()) plain.remove(QLatin1Char(','));
    const auto m = re.match(plain);
    if (!m.hasMatch()) {
        if (error)
            *error = text.trimmed().isEmpty()
                         ? QStringLiteral("type a number first")
                         : QStringLiteral("'%1' is not a number (for example %2)")
                               .arg(text.trimmed(), typedAnswerExamples(unit));
        return std::nullopt;
    }
    bool ok = false;
    const double number = m.captured(1).toDouble(&ok);
    if (!ok || !std::isfinite(number)) {
        if (error) *error = QStringLiteral("'%1' is out of range").arg(m.captured(1));
        return std::nullopt;
    }
    const QString suffix = m.captured(2);
    if (suffix.isEmpty()) return number * answerUnitScale(unit);
    const auto typed = typedUnit(suffix);
    if (!typed || typed->first != kindOf(unit)) {
        if (error)
            *error = QStringLiteral("'%1' is not a unit for this answer (it is in %2)")
                         .arg(suffix, answerUnitLabel(unit));
        return std::nullopt;
    }
    return number * typed->second;
}

QString formatInUnit(double base, AnswerUnit unit) {
    const double v = base / answerUnitScale(unit);
    switch (unit) {
        case AnswerUnit::Percent:
            return trimmed(v, 1) + QLatin1Char('%');
        case AnswerUnit::Bytes:
            return trimmed(v, 0) + QStringLiteral(" bytes");
        case AnswerUnit::KiB:
        case AnswerUnit::MiB:
        case AnswerUnit::GiB:
            return trimmed(v, std::abs(v) >= 100 ? 1 : 3) + QLatin1Char(' ') + answerUnitName(unit);
        case AnswerUnit::Milliseconds:
            return trimmed(v, 2) + QStringLiteral(" ms");
        case AnswerUnit::Seconds:
            return trimmed(v, 3) + QStringLiteral(" s");
        case AnswerUnit::Count:
            return trimmed(v, 3);
    }
    return QString::number(v);
}

QString toleranceText(const NumericAnswer& a) {
    if (a.toleranceIsRelative)
        return QStringLiteral("\u00b1 %1%").arg(trimmed(a.tolerance * 100, 1));
    if (a.unit == AnswerUnit::Percent)
        return QStringLiteral("\u00b1 %1 percentage points").arg(trimmed(a.tolerance, 2));
    return QStringLiteral("\u00b1 ") + formatInUnit(a.tolerance * answerUnitScale(a.unit), a.unit);
}

bool withinTolerance(const NumericAnswer& a, double value, double target) {
    const double allowed = a.toleranceIsRelative ? a.tolerance * std::abs(target)
                                                 : a.tolerance * answerUnitScale(a.unit);
    // A hair of slack for the decimal rounding of typed and stated figures.
    return std::abs(value - target) <= allowed * (1.0 + 1e-9) + 1e-12 * std::abs(target);
}

std::optional<RunExplanation> explainMeasured(const NumericAnswer& a, const pd::RunMetrics& m) {
    if (a.metric != QStringLiteral("bubble") || !m.bubble || !m.bubble->predicted) return {};
    const pd::BubblePrediction& p = *m.bubble->predicted;
    const std::vector<pd::NamedBubbleCause> all =
        pd::named_bubble_causes(p.causes, m.bubble->schedule);
    QStringList parts;
    for (std::size_t i = 0; i < all.size(); ++i) {
        const double pts = all[i].fraction * 100.0;
        parts << QStringLiteral("%1%2%3 %4")
                     .arg(pts < 0 ? QStringLiteral("\u2212") : QStringLiteral("+"))
                     .arg(QString::number(std::abs(pts), 'f', 1))
                     .arg(i == 0 ? QStringLiteral(" points") : QString())
                     .arg(QString::fromStdString(all[i].name));
    }
    return RunExplanation{p.fraction, parts.join(QStringLiteral(", "))};
}

NumericGrade gradeNumeric(const NumericAnswer& a, double typed, double measured,
                          const std::optional<RunExplanation>& why) {
    NumericGrade g;
    g.typed = typed;
    g.measured = measured;
    const bool nearMeasured = std::isfinite(measured) && withinTolerance(a, typed, measured);
    g.correct = nearMeasured;
    if (a.textbook) {
        const double textbook = *a.textbook * answerUnitScale(a.unit);
        g.nearTextbook = withinTolerance(a, typed, textbook);
        // The run accounts for its difference from the textbook when what its own parts
        // predict lands within the tolerance of what it measured: the textbook figure plus
        // the named causes is then this run's figure.
        const bool explained = why && std::isfinite(measured) && std::isfinite(why->predicted) &&
                               withinTolerance(a, why->predicted, measured);
        if (explained && !withinTolerance(a, textbook, measured)) {
            g.textbookNote =
                QStringLiteral(
                    "textbook right; this run measured %1 because its own times "
                    "predict %2 against the textbook's %3")
                    .arg(formatInUnit(measured, a.unit), formatInUnit(why->predicted, a.unit),
                         formatInUnit(textbook, a.unit));
            if (!why->causes.isEmpty()) g.textbookNote += QStringLiteral(": ") + why->causes;
        }
        if (!nearMeasured && explained && *g.nearTextbook) {
            g.correct = true;
            g.byTextbook = true;
        }
    }
    return g;
}

}  // namespace pd::study
