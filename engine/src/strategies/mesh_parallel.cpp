#include "strategies/mesh_parallel.h"

#include <algorithm>

namespace pd {

// One global model chunk as held by one device.
struct MeshParallel::Chunk {
    int global = 0;  // 0..pp*v-1 in model order
    std::unique_ptr<ShardLayout> layout;
    std::unique_ptr<ModelExecutor> executor;
    Buffer params, grads, state;
    std::vector<std::vector<SavedUnit>> saved;  // [micro-batch][unit - first unit]
    std::vector<Buffer> carry;  // [micro-batch]: the tensor moving through the chunk
};

struct MeshParallel::Rank {
    Device* device = nullptr;
    DeviceMesh::Coord coord;
    std::vector<Chunk> chunks;  // local chunk j is global_chunk(schedule, j, stage, pp)
    DeviceScalar loss;          // the step's summed loss, on the device
};

namespace {
// Message streams between two stages: activations into chunk k, gradients into chunk k.
std::uint32_t activation_tag(int chunk) {
    return 0x10000u | static_cast<std::uint32_t>(chunk);
}
std::uint32_t gradient_tag(int chunk) {
    return 0x20000u | static_cast<std::uint32_t>(chunk);
}
}  // namespace

MeshParallel::MeshParallel(RunEnvironment& env) : env_(env) {
    const Mesh mesh = env.config.effective_mesh();
    dp_ = mesh.dp;
    pp_ = mesh.pp;
    tp_ = mesh.tp;
    v_ = pp_ > 1 ? env.config.effective_chunks() : 1;
    m_ = env.config.effective_microbatches();
    rows_per_mb_ = env.config.batch / dp_ / m_;
    sp_ = env.config.sequence_parallel && env.shape.transformer && tp_ > 1;
    std::vector<Device*> devices;
    for (auto& d : env.devices) devices.push_back(d.get());
    mesh_ = std::make_unique<DeviceMesh>(mesh, devices, env.transport, env.dtype);

    std::vector<std::size_t> weights;
    for (int u = 0; u < env.layout.units; ++u)
        weights.push_back(env.layout.unit_end(u) - env.layout.unit_begin(u));
    bounds_ = balanced_partition(weights, pp_ * v_);
    program_ = pipeline_program(env.config.schedule, pp_, m_, v_);

    for (Device* device : devices) {
        auto rank = std::make_unique<Rank>();
        rank->device = device;
        rank->coord = mesh_->coord(device->id());
        rank->loss = DeviceScalar(device->ops());
        for (int j = 0; j < v_; ++j) {
            Chunk chunk;
            chunk.global = global_chunk(env.config.schedule, j, rank->coord.pp, pp_);
            const int first = bounds_[static_cast<std::size_t>(chunk.global)];
            const int last = bounds_[static_cast<std::size_t>(chunk.global) + 1];
            chunk.layout = std::make_unique<ShardLayout>(env.shape, env.layout, first, last,
                                                         rank->coord.tp, tp_);
            chunk.executor = std::make_unique<ModelExecutor>(
                env.shape, *chunk.layout, device->memory(), env.config.recompute, env.dtype, sp_,
                env.routing_of(device->id()));
            chunk.saved.resize(static_cast<std::size_t>(m_));
            for (auto& per_mb : chunk.saved) per_mb.resize(static_cast<std::size_t>(last - first));
            chunk.carry.resize(static_cast<std::size_t>(m_));
            rank->chunks.push_back(std::move(chunk));
        }
        ranks_.push_back(std::move(rank));
    }
}

MeshParallel::~MeshParallel() = default;

void MeshParallel::enqueue_setup() {
    for (auto& rank : ranks_) {
        TraceEvent ev;
        ev.kind = EventKind::copy;
        ev.label = "initialise parameters";
        ev.stage = rank->coord.pp;
        Rank* r = rank.get();
        rank->device->compute().launch(ev, [this, r] {
            MemoryTracker& mem = r->device->memory();
            for (Chunk& c : r->chunks) {
                const std::size_t size = c.layout->size();
                c.params = Buffer(mem, MemoryCategory::parameters, size, Fill::zero, env_.dtype);
                c.grads = Buffer(mem, MemoryCategory::gradients, size, Fill::zero, env_.dtype);
                c.state =
                    Buffer(mem, MemoryCategory::optimizer_state,
                           size * static_cast<std::size_t>(env_.optimizer.state_per_parameter()));
                std::vector<float> local(size);
                c.layout->scatter(env_.initial.data(), local.data());
                env_.upload_parameters(*r->device, c.params.data(), local.data(), size,
                                       c.state.data());
            }
        });
    }
}

void MeshParallel::on_comm_between(Rank& rank, int step, std::function<void()> body) {
    Stream& compute = rank.device->compute();
    Stream& comm = rank.device->comm();
    comm.wait(compute.record(), step);
    comm.enqueue(std::move(body));
    compute.wait(comm.record(), step);
}

MeshParallel::Chunk* MeshParallel::local_chunk(Rank& rank, int global) {
    for (Chunk& c : rank.chunks)
        if (c.global == global) return &c;
    return nullptr;
}

void MeshParallel::enqueue_tp_sum(Rank& rank, Chunk& chunk, TraceEvent ev, TpPhase phase) {
    Device& dev = *rank.device;
    Communicator& tp = mesh_->tp_group(dev.id());
    Chunk* c = &chunk;
    const int mb = ev.microbatch, step = ev.step, unit = ev.layer;
    const bool forward = phase == TpPhase::forward;
    const std::string label = std::string(forward ? "tp forward " : "tp backward ") +
                              env_.shape.unit_name(unit) + " " +
                              std::to_string(env_.shape.block_of(unit));
    // Sequence parallelism: a reduce-scatter leaves each device the sum for its own tokens.
    const bool sp = sp_;
    on_comm_between(rank, step, [c, &dev, &tp, mb, step, label, sp] {
        Buffer& carry = c->carry[static_cast<std::size_t>(mb)];
        if (sp)
            tp.reduce_scatter(dev.id(), carry.data(), carry.size(), step, label);
        else
            tp.all_reduce(dev.id(), carry.data(), carry.size(), step, label);
    });
    ev.label = std::string(env_.shape.unit_name(unit)) +
               (sp ? " (after reduce-scatter)" : " (after all-reduce)");
    dev.compute().launch(ev, [c, mb, unit, phase, sp] {
        Buffer& carry = c->carry[static_cast<std::size_t>(mb)];
        SavedUnit& saved = c->saved[static_cast<std::size_t>(mb)]
                                   [static_cast<std::size_t>(unit - c->layout->unit_begin())];
        // The residual stream's shard is an activation (the next unit keeps it); the
        // gradient's is scratch.
        if (sp)
            carry = c->executor->sp_take_shard(carry, phase == TpPhase::forward
                                                          ? MemoryCategory::activations
                                                          : MemoryCategory::workspace);
        switch (phase) {
            case TpPhase::forward:
                carry = c->executor->forward_b(
                    unit, c->params.data() + c->layout->unit_offset(unit), std::move(carry), saved);
                break;
            case TpPhase::backward:
                carry = c->executor->backward_b(
                    unit, c->params.data() + c->layout->unit_offset(unit),
                    c->grads.data() + c->layout->unit_offset(unit), std::move(carry), saved);
                break;
            case TpPhase::input_grad:
                carry = c->executor->backward_input_b(unit, std::move(carry), saved);
                break;
        }
    });
}

void MeshParallel::enqueue_sp_gather(Rank& rank, Chunk& chunk, TraceEvent ev, bool forward) {
    Device& dev = *rank.device;
    Communicator& tp = mesh_->tp_group(dev.id());
    Chunk* c = &chunk;
    const int mb = ev.microbatch, step = ev.step, unit = ev.layer, rows = rows_per_mb_;
    const std::string what =
        std::string(env_.shape.unit_name(unit)) + " " + std::to_string(env_.shape.block_of(unit));
    auto saved_of = [c, mb, unit]() -> SavedUnit& {
        return c->saved[static_cast<std::size_t>(mb)]
                       [static_cast<std::size_t>(unit - c->layout->unit_begin())];
    };
    if (forward) {
        // The LayerNorm on this device's tokens, then gather everyone's output.
        ev.label = what.substr(0, what.find(' ')) + " LayerNorm";
        dev.compute().launch(ev, [c, mb, unit, rows, saved_of] {
            Buffer& carry = c->carry[static_cast<std::size_t>(mb)];
            carry =
                c->executor->sp_forward_norm(unit, c->params.data() + c->layout->unit_offset(unit),
                                             std::move(carry), rows, saved_of());
        });
        on_comm_between(rank, step, [c, &dev, &tp, mb, step, what] {
            Buffer& carry = c->carry[static_cast<std::size_t>(mb)];
            tp.all_gather(dev.id(), carry.data(), carry.size(), step,
                          "sp forward " + what + " LayerNorm output");
        });
        return;
    }
    // Backward: the output gradient and (again) the LayerNorm output, gathered.
    on_comm_between(rank, step, [c, &dev, &tp, mb, step, what, saved_of] {
        Buffer& carry = c->carry[static_cast<std::size_t>(mb)];
        SavedUnit& saved = saved_of();
        carry = c->executor->sp_backward_prepare(std::move(carry), saved);
        tp.all_gather(dev.id(), carry.data(), carry.size(), step,
                      "sp backward " + what + " output gradient");
        tp.all_gather(dev.id(), saved.gathered.data(), saved.gathered.size(), step,
                      "sp backward " + what + " LayerNorm output");
    });
}

void MeshParallel::enqueue_sp_gradient_sum(Rank& rank, int step) {
    Device& dev = *rank.device;
    Communicator& tp = mesh_->tp_group(dev.id());
    const std::vector<std::string> suffixes = {".ln1.g", ".ln1.b", ".ln2.g", ".ln2.b"};
    on_comm_between(rank, step, [this, &rank, &dev, &tp, step] {
        for (Chunk& c : rank.chunks) {
            // Parameters used on this device's tokens only: the LayerNorms, the input
            // projection and the head. Packed into one message, summed, unpacked.
            const auto ranges = c.layout->local_ranges([](const std::string& name) {
                return name.starts_with("input.") || name.starts_with("head.") ||
                       name.find(".ln") != std::string::npos;
            });
            std::size_t count = 0;
            for (const auto& [begin, end] : ranges) count += end - begin;
            if (count == 0) continue;
            Buffer packed(dev.memory(), MemoryCategory::communication, count, Fill::none,
                          env_.dtype);
            std::size_t at = 0;
            for (const auto& [begin, end] : ranges) {
                dev.ops().copy(packed.data() + at, c.grads.data() + begin, end - begin);
                at += end - begin;
            }
            tp.all_reduce(
                dev.id(), packed.data(), count, step,
                "sp LayerNorm, input and head gradients chunk " + std::to_string(c.global));
            at = 0;
            for (const auto& [begin, end] : ranges) {
                dev.ops().copy(c.grads.data() + begin, packed.data() + at, end - begin);
                at += end - begin;
            }
        }
    });
}

// Activations flow forward into chunk k under activation_tag(k); their gradients flow back
// into chunk k under gradient_tag(k), so each stream stays in order between two devices.
void MeshParallel::enqueue_receive(Rank& rank, Chunk& chunk, int step, int mb, int from_chunk,
                                   bool activations) {
    Device& dev = *rank.device;
    Communicator& pp = mesh_->pp_group(dev.id());
    const int from = mesh_->device(
        {rank.coord.dp, stage_of_chunk(env_.config.schedule, from_chunk, pp_), rank.coord.tp});
    // Under sequence parallelism the residual stream between stages is this device's tokens.
    const int tokens = env_.shape.tokens(rows_per_mb_);
    const std::size_t count = static_cast<std::size_t>(sp_ ? tokens / tp_ : tokens) *
                              static_cast<std::size_t>(env_.shape.width);
    Chunk* c = &chunk;
    dev.comm().enqueue([c, &dev, &pp, from, count, step, mb, activations] {
        Buffer& carry = c->carry[static_cast<std::size_t>(mb)];
        // A received activation is kept for backward; a received gradient is scratch.
        carry = Buffer(dev.memory(),
                       activations ? MemoryCategory::activations : MemoryCategory::workspace, count,
                       Fill::none, c->executor->dtype());  // the receive writes it whole
        pp.recv(dev.id(), from, carry.data(), count, step,
                (activations ? "activations mb" : "gradients mb") + std::to_string(mb), false,
                activations ? activation_tag(c->global) : gradient_tag(c->global));
    });
    dev.compute().wait(dev.comm().record(), step);
}

void MeshParallel::enqueue_send(Rank& rank, Chunk& chunk, int step, int mb, int to_chunk,
                                bool activations) {
    Device& dev = *rank.device;
    Communicator& pp = mesh_->pp_group(dev.id());
    const int to = mesh_->device(
        {rank.coord.dp, stage_of_chunk(env_.config.schedule, to_chunk, pp_), rank.coord.tp});
    Chunk* c = &chunk;
    dev.comm().wait(dev.compute().record(), step);
    dev.comm().enqueue([c, &dev, &pp, to, to_chunk, step, mb, activations] {
        Buffer out = std::move(c->carry[static_cast<std::size_t>(mb)]);  // freed once sent
        pp.send(dev.id(), to, out.data(), out.size(), step,
                (activations ? "activations mb" : "gradients mb") + std::to_string(mb),
                activations ? activation_tag(to_chunk) : gradient_tag(to_chunk));
    });
}

void MeshParallel::enqueue_forward(Rank& rank, Chunk& chunk, int step, int mb) {
    Device& dev = *rank.device;
    const int first = chunk.layout->unit_begin();
    const int last = chunk.layout->unit_end();
    const int stage = rank.coord.pp;
    const int rows = rows_per_mb_;
    const int sample0 = rank.coord.dp * (env_.config.batch / dp_) + mb * rows;
    Chunk* c = &chunk;
    // The data loader feeds the first chunk (inputs) and the last (labels).
    std::shared_ptr<const HostBatch> batch;
    if (first == 0 || last == env_.layout.units) batch = env_.load_batch(step, sample0, rows);

    // The previous chunk's output arrives on the comm stream, unless this device holds that
    // chunk too (ZB-V's turn), which handed it over already.
    if (chunk.global > 0 && !local_chunk(rank, chunk.global - 1))
        enqueue_receive(rank, chunk, step, mb, chunk.global - 1, true);
    for (int unit = first; unit < last; ++unit) {
        const TraceEvent ev = unit_event(EventKind::forward, unit, env_.shape, step, mb, stage);
        const bool head = unit == env_.layout.units - 1;
        const bool sharded = tp_ > 1 && unit > 0 && !head;
        if (sharded && sp_) enqueue_sp_gather(rank, chunk, ev, true);
        dev.compute().launch(ev, [this, c, &rank, unit, first, mb, rows, batch, sharded] {
            Buffer& carry = c->carry[static_cast<std::size_t>(mb)];
            if (unit == 0) carry = c->executor->upload_input(batch->x);
            // Only one tensor-parallel rank counts the (replicated) loss; under sequence
            // parallelism each counts its own tokens'.
            double* loss = rank.coord.tp == 0 || sp_ ? rank.loss.get() : nullptr;
            const float* p = c->params.data() + c->layout->unit_offset(unit);
            SavedUnit& saved =
                c->saved[static_cast<std::size_t>(mb)][static_cast<std::size_t>(unit - first)];
            carry = c->executor->forward_a(unit, p, std::move(carry), rows, saved,
                                           batch ? batch->labels.data() : nullptr,
                                           env_.grad_scale(), loss);
            if (!sharded) carry = c->executor->forward_b(unit, p, std::move(carry), saved);
        });
        // Megatron's g: sum the row-parallel partial outputs over the tensor-parallel group.
        if (sharded) enqueue_tp_sum(rank, chunk, ev, TpPhase::forward);
    }
    if (chunk.global < pp_ * v_ - 1) {  // hand the output to the next chunk
        if (Chunk* next = local_chunk(rank, chunk.global + 1))
            dev.compute().enqueue([c, next, mb] {
                next->carry[static_cast<std::size_t>(mb)] =
                    std::move(c->carry[static_cast<std::size_t>(mb)]);
            });
        else
            enqueue_send(rank, chunk, step, mb, chunk.global + 1, true);
    }
}

void MeshParallel::enqueue_backward(Rank& rank, Chunk& chunk, int step, int mb, PipelinePass pass) {
    Device& dev = *rank.device;
    const int first = chunk.layout->unit_begin();
    const int last = chunk.layout->unit_end();
    const int stage = rank.coord.pp;
    const bool input_only = pass == PipelinePass::input_grad;
    Chunk* c = &chunk;

    // The next chunk's input gradient arrives (or was handed over on this device).
    if (chunk.global < pp_ * v_ - 1 && !local_chunk(rank, chunk.global + 1))
        enqueue_receive(rank, chunk, step, mb, chunk.global + 1, false);
    for (int unit = last - 1; unit >= first; --unit) {
        const bool head = unit == env_.layout.units - 1;
        const bool sharded = tp_ > 1 && unit > 0 && !head;
        if (c->executor->needs_recompute(unit)) {
            // Its own event: the forward work recomputation adds to every backward.
            dev.compute().launch(
                unit_event(EventKind::recompute, unit, env_.shape, step, mb, stage),
                [c, unit, first, mb] {
                    c->executor->recompute(unit, c->params.data() + c->layout->unit_offset(unit),
                                           c->saved[static_cast<std::size_t>(mb)]
                                                   [static_cast<std::size_t>(unit - first)]);
                });
        }
        TraceEvent ev = unit_event(EventKind::backward, unit, env_.shape, step, mb, stage);
        if (input_only) ev.label += " (B: input gradient)";
        if (sharded && sp_) enqueue_sp_gather(rank, chunk, ev, false);
        dev.compute().launch(ev, [c, unit, first, mb, sharded, input_only] {
            Buffer& carry = c->carry[static_cast<std::size_t>(mb)];
            SavedUnit& saved =
                c->saved[static_cast<std::size_t>(mb)][static_cast<std::size_t>(unit - first)];
            const std::size_t off = c->layout->unit_offset(unit);
            if (input_only) {
                carry = c->executor->backward_input_a(unit, c->params.data() + off,
                                                      std::move(carry), saved);
                if (!sharded) carry = c->executor->backward_input_b(unit, std::move(carry), saved);
                return;
            }
            carry = c->executor->backward_a(unit, c->params.data() + off, c->grads.data() + off,
                                            std::move(carry), saved, GradWrite::add);
            if (!sharded)
                carry = c->executor->backward_b(unit, c->params.data() + off, c->grads.data() + off,
                                                std::move(carry), saved);
        });
        // Megatron's f in backward: sum the column-parallel input gradients.
        if (sharded)
            enqueue_tp_sum(rank, chunk, ev, input_only ? TpPhase::input_grad : TpPhase::backward);
    }
    if (chunk.global > 0) {  // the input gradient goes back to the previous chunk
        if (Chunk* previous = local_chunk(rank, chunk.global - 1))
            dev.compute().enqueue([c, previous, mb] {
                previous->carry[static_cast<std::size_t>(mb)] =
                    std::move(c->carry[static_cast<std::size_t>(mb)]);
            });
        else
            enqueue_send(rank, chunk, step, mb, chunk.global - 1, false);
    }
}

void MeshParallel::enqueue_weight_grad(Rank& rank, Chunk& chunk, int step, int mb) {
    Device& dev = *rank.device;
    const int first = chunk.layout->unit_begin();
    Chunk* c = &chunk;
    for (int unit = chunk.layout->unit_end() - 1; unit >= first; --unit) {
        dev.compute().launch(
            unit_event(EventKind::backward_weight, unit, env_.shape, step, mb, rank.coord.pp),
            [c, unit, first, mb] {
                c->executor->backward_weight(
                    unit, c->grads.data() + c->layout->unit_offset(unit),
                    c->saved[static_cast<std::size_t>(mb)][static_cast<std::size_t>(unit - first)]);
            });
    }
}

void MeshParallel::enqueue_step(int step) {
    for (auto& rank_ptr : ranks_) {
        Rank& rank = *rank_ptr;
        Device& dev = *rank.device;
        dev.compute().enqueue([&rank, &dev] {
            rank.loss.zero();
            for (Chunk& c : rank.chunks) dev.ops().fill_zero(c.grads.data(), c.grads.size());
        });
        for (const PipelineOp& op : program_[static_cast<std::size_t>(rank.coord.pp)]) {
            Chunk& chunk = rank.chunks[static_cast<std::size_t>(op.chunk)];
            if (op.pass == PipelinePass::forward)
                enqueue_forward(rank, chunk, step, op.microbatch);
            else if (op.pass == PipelinePass::weight_grad)
                enqueue_weight_grad(rank, chunk, step, op.microbatch);
            else
                enqueue_backward(rank, chunk, step, op.microbatch, op.pass);
        }
        if (sp_) enqueue_sp_gradient_sum(rank, step);
        if (dp_ > 1) {
            // Replicas agree on the summed gradient of the whole global batch.
            Communicator& dp = mesh_->dp_group(dev.id());
            on_comm_between(rank, step, [&rank, &dp, &dev, step] {
                for (Chunk& c : rank.chunks)
                    dp.all_reduce(dev.id(), c.grads.data(), c.grads.size(), step,
                                  "dp gradients chunk " + std::to_string(c.global));
            });
        }
        TraceEvent ev = optimizer_event(env_.optimizer, step);
        ev.stage = rank.coord.pp;
        dev.compute().launch(ev, [this, &rank, &dev, step] {
            for (Chunk& c : rank.chunks)
                dev.ops().optimizer_update(env_.optimizer, step + 1, c.params.data(),
                                           c.grads.data(), c.state.data(), c.params.size());
        });
    }
}

double MeshParallel::step_loss() const {
    double sum = 0.0;
    for (const auto& r : ranks_) sum += r->loss.read();
    return sum / env_.loss_count();
}

std::vector<float> MeshParallel::parameters() const {
    std::vector<float> full(env_.layout.total, 0.0f);
    for (const auto& r : ranks_) {
        if (r->coord.dp != 0) continue;
        for (const Chunk& c : r->chunks) c.layout->gather(c.params.to_host().data(), full.data());
    }
    return full;
}

std::vector<float> MeshParallel::master_parameters() const {
    if (!env_.optimizer.master_weights) return {};
    std::vector<float> full(env_.layout.total, 0.0f);
    for (const auto& r : ranks_) {
        if (r->coord.dp != 0) continue;
        for (const Chunk& c : r->chunks) {
            std::vector<float> state = c.state.to_host();
            c.layout->gather(env_.optimizer.master(state.data(), c.layout->size()), full.data());
        }
    }
    return full;
}

}  // namespace pd
