#include "strategies/pipeline_schedule.h"

#include <algorithm>
#include <limits>

namespace pd {

namespace {

// Megatron's interleaved mapping of the k-th forward (or backward) op of a stage to its
// (chunk, micro-batch): groups of p micro-batches cycle through the chunks.
PipelineOp interleaved_op(int k, bool forward, int p, int v) {
    const int group = k / (p * v);
    const int in_group = k % (p * v);
    int chunk = in_group / p;
    if (!forward) chunk = v - 1 - chunk;
    return PipelineOp{forward, chunk, group * p + in_group % p};
}

}  // namespace

std::vector<PipelineOp> pipeline_ops(PipelineSchedule schedule, int stage, int p, int m, int v) {
    std::vector<PipelineOp> ops;
    if (schedule == PipelineSchedule::gpipe) {
        // All forwards of the step, then all backwards.
        for (int mb = 0; mb < m; ++mb) ops.push_back({true, 0, mb});
        for (int mb = 0; mb < m; ++mb) ops.push_back({false, 0, mb});
        return ops;
    }
    if (schedule == PipelineSchedule::one_f_one_b || v == 1) {
        // Warm up with p - stage - 1 forwards, alternate one forward and one backward, then
        // drain the remaining backwards.
        const int warmup = std::min(p - stage - 1, m);
        int f = 0, b = 0;
        for (; f < warmup; ++f) ops.push_back({true, 0, f});
        while (f < m) {
            ops.push_back({true, 0, f++});
            ops.push_back({false, 0, b++});
        }
        while (b < m) ops.push_back({false, 0, b++});
        return ops;
    }
    // Interleaved 1F1B (Megatron-LM): a longer warm-up covering the extra chunks.
    const int total = m * v;
    const int warmup = std::min((p - stage - 1) * 2 + (v - 1) * p, total);
    int f = 0, b = 0;
    for (; f < warmup; ++f) ops.push_back(interleaved_op(f, true, p, v));
    while (f < total) {
        ops.push_back(interleaved_op(f++, true, p, v));
        ops.push_back(interleaved_op(b++, false, p, v));
    }
    while (b < total) ops.push_back(interleaved_op(b++, false, p, v));
    return ops;
}

std::vector<int> balanced_partition(const std::vector<std::size_t>& weights, int parts) {
    const int n = static_cast<int>(weights.size());
    std::vector<std::size_t> prefix(static_cast<std::size_t>(n) + 1, 0);
    for (int i = 0; i < n; ++i)
        prefix[static_cast<std::size_t>(i) + 1] =
            prefix[static_cast<std::size_t>(i)] + weights[static_cast<std::size_t>(i)];
    constexpr std::size_t kInf = std::numeric_limits<std::size_t>::max();
    // best[k][i]: smallest possible largest part when the first i units form k parts.
    std::vector<std::vector<std::size_t>> best(
        static_cast<std::size_t>(parts) + 1,
        std::vector<std::size_t>(static_cast<std::size_t>(n) + 1, kInf));
    std::vector<std::vector<int>> cut(static_cast<std::size_t>(parts) + 1,
                                      std::vector<int>(static_cast<std::size_t>(n) + 1, 0));
    best[0][0] = 0;
    for (int k = 1; k <= parts; ++k)
        for (int i = k; i <= n; ++i)
            for (int j = k - 1; j < i; ++j) {
                const std::size_t prev =
                    best[static_cast<std::size_t>(k) - 1][static_cast<std::size_t>(j)];
                if (prev == kInf) continue;
                const std::size_t part =
                    prefix[static_cast<std::size_t>(i)] - prefix[static_cast<std::size_t>(j)];
                const std::size_t worst = std::max(prev, part);
                if (worst < best[static_cast<std::size_t>(k)][static_cast<std::size_t>(i)]) {
                    best[static_cast<std::size_t>(k)][static_cast<std::size_t>(i)] = worst;
                    cut[static_cast<std::size_t>(k)][static_cast<std::size_t>(i)] = j;
                }
            }
    std::vector<int> bounds(static_cast<std::size_t>(parts) + 1, 0);
    bounds[static_cast<std::size_t>(parts)] = n;
    for (int k = parts, i = n; k > 0; --k) {
        i = cut[static_cast<std::size_t>(k)][static_cast<std::size_t>(i)];
        bounds[static_cast<std::size_t>(k) - 1] = i;
    }
    return bounds;
}

}  // namespace pd
