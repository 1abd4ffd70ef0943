// Element-wise optimizers over a parameter range, so sharded strategies update their shard
// with the same code as a full replica.
#pragma once

#include <cstddef>

#include "pd/run_config.h"

namespace pd {

// PyTorch's torch.optim.SGD (momentum, no dampening) and torch.optim.AdamW with their
// defaults; the learning rate is constant over the run (no warm-up, no decay), which the
// --dump-dir manifest states so another framework can replay the updates.
struct OptimizerSettings {
    OptimizerKind kind = OptimizerKind::adamw;
    float lr = 1e-3f;
    float momentum = 0.9f;  // SGD
    float beta1 = 0.9f, beta2 = 0.999f, eps = 1e-8f;
    float weight_decay = 0.01f;  // AdamW's decoupled decay; SGD uses none
    // Mixed precision (bf16-mixed, fp16-mixed): the update applies to an fp32 master copy of
    // the parameters, kept in the optimizer state after the moments, and writes the master
    // rounded to `param_dtype` into the parameters (Micikevicius et al., "Mixed Precision
    // Training").
    bool master_weights = false;
    DType param_dtype = DType::fp32;

    static OptimizerSettings from(const RunConfig& config);
    // Floats of moments per parameter: SGD momentum 1, AdamW m and v 2.
    int moments() const { return kind == OptimizerKind::sgd ? 1 : 2; }
    // Floats of optimizer state per parameter: the moments, and the master weight if kept
    // (fp32 all: the ZeRO paper's K = 12 bytes for mixed-precision Adam, 8 for SGD).
    int state_per_parameter() const { return moments() + (master_weights ? 1 : 0); }
    // Where the master copy of `count` parameters sits in their state (null without one).
    float* master(float* state, std::size_t count) const {
        return master_weights ? state + static_cast<std::size_t>(moments()) * count : nullptr;
    }
};

// One update at step t (1-based) of `count` parameters. `state` holds
// state_per_parameter() * count floats laid out as [m..., v..., master...]; with master
// weights the update is computed on the master, and `params` receive it rounded to
// param_dtype.
void optimizer_update(const OptimizerSettings& settings, int t, float* params, const float* grads,
                      float* state, std::size_t count);
// The same update for parameters [begin, end) of those `count` only (one intra-op thread's part).
void optimizer_update_range(const OptimizerSettings& settings, int t, float* params,
                            const float* grads, float* state, std::size_t count, std::size_t begin,
                            std::size_t end);

}  // namespace pd
