// Flush-to-zero for the engine's worker threads (TensorFlow's ScopedFlushDenormal does the same
// for its pools): once the synthetic task's loss is near zero, gradients and optimizer moments
// fall below 1e-38, and x86 computes on such denormal floats some hundred times slower. Values
// that small change no loss the engine reports (the PyTorch replay still agrees to 1e-5).
#pragma once

#if defined(__x86_64__) || defined(__i386__)
#include <xmmintrin.h>
#endif

namespace pd {

// Sets FTZ (results below the normal range become 0) and DAZ (such inputs read as 0) for the
// calling thread's SSE/AVX arithmetic; nothing elsewhere.
inline void flush_denormals_on_this_thread() {
#if defined(__x86_64__) || defined(__i386__)
    _mm_setcsr(_mm_getcsr() | 0x8040);
#endif
}

}  // namespace pd
