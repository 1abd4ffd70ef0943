#include "bench_step.h"

#include "bench_fma_peak.h"
#include "bench_statistics.h"

#include <sys/wait.h>
#include <unistd.h>
#include <algorithm>
#include <array>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <map>
#include <optional>
#include <thread>

#include "pd/device_group.h"
#include "pd/run.h"
#include "pd/run_context.h"

namespace pd::cli {

namespace {

struct Size {
    std::string label;
    int layers = 8, width = 512, batch = 256;
};

std::optional<Size> parse_size(const std::string& text) {
    if (text == "large") return Size{"8x512 b256", 8, 512, 256};
    if (text == "card") return Size{"8x128 b64", 8, 128, 64};
    Size s;
    if (std::sscanf(text.c_str(), "%dx%dx%d", &s.layers, &s.width, &s.batch) != 3 || s.layers < 1 ||
        s.width < 1 || s.batch < 2)
        return std::nullopt;
    s.label =
        std::to_string(s.layers) + "x" + std::to_string(s.width) + " b" + std::to_string(s.batch);
    return s;
}

// Matrix-product work of one training step over the global batch: forward 2 B P, backward
// 4 B P over the weights P, less the input gradient the first layer does not compute.
double step_flops(const RunConfig& c) {
    const double h = c.width, b = c.batch;
    const double weights = c.input_dim * h + c.layers * 8.0 * h * h + h * c.classes;
    return 6.0 * b * weights - 2.0 * b * c.input_dim * h;
}

// One engine step, from its trace: its time, start of the step to the start of the next (host
// gaps between steps count, as they do in a Python loop; the last step: its span), and device
// 0's busy time in the model's units (forward and backward, products and the element-wise
// work around them) and in the optimizer.
struct EngineStep {
    double seconds = 0, units_s = 0, optimizer_s = 0;
};

std::vector<EngineStep> engine_steps(const RunConfig& config, std::string& error) {
    Run run(config);
    const RunResult result = run.execute();
    if (result.status != RunStatus::ok) {
        error = result.error;
        return {};
    }
    std::map<int, std::pair<std::int64_t, std::int64_t>> spans;
    std::map<int, EngineStep> busy;
    for (const TraceEvent& e : result.trace.events) {
        if (e.step < 0) continue;
        auto [it, fresh] = spans.try_emplace(e.step, e.start_ns, e.end_ns);
        if (!fresh) {
            it->second.first = std::min(it->second.first, e.start_ns);
            it->second.second = std::max(it->second.second, e.end_ns);
        }
        if (e.device != 0) continue;
        const double s = static_cast<double>(e.duration_ns()) * 1e-9;
        if (e.kind == EventKind::forward || e.kind == EventKind::backward)
            busy[e.step].units_s += s;
        else if (e.kind == EventKind::optimizer)
            busy[e.step].optimizer_s += s;
    }
    std::vector<EngineStep> out;
    for (auto it = spans.begin(); it != spans.end(); ++it) {
        if (it->first < kWarmupSteps) continue;
        const auto next = std::next(it);
        const std::int64_t end = next != spans.end() ? next->second.first : it->second.second;
        EngineStep step = busy[it->first];
        step.seconds = static_cast<double>(end - it->second.first) * 1e-9;
        out.push_back(step);
    }
    return out;
}

std::string shell_quote(const std::string& s) {
    std::string q = "'";
    for (char ch : s) q += ch == '\'' ? std::string("'\\''") : std::string(1, ch);
    return q + "'";
}

std::string find_torch_script(const char* argv0) {
    if (const char* env = std::getenv("PD_TORCH_STEP_SCRIPT")) return env;
    std::error_code ec;
    std::filesystem::path exe = std::filesystem::read_symlink("/proc/self/exe", ec);
    if (ec) exe = std::filesystem::absolute(argv0, ec);
    const std::filesystem::path dir = exe.parent_path();
    for (const auto& candidate : {dir / "bench_torch_step.py",
                                  dir / ".." / "share" / "paralleldeck" / "bench_torch_step.py"})
        if (std::filesystem::exists(candidate, ec)) return candidate.string();
    return {};
}

struct TorchSide {
    std::string python, script;
    std::string unavailable;  // why PyTorch cannot run here (empty: it can)
    int port = 0;

    // Per-step seconds of one round; sets `unavailable` when torch cannot run.
    std::vector<double> run(const Size& size, int ranks, int threads, bool blas_threads_only,
                            int steps, const std::string& optimizer) {
        const std::string cmd =
            shell_quote(python) + " " + shell_quote(script) + " --width " +
            std::to_string(size.width) + " --layers " + std::to_string(size.layers) + " --batch " +
            std::to_string(size.batch) + " --steps " + std::to_string(steps) + " --warmup " +
            std::to_string(kWarmupSteps) + " --threads " + std::to_string(threads) + " --ranks " +
            std::to_string(ranks) + (blas_threads_only ? " --blas-threads-only" : "") +
            " --optimizer " + optimizer + " --port " + std::to_string(port++) + " 2>&1";
        std::vector<double> out;
        FILE* pipe = popen(cmd.c_str(), "r");
        if (!pipe) {
            unavailable = "cannot start " + python;
            return out;
        }
        std::array<char, 4096> line{};
        std::string last;
        while (std::fgets(line.data(), static_cast<int>(line.size()), pipe)) {
            std::string text(line.data());
            while (!text.empty() && (text.back() == '\n' || text.back() == '\r')) text.pop_back();
            double ms = 0;
            if (std::sscanf(text.c_str(), "STEP_MS %lf", &ms) == 1)
                out.push_back(ms * 1e-3);
            else if (text.rfind("UNAVAILABLE ", 0) == 0)
                unavailable = text.substr(12);
            else if (!text.empty())
                last = text;
        }
        const int status = pclose(pipe);
        if (out.empty() && unavailable.empty())
            unavailable = python + " exited with status " +
                          std::to_string(WIFEXITED(status) ? WEXITSTATUS(status) : status) +
                          (last.empty() ? "" : ": " + last);
        return out;
    }
};

// BLAS at one large square product, on a device with `threads` intra-op threads.
double blas_reference_flops(int threads) {
    RunContext ctx(ClockMode::wall, LinkModel{}, false, 120.0);
    RunConfig config;
    config.threads = threads;
    config.capacity_bytes = std::size_t{1} << 40;
    DeviceGroup group(config, ctx);
    return measure_gemm_flops(group.device(0), 1024, 1024, 1024, 2, 3);
}

}  // namespace

int bench_step(const StepBenchOptions& options, const char* argv0) {
    std::vector<Size> sizes;
    for (const std::string& s : options.sizes) {
        const auto size = parse_size(s);
        if (!size) {
            std::fprintf(
                stderr, "--sizes: '%s' is not large, card or LAYERSxWIDTHxBATCH (e.g. 8x512x256)\n",
                s.c_str());
            return 2;
        }
        sizes.push_back(*size);
    }
    const int hardware = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));

    TorchSide torch;
    torch.port = 29500 + static_cast<int>(getpid() % 2000) * 4;
    if (!options.python.empty())
        torch.python = options.python;
    else if (const char* env = std::getenv("PD_PYTHON"))
        torch.python = env;
    else
        torch.python = std::filesystem::exists("/usr/bin/python3") ? "/usr/bin/python3" : "python3";
    torch.script = find_torch_script(argv0);
    if (torch.script.empty())
        torch.unavailable =
            "bench_torch_step.py not found next to this program or in ../share/paralleldeck "
            "(or set PD_TORCH_STEP_SCRIPT)";

    std::printf(
        "# paralleldeck-bench step: the engine (CPU backend, wall clock) and PyTorch eager, same "
        "model, batch, %s and fp32, alternating %d rounds of %d steps after %d warm-up steps; "
        "medians of per-step times; %d hardware threads\n",
        options.optimizer.c_str(), options.rounds, options.steps, kWarmupSteps, hardware);
    std::printf("# PyTorch: %s %s\n", torch.python.c_str(),
                torch.unavailable.empty() ? torch.script.c_str() : "");
    // PyTorch inherits this environment, OPENBLAS_CORETYPE included, and Debian's torch calls
    // the same OpenBLAS: both sides' large products run on the same kernels.
    std::printf(
        "# BLAS: %s, PyTorch's products and what the engine's own kernel does not take; the "
        "engine's: %s\n",
        cpu_blas_kernels().c_str(), cpu_small_gemm().c_str());
    std::printf(
        "# of_ref: the step's matrix-product GFLOP/s over BLAS at 1024^3 with the same threads "
        "(BLAS_ref: the median of one measurement after each engine round); "
        "where the rest goes, from the engine's trace (device 0, medians): units_of_ref, the "
        "same FLOPs over the forward and backward units' time alone (products and the "
        "element-wise work between them); opt%%, the optimizer's share of the step\n");
    std::printf(
        "# of_peak: the step's matrix-product GFLOP/s a device over the FMA peak of its threads "
        "(measured with every device's threads running at once, after each engine round as "
        "BLAS_ref: paralleldeck-bench fma-peak); the limit the hardware sets\n");
    std::printf("# %-11s %-8s %7s %11s %10s %10s %8s %11s %10s %7s %12s %5s %9s %7s\n", "model",
                "strategy", "devices", "threads/dev", "engine_ms", "torch_ms", "ratio",
                "GFLOP/s/dev", "BLAS_ref", "of_ref", "units_of_ref", "opt%", "FMA_peak", "of_peak");
    for (const Size& size : sizes) {
        for (const std::string& strategy : options.strategies) {
            const bool dp = strategy == "dp";
            const int devices = dp ? 2 : 1;
            std::vector<int> thread_counts{1};
            if (const int all = std::max(1, hardware / devices); all > 1)
                thread_counts.push_back(all);
            for (const int threads : thread_counts) {
                RunConfig c;
                c.strategy = dp ? StrategyKind::dp : StrategyKind::single;
                c.devices = devices;
                c.layers = size.layers;
                c.width = size.width;
                c.batch = size.batch;
                c.steps = kWarmupSteps + options.steps;
                c.optimizer =
                    options.optimizer == "sgd" ? OptimizerKind::sgd : OptimizerKind::adamw;
                c.clock = ClockMode::wall;
                c.threads = threads;
                c.capacity_bytes = std::size_t{1} << 40;
                // Above one thread PyTorch runs two ways each round, its intra-op pool at the
                // same threads as BLAS (torch.set_num_threads) and at 1 with BLAS alone
                // threaded, and the faster way's median counts: the engine is compared with
                // torch at its best on this machine.
                // The reference is measured right after each engine round, with the engine's
                // threads: on a shared machine a core's speed drifts between minutes, and a
                // ratio counts only when both sides ran at the same time.
                std::vector<double> engine, units, optimizer, references, peaks;
                std::map<bool, std::vector<double>> torch_by_way;
                for (int r = 0; r < options.rounds; ++r) {
                    std::string error;
                    const auto steps = engine_steps(c, error);
                    if (!error.empty()) {
                        std::fprintf(stderr, "engine run failed: %s\n", error.c_str());
                        return 1;
                    }
                    for (const EngineStep& step : steps) {
                        engine.push_back(step.seconds);
                        units.push_back(step.units_s);
                        optimizer.push_back(step.optimizer_s);
                    }
                    references.push_back(blas_reference_flops(threads));
                    peaks.push_back(measure_fma_peak(devices * threads).gflops / devices);
                    for (const bool blas_only : {false, true}) {
                        if (!torch.unavailable.empty() || (blas_only && threads == 1)) continue;
                        const auto t = torch.run(size, devices, threads, blas_only, options.steps,
                                                 options.optimizer);
                        auto& kept = torch_by_way[blas_only];
                        kept.insert(kept.end(), t.begin(), t.end());
                    }
                }
                std::vector<double> reference_torch;
                const char* torch_way = "";
                for (const auto& [blas_only, times] : torch_by_way)
                    if (!times.empty() &&
                        (reference_torch.empty() || median(times) < median(reference_torch))) {
                        reference_torch = times;
                        torch_way = threads == 1 ? ""
                                    : blas_only  ? " (torch pool 1, BLAS all)"
                                                 : " (torch pool all)";
                    }
                const double e_s = median(engine), t_s = median(reference_torch);
                const double gflops = step_flops(c) / e_s / devices / 1e9;
                const double ref = median(references) / 1e9;
                const double units_of_ref = step_flops(c) / median(units) / devices / 1e9 / ref;
                const double optimizer_share = median(optimizer) / e_s;
                const double peak = median(peaks);
                const bool have_torch = !reference_torch.empty();
                char torch_ms[32] = "n/a", ratio[32] = "n/a";
                if (have_torch) {
                    std::snprintf(torch_ms, sizeof torch_ms, "%.2f", t_s * 1e3);
                    std::snprintf(ratio, sizeof ratio, "%.3f", e_s / t_s);
                }
                std::printf(
                    "  %-11s %-8s %7d %11d %10.2f %10s %8s %11.1f %10.1f %7.3f %12.3f %5.1f %9.1f "
                    "%7.3f%s\n",
                    size.label.c_str(), strategy.c_str(), devices, threads, e_s * 1e3, torch_ms,
                    ratio, gflops, ref, gflops / ref, units_of_ref, 100.0 * optimizer_share, peak,
                    peak > 0 ? gflops / peak : 0.0, torch_way);
                std::printf(
                    "RESULT step layers=%d width=%d batch=%d strategy=%s devices=%d "
                    "threads_per_device=%d engine_ms=%.3f torch_ms=%s ratio_to_torch=%s "
                    "engine_gflops_per_device=%.1f blas_ref_gflops=%.1f ratio_to_blas=%.3f "
                    "units_ratio_to_blas=%.3f optimizer_share=%.3f fma_peak_gflops=%.1f "
                    "fraction_of_peak=%.3f\n",
                    size.layers, size.width, size.batch, strategy.c_str(), devices, threads,
                    e_s * 1e3, torch_ms, ratio, gflops, ref, gflops / ref, units_of_ref,
                    optimizer_share, peak, peak > 0 ? gflops / peak : 0.0);
                std::fflush(stdout);
            }
        }
    }
    if (!torch.unavailable.empty())
        std::printf("# PyTorch was not run: %s. The engine's figures above stand alone.\n",
                    torch.unavailable.c_str());
    return 0;
}

}  // namespace pd::cli
