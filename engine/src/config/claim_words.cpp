#include "config/claim_words.h"

#include <cctype>
#include <cmath>
#include <cstdio>
#include <nlohmann/json.hpp>

#include "pd/expectations.h"
#include "pd/memory_category.h"

namespace pd {

namespace {

bool starts(std::string_view s, std::string_view prefix) {
    return s.substr(0, prefix.size()) == prefix;
}

std::string spaced(std::string_view name) {
    std::string out(name);
    for (char& ch : out)
        if (ch == '_' || ch == '.') ch = ' ';
    return out;
}

std::string printf_text(const char* format, double v) {
    char buf[48];
    std::snprintf(buf, sizeof buf, format, v);
    return buf;
}

enum class Unit { seconds, fraction, bytes, number };

Unit unit_of(std::string_view m) {
    if (m == "step_time" || m == "exposed_comm" || m == "overlapped_comm" || m == "busy" ||
        m == "idle" || m == "comm" || m == "exposed_comm.device" ||
        m == "straggler.wait_per_step" || (starts(m, "tier.") && m.ends_with(".busy_per_step")))
        return Unit::seconds;
    if (starts(m, "tier.") && m.ends_with(".bytes_per_step")) return Unit::bytes;
    if (m == "straggler.last_fraction" || m == "grad.zero_fraction" ||
        m == "params.unchanged_fraction" || m == "mfu" || m == "hfu" ||
        starts(m, "optimizer.state_error_") ||
        (starts(m, "fp8.") && m != "fp8.saturated" && m != "fp8.scale_spread"))
        return Unit::fraction;
    if (m == "bubble" || starts(m, "bubble.") || m == "busy_fraction" ||
        m == "exposed_comm_fraction" || m == "routing.dropped_fraction")
        return Unit::fraction;
    if (starts(m, "peak.") || m == "capacity" || starts(m, "model_state.") || starts(m, "host.") ||
        starts(m, "nvme.") || starts(m, "checkpoint.bytes") || m == "activations.analytic" ||
        starts(m, "comm_bytes_per_step."))
        return Unit::bytes;
    return Unit::number;
}

std::string plain_number(double v) {
    const double a = std::fabs(v);
    if (v == std::floor(v) && a < 1e15) return printf_text("%.0f", v);
    if (a != 0 && (a < 1e-3 || a >= 1e6)) return printf_text("%.3g", v);
    if (a >= 100) return printf_text("%.1f", v);
    return printf_text("%.3g", v);
}

// "all_reduce" -> "all-reduce": a collective as the literature spells it.
std::string op_words(std::string_view op) {
    if (op == "send_recv") return "send/recv";
    std::string out(op);
    for (char& ch : out)
        if (ch == '_') ch = '-';
    return out;
}

}  // namespace

std::string metric_words(std::string_view m) {
    struct Name {
        std::string_view metric, words;
    };
    static constexpr Name names[] = {
        {"steps_completed", "Optimizer steps completed"},
        {"loss.first", "Loss of the first step"},
        {"loss.last", "Loss of the last step"},
        {"step_time", "Step time"},
        {"samples_per_s", "Throughput (samples per second)"},
        {"exposed_comm", "Exposed communication (not hidden by compute, summed over devices)"},
        {"overlapped_comm",
         "Overlapped communication (hidden behind compute, summed over devices)"},
        {"parameter_count", "Parameters of the model"},
        {"bubble", "Pipeline bubble (idle share of the step)"},
        {"bubble.predicted", "Bubble predicted from this run's own stage times"},
        {"bubble.theoretical", "Textbook bubble"},
        {"routing.dropped_fraction", "Share of token choices dropped for want of capacity"},
        {"routing.load_imbalance", "Busiest expert's tokens over the mean expert's"},
        {"routing.capacity", "Tokens each expert has room for"},
        {"routing.aux_loss.first", "Load-balancing loss of the first step"},
        {"routing.aux_loss.last", "Load-balancing loss of the last step"},
        {"staleness.max", "Most versions a gradient lagged the server"},
        {"staleness.mean", "Mean staleness of the applied gradients"},
        {"busy_fraction", "Compute busy share of the step"},
        {"busy", "Compute busy time"},
        {"idle", "Compute idle time"},
        {"comm", "Time covered by communication"},
        {"exposed_comm.device", "Exposed communication"},
        {"exposed_comm_fraction", "Exposed communication share of the step"},
        {"peak.total", "Peak memory, all categories"},
        {"capacity", "Memory capacity"},
        {"max_microbatches_alive", "Micro-batches alive at once (most)"},
        {"activations.analytic", "One micro-batch's activations by Korthikanti et al.'s count"},
        {"ring_steps_per_collective", "Ring steps per collective call"},
        {"loss.nonfinite_steps", "Steps whose loss is inf or NaN"},
        {"steps.skipped", "Optimizer steps skipped for inf or NaN gradients"},
        {"loss_scale.first", "Loss scale of the first step"},
        {"loss_scale.last", "Loss scale of the last step"},
        {"loss_scale.min", "Smallest loss scale"},
        {"loss_scale.max", "Largest loss scale"},
        {"grad.zero_fraction", "Share of gradient values that are exactly zero"},
        {"grad.clipped_steps", "Steps whose gradient norm was clipped"},
        {"optimizer.state_error_m", "8-bit Adam: error of the stored first moment"},
        {"optimizer.state_error_v", "8-bit Adam: error of the stored second moment"},
        {"products.input_error", "Relative rounding error of the matrix products' inputs"},
        {"fp8.forward.relative_error", "FP8: error of the forward casts"},
        {"host.optimizer_state", "Optimizer state kept in host memory"},
        {"host.total", "Bytes kept in host memory"},
        {"host.analytic", "Analytic bytes in host memory"},
        {"host.parameters", "Parameter shard kept in host memory"},
        {"restarts", "Restarts after a failure"},
        {"restart.resumed_from", "Checkpoint step the restart resumed from"},
        {"restart.devices_after", "Devices after the restart"},
        {"steps.executed", "Steps run, replays and the failed one included"},
        {"steps.lost", "Steps whose work the failure threw away"},
        {"goodput", "Goodput (steps kept over steps run)"},
        {"data.dataset_batch", "The batch given to dataset.batch()"},
        {"data.global_batch", "Global batch (examples a step, all replicas)"},
        {"data.per_replica_batch", "Examples each replica gets a step"},
        {"data.pipelines", "Input pipelines (one per host)"},
        {"data.examples", "Examples in the dataset"},
        {"data.duplicate_fraction", "Share of reads another device also read that step"},
        {"data.distinct_read", "Distinct examples read"},
        {"data.epochs", "Epochs begun"},
        {"data.left_at_step", "Step at which devices left the loop, out of data"},
        {"data.devices_left", "Devices that left the loop, out of data"},
        {"data.steps_per_epoch", "Steps an epoch (full batches of the pipeline's shard)"},
        {"data.examples_kept", "Examples the pipeline keeps an epoch"},
        {"data.examples_scanned", "Examples the pipeline reads an epoch"},
        {"data.files_opened", "Files the pipeline reads from"},
        {"data.files_read", "Files the device's examples came from"},
        {"data.reads", "Examples the device read"},
        {"checkpoint.files", "Files in the last checkpoint"},
        {"checkpoint.bytes_total", "Bytes of the last checkpoint"},
        {"checkpoint.bytes", "Bytes written to the last checkpoint"},
        {"resume.step", "Step the run resumed from"},
        {"resume.from_devices", "Devices that wrote the checkpoint it resumed from"},
        {"nvme.optimizer_state", "Optimizer state kept on NVMe"},
        {"nvme.parameters", "Parameter shard kept on NVMe"},
        {"nvme.total", "Bytes kept on NVMe"},
        {"nvme.analytic", "Analytic bytes on NVMe"},
        {"fp8.gradients.relative_error.last", "FP8: error of the gradient casts, last step"},
        {"fp8.gradients.flushed_fraction.first",
         "FP8: gradients flushed to zero before any amax history"},
        {"fp8.gradients.flushed_fraction.last",
         "FP8: gradients flushed to zero in the last step (scales from the history)"},
        {"fp8.saturated", "FP8: values clamped at the largest FP8 number"},
        {"fp8.scale_spread", "FP8: largest per-tensor scale over the smallest"},
        {"params.unchanged_fraction", "Share of the weights still at their initial value"},
        {"flops.model_per_step", "Model FLOPs per step (forward and backward products)"},
        {"flops.hardware_per_step", "FLOPs a step ran (recomputation included)"},
        {"flops.six_nd_per_step", "6 N D for a step (6 x parameters x tokens)"},
        {"mfu", "Model FLOPs utilisation (MFU) of the measured FMA peak"},
        {"powersgd.compress_rate", "PowerSGD's compression rate (elements before over after)"},
        {"hfu", "Hardware FLOPs utilisation (HFU) of the measured FMA peak"},
        {"grad.norm.first", "Gradient norm of the first step (unscaled, before clipping)"},
    };
    for (const Name& n : names)
        if (n.metric == m) return std::string(n.words);
    if (starts(m, "bubble.cause.")) return "Bubble added by " + spaced(m.substr(13));
    if (starts(m, "tier.")) {
        const std::string_view rest = m.substr(5);
        const std::string_view tier = rest.substr(0, rest.find('.'));
        const std::string where = tier == "intra_node"   ? "inside a node"
                                  : tier == "inter_node" ? "between nodes"
                                  : tier == "nvls"       ? "through the NVSwitch's reduction (NVLS)"
                                  : tier == "host"       ? "over PCIe to and from the host"
                                  : tier == "nvme"       ? "read from and written to NVMe"
                                                         : "through the InfiniBand switches' "
                                                           "reduction (SHARP)";
        return m.ends_with(".busy_per_step") ? "Transfer time per step " + where
                                             : "Bytes per step " + where;
    }
    if (m == "straggler.device") return "The device that arrives last at the collectives";
    if (m == "straggler.last_fraction") return "Share of collectives where it arrived last";
    if (m == "straggler.wait_per_step")
        return "Time each device waits per step for the last arrival";
    if (starts(m, "allreduce.") && m.ends_with("_per_step")) {
        const std::string_view a = m.substr(10, m.size() - 19);
        return std::string("All-reduces ") +
               (a == "in_network"         ? "reduced in the network (NVLS or SHARP)"
                : a == "reduction_server" ? "through the Reduction Server's reducers"
                : a == "hierarchical"     ? "done hierarchically (in the node, then across)"
                                          : "by " + std::string(a)) +
               " per step";
    }
    if (starts(m, "comm_bytes_per_step."))
        return "Bytes per step handed to " + op_words(m.substr(20));
    if (starts(m, "model_state.analytic_"))
        return "Analytic " + spaced(m.substr(21)) + " bytes (the strategy's formula)";
    if (starts(m, "model_state.")) return "Bytes of " + spaced(m.substr(12)) + " at the end";
    if (starts(m, "peak.")) return "Peak " + spaced(m.substr(5)) + " memory";
    if (m.size() > 9 && m.substr(m.size() - 9) == "_per_step") {
        std::string s = op_words(m.substr(0, m.size() - 9)) + " calls per step";
        s[0] = static_cast<char>(std::toupper(static_cast<unsigned char>(s[0])));
        return s;
    }
    return spaced(m);
}

std::string value_words(std::string_view metric, double v, bool ratio) {
    if (!std::isfinite(v)) return v != v ? "not a number" : (v > 0 ? "infinite" : "-infinite");
    if (ratio) return plain_number(v) + "x";
    switch (unit_of(metric)) {
        case Unit::seconds:
            // Three significant figures: 0.412 ms, 12.4 ms, 124 ms.
            if (std::fabs(v) < 1e-3) return printf_text("%.0f us", v * 1e6);
            if (std::fabs(v) < 1e-2) return printf_text("%.2f ms", v * 1e3);
            return printf_text(std::fabs(v) < 0.1 ? "%.1f ms" : "%.0f ms", v * 1e3);
        case Unit::fraction:
            return printf_text("%.1f%%", v * 100);
        case Unit::bytes: {
            const double a = std::fabs(v);
            if (a >= 1024.0 * 1024 * 1024)
                return printf_text("%.2f GiB", v / (1024.0 * 1024 * 1024));
            if (a >= 1024.0 * 1024) return printf_text("%.2f MiB", v / (1024.0 * 1024));
            if (a >= 1024.0) return printf_text("%.1f KiB", v / 1024.0);
            return printf_text("%.0f B", v);
        }
        case Unit::number:
            break;
    }
    return plain_number(v);
}

namespace {

// A setting's value in words: text as is, an object's keys in brackets ("dataset (batch 64,
// shard off)"), a list spaced ("[64, 64, 48]").
std::string value_words(const nlohmann::json& value) {
    if (value.is_string()) return value.get<std::string>();
    if (value.is_object()) {
        std::string out;
        for (const auto& [key, inner] : value.items())
            out += (out.empty() ? "(" : ", ") + key + " " + value_words(inner);
        return out.empty() ? "()" : out + ")";
    }
    if (value.is_array()) {
        std::string out;
        for (const auto& inner : value) out += (out.empty() ? "[" : ", ") + value_words(inner);
        return out.empty() ? "[]" : out + "]";
    }
    return value.dump();
}

}  // namespace

std::string variant_words(const std::string& variant_json) {
    const nlohmann::json j = nlohmann::json::parse(variant_json, nullptr, false);
    if (!j.is_object()) return variant_json;
    std::string out;
    for (const auto& [key, value] : j.items()) {
        if (!out.empty()) out += ", ";
        out += key + " " + value_words(value);
    }
    return out;
}

}  // namespace pd
