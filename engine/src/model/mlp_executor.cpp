#include "model/mlp_executor.h"

#include "cpu/kernels.h"
#include "pd/error.h"

namespace pd {

MlpExecutor::MlpExecutor(const ModelShape& shape, const ShardLayout& layout, MemoryTracker& memory)
    : shape_(shape), layout_(layout), memory_(memory), units_(shape.layers + 2) {
    cpu::init_blas_threads();
}

Buffer MlpExecutor::forward_a(int unit, const float* params, Buffer input, int rows,
                              SavedUnit& saved, const int* labels, float grad_scale,
                              double& loss_sum) {
    auto param = [&](int index) { return params + layout_.tensor_offset(unit, index); };
    const int h = shape_.width;
    const std::size_t r = static_cast<std::size_t>(rows);
    saved.rows = rows;

    if (unit == 0) {
        Buffer out(memory_, MemoryCategory::activations, r * h);
        cpu::linear_forward(input.data(), param(0), param(1), rows, shape_.input_dim, h,
                            out.data());
        saved.input = std::move(input);
        return out;
    }
    if (is_head(unit)) {
        Buffer logits(memory_, MemoryCategory::workspace, r * shape_.classes);
        cpu::linear_forward(input.data(), param(0), param(1), rows, h, shape_.classes,
                            logits.data());
        Buffer dlogits(memory_, MemoryCategory::activations, r * shape_.classes);
        loss_sum += cpu::softmax_cross_entropy(logits.data(), labels, rows, shape_.classes,
                                               grad_scale, dlogits.data());
        saved.input = std::move(input);
        saved.pre = std::move(dlogits);
        return {};
    }
    const int f = layout_.hidden_local();
    Buffer pre(memory_, MemoryCategory::activations, r * f);
    cpu::linear_forward(input.data(), param(0), param(1), rows, h, f, pre.data());
    Buffer post(memory_, MemoryCategory::activations, r * f);
    cpu::gelu_forward(pre.data(), post.data(), r * f);
    Buffer partial(memory_, MemoryCategory::activations, r * h);
    cpu::gemm(false, false, rows, h, f, 1.0f, post.data(), param(2), 0.0f, partial.data());
    saved.input = std::move(input);
    saved.pre = std::move(pre);
    saved.post = std::move(post);
    return partial;
}

Buffer MlpExecutor::forward_b(int unit, const float* params, Buffer reduced, SavedUnit& saved) {
    if (!is_block(unit)) return reduced;
    const float* b2 = params + layout_.tensor_offset(unit, 3);
    const int h = shape_.width;
    float* out = reduced.data();
    const float* in = saved.input.data();
    for (int row = 0; row < saved.rows; ++row)
        for (int j = 0; j < h; ++j) {
            const std::size_t i = static_cast<std::size_t>(row) * h + j;
            out[i] += b2[j] + in[i];  // bias once after the reduction, then the residual
        }
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
        cpu::linear_backward(saved.input.data(), param(0), dout.data(), rows, shape_.input_dim, h,
                             grad(0), grad(1), nullptr);
        saved = SavedUnit{};
        return {};
    }
    if (is_head(unit)) {
        Buffer din(memory_, MemoryCategory::workspace, r * h);
        cpu::linear_backward(saved.input.data(), param(0), saved.pre.data(), rows, h,
                             shape_.classes, grad(0), grad(1), din.data());
        saved = SavedUnit{};
        return din;
    }
    const int f = layout_.hidden_local();
    Buffer dpost(memory_, MemoryCategory::workspace, r * f);
    // Second linear (its bias is replicated: every shard sees the whole output gradient).
    cpu::linear_backward(saved.post.data(), param(2), dout.data(), rows, f, h, grad(2), grad(3),
                         dpost.data());
    cpu::gelu_backward(saved.pre.data(), dpost.data(), dpost.data(), r * f);
    Buffer partial(memory_, MemoryCategory::workspace, r * h);
    cpu::linear_backward(saved.input.data(), param(0), dpost.data(), rows, h, f, grad(0), grad(1),
                         partial.data());
    saved.input.reset();
    saved.pre.reset();
    saved.post.reset();
    saved.dout = std::move(dout);
    return partial;
}

Buffer MlpExecutor::backward_b(int unit, Buffer reduced, SavedUnit& saved) {
    if (!is_block(unit)) return reduced;
    cpu::add_inplace(reduced.data(), saved.dout.data(), reduced.size());  // the residual path
    saved = SavedUnit{};
    return reduced;
}

Buffer MlpExecutor::forward(int unit, const float* params, Buffer input, int rows, SavedUnit& saved,
                            const int* labels, float grad_scale, double& loss_sum) {
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
