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
// GFLOP/s of `threads` threads at once running independent chains of fused multiply-adds on
// registers only (as many as keep every FMA unit busy) with `isa`, best of three tries of
// about `seconds_per_try` each on a 3 GHz core with two FMA units.
double measure_fma_gflops(const std::string& isa, int threads, double seconds_per_try);
// The best instruction set's peak on `threads` threads, measured afresh.
FmaPeak measure_fma_peak(int threads, double seconds_per_try = 0.2);
// The same, measured once per thread count and process (tries of 0.03 s: a run's MFU needs it
// without a second's wait) and remembered; safe from any thread.
FmaPeak fma_peak(int threads);
// fma_peak's figure if this process measured it already (a view that must not wait for it).
std::optional<FmaPeak> known_fma_peak(int threads);

}  // namespace pd
