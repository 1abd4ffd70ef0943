#include <cmath>
#include <nlohmann/json.hpp>

#include "pd/exports.h"
#include "pd/flops.h"

namespace pd {

using nlohmann::json;

std::string summary_json(const RunConfig& config, const RunResult& result,
                         const RunMetrics& metrics) {
    json j;
    j["status"] = std::string(name_of(result.status));
    j["error"] = result.error.empty() ? json(nullptr) : json(result.error);
    j["strategy"] = std::string(name_of(config.strategy));
    j["devices"] = config.devices;
    j["backend"] = std::string(name_of(config.backend));
    j["tf32"] = config.tf32;
    j["device_names"] = result.trace.device_names;
    j["clock"] = std::string(name_of(result.trace.clock));
    j["clock_requested"] = std::string(name_of(config.clock));
    j["intra_op_threads"] = result.trace.intra_op_threads;
    j["link"] = {
        {"latency_us", config.link.latency_us},
        {"gbit_per_s", config.link.gbit_per_s()},
        {"gbyte_per_s", config.link.bytes_per_ns},
        {"applies_to", "device clock: a transfer of b bytes takes latency + b / bandwidth"}};
    {
        // The cluster: its tiers' settings, and per tier the bytes and transfer time per step.
        const ClusterConfig& k = config.cluster;
        json cluster;
        cluster["preset"] = k.preset.empty() ? json(nullptr) : json(k.preset);
        cluster["nodes"] = k.node_count(config.devices);
        cluster["intra_link"] = std::string(name_of(k.intra));
        cluster["inter_transport"] = std::string(name_of(k.transport));
        cluster["inter_gbps"] = k.inter_link().gbit_per_s();
        cluster["inter_latency_us"] = k.inter_link().latency_us;
        cluster["devices_per_nic"] = k.devices_per_nic;
        cluster["nvls"] = k.nvls;
        cluster["sharp"] = k.sharp;
        cluster["allreduce_algorithm"] = std::string(name_of(config.allreduce_algorithm));
        json tiers = json::object();
        for (int t = 1; t < kLinkTierCount; ++t) {
            const TierMetrics& tm = metrics.cluster.tiers[static_cast<std::size_t>(t)];
            if (tm.transfers == 0) continue;
            tiers[std::string(name_of(static_cast<LinkTier>(t)))] = {
                {"bytes_per_step", tm.bytes_per_step},
                {"transfer_s_per_step", tm.busy_s_per_step},
                {"transfers", tm.transfers}};
        }
        cluster["tiers"] = tiers;
        cluster["allreduce_calls_per_step"] = metrics.cluster.allreduce_calls_per_step;
        const StragglerMetrics& st = metrics.cluster.straggler;
        cluster["straggler"] = st.calls == 0 ? json(nullptr)
                                             : json{{"device", st.device},
                                                    {"last_fraction", st.last_fraction},
                                                    {"calls", st.calls},
                                                    {"wait_s_per_step", st.wait_s_per_step}};
        if (config.straggler.active())
            cluster["straggler_set"] = {{"device", config.straggler.device},
                                        {"slowdown", config.straggler.slowdown}};
        j["cluster"] = cluster;
    }
    j["model"] = {{"layers", config.layers},
                  {"width", config.width},
                  {"input_dim", config.input_dim},
                  {"classes", config.classes}};
    if (config.model == ModelKind::transformer) {
        j["model"]["kind"] = "transformer";
        j["model"]["heads"] = config.heads;
        j["model"]["seq_len"] = config.seq_len;
        j["model"]["experts"] = config.experts;
    } else {
        j["model"]["kind"] = "mlp";
    }
    j["batch"] = config.batch;
    j["optimizer"] = std::string(name_of(config.optimizer));
    j["lr"] = config.effective_lr();
    j["overlap"] = config.overlap;
    j["bucket_bytes"] = config.bucket_bytes;
    j["capacity_bytes"] = config.capacity_bytes;
    j["steps_completed"] = result.steps_completed;
    json steps = json::array();
    for (std::size_t i = 0; i < metrics.steps.size(); ++i) {
        const auto& s = metrics.steps[i];
        json step = {{"step", s.step}, {"loss", s.loss}, {"time_s", s.time_s}};
        // What the update read from the gradients, where the run checked them.
        if (i < result.trace.steps.size()) {
            const StepRecord& r = result.trace.steps[i];
            if (r.loss_scale > 0) step["loss_scale"] = r.loss_scale;
            if (r.grad_zero_fraction >= 0) {
                step["skipped"] = r.skipped;
                step["grad_norm"] = std::isfinite(r.grad_norm) ? json(r.grad_norm) : json(nullptr);
                step["grad_zero_fraction"] = r.grad_zero_fraction;
            }
            if (r.state_error_m >= 0) step["state_error_m"] = r.state_error_m;
            if (r.state_error_v >= 0) step["state_error_v"] = r.state_error_v;
            if (r.product_input_error >= 0) step["product_input_error"] = r.product_input_error;
            if (r.fp8_max_scale > 0) {  // device 0's FP8 casts
                auto casts = [](const Fp8CastSummary& c) {
                    return json{{"nonzero", c.nonzero},
                                {"flushed", c.flushed},
                                {"saturated", c.saturated},
                                {"relative_error", c.relative_error}};
                };
                step["fp8"] = {{"forward", casts(r.fp8_forward)},
                               {"gradients", casts(r.fp8_gradients)},
                               {"min_scale", r.fp8_min_scale},
                               {"max_scale", r.fp8_max_scale}};
            }
        }
        steps.push_back(std::move(step));
    }
    j["steps"] = std::move(steps);
    j["final_loss"] = metrics.steps.empty() ? json(nullptr) : json(metrics.final_loss);
    // The step's FLOPs counted from the model's products (pd/flops.h).
    if (const auto f = step_flops(config))
        j["flops_per_step"] = {{"model", f->model},
                               {"hardware", f->hardware},
                               {"six_nd", f->six_nd},
                               {"tokens", f->tokens},
                               {"parameters", f->parameters}};
    j["step_time_s"] = {{"median", metrics.median_step_time_s}};
    j["samples_per_s"] = metrics.samples_per_s;
    json devices = json::array();
    for (const auto& d : metrics.devices) {
        json peak = json::object();
        for (std::size_t c = 0; c < kMemoryCategoryCount; ++c)
            peak[std::string(kMemoryCategoryNames[c])] = d.peak_bytes[c];
        devices.push_back({{"device", d.device},
                           {"busy_s", d.busy_s},
                           {"idle_s", d.idle_s},
                           {"busy_fraction", d.busy_fraction},
                           {"comm_s", d.comm_s},
                           {"exposed_comm_s", d.exposed_comm_s},
                           {"overlapped_comm_s", d.overlapped_comm_s},
                           {"peak_bytes", std::move(peak)},
                           {"peak_total_bytes", d.peak_total_bytes}});
        const auto index = static_cast<std::size_t>(d.device);
        devices.back()["peak_reserved_bytes"] = d.peak_reserved_bytes;
        if (index < result.trace.gpu_memory_bytes.size())
            devices.back()["gpu_memory"] = {
                {"free_bytes", result.trace.gpu_memory_bytes[index].first},
                {"total_bytes", result.trace.gpu_memory_bytes[index].second},
                {"source", "cudaMemGetInfo at the end of the run"}};
    }
    j["per_device"] = std::move(devices);
    json collectives = json::array();
    for (const auto& c : metrics.collectives)
        collectives.push_back({{"op", c.op},
                               {"bytes", c.bytes},
                               {"ranks", c.ranks},
                               {"count", c.count},
                               {"mean_time_s", c.mean_time_s},
                               {"algbw_gbps", c.algbw_gbps},
                               {"busbw_gbps", c.busbw_gbps}});
    j["collectives"] = std::move(collectives);
    j["communication"] = {{"exposed_s", metrics.exposed_comm_s},
                          {"overlapped_s", metrics.overlapped_comm_s}};
    j["parameter_count"] = metrics.parameter_count;
    j["precision"] = std::string(name_of(config.precision));
    if (config.accumulate > 1)
        j["accumulate"] = {{"microsteps", config.accumulate},
                           {"reduce_every_microstep", config.reduce_every_microstep}};
    if (config.strategy == StrategyKind::ps) {
        // How many applied gradients lagged the server by each number of versions.
        json histogram = json::object();
        for (const auto& [staleness, count] : metrics.staleness_histogram)
            histogram[std::to_string(staleness)] = count;
        j["parameter_server"] = {{"async", config.async_updates},
                                 {"max_staleness", config.async_updates ? config.max_staleness : 0},
                                 {"staleness_histogram", std::move(histogram)}};
    }
    if (config.strategy == StrategyKind::pipeline || config.strategy == StrategyKind::hybrid ||
        config.strategy == StrategyKind::tp) {
        j["schedule"] = std::string(name_of(config.schedule));
        j["microbatches"] = config.effective_microbatches();
        j["chunks"] = config.effective_chunks();
        const Mesh mesh = config.effective_mesh();
        j["mesh"] = {{"dp", mesh.dp}, {"pp", mesh.pp}, {"tp", mesh.tp}};
    }
    if (const ExpertRouting& r = result.trace.routing; r.experts > 0) {
        const auto a2a = metrics.comm_bytes_per_step.find("all_to_all");
        j["routing"] = {{"experts", r.experts},
                        {"top_k", r.top_k},
                        {"capacity_factor", r.capacity_factor},
                        {"capacity_per_sequence", r.capacity},
                        {"tokens_per_expert", r.tokens_per_expert},
                        {"assignments", r.assignments},
                        {"dropped", r.dropped},
                        {"dropped_fraction",
                         r.assignments ? static_cast<double>(r.dropped) / r.assignments : 0.0},
                        {"aux_loss", r.aux_loss},
                        {"all_to_all_bytes_per_step_per_device",
                         a2a == metrics.comm_bytes_per_step.end() ? 0.0 : a2a->second},
                        {"counts",
                         "token-to-expert choices over every step's forward, all devices and MoE "
                         "layers"}};
    }
    // The steps busy, communication and bubble figures cover (0-based, inclusive).
    j["figure_steps"] = metrics.figure_steps.empty()
                            ? json(nullptr)
                            : json{{"first", metrics.figure_steps.first},
                                   {"last", metrics.figure_steps.last},
                                   {"excludes_first_step", metrics.figure_steps.first > 0}};
    if (metrics.bubble) {
        const BubbleMetrics& b = *metrics.bubble;
        j["bubble_fraction"] = {{"measured", b.measured},
                                {"theoretical", b.theoretical},
                                {"stages", b.stages},
                                {"microbatches", b.microbatches},
                                {"chunks", b.chunks}};
        if (b.predicted) {
            const BubbleCauses& c = b.predicted->causes;
            j["bubble_fraction"]["predicted_from_stage_times"] = b.predicted->fraction;
            j["bubble_fraction"]["predicted_step_time_s"] = b.predicted->step_time_s;
            // Fractions of the step; they sum to predicted - theoretical.
            j["bubble_fraction"]["causes"] = {{"schedule", c.schedule},
                                              {"stage_imbalance", c.stage_imbalance},
                                              {"transfers", c.transfers},
                                              {"untraced_gaps", c.untraced_gaps},
                                              {"optimizer_tail", c.optimizer_tail},
                                              {"cold_first_microbatch", c.cold_first_microbatch},
                                              {"microbatch_variation", c.microbatch_variation}};
        } else {
            j["bubble_fraction"]["predicted_from_stage_times"] = nullptr;
            j["bubble_fraction"]["causes"] = nullptr;
        }
    } else {
        j["bubble_fraction"] = nullptr;
    }
    json boundaries = json::array();
    for (const auto& b : metrics.stage_boundaries)
        boundaries.push_back({{"chunk", b.chunk},
                              {"stage", b.device_stage},
                              {"first_unit", b.first_unit},
                              {"end_unit", b.end_unit}});
    j["stage_boundaries"] = std::move(boundaries);
    json activations = json::array();
    for (const auto& a : metrics.stage_activations) {
        json row = {{"device", a.device},
                    {"stage", a.stage},
                    {"peak_activation_bytes", a.peak_activation_bytes},
                    {"microbatches_alive_at_peak", a.microbatches_alive_at_peak},
                    {"max_microbatches_alive", a.max_microbatches_alive}};
        // The schedule's own figure, from its order alone (pipelined runs).
        if (a.textbook_max_microbatches_alive >= 0)
            row["textbook_max_microbatches_alive"] = a.textbook_max_microbatches_alive;
        // Korthikanti et al.'s count in this engine's fp32 form (pd/model.h).
        if (a.analytic_activation_bytes >= 0)
            row["analytic_activation_bytes"] = a.analytic_activation_bytes;
        activations.push_back(std::move(row));
    }
    j["activations_per_stage"] = std::move(activations);
    json state = json::array();
    for (const auto& s : metrics.model_state)
        state.push_back({{"device", s.device},
                         {"measured",
                          {{"parameters", s.parameters},
                           {"gradients", s.gradients},
                           {"optimizer_state", s.optimizer_state}}},
                         {"analytic",
                          {{"parameters", s.analytic_parameters},
                           {"gradients", s.analytic_gradients},
                           {"optimizer_state", s.analytic_optimizer_state}}}});
    j["model_state_bytes"] = std::move(state);
    json comm_bytes = json::object();
    for (const auto& [kind, bytes] : metrics.comm_bytes_per_step) comm_bytes[kind] = bytes;
    j["comm_bytes_per_step_per_device"] = std::move(comm_bytes);
    if (result.oom) {
        const OomInfo& o = *result.oom;
        j["oom"] = {{"device", o.device},
                    {"category", std::string(name_of(o.category))},
                    {"requested_bytes", o.requested_bytes},
                    {"live_bytes", o.live_bytes},
                    {"capacity_bytes", o.capacity_bytes},
                    {"message", o.describe()}};
    } else {
        j["oom"] = nullptr;
    }
    return j.dump(2);
}

}  // namespace pd
