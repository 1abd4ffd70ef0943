// paralleldeck-bench: engine benchmarks that print their figures (never assert on time).
//   allreduce  nccl-tests-style rows for the in-process ring all-reduce, the machine's copy
//              bandwidth measured in the same run, and busbw against the in-memory ring bound
//   overhead   step time with tracing on and off, side by side, and their ratio
#include <CLI/CLI.hpp>
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <memory>
#include <vector>

#include "pd/communicator.h"
#include "pd/device.h"
#include "pd/metrics.h"
#include "pd/run.h"
#include "pd/run_context.h"
#include "pd/units.h"

namespace {

using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point t0) {
    return std::chrono::duration<double>(Clock::now() - t0).count();
}

// Best-of-N single-thread memcpy rate (bytes copied per second).
double measure_copy_bandwidth(std::size_t bytes) {
    std::vector<char> src(bytes, 1), dst(bytes, 0);
    double best = 0;
    for (int i = 0; i < 5; ++i) {
        const auto t0 = Clock::now();
        std::memcpy(dst.data(), src.data(), bytes);
        const double s = seconds_since(t0);
        best = std::max(best, static_cast<double>(bytes) / s);
        src[static_cast<std::size_t>(i)] = dst[bytes - 1 - static_cast<std::size_t>(i)];
    }
    return best;
}

int bench_allreduce(int devices, std::size_t min_bytes, std::size_t max_bytes, int iters_hint) {
    using namespace pd;
    RunContext ctx(ClockMode::wall, LinkModel{}, false, 120.0);
    std::vector<std::unique_ptr<Device>> devs;
    std::vector<Device*> members;
    for (int d = 0; d < devices; ++d) {
        devs.push_back(std::make_unique<Device>(d, std::size_t{1} << 40, ctx));
        members.push_back(devs.back().get());
    }
    Transport transport(ctx);
    Communicator comm(transport, members, 1);
    std::vector<Buffer> buffers;
    const std::size_t max_count = std::max<std::size_t>(1, max_bytes / sizeof(float));
    for (auto& d : devs) {
        buffers.emplace_back(d->memory(), MemoryCategory::workspace, max_count);
        std::fill(buffers.back().data(), buffers.back().data() + max_count, 1.0f);
    }
    auto run_once = [&](std::size_t count, int iters) {
        const auto t0 = Clock::now();
        for (int it = 0; it < iters; ++it)
            for (int d = 0; d < devices; ++d) {
                float* data = buffers[static_cast<std::size_t>(d)].data();
                devs[static_cast<std::size_t>(d)]->comm().enqueue(
                    [&comm, d, data, count] { comm.all_reduce(d, data, count, 0); });
            }
        for (auto& d : devs) d->comm().synchronize();
        return seconds_since(t0) / iters;
    };

    const double copy_bw = measure_copy_bandwidth(std::max<std::size_t>(max_bytes, 64u << 20));
    std::printf(
        "# paralleldeck-bench allreduce: %d devices (threads in one process), ring, "
        "float32 sum\n",
        devices);
    std::printf("# %12s %12s %6s %12s %10s %10s\n", "size(B)", "count", "type", "time(us)", "algbw",
                "busbw");
    double last_busbw = 0;
    for (std::size_t bytes = std::max<std::size_t>(min_bytes, 4); bytes <= max_bytes; bytes *= 2) {
        const std::size_t count = bytes / sizeof(float);
        const int iters = iters_hint > 0
                              ? iters_hint
                              : static_cast<int>(std::clamp<std::size_t>(
                                    (256u << 20) / std::max<std::size_t>(bytes, 1), 5, 200));
        run_once(count, 2);  // warm-up: channels, recycled payloads, page faults
        const double t = run_once(count, iters);
        const double algbw = static_cast<double>(count * sizeof(float)) / t / 1e9;
        const double busbw = algbw * pd::bus_bandwidth_factor("all_reduce", devices);
        std::printf("  %12zu %12zu %6s %12.1f %10.3f %10.3f\n", count * sizeof(float), count,
                    "float", t * 1e6, algbw, busbw);
        last_busbw = busbw;
        if (ctx.aborted()) {
            std::fprintf(stderr, "allreduce failed: %s\n", ctx.first_error_message().c_str());
            return 1;
        }
    }
    // Each ring step moves a chunk through memory about 5 times (copy out: read + write; reduce:
    // two reads + one write) and n members share the machine's memory bandwidth; memcpy's rate
    // counts one read and one write per byte, hence 2 * B_mem / (5 n).
    const double bound = 2.0 * copy_bw / 1e9 / (5.0 * devices);
    std::printf("# copy bandwidth (memcpy, same run): %.3f GB/s\n", copy_bw / 1e9);
    std::printf("# in-memory ring bound 2*B_mem/(5n): %.3f GB/s\n", bound);
    std::printf("busbw_ratio_to_bound: %.3f\n", bound > 0 ? last_busbw / bound : 0.0);
    return 0;
}

double median(std::vector<double> v) {
    std::sort(v.begin(), v.end());
    return v.empty() ? 0.0 : v[v.size() / 2];
}

int bench_overhead(int rounds) {
    using namespace pd;
    RunConfig base;
    base.strategy = StrategyKind::single;
    base.devices = 1;
    base.layers = 4;
    base.width = 256;
    base.batch = 64;
    base.steps = 20;
    base.clock = ClockMode::wall;
    std::vector<double> on, off;
    // Alternate so both see the same machine state.
    for (int r = 0; r < rounds; ++r) {
        for (bool tracing : {true, false}) {
            RunConfig c = base;
            c.trace_enabled = tracing;
            Run run(c);
            const auto t0 = Clock::now();
            const RunResult result = run.execute();
            const double per_step = seconds_since(t0) / c.steps;
            if (result.status != RunStatus::ok) {
                std::fprintf(stderr, "overhead run failed: %s\n", result.error.c_str());
                return 1;
            }
            (tracing ? on : off).push_back(per_step);
        }
    }
    const double m_on = median(on), m_off = median(off);
    std::printf(
        "# paralleldeck-bench overhead: single device, 4 blocks x 256, batch 64, %d "
        "rounds x 20 steps\n",
        rounds);
    std::printf("step_time_tracing_on_ms: %.3f\n", m_on * 1e3);
    std::printf("step_time_tracing_off_ms: %.3f\n", m_off * 1e3);
    std::printf("tracing_overhead_ratio: %.3f\n", m_off > 0 ? m_on / m_off : 0.0);
    return 0;
}

int bench_pipeline(int steps) {
    using namespace pd;
    std::printf(
        "# paralleldeck-bench pipeline: p=4 stages, 8 blocks x width 256, 16 rows per "
        "micro-batch, SGD, device clock, median of %d steps\n",
        steps);
    std::printf("# %-15s %4s %9s %12s  peak activations per stage\n", "schedule", "m", "measured",
                "theoretical");
    for (int m : {4, 8, 16, 32}) {
        for (PipelineSchedule schedule : {PipelineSchedule::gpipe, PipelineSchedule::one_f_one_b,
                                          PipelineSchedule::interleaved}) {
            RunConfig c;
            c.strategy = StrategyKind::pipeline;
            c.devices = 4;
            c.layers = 8;
            c.width = 256;
            c.microbatches = m;
            c.batch = 16 * m;
            c.steps = steps;
            c.optimizer = OptimizerKind::sgd;
            c.clock = ClockMode::device;
            c.schedule = schedule;
            c.chunks = schedule == PipelineSchedule::interleaved ? 2 : 1;
            Run run(c);
            const RunResult result = run.execute();
            if (result.status != RunStatus::ok) {
                std::fprintf(stderr, "pipeline run failed: %s\n", result.error.c_str());
                return 1;
            }
            const RunMetrics metrics = compute_metrics(result.trace, c);
            std::string label = std::string(name_of(schedule));
            if (schedule == PipelineSchedule::interleaved) label += " v=2";
            std::printf("  %-15s %4d %9.3f %12.3f ", label.c_str(), m, metrics.bubble->measured,
                        metrics.bubble->theoretical);
            for (const auto& a : metrics.stage_activations)
                std::printf(" %10s (%d mb)",
                            pd::format_bytes(static_cast<double>(a.peak_activation_bytes)).c_str(),
                            a.microbatches_alive_at_peak);
            std::printf("\n");
        }
    }
    return 0;
}

}  // namespace

int main(int argc, char** argv) {
    CLI::App app{"paralleldeck-bench: engine benchmarks (figures and ratios, no assertions)"};
    app.require_subcommand(1);
    auto* allreduce = app.add_subcommand("allreduce", "Ring all-reduce bandwidth");
    int devices = 4, iters = 0;
    std::string min_bytes = "1KiB", max_bytes = "64MiB";
    allreduce->add_option("--devices", devices, "Ring members")->check(CLI::Range(1, 64));
    allreduce->add_option("--min-bytes", min_bytes, "Smallest size");
    allreduce->add_option("--max-bytes", max_bytes, "Largest size");
    allreduce->add_option("--iters", iters, "Timed iterations per size (0 = adaptive)");
    auto* overhead = app.add_subcommand("overhead", "Tracing on vs off");
    int rounds = 5;
    overhead->add_option("--rounds", rounds, "Alternating rounds")->check(CLI::Range(1, 100));
    auto* pipeline = app.add_subcommand("pipeline", "Bubble fractions of the pipeline schedules");
    int pipeline_steps = 3;
    pipeline->add_option("--steps", pipeline_steps, "Steps per run")->check(CLI::Range(1, 50));
    CLI11_PARSE(app, argc, argv);

    if (*pipeline) return bench_pipeline(pipeline_steps);

    if (*allreduce) {
        const auto lo = pd::parse_byte_size(min_bytes), hi = pd::parse_byte_size(max_bytes);
        if (!lo || !hi || *lo > *hi) {
            std::fprintf(stderr, "--min-bytes/--max-bytes: need two sizes with min <= max\n");
            return 2;
        }
        return bench_allreduce(devices, *lo, *hi, iters);
    }
    return bench_overhead(rounds);
}
