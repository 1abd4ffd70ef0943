#include "bench_import.h"
#include "bench_statistics.h"

#include <zlib.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <string>
#include <vector>

#include "pd/error.h"
#include "pd/metrics.h"
#include "pd/trace_import.h"

namespace pd::cli {

namespace {

namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;

// One rank's trace in Kineto's shape: per step a ProfilerStep# mark, then kernels, each with
// the cudaLaunchKernel that launched it (a correlation id), a forward half and a backward
// half (launched from autograd's thread), and an NCCL all-reduce every 40 kernels.
std::string synthetic_rank(int rank, int ranks, long long events, int steps) {
    std::string out;
    out.reserve(static_cast<std::size_t>(events) * 260);
    char buf[512];
    std::snprintf(buf, sizeof buf,
                  "{\"schemaVersion\": 1, \"distributedInfo\": {\"backend\": \"nccl\", "
                  "\"rank\": %d, \"world_size\": %d}, \"baseTimeNanoseconds\": "
                  "1700000000000000000, \"traceEvents\": [\n",
                  rank, ranks);
    out += buf;
    out +=
        "{\"ph\": \"M\", \"name\": \"thread_name\", \"pid\": 100, \"tid\": 2, \"args\": "
        "{\"name\": \"thread 2 (pt_autograd_0)\"}}";
    // Two events a kernel (launch + kernel), one mark a step.
    const long long kernels_per_step = std::max(1LL, (events - steps - 1) / 2 / steps);
    long long correlation = 1;
    double cpu_t = 0, gpu_t = 0;
    for (int s = 0; s < steps; ++s) {
        const double step_start = cpu_t;
        const double step_len = static_cast<double>(kernels_per_step) * 12.0 + 50;
        std::snprintf(buf, sizeof buf,
                      ",\n{\"ph\": \"X\", \"cat\": \"user_annotation\", \"name\": "
                      "\"ProfilerStep#%d\", \"pid\": 100, \"tid\": 1, \"ts\": %.3f, \"dur\": %.3f}",
                      s, step_start, step_len);
        out += buf;
        for (long long k = 0; k < kernels_per_step; ++k, ++correlation) {
            const bool backward = k >= kernels_per_step / 3;
            const bool nccl = k % 40 == 39;
            cpu_t += 10.0;
            std::snprintf(buf, sizeof buf,
                          ",\n{\"ph\": \"X\", \"cat\": \"cuda_runtime\", \"name\": "
                          "\"cudaLaunchKernel\", \"pid\": 100, \"tid\": %d, \"ts\": %.3f, "
                          "\"dur\": 4.0, \"args\": {\"correlation\": %lld}}",
                          backward ? 2 : 1, cpu_t, correlation);
            out += buf;
            gpu_t = std::max(gpu_t, cpu_t + 5) + 1;
            const double dur = nccl ? 60.0 : 9.0 + static_cast<double>(k % 7);
            if (nccl)
                std::snprintf(buf, sizeof buf,
                              ",\n{\"ph\": \"X\", \"cat\": \"kernel\", \"name\": "
                              "\"ncclDevKernel_AllReduce_Sum_f32_RING_LL(ncclDevKernelArgsStorage<"
                              "4096ul>)\", "
                              "\"pid\": 0, \"tid\": 20, \"ts\": %.3f, \"dur\": %.3f, \"args\": "
                              "{\"correlation\": %lld, \"stream\": 20, \"Collective name\": "
                              "\"allreduce\", \"In msg nelems\": 1048576, \"Out msg nelems\": "
                              "1048576, \"Group size\": %d, \"dtype\": \"Float\"}}",
                              gpu_t, dur, correlation, ranks);
            else
                std::snprintf(buf, sizeof buf,
                              ",\n{\"ph\": \"X\", \"cat\": \"kernel\", \"name\": "
                              "\"ampere_sgemm_128x64_nn\", \"pid\": 0, \"tid\": 7, \"ts\": %.3f, "
                              "\"dur\": %.3f, \"args\": {\"correlation\": %lld, \"stream\": 7}}",
                              gpu_t, dur, correlation);
            out += buf;
            if (!nccl) gpu_t += dur;  // NCCL runs on its own stream, beside the compute
        }
        cpu_t = std::max(cpu_t, step_start + step_len) + 1;
    }
    out += "\n]}\n";
    return out;
}

void write_file(const std::string& path, const std::string& text, bool gzip) {
    if (gzip) {
        gzFile f = gzopen(path.c_str(), "wb6");
        if (!f || gzwrite(f, text.data(), static_cast<unsigned>(text.size())) !=
                      static_cast<int>(text.size()))
            throw std::runtime_error("cannot write " + path);
        gzclose(f);
    } else if (FILE* f = std::fopen(path.c_str(), "wb")) {
        std::fwrite(text.data(), 1, text.size(), f);
        std::fclose(f);
    } else {
        throw std::runtime_error("cannot write " + path);
    }
}

// One row per count of ranks: that many small files written, imported once, their metrics
// computed once. The metrics read each device's own events, so the time grows with the
// events, not with the events times the devices (100,000 ranks took 305 s before).
int bench_many_ranks(const ImportBenchOptions& o, const fs::path& dir) {
    constexpr int kSteps = 3;
    std::printf(
        "# many ranks: one small Kineto trace a rank (%lld events over %d steps), read "
        "once\n",
        o.events_per_rank, kSteps);
    std::printf("# %8s %10s %10s %10s %10s %10s\n", "ranks", "events", "write_s", "import_s",
                "metrics_s", "us/rank");
    for (const int ranks : o.many_ranks) {
        if (ranks <= 0) continue;  // --many-ranks 0: none
        const fs::path sub = dir / ("ranks_" + std::to_string(ranks));
        fs::create_directories(sub);
        const auto t0 = Clock::now();
        std::vector<std::string> paths;
        paths.reserve(static_cast<std::size_t>(ranks));
        for (int r = 0; r < ranks; ++r) {
            paths.push_back((sub / ("rank" + std::to_string(r) + ".json")).string());
            write_file(paths.back(), synthetic_rank(r, ranks, o.events_per_rank, kSteps), false);
        }
        const double write_s = std::chrono::duration<double>(Clock::now() - t0).count();
        const auto t1 = Clock::now();
        Trace t;
        try {
            t = import_traces(paths);
        } catch (const Error& e) {
            std::fprintf(stderr, "import: %s\n", e.what());
            return 1;
        }
        const double import_s = std::chrono::duration<double>(Clock::now() - t1).count();
        const auto t2 = Clock::now();
        const RunMetrics m = compute_metrics(t, 0);
        const double metrics_s = std::chrono::duration<double>(Clock::now() - t2).count();
        if (m.devices.size() != static_cast<std::size_t>(ranks)) {
            std::fprintf(stderr, "import: %zu devices for %d ranks\n", m.devices.size(), ranks);
            return 1;
        }
        std::printf("  %8d %10zu %10.3f %10.3f %10.3f %10.1f\n", ranks, t.origin.raw_events,
                    write_s, import_s, metrics_s, (import_s + metrics_s) / ranks * 1e6);
        std::printf("RESULT import_ranks ranks=%d events=%zu import_s=%.3f metrics_s=%.3f\n", ranks,
                    t.origin.raw_events, import_s, metrics_s);
        std::fflush(stdout);
        if (o.out.empty()) fs::remove_all(sub);
    }
    return 0;
}

}  // namespace

int bench_import(const ImportBenchOptions& o) {
    const bool keep = !o.out.empty();
    const fs::path dir =
        keep ? fs::path(o.out)
             : fs::temp_directory_path() /
                   ("pd_bench_import_" + std::to_string(Clock::now().time_since_epoch().count()));
    fs::create_directories(dir);
    std::vector<std::string> paths;
    std::uintmax_t bytes = 0;
    for (int r = 0; r < o.ranks; ++r) {
        const std::string path =
            (dir / ("rank" + std::to_string(r) + (o.gzip ? ".json.gz" : ".json"))).string();
        write_file(path, synthetic_rank(r, o.ranks, o.events / o.ranks, o.steps), o.gzip);
        bytes += fs::file_size(path);
        paths.push_back(path);
    }
    std::printf("# import: %d synthetic Kineto traces, %lld events in all, %.1f MB on disk%s\n",
                o.ranks, o.events, static_cast<double>(bytes) / 1e6, o.gzip ? " (gzip)" : "");
    std::printf("# %8s %12s %12s %12s %12s\n", "round", "import_s", "metrics_s", "Mevents/s",
                "MB/s");
    std::vector<double> times;
    std::size_t raw = 0, kept = 0;
    for (int round = 0; round < o.rounds; ++round) {
        const auto t0 = Clock::now();
        Trace t;
        try {
            t = import_traces(paths);
        } catch (const Error& e) {
            std::fprintf(stderr, "import: %s\n", e.what());
            return 1;
        }
        const double import_s = std::chrono::duration<double>(Clock::now() - t0).count();
        const auto t1 = Clock::now();
        const RunMetrics m = compute_metrics(t, 0);
        const double metrics_s = std::chrono::duration<double>(Clock::now() - t1).count();
        raw = t.origin.raw_events;
        kept = t.events.size();
        times.push_back(import_s);
        std::printf("  %8d %12.3f %12.3f %12.2f %12.1f\n", round + 1, import_s, metrics_s,
                    static_cast<double>(raw) / import_s / 1e6,
                    static_cast<double>(bytes) / import_s / 1e6);
        (void)m;
    }
    const double med = median(times);
    std::printf(
        "RESULT import events=%zu drawn=%zu ranks=%d bytes=%ju gzip=%d median_s=%.3f "
        "events_per_s=%.0f\n",
        raw, kept, o.ranks, bytes, o.gzip ? 1 : 0, med, static_cast<double>(raw) / med);
    const bool many =
        std::any_of(o.many_ranks.begin(), o.many_ranks.end(), [](int ranks) { return ranks > 0; });
    if (many && bench_many_ranks(o, dir) != 0) return 1;
    if (!keep)
        fs::remove_all(dir);
    else
        std::printf("# traces kept in %s\n", dir.string().c_str());
    return 0;
}

}  // namespace pd::cli
