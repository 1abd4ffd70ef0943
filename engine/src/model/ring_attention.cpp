// Ring attention (Liu et al., "Ring Attention with Blockwise Transformers", 2023): each
// device keeps its own tokens' queries and sees every device's keys and values in turn,
// combining the blocks with an online softmax, so no device ever holds the whole sequence's
// keys, values or s x s probabilities. Backward visits the blocks again: each block's key and
// value gradients travel round the ring with it and arrive back at their owner complete.
#include <cmath>

#include "model/model_executor.h"
#include "model/unit_tensors.h"

namespace pd {

using namespace unit_tensors;

void ModelExecutor::sequence_shard_qkv(int unit, const float* params, Buffer input, int samples,
                                       SavedUnit& saved) {
    auto param = [&](int index) { return params + layout_.tensor_offset(unit, index); };
    const int h = shape_.width, rows = shape_.tokens(samples);
    saved.rows = rows;
    const std::size_t r = static_cast<std::size_t>(rows);
    saved.input = std::move(input);
    layer_norm(unit, params, saved, rows);
    for (Buffer* out : {&saved.q, &saved.k, &saved.v})
        *out = make(MemoryCategory::activations, r * static_cast<std::size_t>(h));
    ops_.linear_forward(saved.normed.data(), param(wq), param(bq), rows, h, h, saved.q.data());
    ops_.gemm(false, false, rows, h, h, 1.0f, saved.normed.data(), param(wk), 0.0f, saved.k.data());
    ops_.linear_forward(saved.normed.data(), param(wv), param(bv), rows, h, h, saved.v.data());
}

void ModelExecutor::ring_attention_begin(int unit, const float* params, Buffer input, int samples,
                                         SavedUnit& saved) {
    const int h = shape_.width;
    sequence_shard_qkv(unit, params, std::move(input), samples, saved);
    const std::size_t r = static_cast<std::size_t>(saved.rows);
    const std::size_t stats = static_cast<std::size_t>(samples) *
                              static_cast<std::size_t>(shape_.heads) *
                              static_cast<std::size_t>(shape_.seq_len);
    saved.attn =
        Buffer(memory_, MemoryCategory::activations, r * static_cast<std::size_t>(h), Fill::zero);
    saved.row_max = Buffer(memory_, MemoryCategory::activations, stats, Fill::none);
    std::vector<float> minus_inf(stats, -INFINITY);
    ops_.upload(saved.row_max.data(), minus_inf.data(), stats);
    saved.row_sum = Buffer(memory_, MemoryCategory::workspace, stats, Fill::zero);
}

Buffer ModelExecutor::ring_payload(const SavedUnit& saved, bool with_gradients) const {
    const std::size_t n = saved.k.size();
    Buffer payload(memory_, MemoryCategory::communication, (with_gradients ? 4 : 2) * n,
                   with_gradients ? Fill::zero : Fill::none);
    ops_.copy(payload.data(), saved.k.data(), n);
    ops_.copy(payload.data() + n, saved.v.data(), n);
    return payload;
}

void ModelExecutor::ring_attention_block(SavedUnit& saved, const Buffer& payload,
                                         const int* kv_pos) {
    const int s = shape_.seq_len, seqs = saved.rows / s;
    const std::size_t n = saved.k.size();
    ops_.attention_block_forward(saved.q.data(), payload.data(), payload.data() + n, seqs, s, s,
                                 shape_.heads, shape_.head_dim(), positions_.data(), kv_pos,
                                 saved.attn.data(), saved.row_max.data(), saved.row_sum.data());
}

Buffer ModelExecutor::ring_attention_end(int unit, const float* params, SavedUnit& saved) {
    const int rows = saved.rows, s = shape_.seq_len;
    ops_.attention_block_finish(saved.attn.data(), saved.row_max.data(), saved.row_sum.data(),
                                rows / s, s, shape_.heads, shape_.head_dim());
    saved.row_sum.reset();
    return sequence_shard_output(unit, params, saved);
}

Buffer ModelExecutor::sequence_shard_output(int unit, const float* params, SavedUnit& saved) {
    const int h = shape_.width, rows = saved.rows;
    Buffer out = make(MemoryCategory::activations,
                      static_cast<std::size_t>(rows) * static_cast<std::size_t>(h));
    ops_.gemm(false, false, rows, h, h, 1.0f, saved.attn.data(),
              params + layout_.tensor_offset(unit, wo), 0.0f, out.data());
    return forward_b(unit, params, std::move(out), saved);
}

void ModelExecutor::sequence_shard_output_backward(int unit, const float* params, float* grads,
                                                   Buffer dout, SavedUnit& saved) {
    const int h = shape_.width, rows = saved.rows;
    const std::size_t r = static_cast<std::size_t>(rows);
    saved.dattn = make(MemoryCategory::workspace, r * static_cast<std::size_t>(h));
    ops_.linear_backward(saved.attn.data(), params + layout_.tensor_offset(unit, wo), dout.data(),
                         rows, h, h, grads + layout_.tensor_offset(unit, wo),
                         grads + layout_.tensor_offset(unit, bo), saved.dattn.data(),
                         GradWrite::add);
    saved.dout = std::move(dout);  // the residual's gradient
}

void ModelExecutor::ring_attention_backward_begin(int unit, const float* params, float* grads,
                                                  Buffer dout, SavedUnit& saved) {
    sequence_shard_output_backward(unit, params, grads, std::move(dout), saved);
    saved.dq = Buffer(memory_, MemoryCategory::workspace,
                      static_cast<std::size_t>(saved.rows) * static_cast<std::size_t>(shape_.width),
                      Fill::zero);
}

void ModelExecutor::ring_attention_backward_block(SavedUnit& saved, Buffer& payload,
                                                  const int* kv_pos) {
    const int s = shape_.seq_len, seqs = saved.rows / s;
    const std::size_t n = saved.k.size();
    float* p = payload.data();
    ops_.attention_block_backward(saved.q.data(), p, p + n, saved.attn.data(), saved.dattn.data(),
                                  saved.row_max.data(), seqs, s, s, shape_.heads, shape_.head_dim(),
                                  positions_.data(), kv_pos, saved.dq.data(), p + 2 * n, p + 3 * n);
}

Buffer ModelExecutor::ring_attention_backward_end(int unit, const float* params, float* grads,
                                                  const Buffer& own_payload, SavedUnit& saved) {
    const std::size_t n = saved.k.size();
    // This device's keys' and values' gradients came back round with its payload.
    return sequence_shard_qkv_backward(unit, params, grads, saved.dq.data(),
                                       own_payload.data() + 2 * n, own_payload.data() + 3 * n,
                                       saved);
}

Buffer ModelExecutor::sequence_shard_qkv_backward(int unit, const float* params, float* grads,
                                                  const float* dq, const float* dk, const float* dv,
                                                  SavedUnit& saved) {
    Buffer dnormed =
        project_qkv_backward(unit, params, grads, saved.normed.data(), saved.rows, dq, dk, dv);
    for (Buffer* b : {&saved.q, &saved.k, &saved.v, &saved.attn, &saved.row_max, &saved.dattn,
                      &saved.dq, &saved.normed})
        b->reset();
    return layer_norm_backward(unit, params, grads, std::move(dnormed), saved);
}

}  // namespace pd
