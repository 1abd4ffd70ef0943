#include "model/mlp_executor.h"

#include "cpu/kernels.h"
#include "pd/error.h"

namespace pd {

MlpExecutor::MlpExecutor(const ModelShape& shape, const ParamLayout& layout, MemoryTracker& memory)
    : shape_(shape), layout_(layout), memory_(memory) {
    cpu::init_blas_threads();
}

const TensorSpec& MlpExecutor::tensor(int unit, int index) const {
    int seen = 0;
    for (const auto& t : layout_.tensors) {
        if (t.unit != unit) continue;
        if (seen++ == index) return t;
    }
    throw Error("unit " + std::to_string(unit) + " has no tensor " + std::to_string(index),
                __FILE__, __LINE__);
}

Buffer MlpExecutor::forward(int unit, const float* params, Buffer input, int rows, SavedUnit& saved,
                            const int* labels, float grad_scale, double& loss_sum) {
    const std::size_t base = layout_.unit_begin(unit);
    auto param = [&](int index) { return params + (tensor(unit, index).offset - base); };
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
    if (unit == layout_.units - 1) {
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
    const int f = shape_.hidden();
    Buffer pre(memory_, MemoryCategory::activations, r * f);
    cpu::linear_forward(input.data(), param(0), param(1), rows, h, f, pre.data());
    Buffer post(memory_, MemoryCategory::activations, r * f);
    cpu::gelu_forward(pre.data(), post.data(), r * f);
    Buffer out(memory_, MemoryCategory::activations, r * h);
    cpu::linear_forward(post.data(), param(2), param(3), rows, f, h, out.data());
    cpu::add_inplace(out.data(), input.data(), r * h);  // residual
    saved.input = std::move(input);
    saved.pre = std::move(pre);
    saved.post = std::move(post);
    return out;
}

Buffer MlpExecutor::backward(int unit, const float* params, float* grads, Buffer dout,
                             SavedUnit& saved) {
    const std::size_t base = layout_.unit_begin(unit);
    auto param = [&](int index) { return params + (tensor(unit, index).offset - base); };
    auto grad = [&](int index) { return grads + (tensor(unit, index).offset - base); };
    const int h = shape_.width;
    const int rows = saved.rows;
    const std::size_t r = static_cast<std::size_t>(rows);
    Buffer din;

    if (unit == 0) {
        cpu::linear_backward(saved.input.data(), param(0), dout.data(), rows, shape_.input_dim, h,
                             grad(0), grad(1), nullptr);
    } else if (unit == layout_.units - 1) {
        din = Buffer(memory_, MemoryCategory::workspace, r * h);
        cpu::linear_backward(saved.input.data(), param(0), saved.pre.data(), rows, h,
                             shape_.classes, grad(0), grad(1), din.data());
    } else {
        const int f = shape_.hidden();
        Buffer dpost(memory_, MemoryCategory::workspace, r * f);
        cpu::linear_backward(saved.post.data(), param(2), dout.data(), rows, f, h, grad(2), grad(3),
                             dpost.data());
        cpu::gelu_backward(saved.pre.data(), dpost.data(), dpost.data(), r * f);
        din = Buffer(memory_, MemoryCategory::workspace, r * h);
        cpu::linear_backward(saved.input.data(), param(0), dpost.data(), rows, h, f, grad(0),
                             grad(1), din.data());
        cpu::add_inplace(din.data(), dout.data(), r * h);  // the residual's gradient
    }
    saved = SavedUnit{};
    return din;
}

}  // namespace pd
