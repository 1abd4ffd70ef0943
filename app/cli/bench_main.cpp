// paralleldeck-bench: engine benchmarks that print their figures (never assert on time).
//   allreduce  nccl-tests-style rows for the ring all-reduce (CPU threads or CUDA virtual
//              devices), the copy bandwidth measured in the same run, and busbw against the
//              in-memory ring bound
//   alltoall   the same for the all-to-all of expert parallelism (n - 1 pairwise exchanges)
//   gemm       the engine's matrix products at the model's sizes vs one large reference and
//              the FMA peak
//   fma-peak   the CPU's fp32 FMA peak per instruction set and thread count (bench_fma_peak.cpp)
//   overhead   step time with tracing on and off, side by side, and their ratio
//   pipeline   measured and theoretical bubble fractions of each pipeline schedule, and each
//              stage's peak activations
//   step       a training step of the engine beside PyTorch eager on the same CPU
//              (bench_step.cpp)
//   attention  a transformer's step at a fixed token count as seq_len grows: attention units'
//              time beside the MLP units' (from the trace), its share, the analytic FLOP
//              ratio, and the attention probabilities' bytes per layer (bench_attention.cpp)
//   import     synthetic Kineto traces (1 million events by default) read by the trace
//              importer: load time, events and MB per second (bench_import.cpp)
#include <CLI/CLI.hpp>
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <ctime>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "bench_allreduce_algorithms.h"
#include "bench_attention.h"
#include "bench_fma_peak.h"
#include "bench_import.h"
#include "bench_statistics.h"
#include "bench_step.h"
#include "pd/communicator.h"
#include "pd/device.h"
#include "pd/device_group.h"
#include "pd/metrics.h"
#include "pd/run.h"
#include "pd/run_context.h"
#include "pd/units.h"

namespace {

using pd::cli::median;

using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point t0) {
    return std::chrono::duration<double>(Clock::now() - t0).count();
}

// The devices of a benchmark, or a message on stderr naming why the backend cannot run.
std::unique_ptr<pd::DeviceGroup> make_group(pd::RunConfig c, pd::RunContext& ctx) {
    c.capacity_bytes = std::size_t{1} << 40;  // benchmarks measure speed, not budgets
    if (const std::string why = pd::backend_unavailable_reason(c.backend); !why.empty()) {
        std::fprintf(stderr, "--backend: '%s' cannot run here: %s\n",
                     std::string(pd::name_of(c.backend)).c_str(), why.c_str());
        return nullptr;
    }
    return std::make_unique<pd::DeviceGroup>(c, ctx);
}

// `op`: "all_reduce" (in place) or "all_to_all" (from one buffer into another).
int bench_collective(const std::string& op, pd::BackendKind backend, int devices,
                     std::size_t min_bytes, std::size_t max_bytes, int iters_hint) {
    using namespace pd;
    RunContext ctx(ClockMode::wall, LinkModel{}, false, 120.0);
    RunConfig config;
    config.backend = backend;
    config.devices = devices;
    auto group = make_group(config, ctx);
    if (!group) return 2;
    Transport transport(ctx);
    Communicator comm(transport, group->members(), 1);
    const bool all_to_all = op == "all_to_all";
    std::vector<Buffer> buffers(static_cast<std::size_t>(devices)),
        received(static_cast<std::size_t>(devices));
    const std::size_t max_count = std::max<std::size_t>(1, max_bytes / sizeof(float));
    for (int d = 0; d < devices; ++d) {  // zero-filled: the sums stay finite
        Device& dev = group->device(d);
        dev.comm().enqueue([&buffers, &received, &dev, d, max_count, all_to_all] {
            buffers[static_cast<std::size_t>(d)] =
                Buffer(dev.memory(), MemoryCategory::workspace, max_count);
            if (all_to_all)
                received[static_cast<std::size_t>(d)] =
                    Buffer(dev.memory(), MemoryCategory::workspace, max_count);
        });
    }
    group->synchronize();
    auto run_once = [&](std::size_t count, int iters) {
        const auto t0 = Clock::now();
        for (int it = 0; it < iters; ++it)
            for (int d = 0; d < devices; ++d) {
                float* data = buffers[static_cast<std::size_t>(d)].data();
                float* into = received[static_cast<std::size_t>(d)].data();
                group->device(d).comm().enqueue([&comm, d, data, into, count, all_to_all] {
                    if (all_to_all)
                        comm.all_to_all(d, data, into, count, 0);
                    else
                        comm.all_reduce(d, data, count, 0);
                });
            }
        group->synchronize();
        return seconds_since(t0) / iters;
    };

    // The same copy path as a ring step's, on the same memory, in the same run.
    const double copy_bw =
        measure_copy_bandwidth(group->device(0), std::max<std::size_t>(max_bytes, 64u << 20));
    const bool gpu = backend == BackendKind::cuda;
    std::printf("# paralleldeck-bench %s: %d devices (%s), %s\n",
                all_to_all ? "alltoall" : "allreduce", devices,
                gpu ? "virtual devices on the GPU(s), device-to-device copies + reduce kernels"
                    : "threads in one process",
                all_to_all ? "pairwise exchanges, float32" : "ring, float32 sum");
    std::printf("# %12s %12s %6s %12s %10s %10s\n", "size(B)", "count", "type", "time(us)", "algbw",
                "busbw");
    double last_busbw = 0;
    std::size_t last_bytes = 0;
    for (std::size_t bytes = std::max<std::size_t>(min_bytes, 4); bytes <= max_bytes; bytes *= 2) {
        // An all-to-all sends every member an equal chunk.
        const std::size_t count = all_to_all
                                      ? std::max<std::size_t>(1, bytes / sizeof(float) / devices) *
                                            static_cast<std::size_t>(devices)
                                      : bytes / sizeof(float);
        const int iters = iters_hint > 0
                              ? iters_hint
                              : static_cast<int>(std::clamp<std::size_t>(
                                    (256u << 20) / std::max<std::size_t>(bytes, 1), 5, 200));
        run_once(count, 2);  // warm-up: channels, recycled payloads, page faults
        const double t = run_once(count, iters);
        const double algbw = static_cast<double>(count * sizeof(float)) / t / 1e9;
        const double busbw = algbw * pd::bus_bandwidth_factor(op, devices);
        std::printf("  %12zu %12zu %6s %12.1f %10.3f %10.3f\n", count * sizeof(float), count,
                    "float", t * 1e6, algbw, busbw);
        last_busbw = busbw;
        last_bytes = count * sizeof(float);
        if (ctx.aborted()) {
            std::fprintf(stderr, "%s failed: %s\n", op.c_str(), ctx.first_error_message().c_str());
            return 1;
        }
    }
    for (auto& b : buffers) b.reset();
    for (auto& b : received) b.reset();
    transport.clear();
    // All-reduce: each ring step moves a chunk through memory about 5 times (copy out: read +
    // write; reduce: two reads + one write) and n members share the same memory's bandwidth;
    // a copy's rate counts one read and one write per byte, hence 2 * B_mem / (5 n).
    // All-to-all: each chunk sent is copied out and copied in (4 touches): B_mem / (2 n).
    const double bound =
        (all_to_all ? 1.0 / (2.0 * devices) : 2.0 / (5.0 * devices)) * copy_bw / 1e9;
    const double ratio = bound > 0 ? last_busbw / bound : 0.0;
    std::printf("# copy bandwidth (%s, same run): %.3f GB/s\n", gpu ? "device-to-device" : "memcpy",
                copy_bw / 1e9);
    std::printf("# in-memory bound %s: %.3f GB/s\n", all_to_all ? "B_mem/(2n)" : "2*B_mem/(5n)",
                bound);
    std::printf(
        "# (the copy rate is one thread's: members copying on several cores at once can "
        "pass this bound)\n");
    std::printf("busbw_ratio_to_bound: %.3f\n", ratio);
    std::printf(
        "RESULT %s backend=%s devices=%d bytes=%zu busbw_gbps=%.3f copy_gbps=%.3f "
        "bound_gbps=%.3f ratio=%.3f\n",
        all_to_all ? "alltoall" : "allreduce", std::string(name_of(backend)).c_str(), devices,
        last_bytes, last_busbw, copy_bw / 1e9, bound, ratio);
    return 0;
}

// The engine's matrix products at the model's sizes (a block's forward and backward products
// for `rows` samples of width h) against one large reference product, side by side.
int bench_gemm(pd::BackendKind backend, int width, int rows, int threads) {
    using namespace pd;
    RunContext ctx(ClockMode::wall, LinkModel{}, false, 120.0);
    RunConfig config;
    config.backend = backend;
    config.threads = threads;
    auto group = make_group(config, ctx);
    if (!group) return 2;
    const bool gpu = backend == BackendKind::cuda;
    const int h = width, f = 4 * width;
    struct Shape {
        const char* what;
        int m, n, k;
    };
    const Shape shapes[] = {{"forward x W1 (rows x h -> 4h)", rows, f, h},
                            {"forward g W2 (rows x 4h -> h)", rows, h, f},
                            {"backward dW1 = x^T dy", h, f, rows},
                            {"backward dx = dy W1^T", rows, h, f}};
    std::printf(
        "# paralleldeck-bench gemm: %s, fp32%s, width %d, %d rows\n",
        gpu ? "cuBLAS through the engine's CUDA device"
            : "the engine's CPU device (its own kernel; OpenBLAS for what that does not take)",
        gpu ? " (TF32 off unless marked)" : "", width, rows);
    if (!gpu) {
        const int used =
            resolve_intra_op_threads(config, ClockMode::wall, std::thread::hardware_concurrency());
        std::printf("# BLAS: %s, %d thread%s per product; products: %s\n",
                    cpu_blas_kernels().c_str(), used, used == 1 ? "" : "s",
                    cpu_small_gemm().c_str());
    }
    std::printf("# %-32s %6s %6s %6s %12s\n", "product", "m", "n", "k", "GFLOP/s");
    double flops = 0, seconds = 0;
    for (const Shape& s : shapes) {
        const double work = 2.0 * s.m * s.n * static_cast<double>(s.k);
        // On the CPU at least 0.2 GFLOP a repeat (a card's products take some 50 us each, too
        // short to time alone against a stream's hand-off).
        const int products = gpu ? 50 : std::max(3, static_cast<int>(std::ceil(2e8 / work)));
        const double rate = measure_gemm_flops(group->device(0), s.m, s.n, s.k, products);
        flops += work;
        seconds += work / rate;
        std::printf("  %-32s %6d %6d %6d %12.1f\n", s.what, s.m, s.n, s.k, rate / 1e9);
    }
    const double model_rate = flops / seconds;
    const int ref = gpu ? 8192 : 1024;
    const double ref_fp32 = measure_gemm_flops(group->device(0), ref, ref, ref, gpu ? 5 : 1);
    std::printf("  %-32s %6d %6d %6d %12.1f\n", "reference fp32", ref, ref, ref, ref_fp32 / 1e9);
    double ref_tf32 = 0;
    if (gpu) {
        RunConfig tf32 = config;
        tf32.tf32 = true;
        auto tf32_group = make_group(tf32, ctx);
        if (!tf32_group) return 2;
        ref_tf32 = measure_gemm_flops(tf32_group->device(0), ref, ref, ref, 5);
        std::printf("  %-32s %6d %6d %6d %12.1f\n", "reference TF32", ref, ref, ref,
                    ref_tf32 / 1e9);
    }
    if (ctx.aborted()) {
        std::fprintf(stderr, "gemm failed: %s\n", ctx.first_error_message().c_str());
        return 1;
    }
    std::printf("model_sizes_to_reference_fp32: %.3f\n", model_rate / ref_fp32);
    // The hardware's limit: the FMA peak of the threads a product ran on (a GPU's is not
    // measured here).
    double peak = 0;
    if (!gpu) {
        const cli::FmaPeak p = cli::fma_peak(
            resolve_intra_op_threads(config, ClockMode::wall, std::thread::hardware_concurrency()));
        peak = p.gflops;
        std::printf(
            "fma_peak: %.1f GFLOP/s (%s, %d thread%s); model sizes at %.3f of it, the "
            "reference at %.3f\n",
            peak, p.isa.c_str(), p.threads, p.threads == 1 ? "" : "s",
            peak > 0 ? model_rate / 1e9 / peak : 0.0, peak > 0 ? ref_fp32 / 1e9 / peak : 0.0);
    }
    std::printf(
        "RESULT gemm backend=%s width=%d rows=%d model_gflops=%.1f ref_fp32_gflops=%.1f "
        "ref_tf32_gflops=%.1f ratio_model_to_fp32=%.3f fma_peak_gflops=%.1f "
        "fraction_of_peak=%.3f\n",
        std::string(name_of(backend)).c_str(), width, rows, model_rate / 1e9, ref_fp32 / 1e9,
        ref_tf32 / 1e9, model_rate / ref_fp32, peak, peak > 0 ? model_rate / 1e9 / peak : 0.0);
    return 0;
}

double process_cpu_seconds() {
    timespec ts{};
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
    return static_cast<double>(ts.tv_sec) + static_cast<double>(ts.tv_nsec) * 1e-9;
}

// Tracing on against off, in rounds of two runs side by side. A step's cost is read from the
// progress call that ends it, so set-up, the first (cold) step and the trace's collection at
// the end are left out. The CPU time of the process is the headline: on a shared VM other
// tenants' load stretches wall time by more than tracing costs, and a stolen core is not
// this process's CPU time.
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
    base.threads = 1;
    struct Side {
        std::vector<double> wall, cpu;
    } on, off;
    std::vector<double> wall_ratios, cpu_ratios;
    for (int r = 0; r < rounds; ++r) {
        for (bool tracing : {true, false}) {
            RunConfig c = base;
            c.trace_enabled = tracing;
            Run run(c);
            std::vector<std::pair<Clock::time_point, double>> ends;
            const RunResult result = run.execute([&](const RunProgress& p) {
                if (p.phase == "training") ends.emplace_back(Clock::now(), process_cpu_seconds());
            });
            if (result.status != RunStatus::ok) {
                std::fprintf(stderr, "overhead run failed: %s\n", result.error.c_str());
                return 1;
            }
            std::vector<double> wall, cpu;
            for (std::size_t i = 2; i < ends.size(); ++i) {
                wall.push_back(
                    std::chrono::duration<double>(ends[i].first - ends[i - 1].first).count());
                cpu.push_back(ends[i].second - ends[i - 1].second);
            }
            Side& side = tracing ? on : off;
            side.wall.push_back(median(wall));
            side.cpu.push_back(median(cpu));
        }
        wall_ratios.push_back(on.wall.back() / off.wall.back());
        cpu_ratios.push_back(on.cpu.back() / off.cpu.back());
    }
    std::printf(
        "# paralleldeck-bench overhead: single device, 4 blocks x 256, batch 64, 1 intra-op "
        "thread, %d alternating rounds of a traced and an untraced run of 20 steps; per run the "
        "median over its steps after the first, then the median over rounds\n",
        rounds);
    std::printf("step_time_tracing_on_ms: %.3f wall, %.3f cpu\n", median(on.wall) * 1e3,
                median(on.cpu) * 1e3);
    std::printf("step_time_tracing_off_ms: %.3f wall, %.3f cpu\n", median(off.wall) * 1e3,
                median(off.cpu) * 1e3);
    std::printf("tracing_overhead_ratio_wall: %.3f\n", median(wall_ratios));
    std::printf(
        "tracing_overhead_ratio: %.3f (process CPU time per step, median of the rounds' "
        "side-by-side ratios)\n",
        median(cpu_ratios));
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
        for (PipelineSchedule schedule :
             {PipelineSchedule::gpipe, PipelineSchedule::one_f_one_b, PipelineSchedule::interleaved,
              PipelineSchedule::zb_h1, PipelineSchedule::zb_v}) {
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
            if (schedule == PipelineSchedule::interleaved || schedule == PipelineSchedule::zb_v)
                label += " v=2";
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
    auto* alltoall =
        app.add_subcommand("alltoall", "All-to-all bandwidth (expert parallelism's exchange)");
    int devices = 4, iters = 0;
    std::string min_bytes = "1KiB", max_bytes = "64MiB";
    std::string backend_name = "cpu";
    for (CLI::App* sub : {allreduce, alltoall}) {
        sub->add_option("--devices", devices, "Group members")->check(CLI::Range(1, 64));
        sub->add_option("--min-bytes", min_bytes, "Smallest size");
        sub->add_option("--max-bytes", max_bytes, "Largest size");
        sub->add_option("--iters", iters, "Timed iterations per size (0 = adaptive)");
        sub->add_option("--backend", backend_name, "cpu | cuda")
            ->check(CLI::IsMember({"cpu", "cuda"}));
    }
    bool algorithms = false;
    allreduce->add_flag("--algorithms", algorithms,
                        "Every all-reduce algorithm (ring, tree, hierarchical, in-network) on "
                        "named cluster topologies, device clock, beside the alpha-beta model");
    auto* gemm = app.add_subcommand("gemm", "Matrix products at the model's sizes vs a reference");
    int gemm_width = 1024, gemm_rows = 256;
    std::string gemm_backend = "cuda";
    gemm->add_option("--backend", gemm_backend, "cpu | cuda")
        ->check(CLI::IsMember({"cpu", "cuda"}));
    gemm->add_option("--width", gemm_width, "Model width h")->check(CLI::Range(8, 16384));
    gemm->add_option("--rows", gemm_rows, "Samples per product")->check(CLI::Range(1, 65536));
    int gemm_threads = 0;
    gemm->add_option("--threads", gemm_threads,
                     "Intra-op threads on the CPU device (0 = all hardware threads)")
        ->check(CLI::Range(0, 1024));
    auto* overhead = app.add_subcommand("overhead", "Tracing on vs off");
    int rounds = 15;
    overhead->add_option("--rounds", rounds, "Alternating rounds")->check(CLI::Range(1, 100));
    auto* pipeline = app.add_subcommand("pipeline", "Bubble fractions of the pipeline schedules");
    int pipeline_steps = 3;
    pipeline->add_option("--steps", pipeline_steps, "Steps per run")->check(CLI::Range(1, 50));
    auto* step = app.add_subcommand(
        "step", "A training step in the engine and in PyTorch eager, side by side");
    pd::cli::StepBenchOptions step_options;
    step->add_option("--sizes", step_options.sizes,
                     "Models: large (8 x 512, batch 256), card (8 x 128, batch 64), or "
                     "LAYERSxWIDTHxBATCH")
        ->delimiter(',');
    step->add_option("--strategies", step_options.strategies, "single and/or dp (2 devices)")
        ->delimiter(',')
        ->check(CLI::IsMember({"single", "dp"}));
    step->add_option("--steps", step_options.steps, "Timed steps per round and side")
        ->check(CLI::Range(1, 1000));
    step->add_option("--rounds", step_options.rounds, "Alternating rounds (engine, then torch)")
        ->check(CLI::Range(1, 100));
    step->add_option("--optimizer", step_options.optimizer, "adamw | sgd")
        ->check(CLI::IsMember({"adamw", "sgd"}));
    step->add_option("--python", step_options.python,
                     "Interpreter with torch (default: $PD_PYTHON, else /usr/bin/python3, "
                     "Debian's python3-torch)");
    auto* attention = app.add_subcommand(
        "attention", "Transformer attention vs MLP time as seq_len grows at a fixed token count");
    pd::cli::AttentionBenchOptions attention_options;
    attention->add_option("--seq-lens", attention_options.seq_lens, "Sequence lengths")
        ->delimiter(',')
        ->check(CLI::Range(1, 4096));
    attention
        ->add_option("--tokens", attention_options.tokens,
                     "Tokens per step (batch x seq_len) at every sequence length")
        ->check(CLI::Range(1, 1 << 20));
    attention->add_option("--layers", attention_options.layers, "Transformer blocks")
        ->check(CLI::Range(1, 64));
    attention->add_option("--width", attention_options.width, "Model width h")
        ->check(CLI::Range(8, 4096));
    attention->add_option("--heads", attention_options.heads, "Attention heads (divide the width)")
        ->check(CLI::Range(1, 256));
    attention->add_option("--steps", attention_options.steps, "Timed steps per sequence length")
        ->check(CLI::Range(1, 1000));
    attention
        ->add_option("--threads", attention_options.threads,
                     "Intra-op threads (0 = all hardware threads)")
        ->check(CLI::Range(0, 1024));
    auto* fma = app.add_subcommand("fma-peak",
                                   "The CPU's fp32 FMA peak per instruction set and thread count");
    auto* import = app.add_subcommand("import", "Reading a large PyTorch trace");
    pd::cli::ImportBenchOptions import_options;
    import->add_option("--events", import_options.events, "Events over all ranks")
        ->check(CLI::Range(100LL, 100'000'000LL));
    import->add_option("--ranks", import_options.ranks, "Files, one per rank")
        ->check(CLI::Range(1, 1024));
    import->add_option("--rounds", import_options.rounds, "Timed imports")
        ->check(CLI::Range(1, 50));
    import->add_flag("--gzip", import_options.gzip, "Write .json.gz");
    import->add_option("--out", import_options.out, "Keep the traces in this folder");
    import
        ->add_option("--many-ranks", import_options.many_ranks,
                     "Rows of many small rank files: counts of ranks (default 1000,10000,100000; "
                     "0 for none)")
        ->delimiter(',')
        ->check(CLI::Range(0, 1'000'000));
    CLI11_PARSE(app, argc, argv);

    if (*fma) return pd::cli::bench_fma_peak();
    if (*import) return pd::cli::bench_import(import_options);

    if (*attention) return pd::cli::bench_attention(attention_options);
    if (*step) return pd::cli::bench_step(step_options, argv[0]);

    if (*pipeline) return bench_pipeline(pipeline_steps);
    if (*gemm)
        return bench_gemm(*pd::backend_from_name(gemm_backend), gemm_width, gemm_rows,
                          gemm_threads);

    if (*allreduce && algorithms) return pd::cli::bench_allreduce_algorithms(iters);
    if (*allreduce || *alltoall) {
        const auto lo = pd::parse_byte_size(min_bytes), hi = pd::parse_byte_size(max_bytes);
        if (!lo || !hi || *lo > *hi) {
            std::fprintf(stderr, "--min-bytes/--max-bytes: need two sizes with min <= max\n");
            return 2;
        }
        return bench_collective(*alltoall ? "all_to_all" : "all_reduce",
                                *pd::backend_from_name(backend_name), devices, *lo, *hi, iters);
    }
    return bench_overhead(rounds);
}
