#include "strategies/context_parallel.h"

#include <numeric>

namespace pd {

struct ContextParallel::Rank {
    Device* device = nullptr;
    int r = 0;                      // this device's place in its ring (its context-parallel rank)
    int replica = 0;                // its data-parallel replica (a slice of the batch)
    Communicator* group = nullptr;  // its ring
    std::unique_ptr<ShardLayout> layout;
    std::unique_ptr<ModelExecutor> executor;
    Buffer params, grads, state;
    std::vector<SavedUnit> saved;  // per unit
    Buffer carry;                  // the residual stream (or its gradient) between units
    // Ring payloads of the unit in flight: ring[i] holds the block of device r - i.
    std::vector<Buffer> ring;
    Buffer own;  // backward: this device's payload once it came back round
    // Ulysses: each attention unit's head shards of q, k, v and its probabilities [samples,
    // heads / cp, s, s], kept from forward to backward; the all-to-all in flight.
    struct HeadShards {
        Buffer q, k, v, probs;
    };
    std::vector<HeadShards> heads;
    Buffer send, recv;
    DeviceScalar loss;
};

namespace {
// Ring messages: forward key/value blocks, backward blocks with their gradients.
constexpr std::uint32_t kForwardTag = 0x30000u;
constexpr std::uint32_t kBackwardTag = 0x31000u;
}  // namespace

std::vector<int> ContextParallel::token_positions(int seq_len, int devices, int rank,
                                                  bool balanced) {
    std::vector<int> pos;
    if (!balanced) {
        const int part = seq_len / devices;
        for (int t = 0; t < part; ++t) pos.push_back(rank * part + t);
        return pos;
    }
    const int chunk = seq_len / (2 * devices);
    for (int c : {rank, 2 * devices - 1 - rank})
        for (int t = 0; t < chunk; ++t) pos.push_back(c * chunk + t);
    return pos;
}

ContextParallel::ContextParallel(RunEnvironment& env) : env_(env), local_shape_(env.shape) {
    dp_ = std::max(1, env.config.mesh.dp);
    cp_ = env.config.devices / dp_;
    const int n = cp_;
    local_shape_.seq_len = env.shape.seq_len / n;
    std::vector<Device*> members;
    for (auto& d : env.devices) members.push_back(d.get());
    // Every device's gradients are a partial sum (its batch slice, its tokens): one all-reduce
    // over all of them gives the whole batch's. The rings are consecutive devices.
    comm_ = std::make_unique<Communicator>(env.transport, members, 1, env.dtype);
    for (int g = 0; g < dp_; ++g)
        rings_.push_back(std::make_unique<Communicator>(
            env.transport,
            std::vector<Device*>(members.begin() + g * cp_, members.begin() + (g + 1) * cp_),
            static_cast<std::uint32_t>(2 + g), env.dtype));
    for (int d = 0; d < env.config.devices; ++d) {
        const int r = d % cp_;
        auto rank = std::make_unique<Rank>();
        rank->device = members[static_cast<std::size_t>(d)];
        rank->r = r;
        rank->replica = d / cp_;
        rank->group = rings_[static_cast<std::size_t>(rank->replica)].get();
        rank->layout =
            std::make_unique<ShardLayout>(local_shape_, env.layout, 0, env.layout.units, 0, 1);
        rank->executor =
            std::make_unique<ModelExecutor>(local_shape_, *rank->layout, rank->device->memory());
        rank->executor->set_positions(
            token_positions(env.shape.seq_len, cp_, r, env.config.cp_load_balance));
        rank->saved.resize(static_cast<std::size_t>(env.layout.units));
        rank->heads.resize(static_cast<std::size_t>(env.layout.units));
        rank->loss = DeviceScalar(rank->device->ops());
        ranks_.push_back(std::move(rank));
    }
    if (env.config.cp_ulysses) {
        std::vector<std::vector<int>> positions;
        for (int r = 0; r < cp_; ++r)
            positions.push_back(
                token_positions(env.shape.seq_len, cp_, r, env.config.cp_load_balance));
        ulysses_ = std::make_unique<UlyssesExchange>(env.config.batch / dp_, env.shape.seq_len,
                                                     env.shape.width, std::move(positions));
    }
}

ContextParallel::~ContextParallel() = default;

void ContextParallel::enqueue_setup() {
    for (auto& rank : ranks_) {
        TraceEvent ev;
        ev.kind = EventKind::copy;
        ev.label = "initialise parameters";
        Rank* r = rank.get();
        rank->device->compute().launch(ev, [this, r] {
            MemoryTracker& mem = r->device->memory();
            const std::size_t total = env_.layout.total;
            r->params = Buffer(mem, MemoryCategory::parameters, total, Fill::zero);
            r->grads = Buffer(mem, MemoryCategory::gradients, total, Fill::zero);
            r->state =
                Buffer(mem, MemoryCategory::optimizer_state,
                       total * static_cast<std::size_t>(env_.optimizer.state_per_parameter()));
            env_.upload_parameters(*r->device, r->params.data(), env_.initial.data(), total,
                                   r->state.data());
        });
    }
}

void ContextParallel::enqueue_ring_pass(Rank& rank, int step, int i, bool backward) {
    Device& dev = *rank.device;
    Communicator* ring = rank.group;
    const int n = cp_;
    const int next = ring->device_of((rank.r + 1) % n);
    const int prev = ring->device_of((rank.r + n - 1) % n);
    Rank* rk = &rank;
    dev.comm().wait(dev.compute().record(), step);
    dev.comm().enqueue([ring, rk, &dev, next, prev, step, i, n, backward] {
        Buffer& out = rk->ring[static_cast<std::size_t>(i)];
        const std::string what = backward ? "k, v, dk, dv block " : "k, v block ";
        const std::uint32_t tag = backward ? kBackwardTag : kForwardTag;
        ring->send(dev.id(), next, out.data(), out.size(), step,
                   what + std::to_string((rk->r + n - i) % n), tag);
        Buffer in(dev.memory(), MemoryCategory::communication, out.size(), Fill::none);
        ring->recv(dev.id(), prev, in.data(), in.size(), step,
                   what + std::to_string((rk->r + n - i - 1) % n), false, tag);
        // Backward, compute waits for this pass, so the block sent can go; forward, compute
        // may still be reading it.
        if (backward) out.reset();
        if (i + 1 < n)
            rk->ring[static_cast<std::size_t>(i) + 1] = std::move(in);
        else
            rk->own = std::move(in);  // this device's block, back with every gradient
    });
}

TraceEvent ContextParallel::block_event(const Rank& rank, EventKind kind, int unit, int step, int i,
                                        std::vector<int>& kv_pos) const {
    const int source = (rank.r + cp_ - i) % cp_;
    const int source_device = rank.group->device_of(source);
    TraceEvent block = unit_event(kind, unit, env_.shape, step, 0);
    block.label = "attention: block of device " + std::to_string(source_device);
    block.peer = rank.device->id() == source_device ? -1 : source_device;
    kv_pos = token_positions(env_.shape.seq_len, cp_, source, env_.config.cp_load_balance);
    return block;
}

// Slots are sized once per unit: the comm stream fills slot i + 1 while compute reads slot i.
void ContextParallel::enqueue_ring_forward(Rank& rank, int unit, int step) {
    Device& dev = *rank.device;
    const int n = cp_;
    const int samples = env_.config.batch / dp_;
    Rank* rk = &rank;
    const std::size_t off = env_.layout.unit_begin(unit);
    SavedUnit& saved = rank.saved[static_cast<std::size_t>(unit)];
    TraceEvent ev = unit_event(EventKind::forward, unit, env_.shape, step, 0);
    ev.label = "attention: q, k, v";
    dev.compute().launch(ev, [rk, &saved, off, samples, unit, n] {
        rk->executor->ring_attention_begin(unit, rk->params.data() + off, std::move(rk->carry),
                                           samples, saved);
        rk->ring.clear();
        rk->ring.resize(static_cast<std::size_t>(n));
        rk->ring[0] = rk->executor->ring_payload(saved, false);
    });
    for (int i = 0; i < n; ++i) {
        // Block i + 1's transfer runs on the comm stream while compute works on block i.
        if (i + 1 < n) enqueue_ring_pass(rank, step, i, false);
        std::vector<int> kv_pos;
        const TraceEvent block = block_event(rank, EventKind::forward, unit, step, i, kv_pos);
        dev.compute().launch(block, [rk, &saved, kv_pos, i] {
            rk->executor->ring_attention_block(saved, rk->ring[static_cast<std::size_t>(i)],
                                               kv_pos.data());
        });
        if (i + 1 < n) dev.compute().wait(dev.comm().record(), step);  // block i + 1 is here
    }
    ev.label = "attention: output";
    dev.compute().launch(ev, [rk, &saved, off, unit] {
        rk->ring.clear();
        rk->carry = rk->executor->ring_attention_end(unit, rk->params.data() + off, saved);
    });
}

void ContextParallel::enqueue_ring_backward(Rank& rank, int unit, int step) {
    Device& dev = *rank.device;
    const int n = cp_;
    Rank* rk = &rank;
    const std::size_t off = env_.layout.unit_begin(unit);
    SavedUnit& saved = rank.saved[static_cast<std::size_t>(unit)];
    TraceEvent ev = unit_event(EventKind::backward, unit, env_.shape, step, 0);
    ev.label = "attention: output projection";
    dev.compute().launch(ev, [rk, &saved, off, unit, n] {
        rk->executor->ring_attention_backward_begin(
            unit, rk->params.data() + off, rk->grads.data() + off, std::move(rk->carry), saved);
        rk->ring.clear();
        rk->ring.resize(static_cast<std::size_t>(n));
        rk->ring[0] = rk->executor->ring_payload(saved, true);
    });
    // n blocks visit this device; after each, its payload (with the gradients added here)
    // moves on, and the n-th move brings this device's own block back, complete.
    for (int i = 0; i < n; ++i) {
        std::vector<int> kv_pos;
        const TraceEvent block = block_event(rank, EventKind::backward, unit, step, i, kv_pos);
        dev.compute().launch(block, [rk, &saved, kv_pos, i] {
            rk->executor->ring_attention_backward_block(
                saved, rk->ring[static_cast<std::size_t>(i)], kv_pos.data());
        });
        if (n == 1) break;
        enqueue_ring_pass(rank, step, i, true);
        dev.compute().wait(dev.comm().record(), step);
    }
    ev.label = "attention: q, k, v projections";
    dev.compute().launch(ev, [rk, &saved, off, unit, n] {
        const Buffer& own = n == 1 ? rk->ring.front() : rk->own;
        rk->carry = rk->executor->ring_attention_backward_end(unit, rk->params.data() + off,
                                                              rk->grads.data() + off, own, saved);
        rk->ring.clear();
        rk->own.reset();
    });
}

void ContextParallel::enqueue_ulysses_all_to_all(Rank& rank, int step, const std::string& label) {
    Device& dev = *rank.device;
    Communicator* ring = rank.group;
    Rank* rk = &rank;
    dev.comm().wait(dev.compute().record(), step);
    dev.comm().enqueue([ring, rk, &dev, step, label] {
        ring->all_to_all(dev.id(), rk->send.data(), rk->recv.data(), rk->send.size(), step, label);
    });
    dev.compute().wait(dev.comm().record(), step);
}

namespace {
// "heads 2-3 of 4" for the ring member r's head group.
std::string head_group(int r, int cp, int heads) {
    const int per = heads / cp;
    return per == 1 ? "head " + std::to_string(r) + " of " + std::to_string(heads)
                    : "heads " + std::to_string(r * per) + "-" + std::to_string(r * per + per - 1) +
                          " of " + std::to_string(heads);
}
}  // namespace

// What both Ulysses phases of one attention unit read: its rank, device, the exchange, the
// unit's saved state and head shards, and the shapes attention runs at.
struct ContextParallel::UlyssesUnit {
    Rank* rk;
    Device* dev;
    const UlyssesExchange* ex;
    SavedUnit* saved;
    Rank::HeadShards* hs;
    std::size_t off;  // the unit's parameters in the layout
    int samples, s, heads, head_dim;
};

ContextParallel::UlyssesUnit ContextParallel::ulysses_unit(Rank& rank, int unit) const {
    const auto u = static_cast<std::size_t>(unit);
    return {&rank,
            rank.device,
            ulysses_.get(),
            &rank.saved[u],
            &rank.heads[u],
            env_.layout.unit_begin(unit),
            env_.config.batch / dp_,
            env_.shape.seq_len,
            env_.shape.heads / cp_,
            env_.shape.head_dim()};
}

void ContextParallel::enqueue_ulysses_forward(Rank& rank, int unit, int step) {
    const UlyssesUnit u = ulysses_unit(rank, unit);
    Device& dev = *u.dev;
    TraceEvent ev = unit_event(EventKind::forward, unit, env_.shape, step, 0);
    ev.label = "attention: q, k, v";
    dev.compute().launch(ev, [u, unit] {
        u.rk->executor->sequence_shard_qkv(unit, u.rk->params.data() + u.off,
                                           std::move(u.rk->carry), u.samples, *u.saved);
        MemoryTracker& mem = u.dev->memory();
        u.rk->send = Buffer(mem, MemoryCategory::communication, u.ex->buffer_size(3), Fill::none);
        u.ex->pack_heads(u.dev->ops(), {u.saved->q.data(), u.saved->k.data(), u.saved->v.data()},
                         u.rk->send.data());
        for (Buffer* b : {&u.saved->q, &u.saved->k, &u.saved->v}) b->reset();  // heads go on
        u.rk->recv = Buffer(mem, MemoryCategory::communication, u.ex->buffer_size(3), Fill::none);
    });
    enqueue_ulysses_all_to_all(rank, step, "Ulysses all-to-all: q, k, v to head groups");
    ev.label = "attention: " + head_group(rank.r, cp_, env_.shape.heads) + ", every token";
    dev.compute().launch(ev, [u] {
        MemoryTracker& mem = u.dev->memory();
        Rank::HeadShards& hs = *u.hs;
        u.rk->send.reset();
        const std::size_t n = u.ex->head_group_size();
        for (Buffer* b : {&hs.q, &hs.k, &hs.v})
            *b = Buffer(mem, MemoryCategory::activations, n, Fill::none);
        u.ex->unpack_to_head_shards(u.dev->ops(), u.rk->recv.data(),
                                    {hs.q.data(), hs.k.data(), hs.v.data()});
        u.rk->recv.reset();
        hs.probs = Buffer(mem, MemoryCategory::activations,
                          static_cast<std::size_t>(u.samples) * static_cast<std::size_t>(u.heads) *
                              static_cast<std::size_t>(u.s) * static_cast<std::size_t>(u.s),
                          Fill::none);
        Buffer out(mem, MemoryCategory::workspace, n, Fill::none);
        u.dev->ops().attention_forward(hs.q.data(), hs.k.data(), hs.v.data(), u.samples, u.s,
                                       u.heads, u.head_dim, hs.probs.data(), out.data());
        u.rk->send = Buffer(mem, MemoryCategory::communication, u.ex->buffer_size(1), Fill::none);
        u.ex->pack_tokens(u.dev->ops(), {out.data()}, u.rk->send.data());
        u.rk->recv = Buffer(mem, MemoryCategory::communication, u.ex->buffer_size(1), Fill::none);
    });
    enqueue_ulysses_all_to_all(rank, step, "Ulysses all-to-all: output to tokens");
    ev.label = "attention: output";
    dev.compute().launch(ev, [u, unit] {
        u.rk->send.reset();
        u.saved->attn =
            Buffer(u.dev->memory(), MemoryCategory::activations, u.ex->shard_size(), Fill::none);
        u.ex->unpack_to_sequence_shards(u.dev->ops(), u.rk->recv.data(), {u.saved->attn.data()});
        u.rk->recv.reset();
        u.rk->carry =
            u.rk->executor->sequence_shard_output(unit, u.rk->params.data() + u.off, *u.saved);
    });
}

void ContextParallel::enqueue_ulysses_backward(Rank& rank, int unit, int step) {
    const UlyssesUnit u = ulysses_unit(rank, unit);
    Device& dev = *u.dev;
    TraceEvent ev = unit_event(EventKind::backward, unit, env_.shape, step, 0);
    ev.label = "attention: output projection";
    dev.compute().launch(ev, [u, unit] {
        u.rk->executor->sequence_shard_output_backward(unit, u.rk->params.data() + u.off,
                                                       u.rk->grads.data() + u.off,
                                                       std::move(u.rk->carry), *u.saved);
        MemoryTracker& mem = u.dev->memory();
        u.rk->send = Buffer(mem, MemoryCategory::communication, u.ex->buffer_size(1), Fill::none);
        u.ex->pack_heads(u.dev->ops(), {u.saved->dattn.data()}, u.rk->send.data());
        u.rk->recv = Buffer(mem, MemoryCategory::communication, u.ex->buffer_size(1), Fill::none);
    });
    enqueue_ulysses_all_to_all(rank, step, "Ulysses all-to-all: output gradient to head groups");
    ev.label = "attention: " + head_group(rank.r, cp_, env_.shape.heads) + ", every token";
    dev.compute().launch(ev, [u] {
        MemoryTracker& mem = u.dev->memory();
        Rank::HeadShards& hs = *u.hs;
        u.rk->send.reset();
        const std::size_t n = u.ex->head_group_size();
        Buffer dout(mem, MemoryCategory::workspace, n, Fill::none);
        u.ex->unpack_to_head_shards(u.dev->ops(), u.rk->recv.data(), {dout.data()});
        u.rk->recv.reset();
        Buffer dq(mem, MemoryCategory::workspace, n, Fill::none);
        Buffer dk(mem, MemoryCategory::workspace, n, Fill::none);
        Buffer dv(mem, MemoryCategory::workspace, n, Fill::none);
        u.dev->ops().attention_backward(hs.q.data(), hs.k.data(), hs.v.data(), hs.probs.data(),
                                        dout.data(), u.samples, u.s, u.heads, u.head_dim, dq.data(),
                                        dk.data(), dv.data());
        for (Buffer* b : {&hs.q, &hs.k, &hs.v, &hs.probs}) b->reset();
        u.rk->send = Buffer(mem, MemoryCategory::communication, u.ex->buffer_size(3), Fill::none);
        u.ex->pack_tokens(u.dev->ops(), {dq.data(), dk.data(), dv.data()}, u.rk->send.data());
        u.rk->recv = Buffer(mem, MemoryCategory::communication, u.ex->buffer_size(3), Fill::none);
    });
    enqueue_ulysses_all_to_all(rank, step, "Ulysses all-to-all: q, k, v gradients to tokens");
    ev.label = "attention: q, k, v projections";
    dev.compute().launch(ev, [u, unit] {
        u.rk->send.reset();
        const std::size_t n = u.ex->shard_size();
        Buffer g(u.dev->memory(), MemoryCategory::workspace, 3 * n, Fill::none);
        u.ex->unpack_to_sequence_shards(u.dev->ops(), u.rk->recv.data(),
                                        {g.data(), g.data() + n, g.data() + 2 * n});
        u.rk->recv.reset();
        u.rk->carry = u.rk->executor->sequence_shard_qkv_backward(
            unit, u.rk->params.data() + u.off, u.rk->grads.data() + u.off, g.data(), g.data() + n,
            g.data() + 2 * n, *u.saved);
    });
}

void ContextParallel::enqueue_step(int step) {
    const int n = static_cast<int>(ranks_.size());
    const int rows = env_.config.batch / dp_;
    const int units = env_.layout.units;
    const int s = env_.shape.seq_len;
    // The data loader gives every device its tokens of each sequence of its replica's slice.
    std::vector<std::shared_ptr<const HostBatch>> slices;
    for (int g = 0; g < dp_; ++g) slices.push_back(env_.load_batch(step, g * rows, rows));
    for (auto& rank_ptr : ranks_) {
        Rank& rank = *rank_ptr;
        Device& dev = *rank.device;
        const HostBatch* full = slices[static_cast<std::size_t>(rank.replica)].get();
        auto local = std::make_shared<HostBatch>();
        local->rows = rows;
        const std::vector<int>& pos = rank.executor->positions();
        const std::size_t in = static_cast<std::size_t>(env_.shape.input_dim);
        for (int b = 0; b < local->rows; ++b)
            for (int p : pos) {
                const std::size_t token = static_cast<std::size_t>(b) * s + p;
                local->x.insert(local->x.end(), full->x.begin() + token * in,
                                full->x.begin() + (token + 1) * in);
                local->labels.push_back(full->labels[token]);
            }
        Rank* rk = &rank;
        for (int unit = 0; unit < units; ++unit) {
            if (env_.shape.unit_kind(unit) == UnitKind::attention) {
                ulysses_ ? enqueue_ulysses_forward(rank, unit, step)
                         : enqueue_ring_forward(rank, unit, step);
                continue;
            }
            dev.compute().launch(unit_event(EventKind::forward, unit, env_.shape, step, 0),
                                 [this, rk, &dev, unit, local] {
                                     if (unit == 0) {
                                         dev.ops().fill_zero(rk->grads.data(), rk->grads.size());
                                         rk->loss.zero();
                                         rk->carry = rk->executor->upload_input(local->x);
                                     }
                                     const std::size_t off = env_.layout.unit_begin(unit);
                                     rk->carry = rk->executor->forward(
                                         unit, rk->params.data() + off, std::move(rk->carry),
                                         local->rows, rk->saved[static_cast<std::size_t>(unit)],
                                         local->labels.data(), env_.grad_scale(), rk->loss.get());
                                 });
        }
        for (int unit = units - 1; unit >= 0; --unit) {
            if (env_.shape.unit_kind(unit) == UnitKind::attention) {
                ulysses_ ? enqueue_ulysses_backward(rank, unit, step)
                         : enqueue_ring_backward(rank, unit, step);
                continue;
            }
            dev.compute().launch(
                unit_event(EventKind::backward, unit, env_.shape, step, 0), [this, rk, unit] {
                    const std::size_t off = env_.layout.unit_begin(unit);
                    rk->carry = rk->executor->backward(
                        unit, rk->params.data() + off, rk->grads.data() + off, std::move(rk->carry),
                        rk->saved[static_cast<std::size_t>(unit)], GradWrite::add);
                });
        }
        // Each device's gradients are sums over its tokens: the whole batch's is their sum.
        if (n > 1) {
            dev.comm().wait(dev.compute().record(), step);
            dev.comm().enqueue([this, rk, &dev, step] {
                comm_->all_reduce(dev.id(), rk->grads.data(), rk->grads.size(), step,
                                  "cp gradients");
            });
            dev.compute().wait(dev.comm().record(), step);
        }
        dev.compute().launch(optimizer_event(env_.optimizer, step), [this, rk, &dev, step] {
            dev.ops().optimizer_update(env_.optimizer, step + 1, rk->params.data(),
                                       rk->grads.data(), rk->state.data(), rk->params.size());
        });
    }
}

double ContextParallel::step_loss() const {
    double sum = 0.0;
    for (const auto& r : ranks_) sum += r->loss.read();
    return sum / env_.loss_count();
}

std::vector<float> ContextParallel::parameters() const {
    return ranks_.front()->params.to_host();
}

}  // namespace pd
