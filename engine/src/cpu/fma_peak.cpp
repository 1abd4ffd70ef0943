#include "pd/fma_peak.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <ctime>
#include <map>
#include <mutex>
#include <thread>

#if defined(__x86_64__)
#include <immintrin.h>
#endif

namespace pd {

namespace {

// 12 independent accumulators: an FMA's latency (4 cycles) times the units that can start
// one each cycle (2) is 8 in flight, so 12 leave no unit waiting. Each chain is
// acc = acc * m + a, which converges and never meets a denormal.
constexpr int kChains = 12;

struct FmaIsa {
    const char* name;
    int lanes;
    float (*chains)(long);
};

#if defined(__x86_64__)
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
#endif

std::vector<FmaIsa> isas_of_this_cpu() {
    std::vector<FmaIsa> out;
#if defined(__x86_64__)
    if (__builtin_cpu_supports("avx512f")) out.push_back({"AVX-512", 16, chains_avx512});
    if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma"))
        out.push_back({"AVX2", 8, chains_avx2});
#endif
    return out;
}

std::atomic<float> g_sink{0};  // keeps the chains' results alive

}  // namespace

std::vector<std::string> fma_instruction_sets() {
    std::vector<std::string> names;
    for (const FmaIsa& isa : isas_of_this_cpu()) names.emplace_back(isa.name);
    return names;
}

double thread_cpu_seconds() {
    timespec ts{};
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return static_cast<double>(ts.tv_sec) + 1e-9 * static_cast<double>(ts.tv_nsec);
}

double measure_fma_gflops(const std::string& name, int threads, double seconds_per_try,
                          FmaClock clock) {
    const std::vector<FmaIsa> isas = isas_of_this_cpu();
    const auto it =
        std::find_if(isas.begin(), isas.end(), [&](const FmaIsa& i) { return name == i.name; });
    if (it == isas.end() || threads < 1) return 0;
    const FmaIsa& isa = *it;
    // 0.2 s a try is 50 million iterations on a 3 GHz core with two FMA units.
    const long iterations = std::max(1L, static_cast<long>(seconds_per_try * 250'000'000));
    double best = 0;
    for (int attempt = 0; attempt < 3; ++attempt) {
        std::atomic<int> ready{0};
        std::atomic<bool> go{false};
        std::vector<std::thread> pool;
        std::vector<double> cpu_seconds(static_cast<std::size_t>(threads), 0.0);
        for (int t = 0; t < threads; ++t)
            pool.emplace_back([&, t] {
                ready.fetch_add(1);
                while (!go.load()) std::this_thread::yield();
                const double start = thread_cpu_seconds();
                g_sink.store(isa.chains(iterations));
                cpu_seconds[static_cast<std::size_t>(t)] = thread_cpu_seconds() - start;
            });
        while (ready.load() < threads) std::this_thread::yield();
        const auto start = std::chrono::steady_clock::now();
        go.store(true);
        for (auto& th : pool) th.join();
        const double s =
            std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
        const double per_thread = 2.0 * kChains * isa.lanes * static_cast<double>(iterations);
        double gflops = per_thread * threads / s / 1e9;
        if (clock == FmaClock::thread_cpu) {
            gflops = 0;
            for (const double cpu : cpu_seconds)
                if (cpu > 0) gflops += per_thread / cpu / 1e9;
        }
        best = std::max(best, gflops);
    }
    return best;
}

FmaPeak measure_fma_peak(int threads, double seconds_per_try, FmaClock clock) {
    FmaPeak peak;
    peak.threads = threads;
    peak.isa = "none";
    for (const FmaIsa& isa : isas_of_this_cpu()) {
        const double gflops = measure_fma_gflops(isa.name, threads, seconds_per_try, clock);
        if (gflops > peak.gflops) peak = {isa.name, threads, gflops};
    }
    return peak;
}

namespace {
std::mutex g_known_mutex;
std::map<int, FmaPeak> g_known;  // by thread count
}  // namespace

FmaPeak fma_peak(int threads) {
    const std::lock_guard lock(g_known_mutex);
    if (const auto it = g_known.find(threads); it != g_known.end()) return it->second;
    return g_known[threads] = measure_fma_peak(threads, 0.03, FmaClock::thread_cpu);
}

std::optional<FmaPeak> known_fma_peak(int threads) {
    const std::lock_guard lock(g_known_mutex);
    if (const auto it = g_known.find(threads); it != g_known.end()) return it->second;
    return std::nullopt;
}

}  // namespace pd
