#include "strategies/expert_parallel.h"

#include <string>

namespace pd {

struct ExpertParallel::Rank {
    Device* device = nullptr;
    int group = 0;    // which group of ep devices it exchanges tokens with
    int ep_rank = 0;  // its place in that group: which experts it holds
    Communicator* exchange = nullptr;
    Communicator* same_experts = nullptr;  // the devices holding its experts (dp > 1)
    std::unique_ptr<ShardLayout> layout;
    std::unique_ptr<ModelExecutor> executor;
    Buffer params, grads, state;
    std::vector<SavedUnit> saved;  // per unit
    Buffer carry;                  // the residual stream (or its gradient) between units
    Buffer out, in;                // an all-to-all's send and receive buffers
    DeviceScalar loss;
    // Local ranges of the dense tensors and of the experts', merged where contiguous.
    std::vector<std::pair<std::size_t, std::size_t>> dense, expert;
};

namespace {

using Ranges = std::vector<std::pair<std::size_t, std::size_t>>;

Ranges merged(Ranges ranges) {
    Ranges out;
    for (const auto& r : ranges) {
        if (!out.empty() && out.back().second == r.first)
            out.back().second = r.second;
        else
            out.push_back(r);
    }
    return out;
}

bool is_expert_tensor(const std::string& name) {
    return name.find(".expert") != std::string::npos;
}

}  // namespace

ExpertParallel::ExpertParallel(RunEnvironment& env) : env_(env) {
    dp_ = std::max(1, env.config.mesh.dp);
    ep_ = env.config.devices / dp_;
    std::vector<Device*> members;
    for (auto& d : env.devices) members.push_back(d.get());
    all_ = std::make_unique<Communicator>(env.transport, members, 1, env.dtype);
    for (int g = 0; g < dp_; ++g)
        groups_.push_back(std::make_unique<Communicator>(
            env.transport,
            std::vector<Device*>(members.begin() + g * ep_, members.begin() + (g + 1) * ep_),
            static_cast<std::uint32_t>(2 + g), env.dtype));
    if (dp_ > 1)
        for (int j = 0; j < ep_; ++j) {
            std::vector<Device*> holders;
            for (int g = 0; g < dp_; ++g)
                holders.push_back(members[static_cast<std::size_t>(g * ep_ + j)]);
            experts_.push_back(std::make_unique<Communicator>(
                env.transport, holders, static_cast<std::uint32_t>(2 + dp_ + j), env.dtype));
        }
    for (int d = 0; d < env.config.devices; ++d) {
        auto rank = std::make_unique<Rank>();
        rank->device = members[static_cast<std::size_t>(d)];
        rank->group = d / ep_;
        rank->ep_rank = d % ep_;
        rank->exchange = groups_[static_cast<std::size_t>(rank->group)].get();
        if (dp_ > 1) rank->same_experts = experts_[static_cast<std::size_t>(rank->ep_rank)].get();
        rank->layout = std::make_unique<ShardLayout>(env.shape, env.layout, 0, env.layout.units, 0,
                                                     1, rank->ep_rank, ep_);
        rank->executor = std::make_unique<ModelExecutor>(
            env.shape, *rank->layout, rank->device->memory(), RecomputeMode::none, env.dtype, false,
            env.routing_of(d));
        rank->saved.resize(static_cast<std::size_t>(env.layout.units));
        rank->loss = DeviceScalar(rank->device->ops());
        rank->dense = merged(
            rank->layout->local_ranges([](const std::string& n) { return !is_expert_tensor(n); }));
        rank->expert = merged(rank->layout->local_ranges(is_expert_tensor));
        ranks_.push_back(std::move(rank));
    }
}

ExpertParallel::~ExpertParallel() = default;

void ExpertParallel::enqueue_setup() {
    for (auto& rank : ranks_) {
        TraceEvent ev;
        ev.kind = EventKind::copy;
        ev.label = "initialise parameters";
        Rank* r = rank.get();
        rank->device->compute().launch(ev, [this, r] {
            MemoryTracker& mem = r->device->memory();
            const std::size_t size = r->layout->size();
            r->params = Buffer(mem, MemoryCategory::parameters, size, Fill::zero);
            r->grads = Buffer(mem, MemoryCategory::gradients, size, Fill::zero);
            r->state =
                Buffer(mem, MemoryCategory::optimizer_state,
                       size * static_cast<std::size_t>(env_.optimizer.state_per_parameter()));
            std::vector<float> local(size);
            r->layout->scatter(env_.initial.data(), local.data());
            env_.upload_parameters(*r->device, r->params.data(), local.data(), size,
                                   r->state.data());
        });
    }
}

void ExpertParallel::enqueue_exchange(Rank& rank, MemoryCategory category, const std::string& label,
                                      int step) {
    Device& dev = *rank.device;
    Rank* rk = &rank;
    dev.comm().wait(dev.compute().record(), step);
    dev.comm().enqueue([rk, &dev, category, label, step] {
        Buffer in(dev.memory(), category, rk->out.size(), Fill::none);
        rk->exchange->all_to_all(dev.id(), rk->out.data(), in.data(), in.size(), step, label);
        rk->out.reset();
        rk->in = std::move(in);
    });
    dev.compute().wait(dev.comm().record(), step);
}

void ExpertParallel::enqueue_moe_forward(Rank& rank, int unit, int rows, int step) {
    Device& dev = *rank.device;
    Rank* rk = &rank;
    const std::size_t off = rank.layout->unit_offset(unit);
    SavedUnit* saved = &rank.saved[static_cast<std::size_t>(unit)];
    const std::string block = " block " + std::to_string(env_.shape.block_of(unit));
    const float grad_scale = env_.grad_scale();
    TraceEvent ev = unit_event(EventKind::forward, unit, env_.shape, step, 0);
    ev.label = "MoE: router";
    dev.compute().launch(ev, [rk, saved, off, unit, rows, grad_scale] {
        rk->out = rk->executor->moe_dispatch(unit, rk->params.data() + off, std::move(rk->carry),
                                             rows, grad_scale, *saved);
    });
    enqueue_exchange(rank, MemoryCategory::activations, "MoE dispatch" + block, step);
    ev.label = "MoE: experts";
    dev.compute().launch(ev, [rk, saved, off, unit] {
        rk->out = rk->executor->moe_experts_forward(unit, rk->params.data() + off,
                                                    std::move(rk->in), *saved);
    });
    enqueue_exchange(rank, MemoryCategory::activations, "MoE combine" + block, step);
    ev.label = "MoE: combine";
    dev.compute().launch(ev, [rk, saved, off, unit] {
        Buffer combined = rk->executor->moe_combine(std::move(rk->in), *saved);
        rk->carry =
            rk->executor->forward_b(unit, rk->params.data() + off, std::move(combined), *saved);
    });
}

void ExpertParallel::enqueue_moe_backward(Rank& rank, int unit, int step) {
    Device& dev = *rank.device;
    Rank* rk = &rank;
    const std::size_t off = rank.layout->unit_offset(unit);
    SavedUnit* saved = &rank.saved[static_cast<std::size_t>(unit)];
    const std::string block = " block " + std::to_string(env_.shape.block_of(unit));
    TraceEvent ev = unit_event(EventKind::backward, unit, env_.shape, step, 0);
    ev.label = "MoE: combine backward";
    dev.compute().launch(ev, [rk, saved, off, unit] {
        rk->out = rk->executor->moe_backward_dispatch(
            unit, rk->params.data() + off, rk->grads.data() + off, std::move(rk->carry), *saved);
    });
    enqueue_exchange(rank, MemoryCategory::workspace, "MoE combine gradient" + block, step);
    ev.label = "MoE: experts backward";
    dev.compute().launch(ev, [rk, saved, off, unit] {
        rk->out = rk->executor->moe_experts_backward(
            unit, rk->params.data() + off, rk->grads.data() + off, std::move(rk->in), *saved);
    });
    enqueue_exchange(rank, MemoryCategory::workspace, "MoE dispatch gradient" + block, step);
    ev.label = "MoE: router backward";
    dev.compute().launch(ev, [rk, saved, off, unit] {
        Buffer dnormed = rk->executor->moe_backward_combine(std::move(rk->in), *saved);
        rk->carry = rk->executor->backward_b(unit, rk->params.data() + off, rk->grads.data() + off,
                                             std::move(dnormed), *saved);
    });
}

// Dense gradients are partial sums over each device's tokens; an expert's over the tokens of
// its group that reached it. Summing each over the devices that hold it gives the batch's.
void ExpertParallel::enqueue_gradient_sync(Rank& rank, int step) {
    const bool dense = env_.config.devices > 1, experts = rank.same_experts != nullptr;
    if (!dense && !experts) return;
    Device& dev = *rank.device;
    Rank* rk = &rank;
    dev.comm().wait(dev.compute().record(), step);
    dev.comm().enqueue([this, rk, &dev, step, dense, experts] {
        if (dense)
            for (const auto& [b, e] : rk->dense)
                all_->all_reduce(dev.id(), rk->grads.data() + b, e - b, step, "dense gradients");
        if (experts)
            for (const auto& [b, e] : rk->expert)
                rk->same_experts->all_reduce(dev.id(), rk->grads.data() + b, e - b, step,
                                             "expert gradients");
    });
    dev.compute().wait(dev.comm().record(), step);
}

void ExpertParallel::enqueue_step(int step) {
    const int rows = env_.config.batch / env_.config.devices;
    const int units = env_.layout.units;
    for (auto& rank_ptr : ranks_) {
        Rank& rank = *rank_ptr;
        Device& dev = *rank.device;
        Rank* rk = &rank;
        auto batch = env_.load_batch(step, dev.id() * rows, rows);
        for (int unit = 0; unit < units; ++unit) {
            if (env_.shape.unit_kind(unit) == UnitKind::moe) {
                enqueue_moe_forward(rank, unit, rows, step);
                continue;
            }
            dev.compute().launch(unit_event(EventKind::forward, unit, env_.shape, step, 0),
                                 [this, rk, &dev, unit, batch] {
                                     if (unit == 0) {
                                         dev.ops().fill_zero(rk->grads.data(), rk->grads.size());
                                         rk->loss.zero();
                                         rk->carry = rk->executor->upload_input(batch->x);
                                     }
                                     const std::size_t off = rk->layout->unit_offset(unit);
                                     rk->carry = rk->executor->forward(
                                         unit, rk->params.data() + off, std::move(rk->carry),
                                         batch->rows, rk->saved[static_cast<std::size_t>(unit)],
                                         batch->labels.data(), env_.grad_scale(), rk->loss.get());
                                 });
        }
        for (int unit = units - 1; unit >= 0; --unit) {
            if (env_.shape.unit_kind(unit) == UnitKind::moe) {
                enqueue_moe_backward(rank, unit, step);
                continue;
            }
            dev.compute().launch(
                unit_event(EventKind::backward, unit, env_.shape, step, 0), [rk, unit] {
                    const std::size_t off = rk->layout->unit_offset(unit);
                    rk->carry = rk->executor->backward(
                        unit, rk->params.data() + off, rk->grads.data() + off, std::move(rk->carry),
                        rk->saved[static_cast<std::size_t>(unit)], GradWrite::add);
                });
        }
        enqueue_gradient_sync(rank, step);
        dev.compute().launch(optimizer_event(env_.optimizer, step), [this, rk, &dev, step] {
            dev.ops().optimizer_update(env_.optimizer, step + 1, rk->params.data(),
                                       rk->grads.data(), rk->state.data(), rk->params.size());
        });
    }
}

double ExpertParallel::step_loss() const {
    double sum = 0.0;
    for (const auto& r : ranks_) sum += r->loss.read();
    return sum / env_.loss_count();
}

std::vector<float> ExpertParallel::parameters() const {
    std::vector<float> full(env_.layout.total, 0.0f);
    for (const auto& r : ranks_)
        if (r->group == 0) r->layout->gather(r->params.to_host().data(), full.data());
    return full;
}

}  // namespace pd
