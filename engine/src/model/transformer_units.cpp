// The transformer's units (see pd/model.h for their tensors): attention, x + Wo·attn(LN1(x)),
// and the MLP, x + W2·gelu(W1·LN2(x)), each in the executor's two phases. Under tensor
// parallelism each device holds heads / tp heads (and 4h / tp MLP columns): phase a's forward
// partial is its heads' share of the output projection, and backward's partial is its share
// of the LayerNorm output's gradient, each summed across the group between the phases.
#include "model/model_executor.h"
#include "model/unit_tensors.h"

namespace pd {

using namespace unit_tensors;

void ModelExecutor::layer_norm(int unit, const float* params, SavedUnit& saved, int rows) {
    const std::size_t r = static_cast<std::size_t>(rows);
    saved.normed = make(MemoryCategory::activations, r * static_cast<std::size_t>(shape_.width));
    saved.stats = Buffer(memory_, MemoryCategory::activations, 2 * r, Fill::none);
    ops_.layer_norm_forward(saved.input.data(), params + layout_.tensor_offset(unit, ln_g),
                            params + layout_.tensor_offset(unit, ln_b), rows, shape_.width,
                            saved.normed.data(), saved.stats.data());
    stored(saved.normed);
}

void ModelExecutor::project_qkv(int unit, const float* params, const float* normed,
                                SavedUnit& saved) {
    auto param = [&](int index) { return params + layout_.tensor_offset(unit, index); };
    const int h = shape_.width, hl = layout_.width_local(), rows = saved.rows;
    for (Buffer* out : {&saved.q, &saved.k, &saved.v})
        *out = make(MemoryCategory::activations,
                    static_cast<std::size_t>(rows) * static_cast<std::size_t>(hl));
    ops_.linear_forward(normed, param(wq), param(bq), rows, h, hl, saved.q.data());
    ops_.gemm(false, false, rows, hl, h, 1.0f, normed, param(wk), 0.0f, saved.k.data());
    ops_.linear_forward(normed, param(wv), param(bv), rows, h, hl, saved.v.data());
    for (Buffer* out : {&saved.q, &saved.k, &saved.v}) stored(*out);
}

// The LayerNorm output feeds all three projections: its gradient is their sum (partial, under
// tensor parallelism: over this device's heads).
Buffer ModelExecutor::project_qkv_backward(int unit, const float* params, float* grads,
                                           const float* normed, int rows, const float* dq,
                                           const float* dk, const float* dv) {
    auto param = [&](int index) { return params + layout_.tensor_offset(unit, index); };
    auto grad = [&](int index) { return grads + layout_.tensor_offset(unit, index); };
    const int h = shape_.width, hl = layout_.width_local();
    Buffer partial = make(MemoryCategory::workspace,
                          static_cast<std::size_t>(rows) * static_cast<std::size_t>(h));
    ops_.linear_backward(normed, param(wq), dq, rows, h, hl, grad(wq), grad(bq), partial.data(),
                         GradWrite::add);
    stored_linear_grads(grad(wq), grad(bq), h, hl);
    ops_.gemm(true, false, h, hl, rows, 1.0f, normed, dk, 1.0f, grad(wk));  // no bias
    stored(grad(wk), static_cast<std::size_t>(h) * static_cast<std::size_t>(hl));
    ops_.gemm(false, true, rows, h, hl, 1.0f, dk, param(wk), 1.0f, partial.data());
    ops_.linear_backward(normed, nullptr, dv, rows, h, hl, grad(wv), grad(bv), nullptr,
                         GradWrite::add);
    stored_linear_grads(grad(wv), grad(bv), h, hl);
    ops_.gemm(false, true, rows, h, hl, 1.0f, dv, param(wv), 1.0f, partial.data());
    stored(partial);
    return partial;
}

Buffer ModelExecutor::attention_forward_a(int unit, const float* params, Buffer input,
                                          SavedUnit& saved) {
    auto param = [&](int index) { return params + layout_.tensor_offset(unit, index); };
    const int h = shape_.width, hl = layout_.width_local(), rows = saved.rows;
    const std::size_t r = static_cast<std::size_t>(rows);
    const int s = shape_.seq_len, seqs = rows / s;
    // Under sequence parallelism `input` is the all-gathered LayerNorm output (the unit's
    // input and its LayerNorm were kept by sp_forward_norm); it is freed after this phase.
    Buffer gathered;
    if (sp_) {
        gathered = std::move(input);
    } else {
        saved.input = std::move(input);
        layer_norm(unit, params, saved, rows);
    }
    // Column-parallel projections: this device's heads' queries, keys and values.
    project_qkv(unit, params, sp_ ? gathered.data() : saved.normed.data(), saved);
    // The attention probabilities are activations too (Korthikanti et al.'s 2as^2b term).
    saved.probs =
        make(MemoryCategory::activations,
             static_cast<std::size_t>(seqs) * static_cast<std::size_t>(layout_.heads_local()) *
                 static_cast<std::size_t>(s) * static_cast<std::size_t>(s));
    saved.attn = make(MemoryCategory::activations, r * static_cast<std::size_t>(hl));
    ops_.attention_forward(saved.q.data(), saved.k.data(), saved.v.data(), seqs, s,
                           layout_.heads_local(), shape_.head_dim(), saved.probs.data(),
                           saved.attn.data());
    stored(saved.attn);
    // Row-parallel output projection: this device's heads' share, bias after the reduction.
    // Under sequence parallelism it is scratch until the reduce-scatter leaves the shard.
    Buffer partial = make(sp_ ? MemoryCategory::workspace : MemoryCategory::activations,
                          r * static_cast<std::size_t>(h));
    ops_.gemm(false, false, rows, h, hl, 1.0f, saved.attn.data(), param(wo), 0.0f, partial.data());
    stored(partial);
    return partial;
}

Buffer ModelExecutor::attention_backward_a(int unit, const float* params, float* grads, Buffer dout,
                                           SavedUnit& saved) {
    auto param = [&](int index) { return params + layout_.tensor_offset(unit, index); };
    auto grad = [&](int index) { return grads + layout_.tensor_offset(unit, index); };
    const int h = shape_.width, hl = layout_.width_local(), rows = saved.rows;
    const std::size_t r = static_cast<std::size_t>(rows);
    const int s = shape_.seq_len, seqs = rows / s;
    // Output projection (bo is replicated: every shard sees the whole output gradient).
    Buffer dattn = make(MemoryCategory::workspace, r * static_cast<std::size_t>(hl));
    ops_.linear_backward(saved.attn.data(), param(wo), dout.data(), rows, hl, h, grad(wo), grad(bo),
                         dattn.data(), GradWrite::add);
    stored_linear_grads(grad(wo), grad(bo), hl, h);
    stored(dattn);
    Buffer dq = make(MemoryCategory::workspace, r * static_cast<std::size_t>(hl));
    Buffer dk = make(MemoryCategory::workspace, r * static_cast<std::size_t>(hl));
    Buffer dv = make(MemoryCategory::workspace, r * static_cast<std::size_t>(hl));
    ops_.attention_backward(saved.q.data(), saved.k.data(), saved.v.data(), saved.probs.data(),
                            dattn.data(), seqs, s, layout_.heads_local(), shape_.head_dim(),
                            dq.data(), dk.data(), dv.data());
    dattn.reset();
    // Under sequence parallelism the LayerNorm output was all-gathered again.
    Buffer partial =
        project_qkv_backward(unit, params, grads, sp_ ? saved.gathered.data() : saved.normed.data(),
                             saved.rows, dq.data(), dk.data(), dv.data());
    saved.normed.reset();
    saved.gathered.reset();
    saved.q.reset();
    saved.k.reset();
    saved.v.reset();
    saved.probs.reset();
    saved.attn.reset();
    // The residual's gradient, added in phase b (sequence parallel: the shard, kept already).
    if (!sp_) saved.dout = std::move(dout);
    return partial;
}

Buffer ModelExecutor::transformer_mlp_forward_a(int unit, const float* params, Buffer input,
                                                SavedUnit& saved) {
    auto param = [&](int index) { return params + layout_.tensor_offset(unit, index); };
    const int h = shape_.width, f = layout_.hidden_local(), rows = saved.rows;
    const std::size_t r = static_cast<std::size_t>(rows);
    Buffer gathered;  // as in attention_forward_a
    if (sp_) {
        gathered = std::move(input);
    } else {
        saved.input = std::move(input);
        layer_norm(unit, params, saved, rows);
    }
    const float* normed = sp_ ? gathered.data() : saved.normed.data();
    saved.pre = make(MemoryCategory::activations, r * static_cast<std::size_t>(f));
    ops_.linear_forward(normed, param(w1), param(b1), rows, h, f, saved.pre.data());
    stored(saved.pre);
    saved.post = make(MemoryCategory::activations, r * static_cast<std::size_t>(f));
    ops_.gelu_forward(saved.pre.data(), saved.post.data(), saved.pre.size());
    stored(saved.post);
    Buffer partial = make(sp_ ? MemoryCategory::workspace : MemoryCategory::activations,
                          r * static_cast<std::size_t>(h));
    ops_.gemm(false, false, rows, h, f, 1.0f, saved.post.data(), param(w2), 0.0f, partial.data());
    stored(partial);
    return partial;
}

Buffer ModelExecutor::transformer_mlp_backward_a(int unit, const float* params, float* grads,
                                                 Buffer dout, SavedUnit& saved) {
    auto param = [&](int index) { return params + layout_.tensor_offset(unit, index); };
    auto grad = [&](int index) { return grads + layout_.tensor_offset(unit, index); };
    const int h = shape_.width, f = layout_.hidden_local(), rows = saved.rows;
    const std::size_t r = static_cast<std::size_t>(rows);
    Buffer dpost = make(MemoryCategory::workspace, r * static_cast<std::size_t>(f));
    ops_.linear_backward(saved.post.data(), param(w2), dout.data(), rows, f, h, grad(w2), grad(b2),
                         dpost.data(), GradWrite::add);
    stored_linear_grads(grad(w2), grad(b2), f, h);
    stored(dpost);
    ops_.gelu_backward(saved.pre.data(), dpost.data(), dpost.data(), dpost.size());
    stored(dpost);
    Buffer partial = make(MemoryCategory::workspace, r * static_cast<std::size_t>(h));
    ops_.linear_backward(sp_ ? saved.gathered.data() : saved.normed.data(), param(w1), dpost.data(),
                         rows, h, f, grad(w1), grad(b1), partial.data(), GradWrite::add);
    stored_linear_grads(grad(w1), grad(b1), h, f);
    stored(partial);
    saved.normed.reset();
    saved.gathered.reset();
    saved.pre.reset();
    saved.post.reset();
    if (!sp_) saved.dout = std::move(dout);
    return partial;
}

Buffer ModelExecutor::layer_norm_backward(int unit, const float* params, float* grads,
                                          Buffer reduced, SavedUnit& saved) {
    const int h = shape_.width, rows = local_tokens(saved.rows);
    Buffer dx = make(MemoryCategory::workspace,
                     static_cast<std::size_t>(rows) * static_cast<std::size_t>(h));
    float* dg = grads + layout_.tensor_offset(unit, ln_g);
    float* db = grads + layout_.tensor_offset(unit, ln_b);
    ops_.layer_norm_backward(saved.input.data(), params + layout_.tensor_offset(unit, ln_g),
                             saved.stats.data(), reduced.data(), rows, h, dx.data(), dg, db);
    stored(dg, static_cast<std::size_t>(h));
    stored(db, static_cast<std::size_t>(h));
    reduced.reset();
    ops_.add(dx.data(), saved.dout.data(), dx.size());  // the residual path
    stored(dx);
    saved = SavedUnit{};
    return dx;
}

}  // namespace pd
