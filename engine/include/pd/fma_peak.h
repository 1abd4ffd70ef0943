// The CPU's measured FMA peak: the limit every product, step and utilisation figure (MFU,
// HFU) is read against.
#pragma once

#include <optional>
#include <string>
#include <vector>

namespace pd {

struct FmaPeak {
    std::string isa;  // "AVX-512", "AVX2", or "none" where the CPU has neither with FMA
    int threads = 1;
    double gflops = 0;  // fp32, a fused multiply-add counted as 2 FLOPs
};

// The instruction sets with fp32 FMA this CPU has, best first ("AVX-512", "AVX2").
std::vector<std::string> fma_instruction_sets();
// How a measurement reads time: wall time (threads at once, as a bench on an idle machine),
// or each thread's own CPU time (what the device clock counts: a busy machine's other work
// does not lower the figure).
enum class FmaClock { wall, thread_cpu };
// GFLOP/s of `threads` threads at once running independent chains of fused multiply-adds on
// registers only (as many as keep every FMA unit busy) with `isa`, best of three tries of
// about `seconds_per_try` each on a 3 GHz core with two FMA units.
double measure_fma_gflops(const std::string& isa, int threads, double seconds_per_try,
                          FmaClock clock = FmaClock::wall);
// The best instruction set's peak on `threads` threads, measured afresh.
FmaPeak measure_fma_peak(int threads, double seconds_per_try = 0.2,
                         FmaClock clock = FmaClock::wall);
// The peak a run's MFU reads, measured once per thread count and process (tries of 0.03 s, on
// each thread's CPU time, as the device clock times ops) and remembered; safe from any
// thread.
FmaPeak fma_peak(int threads);
// fma_peak's figure if this process measured it already (a view that must not wait for it).
std::optional<FmaPeak> known_fma_peak(int threads);

}  // namespace pd
