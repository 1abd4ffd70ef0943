// Element-wise optimizers over a parameter range, so sharded strategies update their shard
// with the same code as a full replica.
#pragma once

#include <cstddef>
#include <vector>

#include "pd/model.h"
#include "pd/run_config.h"

namespace pd {

// adamw8bit: one tensor's quantisation error at its last update (sums of squares of the
// dequantized state minus the fp32 state, and of the fp32 state), for m and v.
struct StateQuantError {
    double m_error = 0, m_norm = 0, v_error = 0, v_norm = 0;
};

// One parameter tensor's place in the flat parameter range.
struct OptimizerTensor {
    std::size_t offset = 0, count = 0;
};

// PyTorch's torch.optim.SGD (momentum, no dampening) and torch.optim.AdamW with their
// defaults; the learning rate is constant over the run (no warm-up, no decay), which the
// --dump-dir manifest states so another framework can replay the updates.
//
// Two optimizers work tensor by tensor and so need `tensors` (set_tensors):
// - lamb (You et al., "Large Batch Optimization for Deep Learning", Algorithm 2): AdamW's
//   bias-corrected direction u = m^/(sqrt(v^) + eps) + weight_decay * w, and each tensor moves
//   by lr * (||w|| / ||u||) * u (the trust ratio; 1 where either norm is 0, as NVIDIA's and
//   timm's LAMB do). State [m..., v...] as AdamW's.
// - adamw8bit (bitsandbytes' AdamW8bit, its kOptimizerStatic8bit2StateBlockwise): m and v
//   stored as 8-bit codes of the dynamic maps (signed for m, unsigned for v), each block of
//   `blocksize` values with its fp32 absmax; each update dequantizes, updates in fp32 and
//   quantizes with the block's new absmax. Tensors under min_8bit_size keep fp32 states
//   (its 32-bit kernel). Both apply bitsandbytes' order: the Adam step, then the decoupled
//   decay p *= 1 - lr * weight_decay.
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

    int blocksize = 2048;                  // adamw8bit
    std::size_t min_8bit_size = 4096;      // adamw8bit
    std::vector<OptimizerTensor> tensors;  // lamb, adamw8bit: the model's tensors in order
    // adamw8bit: where each update writes each tensor's quantisation error (one slot a
    // tensor, so threads updating different tensors never share one); null: not measured.
    std::vector<StateQuantError>* quant_errors = nullptr;

    static OptimizerSettings from(const RunConfig& config);
    // The parameter tensors (needed by lamb and adamw8bit; harmless for the others).
    void set_tensors(const ParamLayout& layout);
    // lamb and adamw8bit update whole tensors (norms, blocks), never part of one.
    bool per_tensor() const {
        return kind == OptimizerKind::lamb || kind == OptimizerKind::adamw8bit;
    }
    // adamw8bit: whether this tensor's states are 8-bit (else fp32).
    bool quantized(const OptimizerTensor& t) const {
        return kind == OptimizerKind::adamw8bit && t.count >= min_8bit_size;
    }
    // Floats of optimizer state for `count` parameters (adamw8bit: the tensors' packed codes,
    // absmaxes and fp32 states, rounded up to whole floats per tensor).
    std::size_t state_floats(std::size_t count) const;
    // adamw8bit: where tensor i's state starts in the state buffer (floats).
    std::size_t state_offset(std::size_t i) const;
    // Floats of moments per parameter: SGD momentum 1, AdamW and LAMB m and v 2.
    int moments() const { return kind == OptimizerKind::sgd ? 1 : 2; }
    // Floats of optimizer state per parameter: the moments, and the master weight if kept
    // (fp32 all: the ZeRO paper's K = 12 bytes for mixed-precision Adam, 8 for SGD).
    // Not adamw8bit's (see state_floats).
    int state_per_parameter() const { return moments() + (master_weights ? 1 : 0); }
    // Where the master copy of `count` parameters sits in their state (null without one).
    float* master(float* state, std::size_t count) const {
        return master_weights ? state + static_cast<std::size_t>(moments()) * count : nullptr;
    }

  private:
    std::vector<std::size_t> state_offsets_;  // adamw8bit: per tensor, then the total
};

// One update at step t (1-based) of `count` parameters. `state` holds
// state_per_parameter() * count floats laid out as [m..., v..., master...]; with master
// weights the update is computed on the master, and `params` receive it rounded to
// param_dtype.
void optimizer_update(const OptimizerSettings& settings, int t, float* params, const float* grads,
                      float* state, std::size_t count);
// The same update for parameters [begin, end) of those `count` only (one intra-op thread's part);
// not for per_tensor() optimizers (see optimizer_update_tensors).
void optimizer_update_range(const OptimizerSettings& settings, int t, float* params,
                            const float* grads, float* state, std::size_t count, std::size_t begin,
                            std::size_t end);

// lamb, adamw8bit: the update of tensors [first, end) of settings.tensors, which cover the
// `count` parameters (one intra-op thread's part: tensors are independent).
void optimizer_update_tensors(const OptimizerSettings& settings, int t, float* params,
                              const float* grads, float* state, std::size_t count,
                              std::size_t first, std::size_t end);

}  // namespace pd
