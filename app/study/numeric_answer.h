// Numeric "predict, then run" cards: the learner types a number, the card's scenario runs,
// and the answer is graded against the figure measured on that run (a metric the scenario's
// claims can read) within the card's tolerance; the textbook value is shown beside it. The
// textbook value is accepted too where the run explains its own difference from it (a
// pipeline's bubble predicted from the run's stage times, with the causes named).
// Format: resources/decks/README.md, "Numeric cards".
#pragma once

#include <QString>
#include <optional>

namespace pd {
struct RunMetrics;
}

namespace pd::study {

// How the learner types the answer and sees the figures. The metric itself is in its base
// unit: a fraction for percent, bytes for the byte units, seconds for the time units.
enum class AnswerUnit { Percent, Bytes, KiB, MiB, GiB, Milliseconds, Seconds, Count };

std::optional<AnswerUnit> answerUnitFromName(const QString& name);  // "percent", "MiB", ...
QString answerUnitName(AnswerUnit unit);
// Base units per one of `unit` (0.01 for percent, 1048576 for MiB, 0.001 for ms).
double answerUnitScale(AnswerUnit unit);
// The unit as the study page names it beside the field: "percent", "MiB", "a plain number".
QString answerUnitLabel(AnswerUnit unit);
// Answers the learner could type for this unit: "16 MiB, 4194304 bytes".
QString typedAnswerExamples(AnswerUnit unit);

struct NumericAnswer {
    QString metric;   // an expectation metric name (pd::expectation_metrics)
    int device = -1;  // per-device metrics: the device read; -1 for run-wide ones
    AnswerUnit unit = AnswerUnit::Count;
    double tolerance = 0.0;            // in `unit`, or a fraction when relative
    bool toleranceIsRelative = false;  // relative to the measured value
    std::optional<double> textbook;    // in `unit`
    QString textbookFormula;
    QString explanation;
    bool operator==(const NumericAnswer&) const = default;
};

// The learner's text ("27", "27 %", "16.1 MiB", "4194304 bytes", "12 ms") as a value in the
// metric's base unit. A bare number is in the card's unit; a unit must be of the same kind
// (bytes for byte units, time for time units). Nothing, with `error` set, when it is no number.
std::optional<double> parseTypedAnswer(const QString& text, AnswerUnit unit, QString* error);

// A base-unit value in the card's unit: "25.6%", "16.06 MiB", "12.3 ms", "7".
QString formatInUnit(double base, AnswerUnit unit);
// The tolerance as the learner reads it: "± 4 percentage points", "± 2%".
QString toleranceText(const NumericAnswer& answer);

// What the run says about its own figure beside the textbook's: the figure its measured parts
// imply (the bubble replayed from its stage times) and the causes of the difference from the
// textbook figure, largest first ("+5.1 points stage imbalance, +2.3 launch gaps").
struct RunExplanation {
    double predicted = 0.0;  // base unit
    QString causes;
};
// The run's explanation of the card's metric, where the engine has one (today: `bubble`, from
// the prediction from stage times); nothing otherwise.
std::optional<RunExplanation> explainMeasured(const NumericAnswer& answer,
                                              const pd::RunMetrics& metrics);

struct NumericGrade {
    bool correct = false;
    double typed = 0.0;     // base unit
    double measured = 0.0;  // base unit
    // Whether the typed value is also within the tolerance of the textbook value.
    std::optional<bool> nearTextbook;
    // Correct as the textbook figure, not the measured one: the typed value is within the
    // tolerance of the textbook figure, and the run's explanation accounts for the measured
    // figure (its prediction is within the tolerance of it).
    bool byTextbook = false;
    // Where the run explains its difference from the textbook: "textbook right; this run
    // measured 33.1% because ...". Empty otherwise.
    QString textbookNote;
};
// Grades `typed` against `measured` (both in the base unit) with the card's tolerance, and
// against the textbook figure where `why` (the run's own explanation) accounts for the
// difference.
NumericGrade gradeNumeric(const NumericAnswer& answer, double typed, double measured,
                          const std::optional<RunExplanation>& why = std::nullopt);
// Whether `value` (base unit) is within the card's tolerance of `target` (base unit).
bool withinTolerance(const NumericAnswer& answer, double value, double target);

}  // namespace pd::study
