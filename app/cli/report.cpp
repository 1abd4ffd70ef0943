#include "report.h"

#include <algorithm>
#include <cstdio>
#include <string>
#include <thread>

#include "bench_fma_peak.h"
#include "pd/flops.h"
#include "pd/topology.h"
#include "pd/units.h"

namespace pd::cli {

namespace {
std::string fmt(const char* format, double value) {
    char buf[64];
    std::snprintf(buf, sizeof buf, format, value);
    return buf;
}
}  // namespace

void print_report(std::ostream& out, const RunConfig& config, const RunResult& result,
                  const RunMetrics& m) {
    out << "strategy " << name_of(config.strategy) << ", " << config.devices << " device"
        << (config.devices == 1 ? "" : "s") << ", clock " << name_of(result.trace.clock)
        << (config.clock == ClockMode::automatic ? " (auto)" : "") << ", "
        << result.trace.intra_op_threads << " intra-op thread"
        << (result.trace.intra_op_threads == 1 ? "" : "s") << " per device, link "
        << config.link.latency_us << " us + " << format_link_speed(config.link.gbit_per_s())
        << "\n";
    if (config.backend == BackendKind::cuda && !result.trace.device_names.empty())
        out << "backend cuda: " << result.trace.device_names.front()
            << (config.devices > 1 ? " ..." : "") << (config.tf32 ? ", TF32 on" : ", TF32 off")
            << "\n";
    out << "model " << config.layers
        << (config.model == ModelKind::transformer ? " transformer blocks" : " blocks")
        << " x width " << config.width;
    if (config.model == ModelKind::transformer)
        out << ", " << config.heads << " heads, " << config.seq_len << " tokens a sequence"
            << (config.sequence_parallel && config.effective_mesh().tp > 1 ? ", sequence parallel"
                                                                           : "");
    out << ", batch " << config.batch << ", " << name_of(config.optimizer) << " lr "
        << config.effective_lr()
        << (config.precision == Precision::bf16_mixed && config.fp32_reduce
                ? ", bf16-mixed as FSDP2's MixedPrecisionPolicy (fp32 sharded params and "
                  "state, gathered and computed in bf16, gradients reduce-scattered in fp32)"
            : config.precision == Precision::bf16_mixed
                ? ", bf16-mixed (bf16 params, activations, grads; fp32 master + state)"
            : config.precision == Precision::fp16_mixed
                ? ", fp16-mixed (fp16 params, activations, grads; fp32 master + state; loss "
                  "scaling)"
                : "")
        << (config.comm_hook != DType::fp32
                ? ", DDP " + std::string(name_of(config.comm_hook)) +
                      "_compress_hook (gradients all-reduced in 16 bits)"
                : std::string())
        << (config.powersgd.rank > 0
                ? ", DDP powerSGD_hook rank " + std::to_string(config.powersgd.rank) +
                      " from step " + std::to_string(config.powersgd.start_iter + 1) +
                      (config.powersgd.error_feedback ? ", error feedback" : "") +
                      (config.powersgd.warm_start ? ", warm start" : "")
                : std::string())
        << "\n";
    out << "status " << name_of(result.status) << ", steps " << result.steps_completed << "/"
        << config.steps << "\n";
    if (!m.steps.empty()) {
        out << "loss " << fmt("%.4f", m.steps.front().loss) << " -> " << fmt("%.4f", m.final_loss)
            << ", median step " << format_duration_ns(m.median_step_time_s * 1e9) << ", "
            << fmt("%.0f", m.samples_per_s) << " samples/s\n";
    }
    // FLOPs counted from the model's products, and the measured FMA peak's share they reach.
    if (const auto f = step_flops(config); f && !m.steps.empty() && m.median_step_time_s > 0) {
        const FmaPeak peak = fma_peak(std::max(1, result.trace.intra_op_threads));
        out << "FLOPs per step: model " << fmt("%.4g", f->model / 1e9) << " GFLOP, ran "
            << fmt("%.4g", f->hardware / 1e9) << " GFLOP, 6ND " << fmt("%.4g", f->six_nd / 1e9)
            << " GFLOP";
        if (peak.gflops > 0)
            out << "; MFU "
                << fmt("%.1f", 100 * utilisation(f->model, m.median_step_time_s, config.devices,
                                                 peak.gflops))
                << "%, HFU "
                << fmt("%.1f", 100 * utilisation(f->hardware, m.median_step_time_s, config.devices,
                                                 peak.gflops))
                << "% of " << fmt("%.1f", peak.gflops) << " GFLOP/s a device (" << peak.isa
                << " FMA peak, " << peak.threads << " thread" << (peak.threads == 1 ? "" : "s")
                << ")";
        out << "\n";
    }
    // What the updates read from the gradients (mixed precision, clipping).
    const auto& steps = result.trace.steps;
    if (!steps.empty() && steps.front().grad_zero_fraction >= 0) {
        int skipped = 0, clipped = 0;
        for (const auto& s : steps) {
            skipped += s.skipped ? 1 : 0;
            clipped += config.clip_grad_norm > 0 && s.grad_norm > config.clip_grad_norm ? 1 : 0;
        }
        const auto zeros = gradient_zero_fraction(steps);
        out << "gradients: "
            << (zeros ? fmt("%.2f", 100.0 * *zeros) +
                            "% of values exactly zero (mean over "
                            "applied steps after the first applied)"
                      : std::string("no applied step after the first to read"));
        if (steps.front().loss_scale > 0)
            out << "; loss scale " << fmt("%g", steps.front().loss_scale) << " -> "
                << fmt("%g", steps.back().loss_scale) << ", " << skipped << " of " << steps.size()
                << " steps skipped (inf/NaN gradients)";
        if (config.clip_grad_norm > 0)
            out << "; norm above " << fmt("%g", config.clip_grad_norm) << " (clipped) in "
                << clipped << " of " << steps.size() << " steps";
        out << "\n";
    }
    // 8-bit optimizer states: what their quantisation loses.
    const auto m_error = state_quantization_error(steps, true);
    const auto v_error = state_quantization_error(steps, false);
    if (m_error && v_error)
        out << "8-bit optimizer states (blocks of " << config.optimizer_blocksize
            << "): stored m within " << fmt("%.2f", 100 * *m_error) << "%, v within "
            << fmt("%.2f", 100 * *v_error) << "% RMS of their fp32 values (mean over updates)\n";
    // Peak memory: live bytes (what tensors hold, the memory bars), and reserved (what the
    // device's caching allocator held at most, live or cached, as PyTorch reports it).
    out << "\n  device   busy    idle   comm exposed/overlapped   peak live   reserved\n";
    for (const auto& d : m.devices) {
        const std::string reserved = d.peak_reserved_bytes
                                         ? format_bytes(static_cast<double>(d.peak_reserved_bytes))
                                         : std::string("-");
        char line[256];
        std::snprintf(line, sizeof line, "  %6d %6.1f%% %9s %10s / %-10s %10s %10s\n", d.device,
                      d.busy_fraction * 100.0, format_duration_ns(d.idle_s * 1e9).c_str(),
                      format_duration_ns(d.exposed_comm_s * 1e9).c_str(),
                      format_duration_ns(d.overlapped_comm_s * 1e9).c_str(),
                      format_bytes(static_cast<double>(d.peak_total_bytes)).c_str(),
                      reserved.c_str());
        out << line;
    }
    const int nodes = config.cluster.node_count(config.devices);
    if (nodes > 1 || !config.cluster.preset.empty()) {
        const Topology topology(config.cluster, config.link, config.devices);
        out << "\ncluster " << (config.cluster.preset.empty() ? "" : config.cluster.preset + ": ")
            << nodes << " node" << (nodes == 1 ? "" : "s") << " x "
            << config.devices / std::max(1, nodes) << " devices; inside a node "
            << topology.transport_name(LinkTier::intra_node) << " "
            << format_link_speed(config.link.gbit_per_s());
        if (nodes > 1)
            out << "; between nodes " << topology.transport_name(LinkTier::inter_node) << " "
                << format_link_speed(config.cluster.inter_link().gbit_per_s()) << " per NIC, "
                << config.cluster.devices_per_nic << " device"
                << (config.cluster.devices_per_nic == 1 ? "" : "s") << " per NIC";
        out << (config.cluster.nvls ? "; NVLS" : "") << (config.cluster.sharp ? "; SHARP" : "")
            << "\n";
    }
    bool any_tier = false;
    for (const auto& t : m.cluster.tiers) any_tier = any_tier || t.transfers > 0;
    if (any_tier && (nodes > 1 || config.cluster.nvls)) {
        out << "  tier          bytes/step   transfer time/step (all devices)\n";
        for (int i = 1; i < kLinkTierCount; ++i) {
            const TierMetrics& t = m.cluster.tiers[static_cast<std::size_t>(i)];
            if (t.transfers == 0) continue;
            char line[160];
            std::snprintf(line, sizeof line, "  %-12s %11s %12s\n",
                          std::string(name_of(static_cast<LinkTier>(i))).c_str(),
                          format_bytes(t.bytes_per_step).c_str(),
                          format_duration_ns(t.busy_s_per_step * 1e9).c_str());
            out << line;
        }
    }
    if (config.straggler.active() && m.cluster.straggler.calls > 0)
        out << "straggler: device " << m.cluster.straggler.device << " arrived last at "
            << fmt("%.0f", m.cluster.straggler.last_fraction * 100) << "% of "
            << m.cluster.straggler.calls << " collectives; the others waited "
            << format_duration_ns(m.cluster.straggler.wait_s_per_step * 1e9)
            << " a step each (set: device " << config.straggler.device << " x"
            << config.straggler.slowdown << ")\n";
    if (!m.collectives.empty()) {
        out << "\n  collective        bytes  ranks  calls     time    algbw GB/s  busbw GB/s\n";
        for (const auto& c : m.collectives) {
            char line[256];
            std::snprintf(line, sizeof line, "  %-14s %10s %5d %6d %10s %10.3f %11.3f\n",
                          c.op.c_str(), format_bytes(static_cast<double>(c.bytes)).c_str(), c.ranks,
                          c.count, format_duration_ns(c.mean_time_s * 1e9).c_str(), c.algbw_gbps,
                          c.busbw_gbps);
            out << line;
        }
    }
    if (m.bubble) {
        char line[256];
        std::snprintf(
            line, sizeof line,
            "\npipeline %s: %d stages x %d micro-batches%s, bubble measured %.3f vs "
            "theoretical %.3f\n",
            std::string(name_of(config.schedule)).c_str(), m.bubble->stages, m.bubble->microbatches,
            m.bubble->chunks > 1 ? (" x " + std::to_string(m.bubble->chunks) + " chunks").c_str()
                                 : "",
            m.bubble->measured, m.bubble->theoretical);
        out << line;
        if (const auto& p = m.bubble->predicted) {
            const BubbleCauses& c = p->causes;
            std::snprintf(line, sizeof line,
                          "  predicted from this run's stage times %.3f (steps %d-%d): imbalance "
                          "%+.3f transfers %+.3f gaps %+.3f optimizer %+.3f cold mb %+.3f other "
                          "%+.3f\n",
                          p->fraction, m.figure_steps.first + 1, m.figure_steps.last + 1,
                          c.stage_imbalance, c.transfers, c.untraced_gaps, c.optimizer_tail,
                          c.cold_first_microbatch, c.microbatch_variation + c.schedule);
            out << line;
        }
        for (const auto& b : m.stage_boundaries)
            out << "  chunk " << b.chunk << " on stage " << b.device_stage << ": units "
                << b.first_unit << ".." << b.end_unit - 1 << "\n";
    }
    if (!m.stage_activations.empty() && config.strategy != StrategyKind::single) {
        // Pipelined runs add the schedule's own maximum, from its order alone.
        out << "\n  device  stage  peak activations (analytic)  mb alive at peak (max; textbook)   "
               "params / grads / optimizer state (analytic)\n";
        for (std::size_t i = 0; i < m.stage_activations.size() && i < m.model_state.size(); ++i) {
            const auto& a = m.stage_activations[i];
            const auto& s = m.model_state[i];
            std::string alive = std::to_string(a.microbatches_alive_at_peak) + " (" +
                                std::to_string(a.max_microbatches_alive);
            if (a.textbook_max_microbatches_alive >= 0)
                alive += "; " + std::to_string(a.textbook_max_microbatches_alive);
            alive += ")";
            std::string peak = format_bytes(static_cast<double>(a.peak_activation_bytes));
            if (a.analytic_activation_bytes >= 0)
                peak += " (" + format_bytes(a.analytic_activation_bytes) + ")";
            char line[300];
            std::snprintf(line, sizeof line,
                          "  %6d %6d %28s %18s     %s / %s / %s (%s / %s / %s)\n", a.device,
                          a.stage, peak.c_str(), alive.c_str(),
                          format_bytes(static_cast<double>(s.parameters)).c_str(),
                          format_bytes(static_cast<double>(s.gradients)).c_str(),
                          format_bytes(static_cast<double>(s.optimizer_state)).c_str(),
                          format_bytes(s.analytic_parameters).c_str(),
                          format_bytes(s.analytic_gradients).c_str(),
                          format_bytes(s.analytic_optimizer_state).c_str());
            out << line;
        }
    }
    if (!m.comm_bytes_per_step.empty()) {
        out << "\n  communication per step per device:";
        for (const auto& [kind, bytes] : m.comm_bytes_per_step)
            out << " " << kind << " " << format_bytes(bytes);
        out << "\n";
    }
    if (const ExpertRouting& r = result.trace.routing; r.experts > 0) {
        char line[200];
        std::snprintf(line, sizeof line,
                      "\n  experts: %d, top-%d, room for %d tokens of a sequence each (capacity "
                      "factor %.2f)\n  tokens kept per expert:",
                      r.experts, r.top_k, r.capacity, r.capacity_factor);
        out << line;
        for (long long t : r.tokens_per_expert) out << " " << t;
        std::snprintf(line, sizeof line, "\n  dropped %lld of %lld choices (%.1f%%)", r.dropped,
                      r.assignments,
                      r.assignments ? 100.0 * static_cast<double>(r.dropped) / r.assignments : 0.0);
        out << line;
        if (!r.aux_loss.empty()) {
            std::snprintf(line, sizeof line, "; load-balancing loss %.5f -> %.5f",
                          r.aux_loss.front(), r.aux_loss.back());
            out << line;
        }
        out << "\n";
    }
    if (!m.staleness_histogram.empty()) {
        out << "\n  applied gradients by staleness (versions behind the server):";
        for (const auto& [staleness, count] : m.staleness_histogram)
            out << " " << staleness << ": " << count;
        out << "\n";
    }
    if (!result.error.empty()) out << "\nerror: " << result.error << "\n";
}

void print_comm_log(std::ostream& out, const Trace& trace) {
    std::vector<const CollectiveRecord*> logged;
    for (const auto& c : trace.collectives)
        if (!c.choice.empty()) logged.push_back(&c);
    std::stable_sort(logged.begin(), logged.end(), [](const auto* a, const auto* b) {
        return a->step != b->step ? a->step < b->step : a->start_ns < b->start_ns;
    });
    for (const CollectiveRecord* c : logged)
        out << "NCCL INFO step " << c->step << " device " << c->device << " '" << c->label
            << "': " << c->choice << "\n";
}

void print_products(std::ostream& out, const std::vector<CpuProductClass>& products,
                    int intra_op_threads, int devices) {
    if (products.empty()) return;
    const int hardware = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
    const int running = std::min(hardware, std::max(1, devices * intra_op_threads));
    // The devices run at once: each gets its share of the peak of every thread running.
    const FmaPeak peak = fma_peak(running);
    const double per_device = peak.gflops * std::min(running, intra_op_threads) / running;
    char line[256];
    std::snprintf(line, sizeof line,
                  "\n  products by shape, timed as the run ran; of_peak: over %.1f GFLOP/s a "
                  "device (the %s FMA peak of %d thread%s, %s)\n",
                  per_device, peak.isa.c_str(), running, running == 1 ? "" : "s",
                  devices > 1 ? "shared by the devices" : "this device's");
    out << line;
    out << "  op       m      n      k   calls  kernel                  GFLOP/s  of_peak\n";
    std::vector<CpuProductClass> sorted = products;
    std::sort(sorted.begin(), sorted.end(), [](const auto& a, const auto& b) {
        return a.seconds > b.seconds;  // where the time went first
    });
    const double per_thread = peak.gflops / running;
    bool any_one_thread = false;
    for (const CpuProductClass& p : sorted) {
        // A product run on one thread (several at once) is read against one thread's peak.
        const double limit = p.one_thread ? per_thread : per_device;
        any_one_thread = any_one_thread || p.one_thread;
        std::snprintf(line, sizeof line, "  %c%c %6d %6d %6d %7lld  %-22s %8.1f %8.3f%s\n",
                      p.trans_a ? 'T' : 'N', p.trans_b ? 'T' : 'N', p.m, p.n, p.k, p.calls,
                      p.kernel.c_str(), p.gflops(), limit > 0 ? p.gflops() / limit : 0.0,
                      p.one_thread ? "  *" : "");
        out << line;
    }
    if (any_one_thread) {
        std::snprintf(line, sizeof line,
                      "  * one thread a call, several calls at once (attention's heads): "
                      "GFLOP/s of one thread, of_peak over one thread's %.1f GFLOP/s\n",
                      per_thread);
        out << line;
    }
}

}  // namespace pd::cli
