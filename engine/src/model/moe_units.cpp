// The mixture-of-experts unit (see pd/model.h): x + sum_e g_e · MLP_e(LN2(x)) over each
// token's kept top-k choices. Tokens reach their experts through a dispatch buffer of fixed
// shape [experts, seqs, capacity, h] (GShard's padded form), so expert parallelism only has
// to send each device its experts' contiguous part of it and bring the outputs back.
#include <vector>

#include "model/model_executor.h"
#include "model/unit_tensors.h"

namespace pd {

using namespace unit_tensors;

namespace {
constexpr std::size_t kRouteFields = 3;  // expert, slot (-1: dropped), gate
}

Buffer ModelExecutor::moe_dispatch(int unit, const float* params, Buffer input, int samples,
                                   float grad_scale, SavedUnit& saved) {
    auto param = [&](int index) { return params + layout_.tensor_offset(unit, index); };
    const int h = shape_.width, experts = shape_.experts, top_k = shape_.top_k;
    const int capacity = shape_.expert_capacity();
    const int rows = shape_.tokens(samples);
    const std::size_t r = static_cast<std::size_t>(rows), e = static_cast<std::size_t>(experts);
    saved.rows = rows;
    saved.grad_scale = grad_scale;
    saved.input = std::move(input);
    layer_norm(unit, params, saved, rows);

    Buffer logits = make(MemoryCategory::workspace, r * e);
    ops_.gemm(false, false, rows, experts, h, 1.0f, saved.normed.data(), param(router), 0.0f,
              logits.data());
    saved.router_probs = make(MemoryCategory::activations, r * e);
    saved.routes = Buffer(memory_, MemoryCategory::activations,
                          r * static_cast<std::size_t>(top_k) * kRouteFields, Fill::none);
    saved.fractions = make(MemoryCategory::activations, static_cast<std::size_t>(samples) * e);
    ops_.moe_route(logits.data(), samples, shape_.seq_len, experts, top_k, capacity,
                   static_cast<float>(shape_.aux_loss_weight), saved.router_probs.data(),
                   saved.routes.data(), saved.fractions.data(),
                   routing_ ? routing_->aux.get() : nullptr);
    logits.reset();

    if (routing_) {  // what the learner sees: tokens kept per expert and choices dropped
        std::vector<float> host(saved.routes.size());
        ops_.download(host.data(), saved.routes.data(), host.size());
        for (std::size_t i = 0; i < host.size(); i += kRouteFields) {
            ++routing_->assignments;
            if (host[i + 1] < 0)
                ++routing_->dropped;
            else
                ++routing_->tokens_per_expert[static_cast<std::size_t>(host[i])];
        }
    }

    // Slots no token took stay zero (their outputs are computed and never read).
    Buffer slots(memory_, MemoryCategory::activations,
                 e * static_cast<std::size_t>(samples) * static_cast<std::size_t>(capacity) *
                     static_cast<std::size_t>(h),
                 Fill::zero, dtype_);
    ops_.moe_dispatch(saved.normed.data(), saved.routes.data(), rows, top_k, h, slots.data());
    return slots;
}

// `received` is [sources, local experts, seqs, capacity, h]: each source device's slots for
// this device's experts, one chunk of seqs x capacity rows per (source, expert).
Buffer ModelExecutor::moe_experts_forward(int unit, const float* params, Buffer received,
                                          SavedUnit& saved) {
    const int h = shape_.width, f = shape_.hidden(), local = layout_.experts_local();
    const std::size_t chunk = static_cast<std::size_t>(saved.rows / shape_.seq_len) *
                              static_cast<std::size_t>(shape_.expert_capacity());
    const std::size_t all_rows = received.size() / static_cast<std::size_t>(h);
    const std::size_t hs = static_cast<std::size_t>(h), fs = static_cast<std::size_t>(f);
    saved.expert_in = std::move(received);
    saved.expert_pre = make(MemoryCategory::activations, all_rows * fs);
    saved.expert_post = make(MemoryCategory::activations, all_rows * fs);
    Buffer out = make(MemoryCategory::activations, all_rows * hs);
    for (std::size_t first = 0; first < all_rows; first += chunk) {
        const int le = static_cast<int>((first / chunk) % static_cast<std::size_t>(local));
        auto param = [&](int j) {
            return params + layout_.tensor_offset(unit, moe_expert0 + 4 * le + j);
        };
        const int m = static_cast<int>(chunk);
        ops_.linear_forward(saved.expert_in.data() + first * hs, param(expert_w1), param(expert_b1),
                            m, h, f, saved.expert_pre.data() + first * fs);
        ops_.gelu_forward(saved.expert_pre.data() + first * fs,
                          saved.expert_post.data() + first * fs, chunk * fs);
        ops_.linear_forward(saved.expert_post.data() + first * fs, param(expert_w2),
                            param(expert_b2), m, f, h, out.data() + first * hs);
    }
    stored(saved.expert_pre);
    stored(saved.expert_post);
    stored(out);
    return out;
}

Buffer ModelExecutor::moe_combine(Buffer returned, SavedUnit& saved) {
    const int h = shape_.width;
    Buffer out = make(MemoryCategory::activations,
                      static_cast<std::size_t>(saved.rows) * static_cast<std::size_t>(h));
    ops_.moe_combine(returned.data(), saved.routes.data(), saved.rows, shape_.top_k, h, out.data());
    stored(out);
    saved.expert_out = std::move(returned);  // the gates' gradients read it
    return out;
}

Buffer ModelExecutor::moe_backward_dispatch(int unit, const float* params, float* grads,
                                            Buffer dout, SavedUnit& saved) {
    const int h = shape_.width, experts = shape_.experts, top_k = shape_.top_k;
    const int rows = saved.rows, seqs = rows / shape_.seq_len;
    const std::size_t r = static_cast<std::size_t>(rows), e = static_cast<std::size_t>(experts);
    Buffer dslots(memory_, MemoryCategory::workspace, saved.expert_out.size(), Fill::zero, dtype_);
    Buffer dgate = make(MemoryCategory::workspace, r * static_cast<std::size_t>(top_k));
    ops_.moe_combine_backward(saved.expert_out.data(), saved.routes.data(), dout.data(), rows,
                              top_k, h, dslots.data(), dgate.data());
    saved.expert_out.reset();
    // The router: the gates' gradient plus the load-balancing loss's, whose weight per token
    // is the loss gradient's scale (the objective adds the mean over sequences of each one's).
    Buffer dlogits = make(MemoryCategory::workspace, r * e);
    const float aux_scale =
        static_cast<float>(shape_.aux_loss_weight) * static_cast<float>(experts) * saved.grad_scale;
    ops_.moe_router_backward(saved.router_probs.data(), saved.routes.data(), saved.fractions.data(),
                             dgate.data(), seqs, shape_.seq_len, experts, top_k, aux_scale,
                             dlogits.data());
    dgate.reset();
    float* grad_router = grads + layout_.tensor_offset(unit, router);
    ops_.gemm(true, false, h, experts, rows, 1.0f, saved.normed.data(), dlogits.data(), 1.0f,
              grad_router);
    stored(grad_router, static_cast<std::size_t>(h) * e);
    saved.dnormed = make(MemoryCategory::workspace, r * static_cast<std::size_t>(h));
    ops_.gemm(false, true, rows, h, experts, 1.0f, dlogits.data(),
              params + layout_.tensor_offset(unit, router), 0.0f, saved.dnormed.data());
    saved.dout = std::move(dout);  // the residual's, added after the LayerNorm's backward
    return dslots;
}

Buffer ModelExecutor::moe_experts_backward(int unit, const float* params, float* grads,
                                           Buffer dreceived, SavedUnit& saved) {
    const int h = shape_.width, f = shape_.hidden(), local = layout_.experts_local();
    const std::size_t chunk = static_cast<std::size_t>(saved.rows / shape_.seq_len) *
                              static_cast<std::size_t>(shape_.expert_capacity());
    const std::size_t all_rows = dreceived.size() / static_cast<std::size_t>(h);
    const std::size_t hs = static_cast<std::size_t>(h), fs = static_cast<std::size_t>(f);
    Buffer dpost = make(MemoryCategory::workspace, chunk * fs);
    Buffer din = make(MemoryCategory::workspace, all_rows * hs);
    for (std::size_t first = 0; first < all_rows; first += chunk) {
        const int le = static_cast<int>((first / chunk) % static_cast<std::size_t>(local));
        const int base = moe_expert0 + 4 * le;
        auto param = [&](int j) { return params + layout_.tensor_offset(unit, base + j); };
        auto grad = [&](int j) { return grads + layout_.tensor_offset(unit, base + j); };
        const int m = static_cast<int>(chunk);
        ops_.linear_backward(saved.expert_post.data() + first * fs, param(expert_w2),
                             dreceived.data() + first * hs, m, f, h, grad(expert_w2),
                             grad(expert_b2), dpost.data(), GradWrite::add);
        ops_.gelu_backward(saved.expert_pre.data() + first * fs, dpost.data(), dpost.data(),
                           chunk * fs);
        ops_.linear_backward(saved.expert_in.data() + first * hs, param(expert_w1), dpost.data(), m,
                             h, f, grad(expert_w1), grad(expert_b1), din.data() + first * hs,
                             GradWrite::add);
    }
    for (int le = 0; le < local; ++le) {
        const int base = moe_expert0 + 4 * le;
        auto grad = [&](int j) { return grads + layout_.tensor_offset(unit, base + j); };
        stored_linear_grads(grad(expert_w1), grad(expert_b1), h, f);
        stored_linear_grads(grad(expert_w2), grad(expert_b2), f, h);
    }
    stored(din);
    saved.expert_in.reset();
    saved.expert_pre.reset();
    saved.expert_post.reset();
    return din;
}

Buffer ModelExecutor::moe_backward_combine(Buffer dreturned, SavedUnit& saved) {
    ops_.moe_dispatch_backward(dreturned.data(), saved.routes.data(), saved.rows, shape_.top_k,
                               shape_.width, saved.dnormed.data());
    stored(saved.dnormed);
    saved.router_probs.reset();
    saved.routes.reset();
    saved.fractions.reset();
    return std::move(saved.dnormed);
}

}  // namespace pd
