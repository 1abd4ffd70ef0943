#include "model/model_executor.h"

#include "model/unit_tensors.h"
#include "pd/error.h"

namespace pd {

ModelExecutor::ModelExecutor(const ModelShape& shape, const ShardLayout& layout,
                             MemoryTracker& memory, RecomputeMode recompute, DType dtype,
                             bool sequence_parallel, RoutingCounters* routing)
    : shape_(shape),
      layout_(layout),
      memory_(memory),
      ops_(memory.ops()),
      units_(shape.units()),
      recompute_(recompute),
      dtype_(dtype),
      sp_(sequence_parallel && shape.transformer && layout.tp_size() > 1),
      routing_(routing) {}

Buffer ModelExecutor::make(MemoryCategory category, std::size_t count) const {
    return Buffer(memory_, category, count, Fill::none, dtype_);
}

void ModelExecutor::stored(float* data, std::size_t count) const {
    ops_.round_to(dtype_, data, count);
}

void ModelExecutor::stored_linear_grads(float* dw, float* dbias, int in, int out) const {
    stored(dw, static_cast<std::size_t>(in) * static_cast<std::size_t>(out));
    stored(dbias, static_cast<std::size_t>(out));
}

// The inputs arrive in fp32 and are stored as the first layer reads them (autocast casts
// them to bf16 for the product). Under sequence parallelism only this device's tokens.
Buffer ModelExecutor::upload_input(const std::vector<float>& host) {
    const std::size_t in = static_cast<std::size_t>(shape_.input_dim);
    const int tokens = static_cast<int>(host.size() / in);
    const std::size_t first = static_cast<std::size_t>(first_local_token(tokens)) * in;
    const std::size_t count = static_cast<std::size_t>(local_tokens(tokens)) * in;
    Buffer input = make(MemoryCategory::activations, count);
    ops_.upload(input.data(), host.data() + first, count);
    stored(input);
    return input;
}

Buffer ModelExecutor::placed_in_full(const Buffer& shard, int tokens,
                                     MemoryCategory category) const {
    const std::size_t h = static_cast<std::size_t>(shape_.width);
    // Other devices' rows are written whole by the all-gather.
    Buffer full = make(category, static_cast<std::size_t>(tokens) * h);
    ops_.copy(full.data() + static_cast<std::size_t>(first_local_token(tokens)) * h, shard.data(),
              shard.size());
    return full;
}

Buffer ModelExecutor::sp_forward_norm(int unit, const float* params, Buffer input_shard,
                                      int samples, SavedUnit& saved) {
    const int tokens = shape_.tokens(samples);
    saved.rows = tokens;
    saved.input = std::move(input_shard);
    layer_norm(unit, params, saved, local_tokens(tokens));
    return placed_in_full(saved.normed, tokens, MemoryCategory::workspace);
}

Buffer ModelExecutor::sp_backward_prepare(Buffer dout_shard, SavedUnit& saved) {
    saved.gathered = placed_in_full(saved.normed, saved.rows, MemoryCategory::workspace);
    Buffer full = placed_in_full(dout_shard, saved.rows, MemoryCategory::workspace);
    saved.dout = std::move(dout_shard);
    return full;
}

Buffer ModelExecutor::sp_take_shard(const Buffer& full, MemoryCategory category) const {
    const std::size_t h = static_cast<std::size_t>(shape_.width);
    const int tokens = static_cast<int>(full.size() / h);
    const std::size_t count = static_cast<std::size_t>(local_tokens(tokens)) * h;
    Buffer shard = make(category, count);
    ops_.copy(shard.data(), full.data() + static_cast<std::size_t>(first_local_token(tokens)) * h,
              count);
    return shard;
}

// Every buffer below is written whole by its first kernel (a product with beta = 0, a bias
// broadcast, an upload), so none is zero-filled first.
Buffer ModelExecutor::forward_a(int unit, const float* params, Buffer input, int samples,
                                SavedUnit& saved, const int* labels, float grad_scale,
                                double* loss_sum) {
    auto param = [&](int index) { return params + layout_.tensor_offset(unit, index); };
    const int h = shape_.width;
    // Under sequence parallelism the input projection and the head see this device's tokens.
    const int rows = is_block(unit) ? shape_.tokens(samples) : local_tokens(shape_.tokens(samples));
    const std::size_t r = static_cast<std::size_t>(rows);
    saved.rows = rows;
    if (is_moe(unit)) {
        Buffer slots = moe_dispatch(unit, params, std::move(input), samples, grad_scale, saved);
        return moe_combine(moe_experts_forward(unit, params, std::move(slots), saved), saved);
    }
    if (shape_.transformer && is_block(unit))
        return is_attention(unit)
                   ? attention_forward_a(unit, params, std::move(input), saved)
                   : transformer_mlp_forward_a(unit, params, std::move(input), saved);

    if (unit == 0) {
        Buffer out = make(MemoryCategory::activations, r * h);
        ops_.linear_forward(input.data(), param(0), param(1), rows, shape_.input_dim, h,
                            out.data());
        stored(out);
        saved.input = std::move(input);
        return out;
    }
    if (is_head(unit)) {
        Buffer logits = make(MemoryCategory::workspace, r * shape_.classes);
        ops_.linear_forward(input.data(), param(0), param(1), rows, h, shape_.classes,
                            logits.data());
        stored(logits);
        const int* mine = labels + first_local_token(shape_.tokens(samples));
        const std::vector<float> host_labels(mine, mine + rows);
        // Class indices, whatever the precision (exact in fp32, not in bf16).
        Buffer device_labels(memory_, MemoryCategory::workspace, r, Fill::none);
        ops_.upload(device_labels.data(), host_labels.data(), r);
        // Softmax and loss in fp32 from the (bf16) logits; their gradient is stored bf16.
        Buffer dlogits = make(MemoryCategory::activations, r * shape_.classes);
        ops_.softmax_cross_entropy(logits.data(), device_labels.data(), rows, shape_.classes,
                                   grad_scale, dlogits.data(), loss_sum);
        stored(dlogits);
        saved.input = std::move(input);
        saved.pre = std::move(dlogits);
        return {};
    }
    if (fp8_) return fp8_block_forward_a(unit, params, std::move(input), saved);
    const int f = layout_.hidden_local();
    // What backward will rebuild is scratch here, freed as soon as this forward is done.
    const bool keep_pre = recompute_ != RecomputeMode::full;
    const bool keep_post = recompute_ == RecomputeMode::none;
    Buffer pre = make(keep_pre ? MemoryCategory::activations : MemoryCategory::workspace, r * f);
    ops_.linear_forward(input.data(), param(0), param(1), rows, h, f, pre.data());
    stored(pre);
    Buffer post = make(keep_post ? MemoryCategory::activations : MemoryCategory::workspace, r * f);
    ops_.gelu_forward(pre.data(), post.data(), r * f);
    stored(post);
    Buffer partial = make(MemoryCategory::activations, r * h);
    ops_.gemm(false, false, rows, h, f, 1.0f, post.data(), param(2), 0.0f, partial.data());
    stored(partial);
    saved.input = std::move(input);
    if (keep_pre) saved.pre = std::move(pre);
    if (keep_post) saved.post = std::move(post);
    return partial;
}

int ModelExecutor::output_bias_index(int unit) const {
    if (!shape_.transformer) return unit_tensors::block_b2;
    if (is_attention(unit)) return unit_tensors::bo;
    return unit_tensors::b2;
}

Buffer ModelExecutor::forward_b(int unit, const float* params, Buffer reduced, SavedUnit& saved) {
    if (!is_block(unit)) return reduced;
    if (is_moe(unit)) {  // each expert added its own output bias
        ops_.add(reduced.data(), saved.input.data(), reduced.size());
        return reduced;
    }
    const float* bias = params + layout_.tensor_offset(unit, output_bias_index(unit));
    // The bias once, after the reduction, then the residual.
    ops_.bias_residual(reduced.data(), bias, saved.input.data(), local_tokens(saved.rows),
                       shape_.width);
    stored(reduced);
    return reduced;
}

Buffer ModelExecutor::backward_a(int unit, const float* params, float* grads, Buffer dout,
                                 SavedUnit& saved, GradWrite write) {
    auto param = [&](int index) { return params + layout_.tensor_offset(unit, index); };
    auto grad = [&](int index) { return grads + layout_.tensor_offset(unit, index); };
    const int h = shape_.width;
    const int rows = saved.rows;
    const std::size_t r = static_cast<std::size_t>(rows);
    if (is_moe(unit)) {
        Buffer dslots = moe_backward_dispatch(unit, params, grads, std::move(dout), saved);
        return moe_backward_combine(
            moe_experts_backward(unit, params, grads, std::move(dslots), saved), saved);
    }
    if (shape_.transformer && is_block(unit))
        return is_attention(unit)
                   ? attention_backward_a(unit, params, grads, std::move(dout), saved)
                   : transformer_mlp_backward_a(unit, params, grads, std::move(dout), saved);

    if (unit == 0) {
        ops_.linear_backward(saved.input.data(), param(0), dout.data(), rows, shape_.input_dim, h,
                             grad(0), grad(1), nullptr, write);
        stored_linear_grads(grad(0), grad(1), shape_.input_dim, h);
        saved = SavedUnit{};
        return {};
    }
    if (is_head(unit)) {
        Buffer din = make(MemoryCategory::workspace, r * h);
        ops_.linear_backward(saved.input.data(), param(0), saved.pre.data(), rows, h,
                             shape_.classes, grad(0), grad(1), din.data(), write);
        stored_linear_grads(grad(0), grad(1), h, shape_.classes);
        stored(din);
        saved = SavedUnit{};
        return din;
    }
    if (fp8_) return fp8_block_backward_a(unit, params, grads, std::move(dout), saved, write);
    const int f = layout_.hidden_local();
    Buffer dpost = make(MemoryCategory::workspace, r * f);
    // Second linear (its bias is replicated: every shard sees the whole output gradient).
    ops_.linear_backward(saved.post.data(), param(2), dout.data(), rows, f, h, grad(2), grad(3),
                         dpost.data(), write);
    stored_linear_grads(grad(2), grad(3), f, h);
    stored(dpost);
    ops_.gelu_backward(saved.pre.data(), dpost.data(), dpost.data(), r * f);
    stored(dpost);
    Buffer partial = make(MemoryCategory::workspace, r * h);
    ops_.linear_backward(saved.input.data(), param(0), dpost.data(), rows, h, f, grad(0), grad(1),
                         partial.data(), write);
    stored_linear_grads(grad(0), grad(1), h, f);
    stored(partial);
    saved.input.reset();
    saved.pre.reset();
    saved.post.reset();
    saved.dout = std::move(dout);
    return partial;
}

Buffer ModelExecutor::fp8_cast(int unit, Fp8Role role, const float* src, std::size_t count,
                               float& scale) {
    Buffer q = make(MemoryCategory::workspace, count);
    scale = fp8_->cast(ops_, unit, role, src, q.data(), count);
    return q;
}

Buffer ModelExecutor::fp8_recast(Fp8Role role, float scale, const float* src, std::size_t count) {
    Buffer q = make(MemoryCategory::workspace, count);
    Fp8Scaling::recast(ops_, fp8_->encoding(role), scale, src, q.data(), count);
    return q;
}

// TE's te.Linear under fp8_autocast: y = (xq wq) / (sx sw) + b, each operand cast with its
// own scale; the inverse scales are fp32 reciprocals (TE's scale_inv), multiplied as alpha.
Buffer ModelExecutor::fp8_block_forward_a(int unit, const float* params, Buffer input,
                                          SavedUnit& saved) {
    auto param = [&](int index) { return params + layout_.tensor_offset(unit, index); };
    const int h = shape_.width;
    const int f = layout_.hidden_local();
    const int rows = saved.rows;
    const std::size_t r = static_cast<std::size_t>(rows);
    const std::size_t hf = static_cast<std::size_t>(h) * static_cast<std::size_t>(f);
    std::array<float, 4>& s = saved.fp8_scales;
    Buffer pre = make(MemoryCategory::activations, r * f);
    {
        const Buffer xq = fp8_cast(unit, Fp8Role::input1, input.data(), r * h, s[0]);
        const Buffer wq = fp8_cast(unit, Fp8Role::weight1, param(0), hf, s[1]);
        ops_.scaled_linear_forward(xq.data(), wq.data(), param(1), rows, h, f,
                                   (1.0f / s[0]) * (1.0f / s[1]), pre.data());
    }
    stored(pre);
    Buffer post = make(MemoryCategory::activations, r * f);
    ops_.gelu_forward(pre.data(), post.data(), r * f);
    stored(post);
    Buffer partial = make(MemoryCategory::activations, r * h);
    {
        const Buffer xq = fp8_cast(unit, Fp8Role::input2, post.data(), r * f, s[2]);
        const Buffer wq = fp8_cast(unit, Fp8Role::weight2, param(2), hf, s[3]);
        ops_.gemm(false, false, rows, h, f, (1.0f / s[2]) * (1.0f / s[3]), xq.data(), wq.data(),
                  0.0f, partial.data());
    }
    stored(partial);
    saved.input = std::move(input);
    saved.pre = std::move(pre);
    saved.post = std::move(post);
    return partial;
}

// Backward of the two FP8 products: the output gradient cast (E5M2 under HYBRID) with its
// own scale; the inputs and weights re-cast with the scales forward used.
Buffer ModelExecutor::fp8_block_backward_a(int unit, const float* params, float* grads, Buffer dout,
                                           SavedUnit& saved, GradWrite write) {
    auto param = [&](int index) { return params + layout_.tensor_offset(unit, index); };
    auto grad = [&](int index) { return grads + layout_.tensor_offset(unit, index); };
    const int h = shape_.width;
    const int f = layout_.hidden_local();
    const int rows = saved.rows;
    const std::size_t r = static_cast<std::size_t>(rows);
    const std::size_t hf = static_cast<std::size_t>(h) * static_cast<std::size_t>(f);
    const std::array<float, 4>& s = saved.fp8_scales;
    Buffer dpost = make(MemoryCategory::workspace, r * f);
    {
        float sdy = 0;
        const Buffer dyq = fp8_cast(unit, Fp8Role::grad_output2, dout.data(), r * h, sdy);
        const Buffer xq = fp8_recast(Fp8Role::input2, s[2], saved.post.data(), r * f);
        const Buffer wq = fp8_recast(Fp8Role::weight2, s[3], param(2), hf);
        ops_.scaled_linear_backward(xq.data(), wq.data(), dyq.data(), dout.data(), rows, f, h,
                                    (1.0f / s[2]) * (1.0f / sdy), (1.0f / sdy) * (1.0f / s[3]),
                                    grad(2), grad(3), dpost.data(), write);
    }
    stored_linear_grads(grad(2), grad(3), f, h);
    stored(dpost);
    ops_.gelu_backward(saved.pre.data(), dpost.data(), dpost.data(), r * f);
    stored(dpost);
    Buffer partial = make(MemoryCategory::workspace, r * h);
    {
        float sdy = 0;
        const Buffer dyq = fp8_cast(unit, Fp8Role::grad_output1, dpost.data(), r * f, sdy);
        const Buffer xq = fp8_recast(Fp8Role::input1, s[0], saved.input.data(), r * h);
        const Buffer wq = fp8_recast(Fp8Role::weight1, s[1], param(0), hf);
        ops_.scaled_linear_backward(xq.data(), wq.data(), dyq.data(), dpost.data(), rows, h, f,
                                    (1.0f / s[0]) * (1.0f / sdy), (1.0f / sdy) * (1.0f / s[1]),
                                    grad(0), grad(1), partial.data(), write);
    }
    stored_linear_grads(grad(0), grad(1), h, f);
    stored(partial);
    saved.input.reset();
    saved.pre.reset();
    saved.post.reset();
    saved.dout = std::move(dout);
    return partial;
}

Buffer ModelExecutor::backward_b(int unit, const float* params, float* grads, Buffer reduced,
                                 SavedUnit& saved) {
    if (!is_block(unit)) return reduced;
    if (shape_.transformer)
        return layer_norm_backward(unit, params, grads, std::move(reduced), saved);
    ops_.add(reduced.data(), saved.dout.data(), reduced.size());  // the residual path
    stored(reduced);
    saved = SavedUnit{};
    return reduced;
}

void ModelExecutor::recompute(int unit, const float* params, SavedUnit& saved) {
    if (!needs_recompute(unit)) return;
    const int h = shape_.width;
    const int f = layout_.hidden_local();
    const std::size_t n = static_cast<std::size_t>(saved.rows) * static_cast<std::size_t>(f);
    if (recompute_ == RecomputeMode::full) {
        saved.pre = make(MemoryCategory::activations, n);
        ops_.linear_forward(saved.input.data(), params + layout_.tensor_offset(unit, 0),
                            params + layout_.tensor_offset(unit, 1), saved.rows, h, f,
                            saved.pre.data());
        stored(saved.pre);
    }
    saved.post = make(MemoryCategory::activations, n);
    ops_.gelu_forward(saved.pre.data(), saved.post.data(), n);
    stored(saved.post);
}

Buffer ModelExecutor::backward_input_a(int unit, const float* params, Buffer dout,
                                       SavedUnit& saved) {
    const int h = shape_.width;
    const int rows = saved.rows;
    const std::size_t r = static_cast<std::size_t>(rows);
    if (unit == 0) {  // no input gradient: W needs the output gradient
        saved.dout = std::move(dout);
        return {};
    }
    if (is_head(unit)) {  // saved.pre holds dlogits
        Buffer din = make(MemoryCategory::workspace, r * h);
        ops_.gemm(false, true, rows, h, shape_.classes, 1.0f, saved.pre.data(),
                  params + layout_.tensor_offset(unit, 0), 0.0f, din.data());
        stored(din);
        return din;
    }
    const int f = layout_.hidden_local();
    // The pre-GELU gradient waits for W, so it is held like an activation.
    Buffer dpre = make(MemoryCategory::activations, r * f);
    ops_.gemm(false, true, rows, f, h, 1.0f, dout.data(), params + layout_.tensor_offset(unit, 2),
              0.0f, dpre.data());
    stored(dpre);  // dpost, as the unsplit backward stores it
    ops_.gelu_backward(saved.pre.data(), dpre.data(), dpre.data(), r * f);
    stored(dpre);
    Buffer partial = make(MemoryCategory::workspace, r * h);
    ops_.gemm(false, true, rows, h, f, 1.0f, dpre.data(), params + layout_.tensor_offset(unit, 0),
              0.0f, partial.data());
    stored(partial);
    saved.pre.reset();
    saved.dpre = std::move(dpre);
    saved.dout = std::move(dout);
    return partial;
}

Buffer ModelExecutor::backward_input_b(int unit, Buffer reduced, SavedUnit& saved) {
    if (!is_block(unit)) return reduced;
    ops_.add(reduced.data(), saved.dout.data(), reduced.size());  // the residual path
    stored(reduced);
    return reduced;
}

void ModelExecutor::backward_weight(int unit, float* grads, SavedUnit& saved) {
    auto grad = [&](int index) { return grads + layout_.tensor_offset(unit, index); };
    const int h = shape_.width;
    const int rows = saved.rows;
    // linear_backward without dx reads no weights: only x and dy.
    if (unit == 0) {
        ops_.linear_backward(saved.input.data(), nullptr, saved.dout.data(), rows, shape_.input_dim,
                             h, grad(0), grad(1), nullptr, GradWrite::add);
        stored_linear_grads(grad(0), grad(1), shape_.input_dim, h);
    } else if (is_head(unit)) {
        ops_.linear_backward(saved.input.data(), nullptr, saved.pre.data(), rows, h, shape_.classes,
                             grad(0), grad(1), nullptr, GradWrite::add);
        stored_linear_grads(grad(0), grad(1), h, shape_.classes);
    } else {
        const int f = layout_.hidden_local();
        ops_.linear_backward(saved.post.data(), nullptr, saved.dout.data(), rows, f, h, grad(2),
                             grad(3), nullptr, GradWrite::add);
        stored_linear_grads(grad(2), grad(3), f, h);
        ops_.linear_backward(saved.input.data(), nullptr, saved.dpre.data(), rows, h, f, grad(0),
                             grad(1), nullptr, GradWrite::add);
        stored_linear_grads(grad(0), grad(1), h, f);
    }
    saved = SavedUnit{};
}

Buffer ModelExecutor::forward(int unit, const float* params, Buffer input, int rows,
                              SavedUnit& saved, const int* labels, float grad_scale,
                              double* loss_sum) {
    Buffer partial =
        forward_a(unit, params, std::move(input), rows, saved, labels, grad_scale, loss_sum);
    return forward_b(unit, params, std::move(partial), saved);
}

bool ModelExecutor::overwrites_gradients(int unit) const {
    // Every unit of the residual MLP model (input, blocks, head); no transformer or MoE unit.
    return !shape_.transformer && !is_moe(unit);
}

Buffer ModelExecutor::backward(int unit, const float* params, float* grads, Buffer dout,
                               SavedUnit& saved, GradWrite write) {
    Buffer partial = backward_a(unit, params, grads, std::move(dout), saved, write);
    return backward_b(unit, params, grads, std::move(partial), saved);
}

}  // namespace pd
