// Forward and backward of the model's units on one device, with every tensor accounted in
// that device's memory: saved activations live until their unit's backward has run.
//
// A block runs in two phases so tensor parallelism can all-reduce in between: phase a ends
// with this shard's partial output (forward) or partial input gradient (backward); phase b
// finishes with the reduced sum. Without tensor parallelism the sum is the partial itself.
// A transformer unit (attention or MLP, each behind its own LayerNorm) has the same two
// phases, as Megatron's: forward's partial is the row-parallel output projection's, and
// backward's is the gradient of the LayerNorm's output (the column-parallel inputs' sum), so
// phase b runs the LayerNorm's backward on the reduced gradient, then adds the residual's. The
// transformer's units are in transformer_units.cpp.
//
// Zero-bubble schedules split a backward further: backward_input_a/_b compute only the input
// gradient (B) and keep what the weight gradient needs; backward_weight (W) computes it later.
// Activation recomputation (RecomputeMode) drops activations after a block's forward and
// `recompute` rebuilds them just before that block's backward, with the same kernels on the
// same inputs, so every number is bit-for-bit what it is without recomputation.
//
// Mixed precision (dtype bf16): every tensor the executor stores (activations, the tensors
// between units and phases, workspace results, parameter gradients) is bf16, rounded as each
// kernel's result is stored (see pd/dtype.h); the kernels compute in fp32. The softmax
// cross-entropy reads bf16 logits and computes the loss in fp32, as autocast does. A parameter
// gradient that accumulates (micro-batches, --accumulate) is rounded once after the kernel adds
// the new product in fp32: bf16(g + x^T dy), where PyTorch's bf16 .grad would add an already
// rounded product, bf16(g + bf16(x^T dy)); with one micro-batch the two are the same.
#pragma once

#include <array>
#include <vector>

#include "backend/device_ops.h"
#include "model/fp8_scaling.h"
#include "model/routing_counters.h"
#include "model/shard_layout.h"
#include "pd/device.h"
#include "pd/model.h"
#include "pd/run_config.h"

namespace pd {

// What one unit keeps between its phases and from forward for backward, per micro-batch.
// Rows are tokens (samples x seq_len).
struct SavedUnit {
    Buffer input;  // the unit's input (x for unit 0, the residual stream otherwise)
    Buffer pre;    // block: pre-GELU [rows, 4h/tp]; head: dlogits [rows, classes]
    Buffer post;   // block: post-GELU [rows, 4h/tp]
    Buffer dout;   // block, between backward phases: the output gradient (the residual's)
    Buffer dpre;   // split backward, block: the pre-GELU gradient W needs
    // transformer units: the LayerNorm's output [rows, h] and its mean and rstd [rows, 2];
    // attention: q, k, v and its output [rows, h/tp], the probabilities [seqs, heads/tp, s, s].
    Buffer normed, stats, q, k, v, probs, attn;
    // Sequence parallelism, backward: the LayerNorm output's shard placed in a buffer of all
    // the tokens, all-gathered again before phase a (only the shard is kept, as Megatron does).
    Buffer gathered;
    // Ring attention: each query row's running max (then log-sum-exp) and sum, [seqs, heads,
    // q_len]; in backward the output's gradient and the queries' gradient.
    Buffer row_max, row_sum, dattn, dq;
    // MoE: the router's probabilities [rows, experts], routes [rows, top_k, 3] and load
    // fractions [seqs, experts]; on the experts' side their input slots and pre/post-GELU;
    // on the tokens' side the experts' outputs, back in this device's slots; in backward the
    // LayerNorm output's gradient as it is summed.
    Buffer router_probs, routes, fractions, expert_in, expert_pre, expert_post, expert_out, dnormed;
    float grad_scale = 0;  // MoE: the loss gradient's scale, for the load-balancing loss
    // FP8 block (see set_fp8): the scales forward cast the products' inputs and weights with
    // (Fp8Role input1, weight1, input2, weight2), for backward to cast them alike.
    std::array<float, 4> fp8_scales{};
    int rows = 0;  // all the tokens of the micro-batch (also under sequence parallelism)
};

class ModelExecutor {
  public:
    // `sequence_parallel`: see the sequence-parallel steps below (transformer, tp > 1 only).
    // `routing` (MoE only) counts what this device's routers did.
    ModelExecutor(const ModelShape& shape, const ShardLayout& layout, MemoryTracker& memory,
                  RecomputeMode recompute = RecomputeMode::none, DType dtype = DType::fp32,
                  bool sequence_parallel = false, RoutingCounters* routing = nullptr);

    // FP8 products (MLP model): each block's two products take FP8 inputs and weights, and
    // their backward FP8 output gradients, scaled by `fp8` (this device's, outliving the
    // executor); the input projection and the head stay in the run's precision, as TE
    // recipes usually keep the first and last layers. The FP8 copies are workspace held at
    // the run's precision here (TE keeps the forward's FP8 input for backward; this executor
    // keeps the unscaled one and casts it again with the same scale: the same values).
    void set_fp8(Fp8Scaling* fp8) { fp8_ = fp8; }

    bool is_block(int unit) const { return unit > 0 && unit < units_ - 1; }
    bool is_head(int unit) const { return unit == units_ - 1; }
    bool is_attention(int unit) const { return shape_.unit_kind(unit) == UnitKind::attention; }
    bool is_moe(int unit) const { return shape_.unit_kind(unit) == UnitKind::moe; }

    // `params`/`grads` point at the unit's own local parameters (layout.unit_offset(unit)).
    // `rows` counts samples (sequences for the transformer).
    // Input projection and head complete in phase a; the head adds its summed loss to the
    // device scalar `loss_sum` (unless null) and keeps dlogits (scaled by `grad_scale`) for
    // backward. `labels` are the host batch's, copied to the device by the head.
    Buffer forward_a(int unit, const float* params, Buffer input, int rows, SavedUnit& saved,
                     const int* labels, float grad_scale, double* loss_sum);
    Buffer forward_b(int unit, const float* params, Buffer reduced, SavedUnit& saved);
    // Accumulates parameter gradients (or, where overwrites_gradients(unit), writes them over
    // the buffer for GradWrite::overwrite); frees what forward saved. Returns the input
    // gradient (partial for a block), nothing for unit 0.
    Buffer backward_a(int unit, const float* params, float* grads, Buffer dout, SavedUnit& saved,
                      GradWrite write);
    Buffer backward_b(int unit, const float* params, float* grads, Buffer reduced,
                      SavedUnit& saved);

    // Split backward. B, phase a: the (partial, for a block) input gradient only; nothing for
    // unit 0. Phase b as backward_b, but what W needs stays in `saved`.
    Buffer backward_input_a(int unit, const float* params, Buffer dout, SavedUnit& saved);
    Buffer backward_input_b(int unit, Buffer reduced, SavedUnit& saved);
    // W: accumulates the unit's parameter gradients and frees what forward and B kept.
    void backward_weight(int unit, float* grads, SavedUnit& saved);

    // Whether this unit's backward must first rebuild activations forward dropped, and the
    // rebuild (a block's GELU under selective; its first product and GELU under full).
    bool needs_recompute(int unit) const {
        return recompute_ != RecomputeMode::none && is_block(unit);
    }
    void recompute(int unit, const float* params, SavedUnit& saved);

    // Sequence parallelism (Korthikanti et al. 2022): between the tensor-parallel parts this
    // device holds only its 1/tp of the tokens (rows [r T/tp, (r+1) T/tp) of the micro-batch's
    // T, r its tp rank): the residual stream, the LayerNorms' inputs, outputs and statistics,
    // the input projection and the head (whose parameter gradients are then partial sums over
    // the group's tokens). A block's forward is then sp_forward_norm, an all-gather, forward_a
    // on the gathered LayerNorm output, a reduce-scatter, and forward_b on sp_take_shard of it;
    // its backward is sp_backward_prepare, all-gathers of the returned output gradient and of
    // saved.gathered, backward_a on the gathered gradient, a reduce-scatter, and backward_b on
    // the shard.
    bool sequence_parallel() const { return sp_; }
    // The tokens of `tokens` this device holds between tensor-parallel parts, and the first.
    int local_tokens(int tokens) const { return sp_ ? tokens / layout_.tp_size() : tokens; }
    int first_local_token(int tokens) const {
        return sp_ ? layout_.tp_rank() * (tokens / layout_.tp_size()) : 0;
    }
    // The block's LayerNorm on this device's tokens (kept for backward), returned placed in
    // a buffer of all the tokens, ready for an in-place all-gather.
    Buffer sp_forward_norm(int unit, const float* params, Buffer input_shard, int samples,
                           SavedUnit& saved);
    // Keeps the output gradient's shard (the residual's) and returns it placed in a buffer of
    // all the tokens; puts the LayerNorm output's shard, placed likewise, in saved.gathered.
    Buffer sp_backward_prepare(Buffer dout_shard, SavedUnit& saved);
    // This device's chunk of a reduce-scattered buffer of all the tokens, as its own buffer.
    Buffer sp_take_shard(const Buffer& full, MemoryCategory category) const;

    // Ring attention (context parallelism, Liu et al. 2023), in ring_attention.cpp. This
    // executor's shape has this device's tokens of each sequence (seq_len = s / cp), whose
    // positions in the whole sequence set_positions gives. Forward: ring_attention_begin (the
    // LayerNorm and q, k, v), ring_attention_block for every device's keys and values in turn
    // (a ring payload [k | v]), ring_attention_end (normalise, project, bias and residual).
    // Backward: ring_attention_backward_begin, ring_attention_backward_block for each payload
    // [k | v | dk | dv] in turn (adding to its dk, dv), ring_attention_backward_end with this
    // device's own dk, dv once they came back round.
    void set_positions(std::vector<int> positions) { positions_ = std::move(positions); }
    const std::vector<int>& positions() const { return positions_; }
    void ring_attention_begin(int unit, const float* params, Buffer input, int samples,
                              SavedUnit& saved);
    // This device's keys and values as a ring payload, with zeroed gradient halves if asked.
    Buffer ring_payload(const SavedUnit& saved, bool with_gradients) const;
    void ring_attention_block(SavedUnit& saved, const Buffer& payload, const int* kv_pos);
    Buffer ring_attention_end(int unit, const float* params, SavedUnit& saved);
    void ring_attention_backward_begin(int unit, const float* params, float* grads, Buffer dout,
                                       SavedUnit& saved);
    void ring_attention_backward_block(SavedUnit& saved, Buffer& payload, const int* kv_pos);
    Buffer ring_attention_backward_end(int unit, const float* params, float* grads,
                                       const Buffer& own_payload, SavedUnit& saved);

    // The parts of an attention unit that work on this device's tokens alone, shared by ring
    // attention and DeepSpeed-Ulysses (whose all-to-alls and attention the strategy runs):
    // the LayerNorm and q, k, v [rows, h] (rows = samples x this device's tokens, kept in
    // saved.rows); the output projection of saved.attn with its
    // bias and the residual; its backward, leaving saved.dattn [rows, h]; and the backward
    // of q, k, v and the LayerNorm from their gradients dq, dk, dv [rows, h].
    void sequence_shard_qkv(int unit, const float* params, Buffer input, int samples,
                            SavedUnit& saved);
    Buffer sequence_shard_output(int unit, const float* params, SavedUnit& saved);
    void sequence_shard_output_backward(int unit, const float* params, float* grads, Buffer dout,
                                        SavedUnit& saved);
    Buffer sequence_shard_qkv_backward(int unit, const float* params, float* grads, const float* dq,
                                       const float* dk, const float* dv, SavedUnit& saved);

    // Mixture of experts (moe_units.cpp). Phase a of a MoE unit is three parts, and expert
    // parallelism puts an all-to-all between each two: moe_dispatch (LayerNorm, router,
    // routing; returns the dispatch buffer [experts, seqs, capacity, h], each expert's slots
    // of each sequence, unused slots zero), moe_experts_forward on the slots of this device's
    // experts as they arrived from every source ([sources, local experts, seqs, capacity, h];
    // returns their outputs in the same layout), moe_combine on the outputs back in this
    // device's slots (returns the gated sum per token; phase b adds the residual). Backward:
    // moe_backward_dispatch (the slots' output gradients, and the router's own backward),
    // moe_experts_backward (the slots' input gradients), moe_backward_combine (returns the
    // LayerNorm output's gradient for phase b). Unused slots are computed as GShard's padded
    // buffers are, and their zero gradients add nothing.
    Buffer moe_dispatch(int unit, const float* params, Buffer input, int samples, float grad_scale,
                        SavedUnit& saved);
    Buffer moe_experts_forward(int unit, const float* params, Buffer received, SavedUnit& saved);
    Buffer moe_combine(Buffer returned, SavedUnit& saved);
    Buffer moe_backward_dispatch(int unit, const float* params, float* grads, Buffer dout,
                                 SavedUnit& saved);
    Buffer moe_experts_backward(int unit, const float* params, float* grads, Buffer dreceived,
                                SavedUnit& saved);
    Buffer moe_backward_combine(Buffer dreturned, SavedUnit& saved);

    // Both phases, for an unsharded model.
    Buffer forward(int unit, const float* params, Buffer input, int rows, SavedUnit& saved,
                   const int* labels, float grad_scale, double* loss_sum);
    Buffer backward(int unit, const float* params, float* grads, Buffer dout, SavedUnit& saved,
                    GradWrite write);
    // Whether backward_a(unit, ..., GradWrite::overwrite) writes every one of the unit's
    // parameter gradients (the residual MLP model's units, each tensor once): then a step's
    // first backward needs no zero-filled gradient buffer. Transformer and MoE units add
    // (an expert may see no token; LayerNorm gradients add over phases), so theirs must be
    // zeroed first.
    bool overwrites_gradients(int unit) const;

    // The batch's inputs, copied from the host into a new activation buffer.
    Buffer upload_input(const std::vector<float>& host);

    DType dtype() const { return dtype_; }

  private:
    // transformer_units.cpp: the attention unit and the transformer's MLP unit.
    Buffer attention_forward_a(int unit, const float* params, Buffer input, SavedUnit& saved);
    Buffer attention_backward_a(int unit, const float* params, float* grads, Buffer dout,
                                SavedUnit& saved);
    Buffer transformer_mlp_forward_a(int unit, const float* params, Buffer input, SavedUnit& saved);
    Buffer transformer_mlp_backward_a(int unit, const float* params, float* grads, Buffer dout,
                                      SavedUnit& saved);
    // An attention unit's q, k, v (this device's heads) from its LayerNorm output `normed`
    // (saved.rows rows), into saved; and backward, the three projections' weight gradients and
    // the sum of their input gradients (the LayerNorm output's, partial under tp).
    void project_qkv(int unit, const float* params, const float* normed, SavedUnit& saved);
    Buffer project_qkv_backward(int unit, const float* params, float* grads, const float* normed,
                                int rows, const float* dq, const float* dk, const float* dv);
    // LayerNorm of a unit's input (`rows` tokens) into saved.normed (gain and bias are its
    // tensors 0 and 1).
    void layer_norm(int unit, const float* params, SavedUnit& saved, int rows);
    // `shard` placed at this device's tokens in a buffer of `tokens` rows.
    Buffer placed_in_full(const Buffer& shard, int tokens, MemoryCategory category) const;
    // Phase b of a transformer unit's backward: the LayerNorm's backward, then the residual.
    Buffer layer_norm_backward(int unit, const float* params, float* grads, Buffer reduced,
                               SavedUnit& saved);
    // The index, among the unit's tensors, of the bias phase b adds after the reduction.
    int output_bias_index(int unit) const;

    // An MLP block's phase a with FP8 products (set_fp8), forward and backward.
    Buffer fp8_block_forward_a(int unit, const float* params, Buffer input, SavedUnit& saved);
    Buffer fp8_block_backward_a(int unit, const float* params, float* grads, Buffer dout,
                                SavedUnit& saved, GradWrite write);
    // `count` values cast to FP8 into a new workspace buffer (the scale is returned in `scale`
    // when `role` records, or given when it does not: see Fp8Scaling::recast).
    Buffer fp8_cast(int unit, Fp8Role role, const float* src, std::size_t count, float& scale);
    Buffer fp8_recast(Fp8Role role, float scale, const float* src, std::size_t count);

    // A new tensor of this executor's dtype.
    Buffer make(MemoryCategory category, std::size_t count) const;
    // A kernel's result was stored in [data, data + count): round it when bf16.
    void stored(float* data, std::size_t count) const;
    void stored(Buffer& b) const { stored(b.data(), b.size()); }
    // After linear_backward: its weight and bias gradients (and input gradient) were stored.
    void stored_linear_grads(float* dw, float* dbias, int in, int out) const;

    ModelShape shape_;
    const ShardLayout& layout_;
    MemoryTracker& memory_;
    DeviceOps& ops_;
    int units_;
    RecomputeMode recompute_;
    DType dtype_;
    bool sp_;
    RoutingCounters* routing_;
    std::vector<int> positions_;  // ring attention: this device's token positions
    Fp8Scaling* fp8_ = nullptr;
};

}  // namespace pd
