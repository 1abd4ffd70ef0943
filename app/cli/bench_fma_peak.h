// The CPU's measured FMA peak (pd/fma_peak.h) as the benches read it, and the fma-peak bench.
#pragma once

#include "pd/fma_peak.h"

namespace pd::cli {

using pd::FmaPeak;

// The best instruction set's peak on `threads` threads at once, measured with the bench's long
// tries (0.2 s, best of three) once per count, then remembered.
FmaPeak fma_peak(int threads);
// The same, measured afresh (not remembered): for a bench that reads its figure against the
// peak round by round, as the machine's load changes.
inline FmaPeak measure_fma_peak(int threads) {
    return pd::measure_fma_peak(threads, 0.2);
}

// `paralleldeck-bench fma-peak`: every instruction set the CPU has, at 1 to all threads.
int bench_fma_peak();

}  // namespace pd::cli
