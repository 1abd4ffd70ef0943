#include "pd/expectations.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdio>
#include <deque>
#include <functional>
#include <nlohmann/json.hpp>

#include "config/claim_words.h"
#include "pd/error.h"
#include "pd/flops.h"
#include "pd/scenario.h"
#include "strategies/powersgd.h"

namespace pd {

using nlohmann::json;

namespace {

// "parameters, gradients, ...": the memory categories a claim may name.
std::string category_list() {
    std::string out;
    for (std::string_view n : kMemoryCategoryNames) {
        if (!out.empty()) out += ", ";
        out += n;
    }
    return out;
}

// ------------------------------------------------------------------------------ metric names

using Reader = std::function<std::optional<double>(const RunEvidence&, int device)>;

struct MetricDef {
    MetricInfo info;
    Reader read;
};

const DeviceMetrics* device_metrics(const RunEvidence& e, int d) {
    for (const auto& dm : e.metrics.devices)
        if (dm.device == d) return &dm;
    return nullptr;
}

const ModelStateMetrics* model_state(const RunEvidence& e, int d) {
    for (const auto& s : e.metrics.model_state)
        if (s.device == d) return &s;
    return nullptr;
}

const StageActivationMetrics* stage_activation(const RunEvidence& e, int d) {
    for (const auto& s : e.metrics.stage_activations)
        if (s.device == d) return &s;
    return nullptr;
}

// Generated metric names live as long as the table that views them (a deque never moves
// its elements).
std::string_view intern(std::string name) {
    static std::deque<std::string> names;
    return names.emplace_back(std::move(name));
}

// A run-wide figure, read from the metrics (or the result).
MetricDef run_wide(std::string_view name, std::string_view meaning,
                   std::function<std::optional<double>(const RunEvidence&)> read) {
    return {{name, false, meaning}, [read](const RunEvidence& e, int) { return read(e); }};
}

// A per-device figure of DeviceMetrics.
MetricDef per_device(std::string_view name, std::string_view meaning,
                     std::function<double(const DeviceMetrics&)> read) {
    return {{name, true, meaning}, [read](const RunEvidence& e, int d) -> std::optional<double> {
                if (const auto* dm = device_metrics(e, d)) return read(*dm);
                return std::nullopt;
            }};
}

MetricDef per_model_state(std::string_view name, std::string_view meaning,
                          double (*read)(const ModelStateMetrics&)) {
    return {{name, true, meaning}, [read](const RunEvidence& e, int d) -> std::optional<double> {
                if (const auto* s = model_state(e, d)) return read(*s);
                return std::nullopt;
            }};
}

// Calls of one collective per device per step: CollectiveMetrics counts calls per device over
// the run, grouped by size; the groups of one operation add up.
std::optional<double> calls_per_step(const RunEvidence& e, const std::string& op) {
    if (e.metrics.steps.empty()) return std::nullopt;
    double calls = 0;
    for (const auto& c : e.metrics.collectives)
        if (c.op == op) calls += c.count;
    return calls / static_cast<double>(e.metrics.steps.size());
}

// Ring steps (reduce-scatter and all-gather steps) per collective call on a device. The
// trace is the only record of ring steps; no metric counts them yet.
std::optional<double> ring_steps_per_collective(const RunEvidence& e, int d) {
    double calls = 0, ring_steps = 0;
    for (const auto& c : e.result.trace.collectives)
        if (c.device == d && c.step >= 0 && c.op != "broadcast") ++calls;
    for (const auto& ev : e.result.trace.events)
        if (ev.device == d && ev.step >= 0 &&
            (ev.kind == EventKind::reduce_scatter_step || ev.kind == EventKind::all_gather_step))
            ++ring_steps;
    if (calls == 0) return std::nullopt;
    return ring_steps / calls;
}

std::vector<MetricDef> build_metrics() {
    std::vector<MetricDef> v;
    // New figures of RunMetrics plug in here, one line each.
    v.push_back(run_wide("steps_completed", "optimizer steps the run completed",
                         [](const RunEvidence& e) { return e.result.steps_completed; }));
    v.push_back(run_wide("loss.first", "loss of the first step", [](const RunEvidence& e) {
        return e.metrics.steps.empty() ? std::nullopt
                                       : std::optional<double>(e.metrics.steps.front().loss);
    }));
    v.push_back(run_wide("loss.last", "loss of the last step", [](const RunEvidence& e) {
        return e.metrics.steps.empty() ? std::nullopt : std::optional<double>(e.metrics.final_loss);
    }));
    // What the updates read from the gradients (mixed precision, clipping; single and dp).
    v.push_back(run_wide("loss.nonfinite_steps", "steps whose loss is inf or NaN",
                         [](const RunEvidence& e) -> std::optional<double> {
                             if (e.result.trace.steps.empty()) return std::nullopt;
                             return static_cast<double>(std::count_if(
                                 e.result.trace.steps.begin(), e.result.trace.steps.end(),
                                 [](const StepRecord& s) { return !std::isfinite(s.loss); }));
                         }));
    v.push_back(run_wide("steps.skipped",
                         "optimizer steps skipped for inf or NaN gradients (fp16's GradScaler)",
                         [](const RunEvidence& e) -> std::optional<double> {
                             if (e.result.trace.steps.empty()) return std::nullopt;
                             return static_cast<double>(std::count_if(
                                 e.result.trace.steps.begin(), e.result.trace.steps.end(),
                                 [](const StepRecord& s) { return s.skipped; }));
                         }));
    for (const char* which : {"first", "last", "min", "max"}) {
        const std::string w = which;
        v.push_back(run_wide(intern("loss_scale." + w),
                             "fp16's loss scale a step's backward used (" + w + " over the steps)",
                             [w](const RunEvidence& e) -> std::optional<double> {
                                 std::vector<double> scales;
                                 for (const auto& s : e.result.trace.steps)
                                     if (s.loss_scale > 0) scales.push_back(s.loss_scale);
                                 if (scales.empty()) return std::nullopt;
                                 if (w == "first") return scales.front();
                                 if (w == "last") return scales.back();
                                 return w == "min"
                                            ? *std::min_element(scales.begin(), scales.end())
                                            : *std::max_element(scales.begin(), scales.end());
                             }));
    }
    v.push_back(run_wide(
        "grad.zero_fraction",
        "share of gradient values exactly zero as the update received them "
        "(mean over the applied steps after the first applied one; fp16 "
        "underflow shows here)",
        [](const RunEvidence& e) { return gradient_zero_fraction(e.result.trace.steps); }));
    for (const bool m : {true, false})
        v.push_back(run_wide(
            m ? "optimizer.state_error_m" : "optimizer.state_error_v",
            m ? "adamw8bit: relative RMS error of the stored 8-bit first moment m against the fp32 "
                "values it quantizes (mean over the updates)"
              : "adamw8bit: relative RMS error of the stored 8-bit second moment v against the "
                "fp32 values it quantizes (mean over the updates)",
            [m](const RunEvidence& e) {
                return state_quantization_error(e.result.trace.steps, m);
            }));
    v.push_back(run_wide("products.input_error",
                         "TF32 or bf16 product inputs (tf32, float32_matmul_precision): relative "
                         "RMS error of every product's rounded inputs against their fp32 values, "
                         "mean over the steps; 0 where products take fp32 inputs",
                         [](const RunEvidence& e) -> std::optional<double> {
                             double sum = 0;
                             int n = 0;
                             for (const StepRecord& s : e.result.trace.steps)
                                 if (s.product_input_error >= 0) {
                                     sum += s.product_input_error;
                                     ++n;
                                 }
                             if (n > 0) return sum / n;
                             if (e.config.tf32 || e.config.bf16_products) return std::nullopt;
                             return 0.0;
                         }));
    // FP8 (fp8 hybrid or e4m3): device 0's casts (fp8_run_summary).
    const auto fp8 = [](double (*read)(const Fp8RunSummary&)) {
        return [read](const RunEvidence& e) -> std::optional<double> {
            const auto s = fp8_run_summary(e.result.trace.steps);
            if (!s) return std::nullopt;
            const double value = read(*s);
            return value < 0 ? std::nullopt : std::optional<double>(value);
        };
    };
    v.push_back(run_wide("fp8.forward.relative_error",
                         "FP8: relative RMS error of the blocks' forward casts (inputs and "
                         "weights, x s against fp8(x s)), mean over the steps",
                         fp8([](const Fp8RunSummary& s) { return s.forward_error; })));
    v.push_back(run_wide("fp8.gradients.relative_error.last",
                         "FP8: relative RMS error of the blocks' output-gradient casts in the "
                         "last step",
                         fp8([](const Fp8RunSummary& s) { return s.last_gradient_error; })));
    v.push_back(run_wide("fp8.gradients.flushed_fraction.first",
                         "FP8: share of the output-gradient values flushed to zero in the first "
                         "step that had any (cast at scale 1: no amax history yet)",
                         fp8([](const Fp8RunSummary& s) { return s.first_flushed; })));
    v.push_back(run_wide("fp8.gradients.flushed_fraction.last",
                         "FP8: share of the output-gradient values flushed to zero in the last "
                         "step (scales from the amax history)",
                         fp8([](const Fp8RunSummary& s) { return s.last_flushed; })));
    v.push_back(run_wide(
        "fp8.saturated", "FP8: values past the encoding's largest, clamped to it, over the run",
        fp8([](const Fp8RunSummary& s) { return static_cast<double>(s.saturated); })));
    v.push_back(run_wide("fp8.scale_spread",
                         "FP8: the last step's largest per-tensor scale over its smallest",
                         fp8([](const Fp8RunSummary& s) { return s.scale_spread; })));
    v.push_back(run_wide(
        "params.unchanged_fraction",
        "share of the parameters still equal to their initial value (as stored: 16-bit under "
        "mixed precision) at the end of the run",
        [](const RunEvidence& e) -> std::optional<double> {
            const std::vector<float>& end = e.result.final_parameters;
            if (end.empty()) return std::nullopt;
            const std::vector<float> init =
                initial_parameters(model_shape(e.config), e.config.seed);
            if (init.size() != end.size()) return std::nullopt;
            const DType t = e.config.tensor_dtype();
            std::size_t same = 0;
            for (std::size_t i = 0; i < end.size(); ++i) same += end[i] == round_to(t, init[i]);
            return static_cast<double>(same) / static_cast<double>(end.size());
        }));
    v.push_back(run_wide(
        "grad.clipped_steps", "steps whose unscaled gradient norm exceeded clip_grad_norm",
        [](const RunEvidence& e) -> std::optional<double> {
            if (!(e.config.clip_grad_norm > 0)) return std::nullopt;
            return static_cast<double>(std::count_if(
                e.result.trace.steps.begin(), e.result.trace.steps.end(),
                [&](const StepRecord& s) { return s.grad_norm > e.config.clip_grad_norm; }));
        }));
    v.push_back(run_wide("grad.norm.first",
                         "global L2 norm of the first step's gradients, after unscaling and "
                         "before clipping",
                         [](const RunEvidence& e) -> std::optional<double> {
                             if (e.result.trace.steps.empty() ||
                                 e.result.trace.steps.front().grad_norm < 0)
                                 return std::nullopt;
                             return e.result.trace.steps.front().grad_norm;
                         }));
    // FLOPs of a step, counted from the model's products (pd/flops.h), and the utilisation of
    // the measured FMA peak they reach.
    for (const char* which : {"model", "hardware", "six_nd"}) {
        const std::string w = which;
        v.push_back(
            run_wide(intern("flops." + w + "_per_step"),
                     w == "model"      ? "FLOPs of a step's forward and backward products"
                     : w == "hardware" ? "FLOPs of the products a step ran, recomputation "
                                         "included"
                                       : "6 x parameters x the step's tokens",
                     [w](const RunEvidence& e) -> std::optional<double> {
                         const auto f = step_flops(e.config);
                         if (!f) return std::nullopt;
                         return w == "model" ? f->model : w == "hardware" ? f->hardware : f->six_nd;
                     }));
    }
    for (const char* which : {"mfu", "hfu"}) {
        const std::string w = which;
        v.push_back(run_wide(
            intern(w),
            w == "mfu" ? "model FLOPs per step over the median step time x devices x each "
                         "device's measured FMA peak"
                       : "the same with the FLOPs that ran (recomputation included)",
            [w](const RunEvidence& e) -> std::optional<double> {
                const auto f = step_flops(e.config);
                if (!f || e.metrics.steps.empty() || !(e.metrics.median_step_time_s > 0))
                    return std::nullopt;
                const double peak = fma_peak(std::max(1, e.result.trace.intra_op_threads)).gflops;
                if (!(peak > 0)) return std::nullopt;
                return utilisation(w == "mfu" ? f->model : f->hardware,
                                   e.metrics.median_step_time_s, e.config.devices, peak);
            }));
    }
    v.push_back(run_wide(
        "powersgd.compress_rate",
        "PowerSGD: elements before compression over elements all-reduced, every bucket "
        "(torch's PowerSGDState.compression_stats)",
        [](const RunEvidence& e) -> std::optional<double> {
            if (e.config.powersgd.rank <= 0) return std::nullopt;
            const ParamLayout layout = ParamLayout::build(model_shape(e.config));
            double before = 0, after = 0;
            for (const PowerSgdBucket& b : powersgd_buckets(
                     layout,
                     make_grad_buckets(layout, e.config.bucket_bytes, e.config.tensor_dtype()),
                     e.config.powersgd))
                for (const PowerSgdTensor& t : b.tensors) {
                    before += static_cast<double>(t.count);
                    after += t.compress ? static_cast<double>(t.n + t.m) * t.rank
                                        : static_cast<double>(t.count);
                }
            return after > 0 ? before / after : 0.0;
        }));
    v.push_back(run_wide("step_time", "median step time, seconds",
                         [](const RunEvidence& e) { return e.metrics.median_step_time_s; }));
    v.push_back(run_wide("samples_per_s", "global batch / median step time",
                         [](const RunEvidence& e) { return e.metrics.samples_per_s; }));
    v.push_back(run_wide("exposed_comm",
                         "communication not hidden by compute, seconds summed "
                         "over devices",
                         [](const RunEvidence& e) { return e.metrics.exposed_comm_s; }));
    v.push_back(run_wide("overlapped_comm",
                         "communication hidden by compute, seconds summed "
                         "over devices",
                         [](const RunEvidence& e) { return e.metrics.overlapped_comm_s; }));
    v.push_back(run_wide("parameter_count", "parameters of the model", [](const RunEvidence& e) {
        return static_cast<double>(e.metrics.parameter_count);
    }));
    v.push_back(run_wide("bubble", "measured pipeline bubble fraction", [](const RunEvidence& e) {
        return e.metrics.bubble ? std::optional<double>(e.metrics.bubble->measured) : std::nullopt;
    }));
    v.push_back(run_wide("bubble.predicted",
                         "the bubble this run's own stage times predict (schedule replayed)",
                         [](const RunEvidence& e) -> std::optional<double> {
                             if (!e.metrics.bubble || !e.metrics.bubble->predicted)
                                 return std::nullopt;
                             return e.metrics.bubble->predicted->fraction;
                         }));
    // The named causes of predicted - textbook, in fractions of the step (they add up to it).
    using CauseField = double BubbleCauses::*;
    for (const auto& [cause, field] :
         {std::pair<const char*, CauseField>{"schedule", &BubbleCauses::schedule},
          {"stage_imbalance", &BubbleCauses::stage_imbalance},
          {"transfers", &BubbleCauses::transfers},
          {"untraced_gaps", &BubbleCauses::untraced_gaps},
          {"optimizer_tail", &BubbleCauses::optimizer_tail},
          {"cold_first_microbatch", &BubbleCauses::cold_first_microbatch},
          {"microbatch_variation", &BubbleCauses::microbatch_variation}}) {
        const CauseField f = field;
        v.push_back(
            run_wide(intern(std::string("bubble.cause.") + cause),
                     "one named cause of predicted - textbook bubble (fraction of the step)",
                     [f](const RunEvidence& e) -> std::optional<double> {
                         if (!e.metrics.bubble || !e.metrics.bubble->predicted) return std::nullopt;
                         return e.metrics.bubble->predicted->causes.*f;
                     }));
    }
    v.push_back(
        run_wide("bubble.theoretical", "textbook bubble (p-1)/(v*m+p-1)", [](const RunEvidence& e) {
            return e.metrics.bubble ? std::optional<double>(e.metrics.bubble->theoretical)
                                    : std::nullopt;
        }));
    for (const char* op :
         {"all_reduce", "reduce_scatter", "all_gather", "broadcast", "all_to_all"}) {
        const std::string o = op;
        v.push_back(run_wide(intern(o + "_per_step"),
                             "calls of this collective per device per step",
                             [o](const RunEvidence& e) { return calls_per_step(e, o); }));
    }
    for (const char* op :
         {"all_reduce", "reduce_scatter", "all_gather", "broadcast", "all_to_all", "send_recv"}) {
        const std::string o = op;
        v.push_back(run_wide(
            intern("comm_bytes_per_step." + o), "bytes each device hands to this kind per step",
            [o](const RunEvidence& e) -> std::optional<double> {
                const auto it = e.metrics.comm_bytes_per_step.find(o);
                return it == e.metrics.comm_bytes_per_step.end() ? 0.0 : it->second;
            }));
    }
    // The cluster: traffic and transfer time per link tier, algorithms, the straggler.
    for (LinkTier tier : {LinkTier::intra_node, LinkTier::inter_node, LinkTier::nvls,
                          LinkTier::sharp, LinkTier::host, LinkTier::nvme}) {
        std::string t(name_of(tier));
        std::replace(t.begin(), t.end(), '-', '_');
        const auto i = static_cast<std::size_t>(tier);
        v.push_back(run_wide(
            intern("tier." + t + ".bytes_per_step"),
            "bytes that crossed this link tier per step, all devices together",
            [i](const RunEvidence& e) { return e.metrics.cluster.tiers[i].bytes_per_step; }));
        v.push_back(run_wide(
            intern("tier." + t + ".busy_per_step"),
            "time of the transfer events on this link tier per step, seconds summed over "
            "devices (waits for peers and this CPU's copies and adds included)",
            [i](const RunEvidence& e) { return e.metrics.cluster.tiers[i].busy_s_per_step; }));
    }
    for (const char* a : {"ring", "tree", "hierarchical", "in-network", "reduction-server"}) {
        const std::string name = a;
        std::string key = "allreduce." + name + "_per_step";
        std::replace(key.begin(), key.end(), '-', '_');
        v.push_back(run_wide(intern(key), "all-reduces by this algorithm per device per step",
                             [name](const RunEvidence& e) {
                                 const auto& calls = e.metrics.cluster.allreduce_calls_per_step;
                                 const auto it = calls.find(name);
                                 return it == calls.end() ? 0.0 : it->second;
                             }));
    }
    v.push_back(run_wide("straggler.device",
                         "the device that arrives last at collectives most often (from the "
                         "trace alone: its calls are the shortest)",
                         [](const RunEvidence& e) -> std::optional<double> {
                             if (e.metrics.cluster.straggler.device < 0) return std::nullopt;
                             return e.metrics.cluster.straggler.device;
                         }));
    v.push_back(run_wide("straggler.last_fraction",
                         "share of collective calls where that device arrived last",
                         [](const RunEvidence& e) -> std::optional<double> {
                             if (e.metrics.cluster.straggler.calls == 0) return std::nullopt;
                             return e.metrics.cluster.straggler.last_fraction;
                         }));
    v.push_back(run_wide("straggler.wait_per_step",
                         "seconds per device per step spent in collectives waiting for the "
                         "last arrival",
                         [](const RunEvidence& e) -> std::optional<double> {
                             if (e.metrics.cluster.straggler.calls == 0) return std::nullopt;
                             return e.metrics.cluster.straggler.wait_s_per_step;
                         }));
    // A mixture of experts' routing (all devices and MoE layers, every step's forward).
    v.push_back(run_wide("routing.dropped_fraction",
                         "MoE: share of token-to-expert choices dropped for want of capacity",
                         [](const RunEvidence& e) -> std::optional<double> {
                             const ExpertRouting& r = e.result.trace.routing;
                             if (r.experts == 0 || r.assignments == 0) return std::nullopt;
                             return static_cast<double>(r.dropped) / r.assignments;
                         }));
    v.push_back(run_wide("routing.load_imbalance",
                         "MoE: tokens of the busiest expert over the mean expert's",
                         [](const RunEvidence& e) -> std::optional<double> {
                             const ExpertRouting& r = e.result.trace.routing;
                             if (r.experts == 0) return std::nullopt;
                             long long most = 0, sum = 0;
                             for (long long t : r.tokens_per_expert) {
                                 most = std::max(most, t);
                                 sum += t;
                             }
                             if (sum == 0) return std::nullopt;
                             return static_cast<double>(most) * r.experts / sum;
                         }));
    // Checkpoints: the last one written, and the one the run resumed from.
    v.push_back(run_wide("checkpoint.files",
                         "files (one per device that owns a part) in the last checkpoint written",
                         [](const RunEvidence& e) -> std::optional<double> {
                             const CheckpointSummary c = last_checkpoint(e.result.trace);
                             if (c.step < 0) return std::nullopt;
                             return c.files;
                         }));
    v.push_back(run_wide("checkpoint.bytes_total",
                         "bytes of the last checkpoint written, all files",
                         [](const RunEvidence& e) -> std::optional<double> {
                             const CheckpointSummary c = last_checkpoint(e.result.trace);
                             if (c.step < 0) return std::nullopt;
                             return static_cast<double>(c.bytes);
                         }));
    v.push_back(
        {{"checkpoint.bytes", true, "bytes the device wrote to the last checkpoint (0: none)"},
         [](const RunEvidence& e, int d) -> std::optional<double> {
             const CheckpointSummary c = last_checkpoint(e.result.trace);
             if (c.step < 0 || d < 0 || static_cast<std::size_t>(d) >= c.device_bytes.size())
                 return std::nullopt;
             return static_cast<double>(c.device_bytes[static_cast<std::size_t>(d)]);
         }});
    v.push_back(run_wide("resume.step", "steps the checkpoint the run resumed from had completed",
                         [](const RunEvidence& e) -> std::optional<double> {
                             const auto& r = e.result.trace.resumed_from;
                             if (r.step < 0) return std::nullopt;
                             return r.step;
                         }));
    v.push_back(run_wide("resume.from_devices",
                         "devices of the run that wrote the checkpoint this one resumed from",
                         [](const RunEvidence& e) -> std::optional<double> {
                             const auto& r = e.result.trace.resumed_from;
                             if (r.step < 0) return std::nullopt;
                             return r.devices;
                         }));
    // Failures and restarts (Trace::restarts): the job's attempts and the work they lost.
    v.push_back(run_wide("restarts", "times the job restarted after a failure",
                         [](const RunEvidence& e) -> std::optional<double> {
                             return static_cast<double>(e.result.trace.restarts.size());
                         }));
    v.push_back(run_wide("restart.resumed_from",
                         "training steps the checkpoint the last restart loaded held (-1: the "
                         "job started over)",
                         [](const RunEvidence& e) -> std::optional<double> {
                             const auto& r = e.result.trace.restarts;
                             if (r.empty()) return std::nullopt;
                             return r.back().resumed_from;
                         }));
    v.push_back(run_wide("restart.devices_after", "devices of the job after its last restart",
                         [](const RunEvidence& e) -> std::optional<double> {
                             const auto& r = e.result.trace.restarts;
                             if (r.empty()) return std::nullopt;
                             return r.back().devices_after;
                         }));
    v.push_back(run_wide("steps.executed",
                         "steps run, counting those a restart ran again and a failed one",
                         [](const RunEvidence& e) -> std::optional<double> {
                             const auto& t = e.result.trace;
                             if (t.restarts.empty()) return e.result.steps_completed;
                             return static_cast<double>(t.trained_step.size());
                         }));
    v.push_back(run_wide("steps.lost", "steps run whose work a failure threw away",
                         [](const RunEvidence& e) -> std::optional<double> {
                             const auto& t = e.result.trace;
                             if (t.restarts.empty()) return 0.0;
                             return static_cast<double>(t.trained_step.size()) -
                                    e.result.steps_completed;
                         }));
    v.push_back(run_wide("goodput", "steps kept over steps run (useful work over all work)",
                         [](const RunEvidence& e) -> std::optional<double> {
                             const auto& t = e.result.trace;
                             if (t.restarts.empty() || t.trained_step.empty()) return 1.0;
                             return static_cast<double>(e.result.steps_completed) /
                                    static_cast<double>(t.trained_step.size());
                         }));
    // The dataset: what the plan made of it, and what each device read (summarize_data).
    auto data_wide = [](std::string_view name, std::string_view meaning,
                        std::function<double(const Trace::DataReads&, const DataSummary&)> read) {
        return run_wide(name, meaning, [read](const RunEvidence& e) -> std::optional<double> {
            const DataSummary d = summarize_data(e.result.trace);
            if (!d.present) return std::nullopt;
            return read(e.result.trace.data, d);
        });
    };
    auto data_device = [](std::string_view name, std::string_view meaning,
                          std::function<double(const DataSummary::Device&)> read) -> MetricDef {
        return {{name, true, meaning},
                [read](const RunEvidence& e, int d) -> std::optional<double> {
                    const DataSummary s = summarize_data(e.result.trace);
                    if (!s.present || d < 0 || static_cast<std::size_t>(d) >= s.devices.size())
                        return std::nullopt;
                    return read(s.devices[static_cast<std::size_t>(d)]);
                }};
    };
    v.push_back(data_wide("data.dataset_batch", "the value given to dataset.batch()",
                          [](const auto& r, const auto&) { return r.dataset_batch; }));
    v.push_back(data_wide("data.global_batch", "examples all replicas process in one step",
                          [](const auto& r, const auto&) { return r.global_batch; }));
    v.push_back(data_wide("data.per_replica_batch", "examples each replica processes in one step",
                          [](const auto& r, const auto&) { return r.per_replica_batch; }));
    v.push_back(data_wide("data.pipelines", "input pipelines (one per node, tf.data's workers)",
                          [](const auto& r, const auto&) { return r.pipelines; }));
    v.push_back(data_wide("data.examples", "examples in the dataset, all files",
                          [](const auto&, const auto& d) { return d.examples; }));
    v.push_back(data_wide("data.duplicate_fraction",
                          "share of the examples read that another device read in the same step",
                          [](const auto&, const auto& d) { return d.duplicate_fraction; }));
    v.push_back(data_wide("data.distinct_read", "distinct examples the run read, all devices",
                          [](const auto&, const auto& d) { return d.distinct_read; }));
    v.push_back(data_wide("data.epochs", "epochs begun (the most of any device)",
                          [](const auto&, const auto& d) { return d.epochs; }));
    v.push_back(data_wide(
        "data.left_at_step",
        "step (counting from 1, as the timeline) at which devices with no "
        "batch left the training loop (-1: none)",
        [](const auto& r, const auto&) { return r.left_at_step < 0 ? -1 : r.left_at_step + 1; }));
    v.push_back(data_wide(
        "data.devices_left", "devices that left the training loop, out of data",
        [](const auto& r, const auto&) { return static_cast<double>(r.left_devices.size()); }));
    v.push_back(data_device("data.steps_per_epoch",
                            "full batches the device's pipeline makes of one epoch",
                            [](const auto& d) { return d.steps_per_epoch; }));
    v.push_back(data_device("data.examples_kept", "examples of the device's pipeline's shard",
                            [](const auto& d) { return d.examples_kept; }));
    v.push_back(data_device("data.examples_scanned",
                            "examples the device's pipeline reads per epoch to make its shard",
                            [](const auto& d) { return d.examples_scanned; }));
    v.push_back(data_device("data.files_opened", "files the device's pipeline reads from",
                            [](const auto& d) { return d.files_opened; }));
    v.push_back(data_device("data.files_read", "distinct files the device's examples came from",
                            [](const auto& d) { return d.files_read; }));
    v.push_back(data_device("data.reads", "examples the device read, all steps",
                            [](const auto& d) { return d.reads; }));
    v.push_back(run_wide("routing.capacity", "MoE: tokens of a sequence each expert has room for",
                         [](const RunEvidence& e) -> std::optional<double> {
                             const ExpertRouting& r = e.result.trace.routing;
                             if (r.experts == 0) return std::nullopt;
                             return r.capacity;
                         }));
    v.push_back(run_wide("routing.aux_loss.first", "MoE: load-balancing loss of the first step",
                         [](const RunEvidence& e) -> std::optional<double> {
                             const auto& a = e.result.trace.routing.aux_loss;
                             if (a.empty()) return std::nullopt;
                             return a.front();
                         }));
    v.push_back(run_wide("routing.aux_loss.last", "MoE: load-balancing loss of the last step",
                         [](const RunEvidence& e) -> std::optional<double> {
                             const auto& a = e.result.trace.routing.aux_loss;
                             if (a.empty()) return std::nullopt;
                             return a.back();
                         }));
    v.push_back(run_wide("staleness.max", "ps: most versions an applied gradient lagged the server",
                         [](const RunEvidence& e) -> std::optional<double> {
                             const auto& h = e.metrics.staleness_histogram;
                             if (h.empty()) return std::nullopt;
                             return h.rbegin()->first;
                         }));
    v.push_back(run_wide("staleness.mean", "ps: mean staleness of the applied gradients",
                         [](const RunEvidence& e) -> std::optional<double> {
                             double sum = 0, n = 0;
                             for (const auto& [staleness, count] : e.metrics.staleness_histogram) {
                                 sum += double(staleness) * count;
                                 n += count;
                             }
                             if (n == 0) return std::nullopt;
                             return sum / n;
                         }));
    v.push_back(per_device("busy_fraction", "compute busy / step window",
                           [](const DeviceMetrics& d) { return d.busy_fraction; }));
    v.push_back(per_device("busy", "compute busy, seconds",
                           [](const DeviceMetrics& d) { return d.busy_s; }));
    v.push_back(per_device("idle", "compute idle, seconds",
                           [](const DeviceMetrics& d) { return d.idle_s; }));
    v.push_back(per_device("comm", "time covered by communication, seconds",
                           [](const DeviceMetrics& d) { return d.comm_s; }));
    v.push_back(per_device("exposed_comm.device", "exposed communication, seconds",
                           [](const DeviceMetrics& d) { return d.exposed_comm_s; }));
    // busy + idle is the step window (idle is the window less busy).
    v.push_back(per_device("exposed_comm_fraction", "exposed communication / step window",
                           [](const DeviceMetrics& d) {
                               const double window = d.busy_s + d.idle_s;
                               return window > 0 ? d.exposed_comm_s / window : 0.0;
                           }));
    for (std::size_t c = 0; c < kMemoryCategoryCount; ++c) {
        v.push_back(per_device(intern("peak." + std::string(kMemoryCategoryNames[c])),
                               "peak bytes of this memory category", [c](const DeviceMetrics& d) {
                                   return static_cast<double>(d.peak_bytes[c]);
                               }));
    }
    v.push_back(
        per_device("peak.total", "peak bytes of all categories together",
                   [](const DeviceMetrics& d) { return static_cast<double>(d.peak_total_bytes); }));
    v.push_back({{"capacity", true, "the device's memory capacity, bytes"},
                 [](const RunEvidence& e, int d) -> std::optional<double> {
                     const auto& caps = e.result.trace.capacity_bytes;
                     if (d < 0 || static_cast<std::size_t>(d) >= caps.size()) return std::nullopt;
                     return static_cast<double>(caps[static_cast<std::size_t>(d)]);
                 }});
    v.push_back(per_model_state("model_state.parameters", "parameter bytes at the end",
                                [](const ModelStateMetrics& s) { return double(s.parameters); }));
    v.push_back(per_model_state("model_state.gradients", "gradient bytes at the end",
                                [](const ModelStateMetrics& s) { return double(s.gradients); }));
    v.push_back(
        per_model_state("model_state.optimizer_state", "optimizer-state bytes at the end",
                        [](const ModelStateMetrics& s) { return double(s.optimizer_state); }));
    v.push_back(per_model_state(
        "host.optimizer_state",
        "ZeRO-Offload: optimizer-state bytes the device keeps in host memory at the end",
        [](const ModelStateMetrics& s) { return double(s.host_optimizer_state); }));
    v.push_back(per_model_state(
        "host.total",
        "ZeRO-Offload: bytes the device keeps in host memory at the end (optimizer state, its "
        "shard's parameters and fp32 gradients)",
        [](const ModelStateMetrics& s) { return double(s.host_total()); }));
    v.push_back(per_model_state("host.analytic", "ZeRO-Offload: the analytic bytes of host.total",
                                [](const ModelStateMetrics& s) { return s.analytic_host; }));
    v.push_back(per_model_state(
        "host.parameters",
        "ZeRO-Offload: parameter bytes (the shard's copy) the device keeps in host memory at the "
        "end",
        [](const ModelStateMetrics& s) { return double(s.host_parameters); }));
    v.push_back(per_model_state(
        "nvme.optimizer_state",
        "ZeRO-Infinity: optimizer-state bytes the device keeps in its NVMe share at the end",
        [](const ModelStateMetrics& s) { return double(s.nvme_optimizer_state); }));
    v.push_back(per_model_state(
        "nvme.parameters",
        "ZeRO-Infinity: parameter-shard bytes the device keeps in its NVMe share at the end",
        [](const ModelStateMetrics& s) { return double(s.nvme_parameters); }));
    v.push_back(per_model_state(
        "nvme.total",
        "ZeRO-Infinity: bytes the device keeps in its NVMe share at the end (optimizer state "
        "and parameter shard)",
        [](const ModelStateMetrics& s) { return double(s.nvme_total()); }));
    v.push_back(per_model_state("nvme.analytic", "ZeRO-Infinity: the analytic bytes of nvme.total",
                                [](const ModelStateMetrics& s) { return s.analytic_nvme; }));
    v.push_back(per_model_state("model_state.analytic_parameters",
                                "the strategy's analytic parameter bytes",
                                [](const ModelStateMetrics& s) { return s.analytic_parameters; }));
    v.push_back(per_model_state("model_state.analytic_gradients",
                                "the strategy's analytic gradient bytes",
                                [](const ModelStateMetrics& s) { return s.analytic_gradients; }));
    v.push_back(
        per_model_state("model_state.analytic_optimizer_state",
                        "the strategy's analytic optimizer-state bytes (ZeRO formulas)",
                        [](const ModelStateMetrics& s) { return s.analytic_optimizer_state; }));
    v.push_back({{"max_microbatches_alive", true,
                  "most micro-batches with forward started and backward unfinished"},
                 [](const RunEvidence& e, int d) -> std::optional<double> {
                     if (const auto* s = stage_activation(e, d)) return s->max_microbatches_alive;
                     return std::nullopt;
                 }});
    v.push_back({{"activations.analytic", true,
                  "transformer, no pipeline: one micro-batch's activation bytes by Korthikanti "
                  "et al.'s count in fp32"},
                 [](const RunEvidence& e, int d) -> std::optional<double> {
                     const auto* s = stage_activation(e, d);
                     if (!s || s->analytic_activation_bytes < 0) return std::nullopt;
                     return s->analytic_activation_bytes;
                 }});
    v.push_back({{"ring_steps_per_collective", true,
                  "reduce-scatter and all-gather ring steps per collective call"},
                 ring_steps_per_collective});
    return v;
}

const std::vector<MetricDef>& metric_defs() {
    static const std::vector<MetricDef> defs = build_metrics();
    return defs;
}

const MetricDef* find_metric(std::string_view name) {
    for (const auto& d : metric_defs())
        if (d.info.name == name) return &d;
    return nullptr;
}

std::string metric_names() {
    std::string out;
    for (const auto& d : metric_defs()) out += (out.empty() ? "" : ", ") + std::string(d.info.name);
    return out;
}

// ------------------------------------------------------------------------------------ parsing

struct Field {
    const json& value;
    std::string key;  // "scenario key 'expect[2].metric' in origin"

    [[noreturn]] void fail(const std::string& reason) const {
        throw BadInput(key, reason, __FILE__, __LINE__);
    }
    double number() const {
        if (!value.is_number() || !std::isfinite(value.get<double>()))
            fail("must be a number, got " + value.dump());
        return value.get<double>();
    }
    int device() const {
        if (!value.is_number_integer() || value.get<long long>() < 0 ||
            value.get<long long>() > 1 << 20)
            fail("must be a device index (0 or more), got " + value.dump());
        return value.get<int>();
    }
    std::string text() const {
        if (!value.is_string()) fail("must be a string, got " + value.dump());
        return value.get<std::string>();
    }
};

class ClaimParser {
  public:
    ClaimParser(const json& claim, std::string path, std::string origin, Expectations& out)
        : claim_(claim), path_(std::move(path)), origin_(std::move(origin)), out_(out) {}

    Claim parse() {
        if (!claim_.is_object() || claim_.empty())
            Field{claim_, spell("")}.fail("must be a JSON object holding one claim");
        Claim c;
        c.key = path_;
        if (claim_.contains("status"))
            parse_status(c);
        else if (claim_.contains("loss"))
            parse_loss(c);
        else if (claim_.contains("metric"))
            parse_metric(c);
        else
            Field{claim_, spell("")}.fail(
                "needs one of 'status', 'loss' or 'metric' (see resources/decks/README.md)");
        return c;
    }

  private:
    const json& claim_;
    std::string path_, origin_;
    Expectations& out_;

    std::string spell(const std::string& field) const {
        return "scenario key '" + path_ + (field.empty() ? "" : "." + field) + "' in " + origin_;
    }
    Field field(const std::string& name) const { return {claim_.at(name), spell(name)}; }
    void only(std::initializer_list<const char*> allowed) const {
        for (const auto& [k, v] : claim_.items()) {
            bool ok = false;
            std::string list;
            for (const char* a : allowed) {
                ok = ok || k == a;
                list += (list.empty() ? "" : ", ") + std::string(a);
            }
            if (!ok) Field{v, spell(k)}.fail("is not a key of this claim (allowed: " + list + ")");
        }
    }

    void parse_status(Claim& c) {
        if (claim_.at("status") == "refused") return parse_refused(c);
        only({"status", "device", "category", "memory", "compare_with"});
        c.kind = Claim::Kind::status;
        // A comparison run's status: the run beside this one ends so (e.g. out of memory).
        if (claim_.contains("compare_with")) c.subject.variant = parse_variant();
        const std::string s = field("status").text();
        if (s == "ok")
            c.status = RunStatus::ok;
        else if (s == "out_of_memory")
            c.status = RunStatus::out_of_memory;
        else if (s == "failed")
            c.status = RunStatus::failed;
        else if (s == "timed_out") {
            c.status = RunStatus::failed;
            c.timed_out = true;
        } else
            field("status").fail(
                "must be \"ok\", \"out_of_memory\", \"failed\", \"timed_out\" or \"refused\", got "
                "\"" +
                s + "\"");
        if ((claim_.contains("device") || claim_.contains("category") ||
             claim_.contains("memory")) &&
            c.status != RunStatus::out_of_memory)
            field("status").fail("device, category and memory describe an out_of_memory status");
        if (claim_.contains("memory")) {
            // Which memory ran out: the device's own, or its host or NVMe share (offload).
            const std::string name = field("memory").text();
            if (name == "device")
                c.oom_memory = OffloadDevice::none;
            else if (name == "host")
                c.oom_memory = OffloadDevice::cpu;
            else if (name == "nvme")
                c.oom_memory = OffloadDevice::nvme;
            else
                field("memory").fail("must be \"device\", \"host\" or \"nvme\", got \"" + name +
                                     "\"");
        }
        if (claim_.contains("device")) c.oom_device = field("device").device();
        if (claim_.contains("category")) {
            const std::string name = field("category").text();
            c.oom_category = memory_category_from_name(name);
            if (!c.oom_category)
                field("category")
                    .fail("unknown memory category '" + name + "' (" + category_list() + ")");
        }
    }

    void parse_loss(Claim& c) {
        only({"loss", "by_percent"});
        const std::string s = field("loss").text();
        if (s == "falls") {
            c.kind = Claim::Kind::loss_falls;
            if (!claim_.contains("by_percent"))
                field("loss").fail("\"falls\" needs by_percent (the least fall, in percent)");
        } else if (s == "diverges") {
            c.kind = Claim::Kind::loss_diverges;
            c.percent = 100.0;  // default: the last loss at least doubles the first
        } else {
            field("loss").fail("must be \"falls\" or \"diverges\", got \"" + s + "\"");
        }
        if (claim_.contains("by_percent")) {
            c.percent = field("by_percent").number();
            if (c.percent <= 0) field("by_percent").fail("must be more than 0");
        }
    }

    // {"metric"?, "device"?, "run"?}; omitted fields are the claim's own.
    MetricRef parse_ref(const std::string& name, const Claim& c, int variant) const {
        const Field f = field(name);
        if (!f.value.is_object() || f.value.empty())
            f.fail("must be an object with metric, device and/or run (\"this\" or \"other\")");
        MetricRef r = c.subject;
        for (const auto& [k, v] : f.value.items()) {
            const Field sub{v, spell(name + "." + k)};
            if (k == "metric") {
                r.metric = sub.text();
                if (!find_metric(r.metric))
                    sub.fail("unknown metric '" + r.metric + "' (known: " + metric_names() + ")");
            } else if (k == "device") {
                r.device = sub.device();
            } else if (k == "run") {
                const std::string run = sub.text();
                if (run == "other") {
                    if (variant < 0) sub.fail("\"other\" needs compare_with in this claim");
                    r.variant = variant;
                } else if (run == "this") {
                    r.variant = -1;
                } else {
                    sub.fail("must be \"this\" or \"other\", got \"" + run + "\"");
                }
            } else {
                sub.fail("is not a key of a reference (allowed: metric, device, run)");
            }
        }
        const MetricDef* def = find_metric(r.metric);
        if (!def->info.per_device && f.value.contains("device"))
            field(name).fail("metric '" + r.metric + "' is run-wide and takes no device");
        if (!def->info.per_device) r.device = -1;
        return r;
    }

    // {"status": "refused", "key": K, "compare_with": {...}}: that comparison run is refused
    // before it starts, naming setting K.
    void parse_refused(Claim& c) {
        only({"status", "key", "compare_with"});
        c.kind = Claim::Kind::refused;
        if (!claim_.contains("key"))
            Field{claim_, spell("")}.fail("a refused claim names the setting refused in 'key'");
        if (!claim_.contains("compare_with"))
            Field{claim_, spell("")}.fail(
                "a refused claim is about a comparison run: give it compare_with");
        c.refused_key = field("key").text();
        c.subject.variant = parse_variant();
        out_.refused_variants.push_back(c.subject.variant);
    }

    int parse_variant() {
        const Field f = field("compare_with");
        if (!f.value.is_object() || f.value.empty())
            f.fail("must be an object of scenario keys that differ from this scenario");
        if (f.value.contains("expect")) f.fail("cannot hold expectations of its own");
        // Checked against a blank config now (keys and types); variant_config checks the
        // combination once the base scenario is known.
        // Key by key, so that a message names "expect[i].compare_with.key".
        for (const auto& [k, v] : f.value.items()) {
            RunConfig scratch;
            ConfigSources sources;
            try {
                apply_scenario_json(json{{k, v}}.dump(), origin_, scratch, sources);
            } catch (const BadInput& e) {
                const std::string what = e.what();
                const std::string prefix = e.key() + ": ";
                Field{v, spell("compare_with." + k)}.fail(
                    what.rfind(prefix, 0) == 0 ? what.substr(prefix.size()) : what);
            }
        }
        const std::string text = f.value.dump();
        for (std::size_t i = 0; i < out_.variants.size(); ++i)
            if (out_.variants[i] == text) return static_cast<int>(i);
        out_.variants.push_back(text);
        return static_cast<int>(out_.variants.size()) - 1;
    }

    void parse_metric(Claim& c) {
        only({"metric", "device", "devices", "relative_to", "between", "at_least", "at_most",
              "equals", "near", "tolerance", "relative_tolerance", "compare_with", "run"});
        c.kind = Claim::Kind::metric;
        c.subject.metric = field("metric").text();
        const MetricDef* def = find_metric(c.subject.metric);
        if (!def)
            field("metric").fail("unknown metric '" + c.subject.metric +
                                 "' (known: " + metric_names() + ")");
        const int variant = claim_.contains("compare_with") ? parse_variant() : -1;
        if (def->info.per_device) {
            if (claim_.contains("device") == claim_.contains("devices"))
                field("metric").fail("'" + c.subject.metric +
                                     "' is per device: give device (one index) or devices (a "
                                     "list, or \"all\")");
            if (claim_.contains("device")) {
                c.devices = {field("device").device()};
            } else {
                const Field f = field("devices");
                if (f.value == "all") {
                    c.all_devices = true;
                } else if (f.value.is_array() && !f.value.empty()) {
                    for (const auto& d : f.value) c.devices.push_back(Field{d, f.key}.device());
                } else {
                    f.fail("must be a non-empty list of device indices or \"all\"");
                }
            }
        } else if (claim_.contains("device") || claim_.contains("devices")) {
            field("metric").fail("'" + c.subject.metric + "' is run-wide and takes no device");
        }
        // "run": "other": the claim is about the comparison run's own figure.
        if (claim_.contains("run")) {
            const std::string run = field("run").text();
            if (run != "other" && run != "this")
                field("run").fail("must be \"this\" or \"other\", got \"" + run + "\"");
            if (run == "other" && variant < 0)
                field("run").fail("\"other\" needs compare_with (the run to read)");
            if (run == "other") c.subject.variant = variant;
        }
        if (claim_.contains("relative_to")) c.relative_to = parse_ref("relative_to", c, variant);
        if (variant >= 0 && c.subject.variant < 0 &&
            !(c.relative_to && c.relative_to->variant >= 0))
            field("compare_with")
                .fail("is read through \"run\": \"other\", or relative_to {\"run\": \"other\"}");

        int comparisons = 0;
        if (claim_.contains("between")) {
            const Field f = field("between");
            if (!f.value.is_array() || f.value.size() != 2)
                f.fail("must be [low, high], got " + f.value.dump());
            c.at_least = Field{f.value[0], f.key}.number();
            c.at_most = Field{f.value[1], f.key}.number();
            if (*c.at_least > *c.at_most) f.fail("low is above high");
            ++comparisons;
        }
        if (claim_.contains("at_least")) {
            c.at_least = field("at_least").number();
            ++comparisons;
        }
        if (claim_.contains("at_most")) {
            c.at_most = field("at_most").number();
            ++comparisons;
        }
        if (claim_.contains("equals")) {
            c.near_value = field("equals").number();
            c.tolerance = 1e-9;  // counts and sizes, exact up to the division
            ++comparisons;
        }
        if (claim_.contains("near")) {
            const Field f = field("near");
            if (f.value.is_number())
                c.near_value = f.number();
            else
                c.near_ref = parse_ref("near", c, variant);
            if (claim_.contains("tolerance") == claim_.contains("relative_tolerance"))
                f.fail(
                    "needs tolerance (absolute) or relative_tolerance (a fraction of the "
                    "target)");
            const bool relative = claim_.contains("relative_tolerance");
            c.tolerance = field(relative ? "relative_tolerance" : "tolerance").number();
            c.tolerance_is_relative = relative;
            if (c.tolerance < 0) field(relative ? "relative_tolerance" : "tolerance").fail(">= 0");
            ++comparisons;
        } else if (claim_.contains("tolerance") || claim_.contains("relative_tolerance")) {
            field("metric").fail("tolerance and relative_tolerance go with near");
        }
        if (comparisons != 1 &&
            !(comparisons == 2 && claim_.contains("at_least") && claim_.contains("at_most")))
            field("metric").fail(
                "needs one comparison: between, at_least and/or at_most, equals, or near");
    }
};

// ----------------------------------------------------------------------------------- checking

std::string figure(double v) {
    char buf[32];
    const double a = std::fabs(v);
    if (v == std::floor(v) && a < 1e15)
        std::snprintf(buf, sizeof buf, "%.0f", v);
    else if (a != 0 && (a < 1e-3 || a >= 1e6))
        std::snprintf(buf, sizeof buf, "%.3g", v);
    else
        std::snprintf(buf, sizeof buf, "%.3f", v);
    return buf;
}

std::string ref_text(const MetricRef& r, const Claim& c, const Expectations& x) {
    std::string s;
    if (r.metric != c.subject.metric) s = r.metric;
    if (r.device >= 0)
        s += std::string(s.empty() ? "" : " ") + "device " + std::to_string(r.device);
    if (r.variant >= 0)
        s += std::string(s.empty() ? "" : " ") + "with " +
             x.variants[static_cast<std::size_t>(r.variant)];
    return s.empty() ? c.subject.metric : s;
}

struct Checker {
    const Expectations& x;
    const RunEvidence& run;
    const std::vector<RunEvidence>& variants;

    const RunEvidence* evidence(int variant) const {
        if (variant < 0) return &run;
        if (static_cast<std::size_t>(variant) >= variants.size()) return nullptr;
        return &variants[static_cast<std::size_t>(variant)];
    }
    // `device` stands in for a reference that names none (the claim's device).
    std::optional<double> read(const MetricRef& r, int device) const {
        const RunEvidence* e = evidence(r.variant);
        if (!e) return std::nullopt;
        const MetricDef* def = find_metric(r.metric);
        return read_metric(r.metric, *e,
                           def && def->info.per_device ? (r.device >= 0 ? r.device : device) : -1);
    }
    std::vector<double> samples(const MetricRef& r, int device) const {
        const RunEvidence* e = evidence(r.variant);
        if (!e) return {};
        return step_samples(r.metric, *e, r.device >= 0 ? r.device : device);
    }

    // "Peak activations memory on device 0 is between 9x and 12x the comparison run's
    // (seq_len 8)".
    std::string plain_words(const Claim& c, const std::vector<int>& devices,
                            bool per_device) const {
        std::string s = metric_words(c.subject.metric);
        if (c.subject.variant >= 0)
            s += " in the comparison run (" +
                 variant_words(x.variants[static_cast<std::size_t>(c.subject.variant)]) + ")";
        if (per_device) {
            if (c.all_devices) {
                s += " on every device";
            } else {
                s += devices.size() == 1 ? " on device " : " on devices ";
                for (std::size_t i = 0; i < devices.size(); ++i)
                    s += (i ? ", " : "") + std::to_string(devices[i]);
            }
        }
        const bool ratio = c.relative_to.has_value();
        const auto v = [&](double value) { return value_words(c.subject.metric, value, ratio); };
        const std::string of = ratio ? " " + ref_words(*c.relative_to, c) : "";
        if (c.at_least && c.at_most)
            s += " is between " + v(*c.at_least) + " and " + v(*c.at_most) + of;
        else if (c.at_least)
            s += " is at least " + v(*c.at_least) + of;
        else if (c.at_most)
            s += " is at most " + v(*c.at_most) + of;
        if (c.near_value && c.tolerance == 1e-9 && !c.tolerance_is_relative) {
            s += " is exactly " + v(*c.near_value) + of;
        } else if (c.near_value || c.near_ref) {
            const std::string target =
                c.near_value ? v(*c.near_value) + of : ref_words(*c.near_ref, c);
            // A share of a share ("within 7% of 29%") would read as points: say the factor.
            const bool percent_figure = !ratio && v(0.5).back() == '%';
            if (c.tolerance_is_relative && percent_figure)
                s += " is " + value_words("", 1 - c.tolerance, true) + " to " +
                     value_words("", 1 + c.tolerance, true) + " " + target;
            else if (c.tolerance_is_relative)
                s += " is within " + value_words("", 100 * c.tolerance, false) + "%" + " of " +
                     target;
            else if (percent_figure)
                s += " is within " + value_words("", 100 * c.tolerance, false) +
                     " percentage points of " + target;
            else
                s += " is within " + v(c.tolerance) + " of " + target;
        }
        return s;
    }

    // "the comparison run's (seq_len 8)", "device 0's", "the textbook bubble".
    std::string ref_words(const MetricRef& r, const Claim& c) const {
        std::string s;
        const std::string variant =
            r.variant >= 0
                ? " (" + variant_words(x.variants[static_cast<std::size_t>(r.variant)]) + ")"
                : "";
        if (r.metric == c.subject.metric) {
            if (r.variant >= 0 && r.device >= 0)
                return "device " + std::to_string(r.device) + "'s in the comparison run" + variant;
            if (r.variant >= 0) return "the comparison run's" + variant;
            if (r.device >= 0) return "device " + std::to_string(r.device) + "'s";
            return "its own";
        }
        s = metric_words(r.metric);
        s[0] = static_cast<char>(std::tolower(static_cast<unsigned char>(s[0])));
        if (s.rfind("one ", 0) != 0 && s.rfind("the ", 0) != 0) s = "the " + s;
        if (r.device >= 0) s += " of device " + std::to_string(r.device);
        if (r.variant >= 0) s += " in the comparison run" + variant;
        return s;
    }

    // A timed claim's noise: the range of the figure over the steps (and repeats) of each run
    // it reads, and for a comparison whether the two ranges stay apart.
    void describe_spread(const Claim& c, const std::vector<int>& devices, ClaimOutcome& o) const {
        const int d = devices.empty() ? -1 : devices.front();
        const Spread subject = spread_of(samples(c.subject, d));
        if (subject.empty()) return;
        const auto range = [&](const Spread& sp, const std::string& metric) {
            return value_words(metric, sp.min, false) + " to " + value_words(metric, sp.max, false);
        };
        const auto steps = [](const Spread& sp) {
            return std::to_string(sp.samples) + (sp.samples == 1 ? " step" : " steps");
        };
        o.spread = "this run's " + steps(subject) + ": " + range(subject, c.subject.metric);
        const MetricRef* other = c.relative_to ? &*c.relative_to
                                 : c.near_ref  ? &*c.near_ref
                                               : nullptr;
        if (!other || other->variant < 0) return;
        const Spread theirs = spread_of(samples(*other, d));
        if (theirs.empty()) return;
        o.spread += "; the comparison run's " + steps(theirs) + ": " + range(theirs, other->metric);
        o.beyond_spread = subject.max < theirs.min || theirs.max < subject.min;
        o.spread += *o.beyond_spread ? " (the difference is larger than the spread)"
                                     : " (the ranges overlap: the difference is within the noise)";
    }

    static std::string memory_words(OffloadDevice where) {
        return where == OffloadDevice::cpu    ? "host memory"
               : where == OffloadDevice::nvme ? "NVMe share"
                                              : "device memory";
    }

    ClaimOutcome status(const Claim& c) const {
        ClaimOutcome o;
        const int v = c.subject.variant;
        const std::string words =
            v >= 0 ? variant_words(x.variants[static_cast<std::size_t>(v)]) : std::string();
        const std::string who = v >= 0 ? "The comparison run (" + words + ")" : "The run";
        o.description = (v >= 0 ? "comparison run (" + words + ") " : std::string()) + "status " +
                        (c.timed_out ? std::string("timed_out") : std::string(name_of(c.status)));
        if (c.oom_memory) o.description += " in " + memory_words(*c.oom_memory);
        if (c.oom_device) o.description += " on device " + std::to_string(*c.oom_device);
        if (c.oom_category) o.description += " in " + std::string(name_of(*c.oom_category));
        const RunEvidence* e = evidence(v);
        const RunStatus measured = e ? e->result.status : RunStatus::failed;
        o.measured = e ? std::string(name_of(measured)) : "not run";
        if (e && e->result.timed_out) o.measured += " (a collective timed out)";
        const OomInfo* oom = e && e->result.oom ? &*e->result.oom : nullptr;
        if (oom)
            o.measured += " in " + memory_words(oom->where) + " on device " +
                          std::to_string(oom->device) + " in " +
                          std::string(name_of(oom->category));
        o.kind = c.kind;
        o.status = c.status;
        o.timed_out = c.timed_out;
        o.variant = v;
        if (c.oom_device) o.devices = {*c.oom_device};
        if (c.status == RunStatus::out_of_memory) {
            o.plain = who + " runs out of " +
                      (c.oom_memory ? memory_words(*c.oom_memory) : std::string("memory"));
            if (c.oom_device) o.plain += " on device " + std::to_string(*c.oom_device);
            if (c.oom_category) o.plain += ", allocating " + std::string(name_of(*c.oom_category));
        } else if (c.timed_out) {
            o.plain = who + " stops: a collective times out waiting for a peer that never comes";
        } else {
            o.plain = who + " " +
                      (c.status == RunStatus::ok ? "completes every step"
                                                 : "ends " + std::string(name_of(c.status)));
        }
        o.passed = e && measured == c.status;
        if (c.oom_device) o.passed = o.passed && oom && oom->device == *c.oom_device;
        if (c.oom_category) o.passed = o.passed && oom && oom->category == *c.oom_category;
        if (c.oom_memory) o.passed = o.passed && oom && oom->where == *c.oom_memory;
        if (c.timed_out) o.passed = o.passed && e->result.timed_out;
        return o;
    }

    ClaimOutcome refused(const Claim& c) const {
        ClaimOutcome o;
        const RunEvidence* e = evidence(c.subject.variant);
        const std::string words =
            variant_words(x.variants[static_cast<std::size_t>(c.subject.variant)]);
        o.description = "comparison run (" + words + ") refused, naming " + c.refused_key;
        o.kind = Claim::Kind::status;  // shown as a status: the run's own lines
        o.status = RunStatus::failed;
        o.variant = c.subject.variant;
        o.plain = "The comparison run (" + words + ") is refused before it starts, naming " +
                  c.refused_key;
        if (e && e->refused) {
            o.measured = "refused (" + e->refused->key + "): " + e->refused->reason;
            o.passed = e->refused->key == c.refused_key;
        } else {
            o.measured = e ? "accepted: it ran" : "not run";
        }
        o.measured_words = o.measured;
        return o;
    }

    ClaimOutcome loss(const Claim& c) const {
        ClaimOutcome o;
        const auto& steps = run.metrics.steps;
        const bool falls = c.kind == Claim::Kind::loss_falls;
        o.kind = c.kind;
        o.description = falls ? "loss falls by at least " + figure(c.percent) + "%"
                              : "loss diverges (last at least " + figure(c.percent) +
                                    "% above first, or not finite)";
        o.plain = falls ? "The loss falls by at least " + figure(c.percent) +
                              "% from the first step to the last"
                        : "The loss diverges: the last step's is at least " + figure(c.percent) +
                              "% above the first's, or not a number";
        if (steps.size() < 2) {
            o.measured = "only " + std::to_string(steps.size()) + " step(s)";
            return o;
        }
        const double first = steps.front().loss, last = steps.back().loss;
        o.measured = figure(first) + " -> " + figure(last);
        if (falls) {
            const double fall = std::isfinite(last) ? 100.0 * (first - last) / first : -INFINITY;
            o.measured += " (" + figure(fall) + "%)";
            o.passed = fall >= c.percent;
        } else {
            o.passed = !std::isfinite(last) || last >= first * (1.0 + c.percent / 100.0);
        }
        return o;
    }

    ClaimOutcome metric(const Claim& c) const {
        ClaimOutcome o;
        o.timed = is_timed_metric(c.subject.metric) ||
                  (c.relative_to && is_timed_metric(c.relative_to->metric)) ||
                  (c.near_ref && is_timed_metric(c.near_ref->metric));
        std::vector<int> devices = c.devices;
        if (c.all_devices)
            for (int d = 0; d < run.result.trace.devices; ++d) devices.push_back(d);
        const bool per_device = !devices.empty() || c.all_devices;
        if (!per_device) devices = {-1};

        o.description = c.subject.metric;
        if (c.subject.variant >= 0)
            o.description += " with " + x.variants[static_cast<std::size_t>(c.subject.variant)];
        if (per_device) {
            if (c.all_devices) {
                o.description += " on every device";
            } else {
                o.description += devices.size() == 1 ? " on device " : " on devices ";
                for (std::size_t i = 0; i < devices.size(); ++i)
                    o.description += (i ? "," : "") + std::to_string(devices[i]);
            }
        }
        if (c.relative_to) o.description += " / " + ref_text(*c.relative_to, c, x);
        o.kind = c.kind;
        o.metric = c.subject.metric;
        if (per_device) o.devices = devices;
        for (const MetricRef* r : {&c.subject, c.relative_to ? &*c.relative_to : nullptr,
                                   c.near_ref ? &*c.near_ref : nullptr})
            if (r && r->variant >= 0) o.variant = r->variant;
        o.plain = plain_words(c, devices, per_device);
        describe_spread(c, devices, o);

        o.passed = !devices.empty();
        std::string targets;
        for (const int d : devices) {
            std::optional<double> v = read(c.subject, d);
            if (v && c.relative_to) {
                const auto ref = read(*c.relative_to, d);
                v = ref && *ref != 0 ? std::optional<double>(*v / *ref) : std::nullopt;
            }
            if (!o.measured.empty()) o.measured += " ";
            if (!v) {
                o.measured += "n/a";
                o.passed = false;
                continue;
            }
            o.measured += figure(*v);
            o.measured_words +=
                std::string(o.measured_words.empty() ? "" : ", ") +
                (per_device && devices.size() > 1 ? "device " + std::to_string(d) + " " : "") +
                value_words(c.subject.metric, *v, c.relative_to.has_value());
            bool ok = true;
            if (c.at_least) ok = ok && *v >= *c.at_least;
            if (c.at_most) ok = ok && *v <= *c.at_most;
            if (c.near_value || c.near_ref) {
                const auto target = c.near_value ? c.near_value : read(*c.near_ref, d);
                if (!target) {
                    ok = false;
                    targets = "n/a";
                } else {
                    const double tol =
                        c.tolerance_is_relative ? c.tolerance * std::fabs(*target) : c.tolerance;
                    ok = ok && std::fabs(*v - *target) <= tol;
                    if (targets.empty()) targets = figure(*target);
                }
            }
            o.passed = o.passed && ok;
        }
        if (c.at_least && c.at_most)
            o.description += " within [" + figure(*c.at_least) + ", " + figure(*c.at_most) + "]";
        else if (c.at_least)
            o.description += " >= " + figure(*c.at_least);
        else if (c.at_most)
            o.description += " <= " + figure(*c.at_most);
        if (c.near_value && c.tolerance == 1e-9 && !c.tolerance_is_relative) {
            o.description += " = " + figure(*c.near_value);
        } else if (c.near_value || c.near_ref) {
            o.description +=
                " within " + targets + " +- " +
                (c.tolerance_is_relative ? figure(100 * c.tolerance) + "%" : figure(c.tolerance));
            if (c.near_ref) o.description += " (" + ref_text(*c.near_ref, c, x) + ")";
        }
        return o;
    }
};

}  // namespace

std::optional<double> read_metric(std::string_view name, const RunEvidence& run, int device) {
    const MetricDef* def = find_metric(name);
    if (!def) return std::nullopt;
    // With repeats, a timed figure is the median over every repeat's steps.
    if (!run.repeats.empty()) {
        const Spread pooled = spread_of(step_samples(name, run, device));
        if (!pooled.empty()) return pooled.median;
    }
    return def->read(run, def->info.per_device ? device : -1);
}

std::vector<double> step_samples(std::string_view metric, const RunEvidence& run, int device) {
    std::vector<double> out;
    const auto per_device = [device](const std::vector<double>& v) -> std::optional<double> {
        if (device < 0 || static_cast<std::size_t>(device) >= v.size()) return std::nullopt;
        return v[static_cast<std::size_t>(device)];
    };
    const auto collect = [&](const RunMetrics& m) {
        for (const StepFigures& f : m.figure_step_samples) {
            std::optional<double> v;
            const auto busy_s = [&]() -> std::optional<double> {
                const auto b = per_device(f.busy_fraction);
                return b ? std::optional<double>(*b * f.time_s) : std::nullopt;
            };
            if (metric == "step_time")
                v = f.time_s;
            else if (metric == "samples_per_s")
                v = f.time_s > 0 ? std::optional<double>(run.config.batch / f.time_s)
                                 : std::nullopt;
            else if (metric == "busy")
                v = busy_s();
            else if (metric == "idle")
                v = busy_s() ? std::optional<double>(f.time_s - *busy_s()) : std::nullopt;
            else if (metric == "comm")
                v = per_device(f.comm_device_s);
            else if (metric == "bubble")
                v = f.bubble;
            else if (metric == "exposed_comm")
                v = f.exposed_comm_s;
            else if (metric == "busy_fraction")
                v = per_device(f.busy_fraction);
            else if (metric == "exposed_comm.device")
                v = per_device(f.exposed_comm_device_s);
            if (v) out.push_back(*v);
        }
    };
    collect(run.metrics);
    for (const RunMetrics& m : run.repeats) collect(m);
    return out;
}

void add_repeat(RunEvidence& evidence, const RunResult& result) {
    evidence.repeats.push_back(compute_metrics(result.trace, evidence.config));
}

bool is_timed_metric(std::string_view name) {
    for (std::string_view timed :
         {"step_time", "samples_per_s", "exposed_comm", "overlapped_comm", "bubble",
          "bubble.predicted", "busy_fraction", "busy", "idle", "comm", "exposed_comm.device",
          "exposed_comm_fraction", "bubble.cause.", "straggler.wait_per_step", "mfu", "hfu"})
        if (name == timed || (timed.ends_with('.') && name.starts_with(timed))) return true;
    if (name.starts_with("tier.") && name.ends_with(".busy_per_step")) return true;
    return false;
}

const std::vector<MetricInfo>& expectation_metrics() {
    static const std::vector<MetricInfo> infos = [] {
        std::vector<MetricInfo> v;
        for (const auto& d : metric_defs()) v.push_back(d.info);
        return v;
    }();
    return infos;
}

Expectations parse_expectations(std::string_view json_text, std::string_view origin) {
    const std::string o(origin);
    json root;
    try {
        root = json::parse(json_text);
    } catch (const json::exception& e) {  // a syntax error, or a number past double (1e999)
        throw BadInput("scenario key 'expect' in " + o,
                       std::string("is not valid JSON: ") + e.what(), __FILE__, __LINE__);
    }
    if (!root.is_array() || root.empty())
        throw BadInput("scenario key 'expect' in " + o,
                       "must be a non-empty list of claims, got " + root.dump(), __FILE__,
                       __LINE__);
    Expectations x;
    for (std::size_t i = 0; i < root.size(); ++i)
        x.claims.push_back(ClaimParser(root[i], "expect[" + std::to_string(i) + "]", o, x).parse());
    return x;
}

namespace {

// A comparison run's config with its compare_with keys applied, not yet validated.
struct Variant {
    RunConfig config;
    ConfigSources sources;
    std::string where;  // "ORIGIN (compare_with {...})"
};

Variant apply_variant(const RunConfig& base, const Expectations& x, std::size_t i,
                      std::string_view origin) {
    Variant v{base, {}, std::string(origin) + " (compare_with " + x.variants.at(i) + ")"};
    apply_scenario_json(x.variants.at(i), v.where, v.config, v.sources);
    // A setting the comparison switches off ("none") is no longer one the run names: a
    // comparison under a strategy it does not apply to keeps it switched off, not refused.
    const nlohmann::json settings = nlohmann::json::parse(x.variants.at(i));
    for (const auto& [key, value] : settings.items())
        if (value.is_string() && value.get<std::string>() == "none") v.sources.erase(key);
    return v;
}

// The setting a BadInput names, as a scenario key: "--cp-algorithm" and "scenario key
// 'cp_algorithm' in ..." both name cp_algorithm.
std::string as_scenario_key(std::string key) {
    if (key.rfind("--", 0) == 0) {
        key = key.substr(2);
        for (char& ch : key)
            if (ch == '-') ch = '_';
    } else if (const auto q = key.find('\''); q != std::string::npos) {
        key = key.substr(q + 1, key.find('\'', q + 1) - q - 1);
    }
    return key;
}

// What a BadInput says, without the setting it names.
std::string reason_of(const BadInput& e) {
    const std::string what = e.what();
    const auto colon = what.find(": ");
    return colon == std::string::npos ? what : what.substr(colon + 2);
}

}  // namespace

RunConfig variant_config(const RunConfig& base, const Expectations& x, std::size_t i,
                         std::string_view origin) {
    Variant v = apply_variant(base, x, i, origin);
    try {
        validate(v.config, v.sources);
    } catch (const BadInput& e) {
        // A setting the comparison kept from the scenario: name it as a key of the scenario
        // in the comparison run, not as a command-line flag.
        if (e.key().rfind("--", 0) != 0) throw;
        throw BadInput("scenario key '" + as_scenario_key(e.key()) + "' in " + v.where,
                       reason_of(e), __FILE__, __LINE__);
    }
    return v.config;
}

bool expects_refusal(const Expectations& x, std::size_t i) {
    return std::find(x.refused_variants.begin(), x.refused_variants.end(), static_cast<int>(i)) !=
           x.refused_variants.end();
}

std::optional<Refusal> variant_refusal(const RunConfig& base, const Expectations& x, std::size_t i,
                                       std::string_view origin) {
    if (!expects_refusal(x, i)) return std::nullopt;
    Variant v = apply_variant(base, x, i, origin);
    try {
        validate(v.config, v.sources);
    } catch (const BadInput& e) {
        return Refusal{as_scenario_key(e.key()), reason_of(e)};
    }
    return std::nullopt;
}

RunEvidence variant_evidence(const RunConfig& base, const Expectations& x, std::size_t i,
                             std::string_view origin) {
    if (auto refusal = variant_refusal(base, x, i, origin)) {
        RunEvidence e{base, {}, {}, {}, std::move(refusal)};
        e.result.status = RunStatus::failed;
        e.result.error = e.refused->reason;
        return e;
    }
    return run_for_evidence(variant_config(base, x, i, origin));
}

RunEvidence run_for_evidence(const RunConfig& config) {
    RunEvidence e{config, {}, {}, {}, {}};
    Run run(config);
    e.result = run.execute();
    e.metrics = compute_metrics(e.result.trace, config);
    for (int i = 1; i < config.repeats && e.result.status == RunStatus::ok; ++i) {
        Run again(config);
        add_repeat(e, again.execute());
    }
    return e;
}

std::vector<ClaimOutcome> check_expectations(const Expectations& x, const RunEvidence& run,
                                             const std::vector<RunEvidence>& variants) {
    const Checker checker{x, run, variants};
    std::vector<ClaimOutcome> out;
    for (const Claim& c : x.claims) {
        switch (c.kind) {
            case Claim::Kind::status:
                out.push_back(checker.status(c));
                break;
            case Claim::Kind::loss_falls:
            case Claim::Kind::loss_diverges:
                out.push_back(checker.loss(c));
                break;
            case Claim::Kind::metric:
                out.push_back(checker.metric(c));
                break;
            case Claim::Kind::refused:
                out.push_back(checker.refused(c));
                break;
        }
    }
    return out;
}

}  // namespace pd
