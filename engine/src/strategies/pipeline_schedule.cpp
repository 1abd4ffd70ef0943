#include "strategies/pipeline_schedule.h"

#include <algorithm>
#include <deque>
#include <limits>
#include <map>
#include <stdexcept>
#include <tuple>

namespace pd {

namespace {

// Megatron's interleaved mapping of the k-th forward (or backward) op of a stage to its
// (chunk, micro-batch): groups of p micro-batches cycle through the chunks.
PipelineOp interleaved_op(int k, bool forward, int p, int v) {
    const int group = k / (p * v);
    const int in_group = k % (p * v);
    int chunk = in_group / p;
    if (!forward) chunk = v - 1 - chunk;
    return PipelineOp{forward ? PipelinePass::forward : PipelinePass::backward, chunk,
                      group * p + in_group % p};
}

constexpr PipelineOp op_of(PipelinePass pass, int microbatch, int chunk = 0) {
    return PipelineOp{pass, chunk, microbatch};
}

// ZB-H1 (Qi et al. 2024, section 3.1): 1F1B's warm-up and steady alternation with each
// backward split into B and W, and stage i's W deferred by i micro-batches, so the last
// stages run their B (which earlier stages wait for) first and do the W work in what would
// be the cool-down bubble. With equal F, B and W times this replays to the paper's bubble of
// (p-1)(F+B-W), and every stage holds at most p micro-batches (1F1B's peak, on its first stage).
std::vector<PipelineOp> zb_h1_ops(int stage, int p, int m) {
    std::vector<PipelineOp> ops;
    const int warmup = std::min(p - stage - 1, m);
    int f = 0;
    for (; f < warmup; ++f) ops.push_back(op_of(PipelinePass::forward, f));
    for (int k = 0; k < m; ++k) {
        if (f < m) ops.push_back(op_of(PipelinePass::forward, f++));
        ops.push_back(op_of(PipelinePass::input_grad, k));
        if (k - stage >= 0) ops.push_back(op_of(PipelinePass::weight_grad, k - stage));
    }
    for (int k = std::max(0, m - stage); k < m; ++k)
        ops.push_back(op_of(PipelinePass::weight_grad, k));
    return ops;
}

// ZB-V: device s holds model chunks s and 2p-1-s. The order is found by list scheduling with
// one unit of time per F, B and W of a chunk: a free device runs a ready B first (the
// critical path; earliest micro-batch, then the later chunk), else a ready F (while the
// device holds fewer than 2p chunk activations, 1F1B's first-stage peak in half-size chunks),
// else its oldest pending W.
std::vector<std::vector<PipelineOp>> zb_v_ops(int p, int m) {
    const int chunks = 2 * p;
    std::vector<std::vector<PipelineOp>> ops(static_cast<std::size_t>(p));
    std::map<std::tuple<int, int, int>, int> done;  // (pass, chunk, mb) -> end time
    auto finished = [&](PipelinePass pass, int g, int mb, int t) {
        const auto it = done.find({static_cast<int>(pass), g, mb});
        return it != done.end() && it->second <= t;
    };
    std::vector<int> next_f(static_cast<std::size_t>(chunks), 0);
    std::vector<int> next_b(static_cast<std::size_t>(chunks), 0);
    std::vector<int> in_flight(static_cast<std::size_t>(p), 0);
    std::vector<std::deque<std::pair<int, int>>> pending_w(static_cast<std::size_t>(p));
    const int total = 3 * m * chunks;
    int scheduled = 0;
    for (int t = 0; scheduled < total; ++t) {
        if (t > 8 * total + 16) throw std::logic_error("zb-v list scheduling made no progress");
        for (int d = 0; d < p; ++d) {
            const auto dev = static_cast<std::size_t>(d);
            if (!ops[dev].empty()) {
                const PipelineOp& last = ops[dev].back();
                const int g = global_chunk(PipelineSchedule::zb_v, last.chunk, d, p);
                if (!finished(last.pass, g, last.microbatch, t)) continue;  // still busy
            }
            const int local_chunks[2] = {0, 1};
            int best_g = -1;
            PipelinePass pass = PipelinePass::forward;
            for (const int c : local_chunks) {  // B: earliest micro-batch, then the later chunk
                const int g = global_chunk(PipelineSchedule::zb_v, c, d, p);
                const int mb = next_b[static_cast<std::size_t>(g)];
                if (mb >= m || !finished(PipelinePass::forward, g, mb, t)) continue;
                if (g < chunks - 1 && !finished(PipelinePass::input_grad, g + 1, mb, t)) continue;
                if (best_g < 0 || mb < next_b[static_cast<std::size_t>(best_g)] ||
                    (mb == next_b[static_cast<std::size_t>(best_g)] && g > best_g))
                    best_g = g;
            }
            if (best_g >= 0) {
                pass = PipelinePass::input_grad;
            } else {
                for (const int c : local_chunks) {
                    const int g = global_chunk(PipelineSchedule::zb_v, c, d, p);
                    const int mb = next_f[static_cast<std::size_t>(g)];
                    if (mb >= m || (g > 0 && !finished(PipelinePass::forward, g - 1, mb, t)))
                        continue;
                    // At most 2p chunk activations; a new micro-batch (chunk < p) leaves one
                    // place free, so the way back up through this device can always proceed.
                    if (in_flight[dev] >= (g < p ? 2 * p - 1 : 2 * p)) continue;
                    if (best_g < 0 || mb < next_f[static_cast<std::size_t>(best_g)] ||
                        (mb == next_f[static_cast<std::size_t>(best_g)] && g > best_g))
                        best_g = g;
                }
                if (best_g >= 0) pass = PipelinePass::forward;
            }
            int mb = 0;
            if (best_g >= 0) {
                auto& next = pass == PipelinePass::forward ? next_f : next_b;
                mb = next[static_cast<std::size_t>(best_g)]++;
                if (pass == PipelinePass::forward)
                    ++in_flight[dev];
                else
                    pending_w[dev].emplace_back(best_g, mb);
            } else if (!pending_w[dev].empty()) {
                std::tie(best_g, mb) = pending_w[dev].front();
                pending_w[dev].pop_front();
                pass = PipelinePass::weight_grad;
                --in_flight[dev];
            } else {
                continue;  // idle this unit
            }
            done[{static_cast<int>(pass), best_g, mb}] = t + 1;
            ops[dev].push_back(op_of(pass, mb, local_chunk_of(PipelineSchedule::zb_v, best_g, p)));
            ++scheduled;
        }
    }
    return ops;
}

}  // namespace

int global_chunk(PipelineSchedule schedule, int local, int stage, int p) {
    if (schedule == PipelineSchedule::zb_v) return local == 0 ? stage : 2 * p - 1 - stage;
    return local * p + stage;
}

int stage_of_chunk(PipelineSchedule schedule, int global, int p) {
    if (schedule == PipelineSchedule::zb_v) return global < p ? global : 2 * p - 1 - global;
    return global % p;
}

int local_chunk_of(PipelineSchedule schedule, int global, int p) {
    if (schedule == PipelineSchedule::zb_v) return global < p ? 0 : 1;
    return global / p;
}

bool splits_backward(PipelineSchedule schedule) {
    return schedule == PipelineSchedule::zb_h1 || schedule == PipelineSchedule::zb_v;
}

std::vector<PipelineOp> pipeline_ops(PipelineSchedule schedule, int stage, int p, int m, int v) {
    std::vector<PipelineOp> ops;
    if (schedule == PipelineSchedule::zb_h1) return zb_h1_ops(stage, p, m);
    if (schedule == PipelineSchedule::zb_v)
        return std::move(zb_v_ops(p, m)[static_cast<std::size_t>(stage)]);
    if (schedule == PipelineSchedule::gpipe) {
        // All forwards of the step, then all backwards.
        for (int mb = 0; mb < m; ++mb) ops.push_back(op_of(PipelinePass::forward, mb));
        for (int mb = 0; mb < m; ++mb) ops.push_back(op_of(PipelinePass::backward, mb));
        return ops;
    }
    if (schedule == PipelineSchedule::one_f_one_b || v == 1) {
        // Warm up with p - stage - 1 forwards, alternate one forward and one backward, then
        // drain the remaining backwards.
        const int warmup = std::min(p - stage - 1, m);
        int f = 0, b = 0;
        for (; f < warmup; ++f) ops.push_back(op_of(PipelinePass::forward, f));
        while (f < m) {
            ops.push_back(op_of(PipelinePass::forward, f++));
            ops.push_back(op_of(PipelinePass::backward, b++));
        }
        while (b < m) ops.push_back(op_of(PipelinePass::backward, b++));
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

std::vector<std::vector<PipelineOp>> pipeline_program(PipelineSchedule schedule, int p, int m,
                                                      int v) {
    if (schedule == PipelineSchedule::zb_v) return zb_v_ops(p, m);
    std::vector<std::vector<PipelineOp>> program;
    for (int s = 0; s < p; ++s) program.push_back(pipeline_ops(schedule, s, p, m, v));
    return program;
}

std::vector<int> order_max_microbatches_alive(PipelineSchedule schedule, int p, int m, int v) {
    std::vector<int> out;
    for (const std::vector<PipelineOp>& ops : pipeline_program(schedule, p, m, v)) {
        std::vector<std::size_t> last(static_cast<std::size_t>(m), 0);
        for (std::size_t i = 0; i < ops.size(); ++i)
            if (!ops[i].forward()) last[static_cast<std::size_t>(ops[i].microbatch)] = i;
        std::vector<bool> begun(static_cast<std::size_t>(m), false);
        int alive = 0, most = 0;
        for (std::size_t i = 0; i < ops.size(); ++i) {
            const auto mb = static_cast<std::size_t>(ops[i].microbatch);
            if (ops[i].forward() && !begun[mb]) {
                begun[mb] = true;
                most = std::max(most, ++alive);
            } else if (!ops[i].forward() && i == last[mb]) {
                --alive;
            }
        }
        out.push_back(most);
    }
    return out;
}

double unit_time_bubble(PipelineSchedule schedule, int p, int m, int v) {
    if (p <= 1) return 0.0;
    const int chunks = p * v;
    const std::vector<std::vector<PipelineOp>> program = pipeline_program(schedule, p, m, v);
    // end[pass][chunk][mb]; a whole backward counts as B for the chunk before it.
    std::map<std::tuple<int, int, int>, double> end;
    auto key = [](PipelinePass pass, int g, int mb) {
        const PipelinePass as = pass == PipelinePass::backward ? PipelinePass::input_grad : pass;
        return std::tuple<int, int, int>{static_cast<int>(as), g, mb};
    };
    std::vector<std::size_t> pos(static_cast<std::size_t>(p), 0);
    std::vector<double> free_at(static_cast<std::size_t>(p), 0.0),
        busy(static_cast<std::size_t>(p), 0.0);
    for (bool progressed = true; progressed;) {
        progressed = false;
        for (int s = 0; s < p; ++s) {
            const auto d = static_cast<std::size_t>(s);
            while (pos[d] < program[d].size()) {
                const PipelineOp& op = program[d][pos[d]];
                const int g = global_chunk(schedule, op.chunk, s, p);
                std::vector<std::tuple<int, int, int>> deps;
                if (op.pass == PipelinePass::forward) {
                    if (g > 0) deps.push_back(key(PipelinePass::forward, g - 1, op.microbatch));
                } else if (op.pass == PipelinePass::weight_grad) {
                    deps.push_back(key(PipelinePass::input_grad, g, op.microbatch));
                } else {
                    deps.push_back(key(PipelinePass::forward, g, op.microbatch));
                    if (g < chunks - 1)
                        deps.push_back(key(PipelinePass::input_grad, g + 1, op.microbatch));
                }
                double start = free_at[d];
                bool ready = true;
                for (const auto& k : deps) {
                    const auto it = end.find(k);
                    if (it == end.end()) {
                        ready = false;
                        break;
                    }
                    start = std::max(start, it->second);
                }
                if (!ready) break;
                const double length = op.pass == PipelinePass::backward ? 2.0 : 1.0;
                end[key(op.pass, g, op.microbatch)] = start + length;
                free_at[d] = start + length;
                busy[d] += length;
                ++pos[d];
                progressed = true;
            }
        }
    }
    double makespan = 0.0, work = 0.0;
    for (int s = 0; s < p; ++s) {
        if (pos[static_cast<std::size_t>(s)] < program[static_cast<std::size_t>(s)].size())
            throw std::logic_error("pipeline schedule replay deadlocked");
        makespan = std::max(makespan, free_at[static_cast<std::size_t>(s)]);
        work += busy[static_cast<std::size_t>(s)];
    }
    return 1.0 - work / (static_cast<double>(p) * makespan);
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
