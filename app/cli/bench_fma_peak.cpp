#include "bench_fma_peak.h"

#include <algorithm>
#include <cstdio>
#include <map>
#include <thread>
#include <vector>

namespace pd::cli {

FmaPeak fma_peak(int threads) {
    static std::map<int, FmaPeak> known;
    if (const auto it = known.find(threads); it != known.end()) return it->second;
    return known[threads] = measure_fma_peak(threads);
}

int bench_fma_peak() {
    const int hardware = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
    const std::vector<std::string> isas = fma_instruction_sets();
    std::printf(
        "# paralleldeck-bench fma-peak: fp32 fused multiply-adds on registers only, 12 "
        "independent chains a thread, best of 3 (an FMA counts 2 FLOPs)\n");
    if (isas.empty()) {
        std::printf("# this CPU has neither AVX2 with FMA nor AVX-512\n");
        return 0;
    }
    std::printf("# %-8s %8s %12s %18s\n", "isa", "threads", "GFLOP/s", "GFLOP/s a thread");
    std::vector<int> counts;
    for (int t = 1; t < hardware; t *= 2) counts.push_back(t);
    counts.push_back(hardware);
    for (const std::string& isa : isas)
        for (const int t : counts) {
            const double g = measure_fma_gflops(isa, t, 0.2);
            std::printf("  %-8s %8d %12.1f %18.1f\n", isa.c_str(), t, g, g / t);
            std::printf("RESULT fma_peak isa=%s threads=%d gflops=%.1f\n", isa.c_str(), t, g);
        }
    return 0;
}

}  // namespace pd::cli
