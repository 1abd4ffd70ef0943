// paralleldeck-bench attention: a transformer's step at a fixed token count and growing sequence
// length, the time its attention units take beside its MLP units (from the trace), and the
// attention probabilities' bytes per layer: the cost of attention's s^2 term.
#pragma once

#include <vector>

namespace pd::cli {

struct AttentionBenchOptions {
    std::vector<int> seq_lens{64, 128, 256, 512};
    int tokens = 4096;  // batch x seq_len, the same at every sequence length
    int layers = 2;
    int width = 128;
    int heads = 4;
    int steps = 5;    // timed, after the warm-up steps
    int threads = 0;  // intra-op threads (0 = the engine's default: all hardware threads)
};

// Prints the figures; returns 0, 1 when a run failed, or 2 for options it cannot run.
int bench_attention(const AttentionBenchOptions& options);

}  // namespace pd::cli
