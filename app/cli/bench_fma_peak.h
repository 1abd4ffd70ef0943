// The CPU's measured FMA peak: the limit every product and step figure is read against.
#pragma once

#include <string>

namespace pd::cli {

struct FmaPeak {
    std::string isa;  // "AVX-512", "AVX2", or "none" where the CPU has neither with FMA
    int threads = 1;
    double gflops = 0;  // fp32, a fused multiply-add counted as 2 FLOPs
};

// The best instruction set's peak on `threads` threads at once (measured once per count, then
// remembered): independent chains of fused multiply-adds on registers only, as many as keep
// every FMA unit busy, timed best of three.
FmaPeak fma_peak(int threads);
// The same, measured afresh (not remembered): for a bench that reads its figure against the
// peak round by round, as the machine's load changes.
FmaPeak measure_fma_peak(int threads);

// `paralleldeck-bench fma-peak`: every instruction set the CPU has, at 1 to all threads.
int bench_fma_peak();

}  // namespace pd::cli
