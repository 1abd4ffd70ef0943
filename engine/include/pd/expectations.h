// Scenario expectations: machine-checkable claims about what a scenario's run shows (the
// `expect` key of a scenario, specified in resources/decks/README.md). Parsing rejects unknown
// claims and metric names with a BadInput naming the key; checking reads the run's result and
// its metrics (compute_metrics), never a second computation of a figure.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "pd/metrics.h"
#include "pd/run.h"
#include "pd/run_config.h"

namespace pd {

// Which figure a metric claim or a reference reads: a named metric, on one device (for
// per-device metrics), of this run or of a compare_with variant.
struct MetricRef {
    std::string metric;
    int device = -1;   // -1: the metric is run-wide
    int variant = -1;  // -1: this run; otherwise an index into Expectations::variants
};

struct Claim {
    enum class Kind { status, loss_falls, loss_diverges, metric, refused };
    Kind kind = Kind::metric;
    std::string key;  // "expect[3]", for messages

    // status
    RunStatus status = RunStatus::ok;
    std::optional<int> oom_device;
    std::optional<MemoryCategory> oom_category;
    // Which memory ran out: the device's own (none), or its host or NVMe share.
    std::optional<OffloadDevice> oom_memory;
    // status "timed_out": the run fails because a collective timed out waiting for a peer.
    bool timed_out = false;
    // refused: the comparison run subject.variant is refused before it starts, naming this
    // setting (a scenario key, e.g. "cp_algorithm").
    std::string refused_key;

    // loss_falls: at least this many percent from the first to the last step.
    // loss_diverges: the last loss is non-finite or at least `percent`% above the first.
    double percent = 0.0;

    // metric: value = subject, or subject / relative_to; each device listed is checked.
    MetricRef subject;
    std::vector<int> devices;  // per-device metrics; empty: run-wide (or all_devices)
    bool all_devices = false;
    std::optional<MetricRef> relative_to;
    std::optional<double> at_least, at_most;
    // near: |value - target| <= tolerance, or <= relative_tolerance x |target|.
    std::optional<double> near_value;
    std::optional<MetricRef> near_ref;
    double tolerance = 0.0;
    bool tolerance_is_relative = false;
};

struct Expectations {
    std::vector<Claim> claims;
    // The distinct compare_with overrides (scenario JSON objects), each run once.
    std::vector<std::string> variants;
    std::vector<int> refused_variants;  // those a refused claim is about
    bool empty() const { return claims.empty(); }
};

// Parses the value of `expect` (a JSON array, as text). `origin` names the scenario in
// messages; keys are spelled "expect[i].field". Throws BadInput.
Expectations parse_expectations(std::string_view json_text, std::string_view origin);

// A compare_with variant in words: {"seq_len": 8, "batch": 4} -> "seq_len 8, batch 4".
std::string variant_words(const std::string& variant_json);

// The config of variant `i`: `base` with the variant's keys applied, then validated.
RunConfig variant_config(const RunConfig& base, const Expectations& expectations, std::size_t i,
                         std::string_view origin);

// What claims read from one run.
// A configuration refused before it runs: the setting validation named (a scenario key) and
// why.
struct Refusal {
    std::string key;
    std::string reason;
};

struct RunEvidence {
    RunConfig config;
    RunResult result;
    RunMetrics metrics;
    // The metrics of the scenario's further repeats (RunConfig::repeats - 1 of them): timed
    // figures then read the median over every repeat's figure steps.
    std::vector<RunMetrics> repeats;
    // A comparison run a claim expects refused, and refused: it never ran.
    std::optional<Refusal> refused;
};
// Whether a claim expects comparison run i to be refused ({"status": "refused"}).
bool expects_refusal(const Expectations& expectations, std::size_t i);
// Comparison run i's refusal, where a claim expects one and validation gives one (nothing
// where validation accepts it: then it runs, and the claim fails).
std::optional<Refusal> variant_refusal(const RunConfig& base, const Expectations& expectations,
                                       std::size_t i, std::string_view origin);
// Comparison run i as evidence: its refusal where a claim expects one and it is refused,
// else the run (run_for_evidence of variant_config, which throws BadInput on a bad variant).
RunEvidence variant_evidence(const RunConfig& base, const Expectations& expectations, std::size_t i,
                             std::string_view origin);
// Runs `config` (config.repeats times; the first run's result is kept).
RunEvidence run_for_evidence(const RunConfig& config);
// Adds one more repeat's result to `evidence`.
void add_repeat(RunEvidence& evidence, const RunResult& result);

// A timed figure's samples: its value in each figure step of the run and of its repeats (for
// per-device figures, on `device`). Empty for figures that are counted, not timed, and for
// runs whose steps have no span of their own.
std::vector<double> step_samples(std::string_view metric, const RunEvidence& run, int device);

struct ClaimOutcome {
    std::string description;  // "bubble within 0.273 +- 0.03"
    std::string measured;     // "0.281"
    bool passed = false;
    // The claim reads a figure from clocks (a duration, a fraction of time): meaningful on a
    // quiet, uninstrumented build; sanitizers change the relative cost of operations.
    bool timed = false;

    // What a view needs to bring the claim's evidence into sight (pd::ui's revealEvidence).
    Claim::Kind kind = Claim::Kind::metric;
    std::string metric;                // the figure it reads (metric claims)
    std::vector<int> devices;          // the devices it reads; empty: run-wide
    int variant = -1;                  // the compare_with run it reads; -1: none
    RunStatus status = RunStatus::ok;  // status claims: the status claimed
    bool timed_out = false;            // ... and that it failed by a collective's timeout
    // The claim in a learner's words: "Peak activation memory on device 0 is 9 to 12 times
    // the comparison run's (seq_len 8)".
    std::string plain;
    std::string measured_words;  // the measured value(s) as the learner reads them: "9.61x"
    // A timed claim's run-to-run noise, from each figure step's own value: "this run's
    // steps 12.1-13.0 ms; the comparison's 15.2-16.8 ms: the difference is larger than the
    // spread". Empty where the figure is counted, not timed (bytes, calls: no noise).
    std::string spread;
    // Whether a comparison claim's difference is larger than both runs' spreads (the ranges
    // of their steps do not overlap); nullopt where that does not apply.
    std::optional<bool> beyond_spread;
};

// Checks every claim against `run` and `variants` (one per Expectations::variants, in order).
// A claim on a device or a figure the run lacks fails, saying so in `measured`.
std::vector<ClaimOutcome> check_expectations(const Expectations& expectations,
                                             const RunEvidence& run,
                                             const std::vector<RunEvidence>& variants);

// The metric names claims may read, with what each measures (for messages and docs).
struct MetricInfo {
    std::string_view name;
    bool per_device;
    std::string_view meaning;
};
const std::vector<MetricInfo>& expectation_metrics();

// One named figure of a run, as claims read it (`device` for per-device metrics, ignored
// otherwise); nothing when the name is unknown or the run lacks the figure. A numeric card's
// measured answer is read here, so it and the card's claims never disagree.
std::optional<double> read_metric(std::string_view name, const RunEvidence& run, int device);

// Whether a metric is a figure from clocks (step time, busy, bubble, exposed communication).
bool is_timed_metric(std::string_view name);

}  // namespace pd
