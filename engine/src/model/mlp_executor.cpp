#include "model/mlp_executor.h"

#include "pd/error.h"

namespace pd {

MlpExecutor::MlpExecutor(const ModelShape& shape, const ShardLayout& layout, MemoryTracker& memory,
                         RecomputeMode recompute)
    : shape_(shape),
      layout_(layout),
      memory_(memory),
      ops_(memory.ops()),
      units_(shape.layers + 2),
      recompute_(recompute) {}

Buffer MlpExecutor::upload_input(const std::vector<float>& host) {
    Buffer input(memory_, MemoryCategory::activations, host.size(), Fill::none);
    ops_.upload(input.data(), host.data(), host.size());
    return input;
}

// Every buffer below is written whole by its first kernel (a product with beta = 0, a bias
// broadcast, an upload), so none is zero-filled first.
Buffer MlpExecutor::forward_a(int unit, const float* params, Buffer input, int rows,
                              SavedUnit& saved, const int* labels, float grad_scale,
                              double* loss_sum) {
    auto param = [&](int index) { return params + layout_.tensor_offset(unit, index); };
    const int h = shape_.width;
    const std::size_t r = static_cast<std::size_t>(rows);
    saved.rows = rows;

    if (unit == 0) {
        Buffer out(memory_, MemoryCategory::activations, r * h, Fill::none);
        ops_.linear_forward(input.data(), param(0), param(1), rows, shape_.input_dim, h,
                            out.data());
        saved.input = std::move(input);
        return out;
    }
    if (is_head(unit)) {
        Buffer logits(memory_, MemoryCategory::workspace, r * shape_.classes, Fill::none);
        ops_.linear_forward(input.data(), param(0), param(1), rows, h, shape_.classes,
                            logits.data());
        const std::vector<float> host_labels(labels, labels + rows);
        Buffer device_labels(memory_, MemoryCategory::workspace, r, Fill::none);
        ops_.upload(device_labels.data(), host_labels.data(), r);
        Buffer dlogits(memory_, MemoryCategory::activations, r * shape_.classes, Fill::none);
        ops_.softmax_cross_entropy(logits.data(), device_labels.data(), rows, shape_.classes,
                                   grad_scale, dlogits.data(), loss_sum);
        saved.input = std::move(input);
        saved.pre = std::move(dlogits);
        return {};
    }
    const int f = layout_.hidden_local();
    // What backward will rebuild is scratch here, freed as soon as this forward is done.
    const bool keep_pre = recompute_ != RecomputeMode::full;
    const bool keep_post = recompute_ == RecomputeMode::none;
    Buffer pre(memory_, keep_pre ? MemoryCategory::activations : MemoryCategory::workspace, r * f,
               Fill::none);
    ops_.linear_forward(input.data(), param(0), param(1), rows, h, f, pre.data());
    Buffer post(memory_, keep_post ? MemoryCategory::activations : MemoryCategory::workspace, r * f,
                Fill::none);
    ops_.gelu_forward(pre.data(), post.data(), r * f);
    Buffer partial(memory_, MemoryCategory::activations, r * h, Fill::none);
    ops_.gemm(false, false, rows, h, f, 1.0f, post.data(), param(2), 0.0f, partial.data());
    saved.input = std::move(input);
    if (keep_pre) saved.pre = std::move(pre);
    if (keep_post) saved.post = std::move(post);
    return partial;
}

Buffer MlpExecutor::forward_b(int unit, const float* params, Buffer reduced, SavedUnit& saved) {
    if (!is_block(unit)) return reduced;
    const float* b2 = params + layout_.tensor_offset(unit, 3);
    // The bias once, after the reduction, then the residual.
    ops_.bias_residual(reduced.data(), b2, saved.input.data(), saved.rows, shape_.width);
    return reduced;
}

Buffer MlpExecutor::backward_a(int unit, const float* params, float* grads, Buffer dout,
                               SavedUnit& saved) {
    auto param = [&](int index) { return params + layout_.tensor_offset(unit, index); };
    auto grad = [&](int index) { return grads + layout_.tensor_offset(unit, index); };
    const int h = shape_.width;
    const int rows = saved.rows;
    const std::size_t r = static_cast<std::size_t>(rows);

    if (unit == 0) {
        ops_.linear_backward(saved.input.data(), param(0), dout.data(), rows, shape_.input_dim, h,
                             grad(0), grad(1), nullptr);
        saved = SavedUnit{};
        return {};
    }
    if (is_head(unit)) {
        Buffer din(memory_, MemoryCategory::workspace, r * h, Fill::none);
        ops_.linear_backward(saved.input.data(), param(0), saved.pre.data(), rows, h,
                             shape_.classes, grad(0), grad(1), din.data());
        saved = SavedUnit{};
        return din;
    }
    const int f = layout_.hidden_local();
    Buffer dpost(memory_, MemoryCategory::workspace, r * f, Fill::none);
    // Second linear (its bias is replicated: every shard sees the whole output gradient).
    ops_.linear_backward(saved.post.data(), param(2), dout.data(), rows, f, h, grad(2), grad(3),
                         dpost.data());
    ops_.gelu_backward(saved.pre.data(), dpost.data(), dpost.data(), r * f);
    Buffer partial(memory_, MemoryCategory::workspace, r * h, Fill::none);
    ops_.linear_backward(saved.input.data(), param(0), dpost.data(), rows, h, f, grad(0), grad(1),
                         partial.data());
    saved.input.reset();
    saved.pre.reset();
    saved.post.reset();
    saved.dout = std::move(dout);
    return partial;
}

Buffer MlpExecutor::backward_b(int unit, Buffer reduced, SavedUnit& saved) {
    if (!is_block(unit)) return reduced;
    ops_.add(reduced.data(), saved.dout.data(), reduced.size());  // the residual path
    saved = SavedUnit{};
    return reduced;
}

void MlpExecutor::recompute(int unit, const float* params, SavedUnit& saved) {
    if (!needs_recompute(unit)) return;
    const int h = shape_.width;
    const int f = layout_.hidden_local();
    const std::size_t n = static_cast<std::size_t>(saved.rows) * static_cast<std::size_t>(f);
    if (recompute_ == RecomputeMode::full) {
        saved.pre = Buffer(memory_, MemoryCategory::activations, n, Fill::none);
        ops_.linear_forward(saved.input.data(), params + layout_.tensor_offset(unit, 0),
                            params + layout_.tensor_offset(unit, 1), saved.rows, h, f,
                            saved.pre.data());
    }
    saved.post = Buffer(memory_, MemoryCategory::activations, n, Fill::none);
    ops_.gelu_forward(saved.pre.data(), saved.post.data(), n);
}

Buffer MlpExecutor::backward_input_a(int unit, const float* params, Buffer dout, SavedUnit& saved) {
    const int h = shape_.width;
    const int rows = saved.rows;
    const std::size_t r = static_cast<std::size_t>(rows);
    if (unit == 0) {  // no input gradient: W needs the output gradient
        saved.dout = std::move(dout);
        return {};
    }
    if (is_head(unit)) {  // saved.pre holds dlogits
        Buffer din(memory_, MemoryCategory::workspace, r * h, Fill::none);
        ops_.gemm(false, true, rows, h, shape_.classes, 1.0f, saved.pre.data(),
                  params + layout_.tensor_offset(unit, 0), 0.0f, din.data());
        return din;
    }
    const int f = layout_.hidden_local();
    // The pre-GELU gradient waits for W, so it is held like an activation.
    Buffer dpre(memory_, MemoryCategory::activations, r * f, Fill::none);
    ops_.gemm(false, true, rows, f, h, 1.0f, dout.data(), params + layout_.tensor_offset(unit, 2),
              0.0f, dpre.data());
    ops_.gelu_backward(saved.pre.data(), dpre.data(), dpre.data(), r * f);
    Buffer partial(memory_, MemoryCategory::workspace, r * h, Fill::none);
    ops_.gemm(false, true, rows, h, f, 1.0f, dpre.data(), params + layout_.tensor_offset(unit, 0),
              0.0f, partial.data());
    saved.pre.reset();
    saved.dpre = std::move(dpre);
    saved.dout = std::move(dout);
    return partial;
}

Buffer MlpExecutor::backward_input_b(int unit, Buffer reduced, SavedUnit& saved) {
    if (!is_block(unit)) return reduced;
    ops_.add(reduced.data(), saved.dout.data(), reduced.size());  // the residual path
    return reduced;
}

void MlpExecutor::backward_weight(int unit, float* grads, SavedUnit& saved) {
    auto grad = [&](int index) { return grads + layout_.tensor_offset(unit, index); };
    const int h = shape_.width;
    const int rows = saved.rows;
    // linear_backward without dx reads no weights: only x and dy.
    if (unit == 0) {
        ops_.linear_backward(saved.input.data(), nullptr, saved.dout.data(), rows, shape_.input_dim,
                             h, grad(0), grad(1), nullptr);
    } else if (is_head(unit)) {
        ops_.linear_backward(saved.input.data(), nullptr, saved.pre.data(), rows, h, shape_.classes,
                             grad(0), grad(1), nullptr);
    } else {
        const int f = layout_.hidden_local();
        ops_.linear_backward(saved.post.data(), nullptr, saved.dout.data(), rows, f, h, grad(2),
                             grad(3), nullptr);
        ops_.linear_backward(saved.input.data(), nullptr, saved.dpre.data(), rows, h, f, grad(0),
                             grad(1), nullptr);
    }
    saved = SavedUnit{};
}

Buffer MlpExecutor::forward(int unit, const float* params, Buffer input, int rows, SavedUnit& saved,
                            const int* labels, float grad_scale, double* loss_sum) {
    Buffer partial =
        forward_a(unit, params, std::move(input), rows, saved, labels, grad_scale, loss_sum);
    return forward_b(unit, params, std::move(partial), saved);
}

Buffer MlpExecutor::backward(int unit, const float* params, float* grads, Buffer dout,
                             SavedUnit& saved) {
    Buffer partial = backward_a(unit, params, grads, std::move(dout), saved);
    return backward_b(unit, std::move(partial), saved);
}

}  // namespace pd
