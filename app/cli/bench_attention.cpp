#include "bench_attention.h"

#include "bench_fma_peak.h"
#include "bench_statistics.h"

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <map>
#include <string>

#include "pd/error.h"
#include "pd/run.h"
#include "pd/units.h"

namespace pd::cli {

namespace {

// What one timed step spent: its span (start of the step to the start of the next, as
// bench_step counts it; the last step's own span) and the summed durations of its attention
// and MLP units' forward and backward events.
struct StepTimes {
    std::int64_t begin = 0, end = 0;
    double attention_s = 0, mlp_s = 0;
};

std::vector<StepTimes> step_times(const Trace& trace) {
    std::map<int, StepTimes> steps;
    for (const TraceEvent& e : trace.events) {
        if (e.step < 0) continue;
        auto [it, fresh] = steps.try_emplace(e.step, StepTimes{e.start_ns, e.end_ns});
        StepTimes& s = it->second;
        if (!fresh) {
            s.begin = std::min(s.begin, e.start_ns);
            s.end = std::max(s.end, e.end_ns);
        }
        if (e.stream != StreamKind::compute || !is_compute(e.kind)) continue;
        const double seconds = static_cast<double>(e.duration_ns()) * 1e-9;
        if (e.label == "attention") s.attention_s += seconds;
        if (e.label == "MLP") s.mlp_s += seconds;
    }
    std::vector<StepTimes> out;
    for (auto it = steps.begin(); it != steps.end(); ++it) {
        if (it->first < kWarmupSteps) continue;
        StepTimes s = it->second;
        if (const auto next = std::next(it); next != steps.end()) s.end = next->second.begin;
        out.push_back(s);
    }
    return out;
}

}  // namespace

int bench_attention(const AttentionBenchOptions& options) {
    std::printf(
        "# paralleldeck-bench attention: transformer, single CPU device, wall clock, %d blocks x "
        "width %d, %d heads (head_dim %d), %d tokens per step at every seq_len (batch = tokens / "
        "seq_len), AdamW fp32; medians of %d steps after %d warm-up steps\n",
        options.layers, options.width, options.heads,
        options.heads > 0 ? options.width / options.heads : 0, options.tokens, options.steps,
        kWarmupSteps);
    std::printf(
        "# step_ms     a whole step: forward, backward, optimizer, host gaps (start of a step to "
        "the start of the next)\n"
        "# attn_ms     the attention units (LN1, q/k/v, causal attention, wo), forward + "
        "backward, summed over blocks\n"
        "# mlp_ms      the MLP units (LN2, W1, GELU, W2), forward + backward, summed over "
        "blocks\n"
        "# other_ms    the rest: input projection, head + loss, optimizer, gaps\n"
        "# attn_share  attn_ms / step_ms\n"
        "# attn/mlp    attn_ms / mlp_ms, measured\n"
        "# analytic    the same ratio of matrix-product FLOPs, (24 h^2 + 12 s h) / 48 h^2 = "
        "1/2 + s / 4h (the kernel's score and P V products cover the whole s x s square)\n"
        "# probs/layer the attention probabilities one block keeps for backward, batch x heads "
        "x s^2 x 4 B\n");
    std::printf("# %7s %5s %9s %9s %9s %9s %10s %9s %9s %12s %7s\n", "seq_len", "batch", "step_ms",
                "attn_ms", "mlp_ms", "other_ms", "attn_share", "attn/mlp", "analytic",
                "probs/layer", "threads");
    for (const int s : options.seq_lens) {
        if (s < 1 || options.tokens % s != 0) {
            std::fprintf(stderr,
                         "--seq-lens: %d does not divide the %d tokens per step (--tokens)\n", s,
                         options.tokens);
            return 2;
        }
        RunConfig c;
        c.strategy = StrategyKind::single;
        c.devices = 1;
        c.model = ModelKind::transformer;
        c.layers = options.layers;
        c.width = options.width;
        c.heads = options.heads;
        c.seq_len = s;
        c.batch = options.tokens / s;
        c.steps = kWarmupSteps + options.steps;
        c.clock = ClockMode::wall;
        c.threads = options.threads;
        c.capacity_bytes = std::size_t{1} << 40;  // benchmarks measure speed, not budgets
        RunResult result;
        try {
            Run run(c);
            result = run.execute();
        } catch (const BadInput& e) {
            std::fprintf(stderr, "attention: %s\n", e.what());
            return 2;
        }
        if (result.status != RunStatus::ok) {
            std::fprintf(stderr, "attention run (seq_len %d) failed: %s\n", s,
                         result.error.c_str());
            return 1;
        }
        std::vector<double> step, attention, mlp, other;
        for (const StepTimes& t : step_times(result.trace)) {
            const double span = static_cast<double>(t.end - t.begin) * 1e-9;
            step.push_back(span);
            attention.push_back(t.attention_s);
            mlp.push_back(t.mlp_s);
            other.push_back(span - t.attention_s - t.mlp_s);
        }
        const double step_s = median(step), attn_s = median(attention), mlp_s = median(mlp);
        const double other_s = median(other);
        const double h = c.width;
        const double analytic = (24.0 * h * h + 12.0 * s * h) / (48.0 * h * h);
        const std::size_t probs_bytes =
            static_cast<std::size_t>(c.batch) * static_cast<std::size_t>(c.heads) *
            static_cast<std::size_t>(s) * static_cast<std::size_t>(s) * sizeof(float);
        const double share = step_s > 0 ? attn_s / step_s : 0.0;
        // The blocks' products (forward 24 h^2 + 4 s h FLOPs a token and layer: projections,
        // MLP, scores and the weighted sum in full; backward twice that) against the FMA peak
        // of the threads that ran them.
        const double block_flops = 3.0 * options.tokens * c.layers * (24.0 * h * h + 4.0 * s * h);
        const double gflops = step_s > 0 ? block_flops / step_s / 1e9 : 0.0;
        const double peak = fma_peak(result.trace.intra_op_threads).gflops;
        const double ratio = mlp_s > 0 ? attn_s / mlp_s : 0.0;
        std::printf("  %7d %5d %9.2f %9.2f %9.2f %9.2f %10.3f %9.3f %9.3f %12s %7d\n", s, c.batch,
                    step_s * 1e3, attn_s * 1e3, mlp_s * 1e3, other_s * 1e3, share, ratio, analytic,
                    format_bytes(static_cast<double>(probs_bytes)).c_str(),
                    result.trace.intra_op_threads);
        std::printf(
            "RESULT attention seq_len=%d batch=%d tokens=%d layers=%d width=%d heads=%d "
            "threads=%d step_ms=%.3f attention_ms=%.3f mlp_ms=%.3f other_ms=%.3f "
            "attention_share=%.3f attention_to_mlp=%.3f analytic_attention_to_mlp=%.3f "
            "probs_bytes_per_layer=%zu block_gflops=%.1f fma_peak_gflops=%.1f "
            "fraction_of_peak=%.3f\n",
            s, c.batch, options.tokens, c.layers, c.width, c.heads, result.trace.intra_op_threads,
            step_s * 1e3, attn_s * 1e3, mlp_s * 1e3, other_s * 1e3, share, ratio, analytic,
            probs_bytes, gflops, peak, peak > 0 ? gflops / peak : 0.0);
        std::fflush(stdout);
    }
    return 0;
}

}  // namespace pd::cli
