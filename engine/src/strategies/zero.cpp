#include "strategies/zero.h"

#include <algorithm>

#include "model/model_executor.h"
#include "model/weight_quantization.h"

namespace pd {

struct Zero::Rank {
    int r = 0;                              // index within its shard group (the chunk it owns)
    int g = 0;                              // index among all devices (its slice of the batch)
    Communicator* shard = nullptr;          // the devices it shards with
    Communicator* across = nullptr;         // hybrid sharding: the same shard on the other nodes
    Communicator* fp32_shard = nullptr;     // fp32_reduce: the shard group's fp32 reductions
    Communicator* int8_shard = nullptr;     // qwZ, qgZ: the shard group moving int8
    Communicator* reshard_group = nullptr;  // reshard_to: the devices its backward gathers from
    int group_rank = 0;
    std::vector<Buffer> secondary;  // reshard_to: each unit's 1/k slice kept after forward
    Device* device = nullptr;
    std::unique_ptr<Replica> replica;  // zero1/2: full parameters (and gradients in backward)
    Buffer shard_params;               // zero3
    Buffer shard_grads;                // zero2, zero3
    Buffer state;                      // every level: the owned chunks' optimizer state
    // offload_optimizer (ZeRO-Offload), in host memory with `state`: the owned chunks'
    // parameters (the run's dtype; fp32 runs' fp32 copy) and their reduced gradients (fp32).
    // ZeRO-Infinity: `state` on NVMe (offload_optimizer nvme); `host_params` the only copy of
    // the shard (offload_param), in host memory or on NVMe.
    Buffer host_params;
    Buffer host_grads;
    std::vector<Buffer> param_stage;  // offload_param: each unit's chunk, just copied up
    std::size_t shard_size = 0;
    // zero3's working set: one unit's gathered parameters and gradients at a time.
    std::unique_ptr<ShardLayout> layout;
    std::unique_ptr<ModelExecutor> executor;
    std::vector<Buffer> gathered;
    std::vector<Buffer> unit_grads;
    std::vector<SavedUnit> saved;
    Buffer carry;
    DeviceScalar loss;  // zero3: the step's summed loss, on the device
};

Zero::Zero(RunEnvironment& env, int level)
    : env_(env),
      level_(level),
      replicas_(env.config.hybrid_shard
                    ? std::max(1, env.config.cluster.node_count(env.config.devices))
                    : 1),
      n_(env.config.devices / replicas_),
      shard_dtype_(level == 3 && env.config.fp32_reduce ? DType::fp32 : env.dtype) {
    if (level_ == 3) {
        // One bucket per unit: each is gathered before, and reduce-scattered after, its use.
        for (int u = 0; u < env.layout.units; ++u)
            buckets_.push_back({env.layout.unit_begin(u), env.layout.unit_end(u), u});
    } else {
        buckets_ = make_grad_buckets(env.layout, env.config.bucket_bytes, env.dtype);
    }
    std::vector<Device*> members;
    for (auto& d : env.devices) members.push_back(d.get());
    // Shard groups: consecutive devices (one node each under hybrid sharding, else all);
    // replica groups: the same position in every shard group. Each axis's groups run at once.
    std::vector<std::vector<int>> shard_ids(static_cast<std::size_t>(replicas_)),
        across_ids(static_cast<std::size_t>(n_));
    for (int i = 0; i < replicas_; ++i) {
        std::vector<Device*> group(members.begin() + i * n_, members.begin() + (i + 1) * n_);
        for (Device* d : group) shard_ids[static_cast<std::size_t>(i)].push_back(d->id());
        shards_.push_back(std::make_unique<Communicator>(
            env.transport, group, 3 + static_cast<std::uint32_t>(i), env.dtype));
        if (shard_dtype_ != env.dtype)
            fp32_shards_.push_back(std::make_unique<Communicator>(
                env.transport, group, 0x2000u + static_cast<std::uint32_t>(i), DType::fp32));
        if (level_ == 3 && (env.config.quantized_weights || env.config.quantized_gradients))
            int8_shards_.push_back(std::make_unique<Communicator>(
                env.transport, group, 0x4000u + static_cast<std::uint32_t>(i), DType::int8));
    }
    if (replicas_ > 1)
        for (int j = 0; j < n_; ++j) {
            std::vector<Device*> group;
            for (int i = 0; i < replicas_; ++i) {
                group.push_back(members[static_cast<std::size_t>(i * n_ + j)]);
                across_ids[static_cast<std::size_t>(j)].push_back(group.back()->id());
            }
            across_.push_back(std::make_unique<Communicator>(
                env.transport, group, 0x1000u + static_cast<std::uint32_t>(j), env.dtype));
        }
    for (auto& c : shards_) c->set_concurrent_groups(shard_ids);
    for (auto& c : fp32_shards_) c->set_concurrent_groups(shard_ids);
    for (auto& c : int8_shards_) c->set_concurrent_groups(shard_ids);
    const int k = env.config.reshard_to;
    if (level_ == 3 && k > 0) {
        std::vector<std::vector<int>> group_ids(static_cast<std::size_t>(n_ / k));
        for (int i = 0; i < n_ / k; ++i) {
            std::vector<Device*> group(members.begin() + i * k, members.begin() + (i + 1) * k);
            for (Device* d : group) group_ids[static_cast<std::size_t>(i)].push_back(d->id());
            reshard_groups_.push_back(std::make_unique<Communicator>(
                env.transport, group, 0x3000u + static_cast<std::uint32_t>(i), env.dtype));
        }
        for (auto& c : reshard_groups_) c->set_concurrent_groups(group_ids);
    }
    for (auto& c : across_) c->set_concurrent_groups(across_ids);
    shard_offset_.resize(buckets_.size() * static_cast<std::size_t>(n_));
    for (int g = 0; g < n_ * replicas_; ++g) {
        const int r = g % n_;
        auto rank = std::make_unique<Rank>();
        rank->r = r;
        rank->g = g;
        rank->shard = shards_[static_cast<std::size_t>(g / n_)].get();
        if (!fp32_shards_.empty())
            rank->fp32_shard = fp32_shards_[static_cast<std::size_t>(g / n_)].get();
        if (!int8_shards_.empty())
            rank->int8_shard = int8_shards_[static_cast<std::size_t>(g / n_)].get();
        if (!reshard_groups_.empty()) {
            rank->reshard_group = reshard_groups_[static_cast<std::size_t>(g / k)].get();
            rank->group_rank = g % k;
            rank->secondary.resize(static_cast<std::size_t>(env.layout.units));
        }
        if (replicas_ > 1) rank->across = across_[static_cast<std::size_t>(r)].get();
        rank->device = members[static_cast<std::size_t>(g)];
        for (std::size_t b = 0; b < buckets_.size(); ++b) {
            shard_offset_[b * static_cast<std::size_t>(n_) + static_cast<std::size_t>(r)] =
                rank->shard_size;
            rank->shard_size += own_end(buckets_[b], r) - own_begin(buckets_[b], r);
        }
        if (level_ < 3) {
            rank->replica = std::make_unique<Replica>(env, *rank->device);
        } else {
            rank->layout =
                std::make_unique<ShardLayout>(env.shape, env.layout, 0, env.layout.units, 0, 1);
            rank->executor = std::make_unique<ModelExecutor>(
                env.shape, *rank->layout, rank->device->memory(), env.config.recompute, env.dtype,
                false, env.routing_of(rank->device->id()));
            rank->gathered.resize(static_cast<std::size_t>(env.layout.units));
            rank->param_stage.resize(static_cast<std::size_t>(env.layout.units));
            rank->unit_grads.resize(static_cast<std::size_t>(env.layout.units));
            rank->saved.resize(static_cast<std::size_t>(env.layout.units));
            rank->loss = DeviceScalar(rank->device->ops());
        }
        ranks_.push_back(std::move(rank));
    }
}

Zero::~Zero() = default;

void Zero::keep_secondary(Rank& rank, int u) {
    const Buffer& full = rank.gathered[static_cast<std::size_t>(u)];
    const int k = env_.config.reshard_to;
    const std::size_t begin = Communicator::chunk_begin(full.size(), k, rank.group_rank);
    const std::size_t end = Communicator::chunk_end(full.size(), k, rank.group_rank);
    Buffer& slice = rank.secondary[static_cast<std::size_t>(u)];
    slice = Buffer(rank.device->memory(), MemoryCategory::gathered_parameters, end - begin,
                   Fill::none, env_.dtype);
    rank.device->ops().copy(slice.data(), full.data() + begin, end - begin);
}

std::size_t Zero::own_begin(const GradBucket& b, int r) const {
    return b.begin + Communicator::chunk_begin(b.end - b.begin, n_, r);
}

std::size_t Zero::own_end(const GradBucket& b, int r) const {
    return b.begin + Communicator::chunk_end(b.end - b.begin, n_, r);
}

void Zero::enqueue_setup() {
    for (auto& rank_ptr : ranks_) {
        Rank& rank = *rank_ptr;
        if (rank.replica) rank.replica->enqueue_allocate(true, false);
        TraceEvent ev;
        ev.kind = EventKind::copy;
        ev.label = "allocate shards";
        rank.device->compute().launch(ev, [this, &rank] {
            MemoryTracker& mem = rank.device->memory();
            const auto k = static_cast<std::size_t>(env_.optimizer.state_per_parameter());
            const RunConfig& config = env_.config;
            const bool offload = config.offloads();
            const bool params_offloaded = config.offload_param != OffloadDevice::none;
            MemoryTracker& state_mem =
                offload ? offload_memory(*rank.device, config.offload_optimizer) : mem;
            rank.state = Buffer(state_mem, MemoryCategory::optimizer_state, k * rank.shard_size);
            if (offload) {
                rank.host_params =
                    Buffer(offload_memory(*rank.device, params_offloaded ? config.offload_param
                                                                         : OffloadDevice::cpu),
                           MemoryCategory::parameters, rank.shard_size, Fill::zero, shard_dtype_);
                rank.host_grads =
                    Buffer(rank.device->host_memory(), MemoryCategory::gradients, rank.shard_size);
            }
            if (level_ >= 2) {
                rank.shard_grads = Buffer(mem, MemoryCategory::gradients, rank.shard_size,
                                          Fill::zero, shard_dtype_);
                if (rank.replica) rank.replica->grads().reset();  // only live during backward
            }
            if (level_ == 3 && !params_offloaded)
                rank.shard_params = Buffer(mem, MemoryCategory::parameters, rank.shard_size,
                                           Fill::zero, shard_dtype_);
            // zero3's shard: on the device, or (offload_param) only off it.
            Buffer& shard = params_offloaded ? rank.host_params : rank.shard_params;
            // Each owned chunk's state is [moments..., master...] at k * its shard offset; the
            // master (mixed precision) starts from the fp32 initialisation.
            for (std::size_t b = 0; b < buckets_.size(); ++b) {
                const std::size_t begin = own_begin(buckets_[b], rank.r);
                const std::size_t count = own_end(buckets_[b], rank.r) - begin;
                const std::size_t off = shard_offset_[b * static_cast<std::size_t>(n_) +
                                                      static_cast<std::size_t>(rank.r)];
                float* state = rank.state.data() + k * off;
                if (level_ == 3 && shard_dtype_ == DType::fp32)  // the fp32 initialisation
                    mem.ops().upload(shard.data() + off, env_.initial.data() + begin, count);
                else if (level_ == 3)
                    env_.upload_parameters(*rank.device, shard.data() + off,
                                           env_.initial.data() + begin, count, state);
                else if (float* master = env_.optimizer.master(state, count))
                    mem.ops().upload(master, env_.initial.data() + begin, count);
                // The host's copy of the shard: the device's own initial values.
                if (params_offloaded) continue;  // the host's is the shard itself
                if (offload && level_ == 3)
                    state_mem.ops().copy(rank.host_params.data() + off,
                                         rank.shard_params.data() + off, count);
                else if (offload)
                    state_mem.ops().copy(rank.host_params.data() + off,
                                         rank.replica->params().data() + begin, count);
            }
        });
    }
}

void Zero::enqueue_step(int step) {
    for (auto& rank : ranks_) {
        if (level_ < 3)
            enqueue_step_stage12(*rank, step);
        else
            enqueue_step_stage3(*rank, step);
    }
}

MemoryTracker& Zero::offload_memory(Device& dev, OffloadDevice where) {
    return where == OffloadDevice::nvme ? dev.nvme_memory() : dev.host_memory();
}

// A copy on the device's host stream that takes `link`'s time for `bytes` on the device clock
// (wall: the copy's own), drawn on `tier`.
void Zero::enqueue_host_copy(Device& dev, int step, std::string label, std::size_t bytes,
                             LinkTier tier, const LinkModel& link, std::function<void()> copy) {
    TraceEvent ev;
    ev.kind = EventKind::copy;
    ev.label = std::move(label);
    ev.step = step;
    ev.bytes = bytes;
    ev.tier = tier;
    dev.host().launch(ev, [bytes, &link, copy = std::move(copy)] {
        Stream& s = *Stream::current();
        const std::int64_t start = s.now_ns();
        copy();
        s.advance_to(start + static_cast<std::int64_t>(link.transfer_ns(bytes)));
    });
}

// offload_param (ZeRO-Infinity): unit u's own chunk of the parameters, from host memory (read
// from NVMe into a host buffer first when it lives there), crosses PCIe into a device buffer
// the gather takes it from. Gated like the gather itself: after the comm stream's work so far.
void Zero::enqueue_parameter_fetch(Rank& rank, int u, int step) {
    Device& dev = *rank.device;
    const GradBucket& bucket = buckets_[static_cast<std::size_t>(u)];
    const std::size_t count = own_end(bucket, rank.r) - own_begin(bucket, rank.r);
    const std::size_t off =
        shard_offset_[static_cast<std::size_t>(u) * static_cast<std::size_t>(n_) +
                      static_cast<std::size_t>(rank.r)];
    const std::size_t bytes = count * bytes_of(shard_dtype_);
    dev.host().wait(dev.comm().record(), step);
    const std::string unit = " unit " + std::to_string(u);
    // The chunk's host-side source: the shard itself, or a buffer read from NVMe.
    auto bounce = std::make_shared<Buffer>();
    if (env_.config.offload_param == OffloadDevice::nvme)
        enqueue_host_copy(dev, step, "NVMe read: parameters" + unit, bytes, LinkTier::nvme,
                          env_.config.nvme_read, [this, &rank, bounce, count, off] {
                              *bounce =
                                  Buffer(rank.device->host_memory(), MemoryCategory::parameters,
                                         count, Fill::none, shard_dtype_);
                              rank.device->host_memory().ops().copy(
                                  bounce->data(), rank.host_params.data() + off, count);
                          });
    enqueue_host_copy(dev, step, "PCIe: parameters" + unit + " to device", bytes, LinkTier::host,
                      env_.config.pcie, [this, &rank, bounce, u, count, off] {
                          Buffer& stage = rank.param_stage[static_cast<std::size_t>(u)];
                          stage = Buffer(rank.device->memory(), MemoryCategory::parameters, count,
                                         Fill::none, shard_dtype_);
                          const float* from =
                              bounce->empty() ? rank.host_params.data() + off : bounce->data();
                          rank.device->host_memory().ops().copy(stage.data(), from, count);
                          bounce->reset();
                      });
    dev.comm().wait(dev.host().record(), step);
}

// ZeRO-Offload: the reduced gradients of the owned chunks cross PCIe to the host, the CPU
// updates the host's shard with the state kept there (DeepSpeedCPUAdam's role), and the
// updated shard crosses back, all on the device's host stream; the device's compute stream
// waits for it before the all-gather. ZeRO-Infinity: what lives on NVMe (the optimizer state,
// the parameter shard) is swapped through host buffers one bucket (zero3: one unit) at a time,
// DeepSpeed's sub-groups, so host memory holds one bucket's worth of it; a parameter shard
// kept off the device (offload_param) is not copied back: each gather fetches its chunk.
void Zero::enqueue_offloaded_update(Rank& rank, int step, bool full_grads) {
    Device& dev = *rank.device;
    Stream& host = dev.host();
    const RunConfig& config = env_.config;
    host.wait(dev.compute().record(), step);
    const std::size_t element = bytes_of(shard_dtype_);
    const auto k = static_cast<std::size_t>(env_.optimizer.state_per_parameter());
    auto for_each_chunk = [this, &rank](auto body) {
        for (std::size_t b = 0; b < buckets_.size(); ++b) {
            const std::size_t begin = own_begin(buckets_[b], rank.r);
            body(
                b, begin, own_end(buckets_[b], rank.r) - begin,
                shard_offset_[b * static_cast<std::size_t>(n_) + static_cast<std::size_t>(rank.r)]);
        }
    };
    enqueue_host_copy(
        dev, step, "PCIe: gradient shard to host", rank.shard_size * element, LinkTier::host,
        config.pcie, [&rank, full_grads, for_each_chunk] {
            for_each_chunk([&](std::size_t, std::size_t begin, std::size_t count, std::size_t off) {
                const float* grads = full_grads ? rank.replica->grads().data() + begin
                                                : rank.shard_grads.data() + off;
                rank.device->host_memory().ops().copy(rank.host_grads.data() + off, grads, count);
            });
        });
    const bool state_on_nvme = config.offload_optimizer == OffloadDevice::nvme;
    const bool params_on_nvme = config.offload_param == OffloadDevice::nvme;
    if (!state_on_nvme && !params_on_nvme) {
        host.launch(
            optimizer_event(env_.optimizer, step, " on the host (own shard)"),
            [this, &rank, step, k, for_each_chunk] {
                DeviceOps& ops = rank.device->host_memory().ops();
                for_each_chunk([&](std::size_t, std::size_t, std::size_t count, std::size_t off) {
                    ops.optimizer_update(env_.optimizer, step + 1, rank.host_params.data() + off,
                                         rank.host_grads.data() + off, rank.state.data() + k * off,
                                         count);
                });
            });
    } else {
        for_each_chunk([&](std::size_t b, std::size_t, std::size_t count, std::size_t off) {
            const std::string unit = (level_ == 3 ? " unit " : " bucket ") + std::to_string(b);
            // Host buffers the chunk's NVMe-resident parts are read into (empty: used in place).
            auto state_swap = std::make_shared<Buffer>();
            auto params_swap = std::make_shared<Buffer>();
            auto swap_in = [&rank](std::shared_ptr<Buffer> swap, Buffer& from, std::size_t at,
                                   std::size_t n, MemoryCategory category, DType dtype) {
                return [&rank, swap, &from, at, n, category, dtype] {
                    *swap = Buffer(rank.device->host_memory(), category, n, Fill::none, dtype);
                    rank.device->host_memory().ops().copy(swap->data(), from.data() + at, n);
                };
            };
            auto swap_out = [&rank](std::shared_ptr<Buffer> swap, Buffer& to, std::size_t at) {
                return [&rank, swap, &to, at] {
                    rank.device->host_memory().ops().copy(to.data() + at, swap->data(),
                                                          swap->size());
                    swap->reset();
                };
            };
            if (state_on_nvme)
                enqueue_host_copy(dev, step, "NVMe read: optimizer state" + unit,
                                  k * count * sizeof(float), LinkTier::nvme, config.nvme_read,
                                  swap_in(state_swap, rank.state, k * off, k * count,
                                          MemoryCategory::optimizer_state, DType::fp32));
            if (params_on_nvme)
                enqueue_host_copy(dev, step, "NVMe read: parameters" + unit, count * element,
                                  LinkTier::nvme, config.nvme_read,
                                  swap_in(params_swap, rank.host_params, off, count,
                                          MemoryCategory::parameters, shard_dtype_));
            host.launch(optimizer_event(env_.optimizer, step, " on the host" + unit),
                        [this, &rank, step, k, count, off, state_swap, params_swap] {
                            float* params = params_swap->empty() ? rank.host_params.data() + off
                                                                 : params_swap->data();
                            float* state = state_swap->empty() ? rank.state.data() + k * off
                                                               : state_swap->data();
                            rank.device->host_memory().ops().optimizer_update(
                                env_.optimizer, step + 1, params, rank.host_grads.data() + off,
                                state, count);
                        });
            if (state_on_nvme)
                enqueue_host_copy(dev, step, "NVMe write: optimizer state" + unit,
                                  k * count * sizeof(float), LinkTier::nvme, config.nvme_write,
                                  swap_out(state_swap, rank.state, k * off));
            if (params_on_nvme)
                enqueue_host_copy(dev, step, "NVMe write: parameters" + unit, count * element,
                                  LinkTier::nvme, config.nvme_write,
                                  swap_out(params_swap, rank.host_params, off));
        });
    }
    if (config.offload_param == OffloadDevice::none)
        enqueue_host_copy(dev, step, "PCIe: updated shard to device", rank.shard_size * element,
                          LinkTier::host, config.pcie, [&rank, for_each_chunk] {
                              for_each_chunk([&](std::size_t, std::size_t begin, std::size_t count,
                                                 std::size_t off) {
                                  float* params = rank.replica
                                                      ? rank.replica->params().data() + begin
                                                      : rank.shard_params.data() + off;
                                  rank.device->host_memory().ops().copy(
                                      params, rank.host_params.data() + off, count);
                              });
                          });
    dev.compute().wait(host.record(), step);
}

void Zero::enqueue_shard_update(Rank& rank, int step, bool full_grads) {
    if (env_.config.offloads()) return enqueue_offloaded_update(rank, step, full_grads);
    rank.device->compute().launch(
        optimizer_event(env_.optimizer, step, " (own shard)"), [this, &rank, step, full_grads] {
            const auto k = static_cast<std::size_t>(env_.optimizer.state_per_parameter());
            for (std::size_t b = 0; b < buckets_.size(); ++b) {
                const std::size_t begin = own_begin(buckets_[b], rank.r);
                const std::size_t count = own_end(buckets_[b], rank.r) - begin;
                const std::size_t off = shard_offset_[b * static_cast<std::size_t>(n_) +
                                                      static_cast<std::size_t>(rank.r)];
                float* params = rank.replica ? rank.replica->params().data() + begin
                                             : rank.shard_params.data() + off;
                const float* grads = full_grads ? rank.replica->grads().data() + begin
                                                : rank.shard_grads.data() + off;
                rank.device->ops().optimizer_update(env_.optimizer, step + 1, params, grads,
                                                    rank.state.data() + k * off, count);
            }
        });
}

void Zero::enqueue_step_stage12(Rank& rank, int step) {
    Device& dev = *rank.device;
    Replica& replica = *rank.replica;
    const int k = env_.config.accumulate;
    const bool every = env_.config.reduce_every_microstep;
    const int rows = env_.config.batch / (n_ * replicas_ * k);
    for (int micro = 0; micro < k; ++micro) {
        // no_sync (the default): the full gradients add up locally over the micro-steps and
        // only the last one reduces, so ZeRO-2 holds the whole gradient until then, as FSDP
        // does under no_sync. Reducing every micro-step, ZeRO-2 adds each reduced shard into
        // its own and frees the full gradient every time; ZeRO-1 (an all-reduce) keeps the
        // reduced sum on rank 0 only so the next all-reduce counts it once (see DataParallel).
        const bool reduce = micro == k - 1 || every;
        const bool zero_grads = micro == 0 || (every && (level_ == 2 || rank.r > 0));
        if (micro > 0 && every) dev.compute().wait(dev.comm().record(), step);
        std::size_t next = 0;
        replica.enqueue_forward_backward(
            step, micro, (micro * n_ * replicas_ + rank.g) * rows, rows, zero_grads, [&](int unit) {
                if (!reduce) return;
                while (next < buckets_.size() && buckets_[next].ready_after_unit == unit) {
                    const std::size_t b = next++;
                    dev.comm().wait(dev.compute().record(), step);
                    dev.comm().enqueue([this, &rank, &dev, &replica, b, step, micro, every] {
                        const GradBucket& bucket = buckets_[b];
                        float* grads = replica.grads().data() + bucket.begin;
                        const std::size_t count = bucket.end - bucket.begin;
                        if (level_ == 1) {
                            rank.shard->all_reduce(dev.id(), grads, count, step, "zero1 gradients");
                            return;
                        }
                        rank.shard->reduce_scatter(dev.id(), grads, count, step, "zero2 gradients");
                        const std::size_t begin = own_begin(bucket, rank.r);
                        if (rank.across)  // the same shard's sum over the other nodes
                            rank.across->all_reduce(dev.id(), replica.grads().data() + begin,
                                                    own_end(bucket, rank.r) - begin, step,
                                                    "zero2 gradients across nodes");
                        float* shard = rank.shard_grads.data() +
                                       shard_offset_[b * static_cast<std::size_t>(n_) +
                                                     static_cast<std::size_t>(rank.r)];
                        const std::size_t own = own_end(bucket, rank.r) - begin;
                        if (micro == 0 || !every) {
                            dev.ops().copy(shard, replica.grads().data() + begin, own);
                        } else {
                            dev.ops().add(shard, replica.grads().data() + begin, own);
                            dev.ops().round_to(env_.dtype, shard, own);
                        }
                    });
                }
            });
        if (level_ == 2 && reduce) {
            dev.compute().wait(dev.comm().record(), step);
            dev.compute().enqueue([&replica] { replica.grads().reset(); });
        }
    }
    dev.compute().wait(dev.comm().record(), step);
    enqueue_shard_update(rank, step, level_ == 1);
    // Every device updated its own chunks: gather the rest.
    dev.comm().wait(dev.compute().record(), step);
    dev.comm().enqueue([this, &rank, &dev, &replica, step] {
        for (const GradBucket& bucket : buckets_)
            rank.shard->all_gather(dev.id(), replica.params().data() + bucket.begin,
                                   bucket.end - bucket.begin, step, "updated parameters");
    });
    dev.compute().wait(dev.comm().record(), step);
}

void Zero::enqueue_step_stage3(Rank& rank, int step) {
    Device& dev = *rank.device;
    const int units = env_.layout.units;
    const int k = env_.config.accumulate;
    const bool every = env_.config.reduce_every_microstep;
    const int rows = env_.config.batch / (n_ * replicas_ * k);
    const bool reshard = env_.config.reshard_after_forward;
    MemoryTracker& mem = dev.memory();

    // Materialise one unit's parameters: own chunk from the shard, the rest from the peers.
    const bool params_offloaded = env_.config.offload_param != OffloadDevice::none;
    auto gather = [this, &rank, &dev, &mem, step, params_offloaded](int u, const char* why) {
        if (params_offloaded) enqueue_parameter_fetch(rank, u, step);
        dev.comm().enqueue([this, &rank, &dev, &mem, u, step, why, params_offloaded] {
            const GradBucket& bucket = buckets_[static_cast<std::size_t>(u)];
            Buffer& full = rank.gathered[static_cast<std::size_t>(u)];
            // Written whole: this rank's chunk here, the peers' by the all-gather.
            full = Buffer(mem, MemoryCategory::gathered_parameters, bucket.end - bucket.begin,
                          Fill::none, env_.dtype);
            const std::size_t begin = own_begin(bucket, rank.r);
            const std::size_t off =
                shard_offset_[static_cast<std::size_t>(u) * static_cast<std::size_t>(n_) +
                              static_cast<std::size_t>(rank.r)];
            Buffer& stage = rank.param_stage[static_cast<std::size_t>(u)];
            dev.ops().copy(full.data() + (begin - bucket.begin),
                           params_offloaded ? stage.data() : rank.shard_params.data() + off,
                           own_end(bucket, rank.r) - begin);
            stage.reset();
            // MixedPrecisionPolicy: the fp32 shard is cast to param_dtype before the gather.
            if (shard_dtype_ != env_.dtype)
                dev.ops().round_to(env_.dtype, full.data() + (begin - bucket.begin),
                                   own_end(bucket, rank.r) - begin);
            if (env_.config.quantized_weights) {
                // qwZ: this rank's chunk quantized to int8 before it is sent (the shard itself
                // stays exact); the gather then moves 1 byte an element.
                quantize_dequantize_int8(full.data() + (begin - bucket.begin),
                                         own_end(bucket, rank.r) - begin, kQuantizedWeightGroup,
                                         env_.dtype);
                rank.int8_shard->all_gather(
                    dev.id(), full.data(), full.size(), step,
                    std::string(why) + " unit " + std::to_string(u) + " (int8)");
            } else {
                rank.shard->all_gather(dev.id(), full.data(), full.size(), step,
                                       std::string(why) + " unit " + std::to_string(u));
            }
        });
        return dev.comm().record();
    };
    // reshard_to: the backward's gather, from the group's slices only.
    auto regather = [this, &rank, &dev, &mem, step](int u) {
        dev.comm().enqueue([this, &rank, &dev, &mem, u, step] {
            const GradBucket& bucket = buckets_[static_cast<std::size_t>(u)];
            const std::size_t size = bucket.end - bucket.begin;
            const int group = env_.config.reshard_to;
            Buffer& full = rank.gathered[static_cast<std::size_t>(u)];
            full = Buffer(mem, MemoryCategory::gathered_parameters, size, Fill::none, env_.dtype);
            Buffer& slice = rank.secondary[static_cast<std::size_t>(u)];
            dev.ops().copy(full.data() + Communicator::chunk_begin(size, group, rank.group_rank),
                           slice.data(), slice.size());
            slice.reset();
            rank.reshard_group->all_gather(dev.id(), full.data(), size, step,
                                           "backward unit " + std::to_string(u) + " (within " +
                                               std::to_string(group) + " devices)");
        });
        return dev.comm().record();
    };
    auto backward_gather = [&](int u) {
        return rank.reshard_group ? regather(u) : gather(u, "backward");
    };

    // Gradient accumulation re-gathers the parameters in every micro-step (only the shards
    // persist). Under no_sync each unit's full gradient stays allocated and adds up until the
    // last micro-step reduce-scatters it, FSDP's no_sync memory cost; reducing every
    // micro-step adds each reduced shard into the rank's own and frees the full gradient.
    for (int micro = 0; micro < k; ++micro) {
        const bool reduce = micro == k - 1 || every;
        const std::shared_ptr<const HostBatch> batch =
            env_.load_batch(step, (micro * n_ * replicas_ + rank.g) * rows, rows);
        std::vector<EventPtr> forward_done(static_cast<std::size_t>(units));
        for (int u = 0; u < units; ++u) {
            // Prefetch: unit u's gather may start once unit u-2 is done and freed, so at most
            // two units are whole at any time.
            if (u >= 2) dev.comm().wait(forward_done[static_cast<std::size_t>(u) - 2], step);
            dev.compute().wait(gather(u, "forward"), step);
            dev.compute().launch(unit_event(EventKind::forward, u, env_.shape, step, micro),
                                 [this, &rank, u, rows, batch, micro, reshard] {
                                     if (u == 0) {
                                         if (micro == 0) rank.loss.zero();
                                         rank.carry = rank.executor->upload_input(batch->x);
                                     }
                                     Buffer& full = rank.gathered[static_cast<std::size_t>(u)];
                                     rank.carry = rank.executor->forward(
                                         u, full.data(), std::move(rank.carry), rows,
                                         rank.saved[static_cast<std::size_t>(u)],
                                         batch->labels.data(), env_.grad_scale(), rank.loss.get());
                                     if (rank.reshard_group) keep_secondary(rank, u);
                                     if (reshard) full.reset();  // else kept for backward
                                 });
            forward_done[static_cast<std::size_t>(u)] = dev.compute().record();
        }

        // The head's forward copy must be freed before its backward copy lands in the same
        // slot. Without resharding, every unit's forward copy is its backward's: no gather.
        dev.comm().wait(forward_done.back(), step);
        EventPtr gathered = reshard ? backward_gather(units - 1) : dev.comm().record();
        for (int u = units - 1; u >= 0; --u) {
            dev.compute().wait(gathered, step);
            if (rank.executor->needs_recompute(u))  // with the unit's gathered parameters
                dev.compute().launch(
                    unit_event(EventKind::recompute, u, env_.shape, step, micro), [&rank, u] {
                        rank.executor->recompute(u,
                                                 rank.gathered[static_cast<std::size_t>(u)].data(),
                                                 rank.saved[static_cast<std::size_t>(u)]);
                    });
            dev.compute().launch(
                unit_event(EventKind::backward, u, env_.shape, step, micro),
                [this, &rank, &mem, u] {
                    Buffer& full = rank.gathered[static_cast<std::size_t>(u)];
                    Buffer& grads = rank.unit_grads[static_cast<std::size_t>(u)];
                    if (grads.empty())  // zeroed; kept across micro-steps under no_sync
                        grads = Buffer(mem, MemoryCategory::gradients, full.size(), Fill::zero,
                                       env_.dtype);
                    rank.carry = rank.executor->backward(
                        u, full.data(), grads.data(), std::move(rank.carry),
                        rank.saved[static_cast<std::size_t>(u)], GradWrite::add);
                    full.reset();
                });
            EventPtr backward_done = dev.compute().record();
            if (u > 0 && reshard)
                gathered = backward_gather(u - 1);  // prefetch during this backward
            // The next prefetch waits for this backward, so at most two units are whole.
            dev.comm().wait(backward_done, step);
            if (!reduce) continue;
            dev.comm().enqueue([this, &rank, &dev, u, step, micro, every] {
                const GradBucket& bucket = buckets_[static_cast<std::size_t>(u)];
                Buffer& grads = rank.unit_grads[static_cast<std::size_t>(u)];
                if (rank.fp32_shard) {
                    // MixedPrecisionPolicy(reduce_dtype=fp32): the bf16 gradients cast up and
                    // summed in fp32 (the cast buffer replaces them until the shard is taken).
                    Buffer wide(dev.memory(), MemoryCategory::communication, grads.size(),
                                Fill::none, DType::fp32);
                    dev.ops().copy(wide.data(), grads.data(), grads.size());
                    grads = std::move(wide);
                    rank.fp32_shard->reduce_scatter(
                        dev.id(), grads.data(), grads.size(), step,
                        "gradients unit " + std::to_string(u) + " (fp32)");
                } else if (env_.config.quantized_gradients) {
                    quantized_gradient_exchange(rank, u, step);
                } else {
                    rank.shard->reduce_scatter(dev.id(), grads.data(), grads.size(), step,
                                               "gradients unit " + std::to_string(u));
                }
                const std::size_t begin = own_begin(bucket, rank.r);
                if (rank.across)  // the same shard's sum over the other nodes
                    rank.across->all_reduce(
                        dev.id(), grads.data() + (begin - bucket.begin),
                        own_end(bucket, rank.r) - begin, step,
                        "gradients unit " + std::to_string(u) + " across nodes");
                float* shard =
                    rank.shard_grads.data() +
                    shard_offset_[static_cast<std::size_t>(u) * static_cast<std::size_t>(n_) +
                                  static_cast<std::size_t>(rank.r)];
                const std::size_t own = own_end(bucket, rank.r) - begin;
                if (micro == 0 || !every) {
                    dev.ops().copy(shard, grads.data() + (begin - bucket.begin), own);
                } else {
                    dev.ops().add(shard, grads.data() + (begin - bucket.begin), own);
                    dev.ops().round_to(shard_dtype_, shard, own);
                }
                grads.reset();
            });
        }
        // The next micro-step gathers into slots this one's backward frees, and its backward
        // adds into gradients this one's reduce-scatters free.
        dev.comm().wait(dev.compute().record(), step);
        dev.compute().wait(dev.comm().record(), step);
    }
    enqueue_shard_update(rank, step, false);
}

// ZeRO++'s qgZ: chunk j of the unit's gradients (the part rank j owns) quantized to int8 and
// sent to rank j by one all-to-all (chunks padded to the widest, as the collective needs equal
// ones); this rank sums the n chunks it receives, dequantized, in fp32 and rank order, into its
// own part of the unit's gradients (where a reduce-scatter leaves its sum).
void Zero::quantized_gradient_exchange(Rank& rank, int u, int step) {
    Device& dev = *rank.device;
    const GradBucket& bucket = buckets_[static_cast<std::size_t>(u)];
    Buffer& grads = rank.unit_grads[static_cast<std::size_t>(u)];
    std::size_t widest = 0;
    for (int j = 0; j < n_; ++j)
        widest = std::max(widest, own_end(bucket, j) - own_begin(bucket, j));
    const std::size_t n = static_cast<std::size_t>(n_);
    Buffer send(dev.memory(), MemoryCategory::communication, widest * n, Fill::zero, DType::int8);
    for (int j = 0; j < n_; ++j) {
        const std::size_t lo = own_begin(bucket, j) - bucket.begin;
        const std::size_t len = own_end(bucket, j) - own_begin(bucket, j);
        float* chunk = send.data() + static_cast<std::size_t>(j) * widest;
        dev.ops().copy(chunk, grads.data() + lo, len);
        quantize_dequantize_int8(chunk, len, kQuantizedWeightGroup, DType::fp32);
    }
    Buffer recv(dev.memory(), MemoryCategory::communication, widest * n, Fill::none, DType::int8);
    rank.int8_shard->all_to_all(dev.id(), send.data(), recv.data(), widest * n, step,
                                "gradients unit " + std::to_string(u) + " (int8, qgZ)");
    float* mine = grads.data() + (own_begin(bucket, rank.r) - bucket.begin);
    const std::size_t own = own_end(bucket, rank.r) - own_begin(bucket, rank.r);
    dev.ops().copy(mine, recv.data(), own);
    for (std::size_t j = 1; j < n; ++j) dev.ops().add(mine, recv.data() + j * widest, own);
    dev.ops().round_to(env_.dtype, mine, own);  // the fp32 sum, stored as the gradients are
}

// Each rank's owned chunks: its parameters (the master copy where there is one; else the
// shard, or the host's only copy under offload_param) and the chunk's state [moments...].
std::vector<StateSlice> Zero::state_slices() {
    const auto k = static_cast<std::size_t>(env_.optimizer.state_per_parameter());
    const bool params_offloaded = env_.config.offload_param != OffloadDevice::none;
    std::vector<StateSlice> out;
    for (auto& rank : ranks_)
        for (std::size_t b = 0; b < buckets_.size(); ++b) {
            const std::size_t begin = own_begin(buckets_[b], rank->r);
            const std::size_t count = own_end(buckets_[b], rank->r) - begin;
            const std::size_t off =
                shard_offset_[b * static_cast<std::size_t>(n_) + static_cast<std::size_t>(rank->r)];
            float* state = rank->state.data() + k * off;
            float* params = env_.optimizer.master(state, count);
            if (!params)
                params = params_offloaded ? rank->host_params.data() + off
                         : level_ == 3    ? rank->shard_params.data() + off
                                          : rank->replica->params().data() + begin;
            out.push_back({rank->device->id(), begin, count, params, state, count});
        }
    return out;
}

double Zero::step_loss() const {
    double sum = 0.0;
    for (const auto& r : ranks_) sum += r->replica ? r->replica->loss_sum() : r->loss.read();
    return sum / env_.loss_count();
}

std::vector<float> Zero::parameters() const {
    if (level_ < 3) {
        return ranks_.front()->replica->params().to_host();
    }
    std::vector<float> full(env_.layout.total, 0.0f);
    for (const auto& rank : ranks_) {
        const std::vector<float> shard = env_.config.offload_param != OffloadDevice::none
                                             ? rank->host_params.to_host()
                                             : rank->shard_params.to_host();
        for (std::size_t b = 0; b < buckets_.size(); ++b) {
            const std::size_t begin = own_begin(buckets_[b], rank->r);
            std::copy_n(shard.begin() + static_cast<std::ptrdiff_t>(
                                            shard_offset_[b * static_cast<std::size_t>(n_) +
                                                          static_cast<std::size_t>(rank->r)]),
                        own_end(buckets_[b], rank->r) - begin,
                        full.begin() + static_cast<std::ptrdiff_t>(begin));
        }
    }
    return full;
}

std::vector<float> Zero::master_parameters() const {
    if (!env_.optimizer.master_weights) return {};
    // Each rank's owned chunks, from the master part of each chunk's state.
    const auto k = static_cast<std::size_t>(env_.optimizer.state_per_parameter());
    std::vector<float> full(env_.layout.total, 0.0f);
    for (const auto& rank : ranks_) {
        std::vector<float> state = rank->state.to_host();
        for (std::size_t b = 0; b < buckets_.size(); ++b) {
            const std::size_t begin = own_begin(buckets_[b], rank->r);
            const std::size_t count = own_end(buckets_[b], rank->r) - begin;
            const std::size_t off =
                shard_offset_[b * static_cast<std::size_t>(n_) + static_cast<std::size_t>(rank->r)];
            const float* master = env_.optimizer.master(state.data() + k * off, count);
            std::copy_n(master, count, full.begin() + static_cast<std::ptrdiff_t>(begin));
        }
    }
    return full;
}

}  // namespace pd
