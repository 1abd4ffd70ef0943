#include "bench_fma_peak.h"

#include <immintrin.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <map>
#include <thread>
#include <vector>

namespace pd::cli {

namespace {

// 12 independent accumulators: an FMA's latency (4 cycles) times the units that can start
// one each cycle (2) is 8 in flight, so 12 leave no unit waiting. Each chain is
// acc = acc * m + a, which converges and never meets a denormal.
constexpr int kChains = 12;

__attribute__((target("avx2,fma"))) float chains_avx2(long iterations) {
    __m256 acc[kChains];
    for (int c = 0; c < kChains; ++c) acc[c] = _mm256_set1_ps(1.0f + 0.01f * c);
    const __m256 m = _mm256_set1_ps(0.999999f), a = _mm256_set1_ps(1e-6f);
    for (long i = 0; i < iterations; ++i) {
#pragma GCC unroll 12
        for (int c = 0; c < kChains; ++c) acc[c] = _mm256_fmadd_ps(acc[c], m, a);
    }
    __m256 sum = acc[0];
    for (int c = 1; c < kChains; ++c) sum = _mm256_add_ps(sum, acc[c]);
    return _mm256_cvtss_f32(sum);
}

__attribute__((target("avx512f"))) float chains_avx512(long iterations) {
    __m512 acc[kChains];
    for (int c = 0; c < kChains; ++c) acc[c] = _mm512_set1_ps(1.0f + 0.01f * c);
    const __m512 m = _mm512_set1_ps(0.999999f), a = _mm512_set1_ps(1e-6f);
    for (long i = 0; i < iterations; ++i) {
#pragma GCC unroll 12
        for (int c = 0; c < kChains; ++c) acc[c] = _mm512_fmadd_ps(acc[c], m, a);
    }
    __m512 sum = acc[0];
    for (int c = 1; c < kChains; ++c) sum = _mm512_add_ps(sum, acc[c]);
    alignas(64) float lanes[16];
    _mm512_store_ps(lanes, sum);
    float total = 0;
    for (const float x : lanes) total += x;
    return total;
}

struct FmaIsa {
    const char* name;
    int lanes;
    float (*chains)(long);
};

std::vector<FmaIsa> isas_of_this_cpu() {
    std::vector<FmaIsa> out;
    if (__builtin_cpu_supports("avx512f")) out.push_back({"AVX-512", 16, chains_avx512});
    if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma"))
        out.push_back({"AVX2", 8, chains_avx2});
    return out;
}

std::atomic<float> g_sink{0};  // keeps the chains' results alive

// GFLOP/s of `threads` threads running the chains at once, best of three.
double fma_chains_gflops(const FmaIsa& isa, int threads) {
    // About 0.2 s a try on a 3 GHz core with two FMA units.
    const long iterations = 50'000'000;
    double best = 0;
    for (int attempt = 0; attempt < 3; ++attempt) {
        std::atomic<int> ready{0};
        std::atomic<bool> go{false};
        std::vector<std::thread> pool;
        for (int t = 0; t < threads; ++t)
            pool.emplace_back([&] {
                ready.fetch_add(1);
                while (!go.load()) std::this_thread::yield();
                g_sink.store(isa.chains(iterations));
            });
        while (ready.load() < threads) std::this_thread::yield();
        const auto start = std::chrono::steady_clock::now();
        go.store(true);
        for (auto& th : pool) th.join();
        const double s =
            std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
        const double flops = 2.0 * kChains * isa.lanes * static_cast<double>(iterations) * threads;
        best = std::max(best, flops / s / 1e9);
    }
    return best;
}

}  // namespace

FmaPeak fma_peak(int threads) {
    static std::map<int, FmaPeak> known;
    if (const auto it = known.find(threads); it != known.end()) return it->second;
    return known[threads] = measure_fma_peak(threads);
}

FmaPeak measure_fma_peak(int threads) {
    FmaPeak peak;
    peak.threads = threads;
    peak.isa = "none";
    for (const FmaIsa& isa : isas_of_this_cpu()) {
        const double gflops = fma_chains_gflops(isa, threads);
        if (gflops > peak.gflops) peak = {isa.name, threads, gflops};
    }
    return peak;
}

int bench_fma_peak() {
    const int hardware = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
    const std::vector<FmaIsa> isas = isas_of_this_cpu();
    std::printf(
        "# paralleldeck-bench fma-peak: fp32 fused multiply-adds on registers only, %d "
        "independent chains a thread, best of 3 (an FMA counts 2 FLOPs)\n",
        kChains);
    if (isas.empty()) {
        std::printf("# this CPU has neither AVX2 with FMA nor AVX-512\n");
        return 0;
    }
    std::printf("# %-8s %8s %12s %18s\n", "isa", "threads", "GFLOP/s", "GFLOP/s a thread");
    std::vector<int> counts;
    for (int t = 1; t < hardware; t *= 2) counts.push_back(t);
    counts.push_back(hardware);
    for (const FmaIsa& isa : isas)
        for (const int t : counts) {
            const double g = fma_chains_gflops(isa, t);
            std::printf("  %-8s %8d %12.1f %18.1f\n", isa.name, t, g, g / t);
            std::printf("RESULT fma_peak isa=%s threads=%d gflops=%.1f\n", isa.name, t, g);
        }
    return 0;
}

}  // namespace pd::cli
