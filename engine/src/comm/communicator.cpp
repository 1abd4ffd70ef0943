#include "pd/communicator.h"

#include <algorithm>
#include <condition_variable>
#include <optional>
#include <string_view>

#include "backend/device_backend.h"
#include "backend/device_ops.h"
#include "collective_algorithms.h"
#include "pd/error.h"
#include "pd/run_context.h"

namespace pd {

namespace {

int wrap(int i, int n) {
    return ((i % n) + n) % n;
}

// The staging buffer a ring member holds while a collective runs (the payload of the chunk
// in flight), accounted as communication memory for the duration of the call.
class StagingGuard {
  public:
    StagingGuard(MemoryTracker& memory, std::size_t bytes) : memory_(memory), bytes_(bytes) {
        if (bytes_) memory_.allocate(MemoryCategory::communication, bytes_);
    }
    ~StagingGuard() {
        if (bytes_) memory_.release(MemoryCategory::communication, bytes_);
    }
    StagingGuard(const StagingGuard&) = delete;
    StagingGuard& operator=(const StagingGuard&) = delete;

  private:
    MemoryTracker& memory_;
    std::size_t bytes_;
};

// One step of a collective's reducing or gathering phase, starting now on `stream`.
TraceEvent phase_step(bool reducing, std::string label, int step, int step_index,
                      const Stream& stream) {
    TraceEvent e;
    e.kind = reducing ? EventKind::reduce_scatter_step : EventKind::all_gather_step;
    e.phase = reducing ? CollectivePhase::reduce_scatter : CollectivePhase::all_gather;
    e.label = std::move(label);
    e.step = step;
    e.step_index = step_index;
    e.start_ns = stream.now_ns();
    return e;
}

std::size_t max_chunk_elements(std::size_t count, int n) {
    return (count + static_cast<std::size_t>(n) - 1) / static_cast<std::size_t>(n);
}

}  // namespace

// The calling member's view of the ring for one collective call.
struct Communicator::Ring {
    Stream& stream;
    Device& device;
    int rank;
    int n;
    int left_device;
    int right_device;
    int self_device;
    const char* op;  // the collective this call is
    int call;        // this device's call number of `op` (counted for fault injection only)
};

// An in-network all-reduce's switch: members add their data into its buffer in rank order
// (the switch's summation order), then each reads the sum. `generation` counts completed
// calls, so a member that runs ahead into the next call waits for this one to be read.
struct Communicator::SwitchState {
    std::mutex mutex;
    std::condition_variable cv;
    std::vector<float> sum;
    int contributed = 0;
    int read = 0;
    std::uint64_t generation = 0;
    std::int64_t ready_ns = 0;  // device clock: the last contribution's arrival
};

struct Communicator::Choice {
    AlgorithmChoice choice;
    std::string text;  // describe_choice's line
};

Communicator::Communicator(Transport& transport, std::vector<Device*> members,
                           std::uint32_t group_id, DType dtype)
    : Communicator(transport, std::move(members), group_id, dtype, false) {}

Communicator::Communicator(Transport& transport, std::vector<Device*> members,
                           std::uint32_t group_id, DType dtype, bool sub_group)
    : transport_(transport),
      members_(std::move(members)),
      sub_group_(sub_group),
      tag_(std::uint64_t{group_id} << 32),
      dtype_(dtype) {
    if (members_.empty())
        throw Error("a communicator needs at least one device", __FILE__, __LINE__);
    for (Device* d : members_) member_ids_.push_back(d->id());
    if (members_.size() > 1) {
        std::vector<DeviceBackend*> backends;
        for (Device* d : members_) backends.push_back(&d->backend());
        group_ = backends.front()->make_group_collectives(backends);
    }
    switch_ = std::make_unique<SwitchState>();
    switch_calls_.assign(members_.size(), 0);
    concurrent_ = {member_ids_};
    const Topology& topology = transport_.context().topology();
    if (!sub_group_ && !group_ && topology.nodes() > 1) {
        const NodeGroups groups = node_groups(topology, member_ids_);
        if (groups.usable()) {
            auto device = [&](int id) {
                for (Device* d : members_)
                    if (d->id() == id) return d;
                return members_.front();
            };
            // Sub-group tags: above any group id a strategy uses (they count from 1).
            std::uint32_t sub_id = 0x40000000u | (group_id << 8);
            for (std::size_t i = 0; i < groups.local.size(); ++i) {
                std::vector<Device*> ds;
                for (int id : groups.local[i]) {
                    ds.push_back(device(id));
                    sub_of_[id].first = i;
                }
                locals_.push_back(std::unique_ptr<Communicator>(
                    new Communicator(transport, ds, sub_id++, dtype, true)));
            }
            for (std::size_t j = 0; j < groups.cross.size(); ++j) {
                std::vector<Device*> ds;
                for (int id : groups.cross[j]) {
                    ds.push_back(device(id));
                    sub_of_[id].second = j;
                }
                crosses_.push_back(std::unique_ptr<Communicator>(
                    new Communicator(transport, ds, sub_id++, dtype, true)));
            }
        }
    }
    rebuild_flows();
}

void Communicator::set_concurrent_groups(std::vector<std::vector<int>> groups) {
    concurrent_ = std::move(groups);
    rebuild_flows();
}

void Communicator::rebuild_flows() {
    const Topology& topology = transport_.context().topology();
    ring_flows_.clear();
    for (const auto& g : concurrent_)
        for (std::size_t i = 0; g.size() > 1 && i < g.size(); ++i)
            ring_flows_.push_back({g[i], g[(i + 1) % g.size()]});
    const std::vector<double> per_byte = topology.ns_per_byte(ring_flows_);
    ring_ns_per_byte_.clear();
    for (std::size_t i = 0; i < ring_flows_.size(); ++i)
        ring_ns_per_byte_[ring_flows_[i].dst] = per_byte[i];
    if (locals_.empty()) return;
    // The sub-groups of every concurrent group run together too.
    std::vector<std::vector<int>> locals, crosses;
    for (const auto& g : concurrent_) {
        const NodeGroups ng = node_groups(topology, g);
        locals.insert(locals.end(), ng.local.begin(), ng.local.end());
        crosses.insert(crosses.end(), ng.cross.begin(), ng.cross.end());
    }
    for (auto& c : locals_) c->set_concurrent_groups(locals);
    for (auto& c : crosses_) c->set_concurrent_groups(crosses);
}

Communicator::~Communicator() = default;

void Communicator::round_sum(Device& device, float* data, std::size_t count) const {
    if (dtype_ != DType::fp32 && count) device.ops().round_to(dtype_, data, count);
}

std::uint64_t Communicator::library_flow_id(int src, int dst, std::uint32_t subtag, bool sending) {
    std::lock_guard lock(flow_mutex_);
    const auto channel = std::make_tuple(src, dst, subtag);
    const std::uint64_t seq = (sending ? sends_ : recvs_)[channel]++;
    const auto key = std::make_tuple(src, dst, subtag, seq);
    auto it = flows_.find(key);
    if (it == flows_.end())  // first of the pair: pick the id; the other side takes it
        return flows_[key] = transport_.context().next_flow_id();
    const std::uint64_t id = it->second;
    flows_.erase(it);
    return id;
}

void Communicator::library_ring_step(const Ring& ring, float* data, std::size_t count,
                                     int send_chunk, int recv_chunk, Combine combine,
                                     TraceEvent& event) {
    const std::size_t sb = chunk_begin(count, ring.n, send_chunk);
    const std::size_t se = chunk_end(count, ring.n, send_chunk);
    const std::size_t rb = chunk_begin(count, ring.n, recv_chunk);
    const std::size_t m = chunk_end(count, ring.n, recv_chunk) - rb;
    // The incoming chunk lands in staging, then is added (or copied) in place; staging is
    // communication memory for the length of the step.
    Buffer staging(ring.device.memory(), MemoryCategory::communication, m, Fill::zero, dtype_);
    group_->exchange(ring.rank, data + sb, se - sb, wrap(ring.rank + 1, ring.n), staging.data(), m,
                     wrap(ring.rank - 1, ring.n));
    if (combine == Combine::add) {
        ring.device.ops().add(data + rb, staging.data(), m);
        round_sum(ring.device, data + rb, m);
    } else
        ring.device.ops().copy(data + rb, staging.data(), m);
    event.end_ns = ring.stream.now_ns();
}

bool Communicator::library_native_call(const Ring& ring, const char* op, float* data,
                                       std::size_t count, int step) {
    if (!group_ || !group_->native()) return false;
    const std::string name = op;
    const bool even = count % static_cast<std::size_t>(ring.n) == 0;
    if (name != "all_reduce" && !even) return false;  // NCCL needs equal chunks: ring steps
    TraceEvent event;
    event.kind = EventKind::collective;
    event.label = "NCCL " + name;
    event.step = step;
    event.bytes = bytes(count);
    event.start_ns = ring.stream.now_ns();
    if (name == "all_reduce")
        group_->all_reduce(ring.rank, data, count);
    else if (name == "reduce_scatter")
        group_->reduce_scatter(ring.rank, data, count);
    else
        group_->all_gather(ring.rank, data, count);
    event.end_ns = ring.stream.now_ns();
    ring.stream.add_event(std::move(event));
    return true;
}

int Communicator::rank_of(int device_id) const {
    for (std::size_t r = 0; r < members_.size(); ++r)
        if (members_[r]->id() == device_id) return static_cast<int>(r);
    throw Error("device " + std::to_string(device_id) + " is not in this communicator", __FILE__,
                __LINE__);
}

std::size_t Communicator::chunk_begin(std::size_t count, int n, int chunk) {
    return count * static_cast<std::size_t>(chunk) / static_cast<std::size_t>(n);
}

Communicator::Ring Communicator::ring_for(int device_id, const char* op) const {
    Stream* stream = Stream::current();
    if (!stream || stream->device() != device_id)
        throw Error("a collective for device " + std::to_string(device_id) +
                        " must run on one of that device's streams",
                    __FILE__, __LINE__);
    const int rank = rank_of(device_id);
    const int n = size();
    return Ring{*stream,
                *members_[static_cast<std::size_t>(rank)],
                rank,
                n,
                device_of(wrap(rank - 1, n)),
                device_of(wrap(rank + 1, n)),
                device_id,
                op,
                transport_.context().begin_collective_call(device_id, op)};
}

void Communicator::record(const Ring& ring, const char* op, std::size_t count, int step,
                          std::int64_t start_ns, const std::string& label,
                          const std::string& algorithm, const std::string& choice) const {
    if (sub_group_) return;  // its steps belong to the parent's call
    CollectiveRecord rec;
    rec.algorithm = algorithm;
    if (ring.rank == 0) rec.choice = choice;
    rec.device = ring.self_device;
    rec.op = op;
    rec.label = label.empty() ? op : label;
    rec.bytes = bytes(count);
    rec.ranks = ring.n;
    rec.step = step;
    rec.start_ns = start_ns;
    rec.end_ns = ring.stream.now_ns();
    ring.stream.add_collective(std::move(rec));
}

void Communicator::ring_step(const Ring& ring, float* data, std::size_t count, int send_chunk,
                             int recv_chunk, Combine combine, EventKind kind, int step_index,
                             int step) {
    const std::size_t sb = chunk_begin(count, ring.n, send_chunk);
    const std::size_t se = chunk_end(count, ring.n, send_chunk);
    const std::size_t rb = chunk_begin(count, ring.n, recv_chunk);
    const std::size_t re = chunk_end(count, ring.n, recv_chunk);
    const bool reducing = kind == EventKind::reduce_scatter_step;
    // An all-reduce numbers its all-gather steps after its reduce-scatter steps.
    const bool second_phase = !reducing && std::string_view(ring.op) == "all_reduce";
    transport_.context().check_dead_peer(ring.self_device, ring.op, ring.call,
                                         step_index + (second_phase ? ring.n - 1 : 0));

    TraceEvent event;
    event.kind = kind;
    event.phase = reducing ? CollectivePhase::reduce_scatter : CollectivePhase::all_gather;
    event.label = reducing ? "reduce-scatter" : "all-gather";
    event.step = step;
    event.step_index = step_index;
    event.chunk = send_chunk;
    event.peer = ring.right_device;
    event.bytes = bytes(se - sb);
    event.start_ns = ring.stream.now_ns();
    if (group_) {
        library_ring_step(ring, data, count, send_chunk, recv_chunk, combine, event);
        ring.stream.add_event(std::move(event));
        return;
    }

    transport_.send(ring.self_device, ring.right_device, tag_, ring.device.ops(), data + sb,
                    se - sb, ring.stream.now_ns(), 0);
    const std::string what = "device " + std::to_string(ring.self_device) + " " + event.label +
                             " step " + std::to_string(step_index) + " receiving from device " +
                             std::to_string(ring.left_device);
    Message message = transport_.recv(ring.left_device, ring.self_device, tag_, what);
    const std::size_t m = re - rb;
    if (message.payload->count != m)
        throw Error(what + ": received " + std::to_string(message.payload->count) +
                        " elements, expected " + std::to_string(m),
                    __FILE__, __LINE__);
    // Device clock: the chunk cannot arrive before it left plus the cost of the tier it
    // crosses, its bandwidth shared with the step's other transfers on the same ports and NICs.
    const Topology& topology = transport_.context().topology();
    event.tier = topology.tier(ring.left_device, ring.self_device);
    const auto found = ring_ns_per_byte_.find(ring.self_device);
    const double per_byte = found == ring_ns_per_byte_.end()
                                ? 1.0 / topology.link(event.tier).bytes_per_ns
                                : found->second;
    ring.stream.advance_to(message.sent_at_ns +
                           static_cast<std::int64_t>(topology.link(event.tier).latency_us * 1e3 +
                                                     static_cast<double>(bytes(m)) * per_byte));
    transport_.receive_into(ring.left_device, ring.self_device, tag_, ring.device.ops(), message,
                            data + rb, combine == Combine::add);
    if (combine == Combine::add) round_sum(ring.device, data + rb, m);
    event.end_ns = ring.stream.now_ns();
    ring.stream.add_event(std::move(event));
}

// Rank r sends chunk (r - s - 1 + offset) and receives chunk (r - s - 2 + offset): after n-1
// steps rank r holds the full sum of chunk (r + offset).
void Communicator::reduce_scatter_steps(const Ring& ring, float* data, std::size_t count, int step,
                                        int chunk_offset) {
    for (int s = 0; s < ring.n - 1; ++s) {
        ring_step(ring, data, count, wrap(ring.rank - s - 1 + chunk_offset, ring.n),
                  wrap(ring.rank - s - 2 + chunk_offset, ring.n), Combine::add,
                  EventKind::reduce_scatter_step, s, step);
    }
}

// Rank r starts owning chunk (r + offset); at step s it forwards chunk (r - s + offset) and
// receives chunk (r - s - 1 + offset).
void Communicator::all_gather_steps(const Ring& ring, float* data, std::size_t count, int step,
                                    int chunk_offset) {
    for (int s = 0; s < ring.n - 1; ++s) {
        ring_step(ring, data, count, wrap(ring.rank - s + chunk_offset, ring.n),
                  wrap(ring.rank - s - 1 + chunk_offset, ring.n), Combine::copy,
                  EventKind::all_gather_step, s, step);
    }
}

void Communicator::ring_collective(int device_id, const char* op, bool reduce, bool gather,
                                   float* data, std::size_t count, int step,
                                   const std::string& label) {
    const Ring ring = ring_for(device_id, op);
    const std::int64_t start = ring.stream.now_ns();
    if (ring.n > 1 && library_native_call(ring, op, data, count, step)) {
        // one library call, recorded as one event
    } else if (ring.n > 1 && group_) {
        if (reduce) reduce_scatter_steps(ring, data, count, step, 0);
        if (gather) all_gather_steps(ring, data, count, step, 0);
    } else if (ring.n > 1) {
        StagingGuard staging(ring.device.memory(), bytes(max_chunk_elements(count, ring.n)));
        if (reduce) reduce_scatter_steps(ring, data, count, step, 0);
        if (gather) all_gather_steps(ring, data, count, step, 0);
    }
    record(ring, op, count, step, start, label);
}

const Communicator::Choice& Communicator::choice_for(std::size_t count) {
    std::lock_guard lock(choice_mutex_);
    auto& slot = choices_[count];
    if (!slot) {
        const Topology& topology = transport_.context().topology();
        slot = std::make_unique<Choice>();
        slot->choice = choose_all_reduce(transport_.context().allreduce_algorithm(), topology,
                                         member_ids_, concurrent_, bytes(count));
        slot->text = describe_choice(slot->choice, topology, member_ids_, bytes(count));
    }
    return *slot;
}

void Communicator::all_reduce(int device_id, float* data, std::size_t count, int step,
                              const std::string& label) {
    // A library's collectives, a group of one and a hierarchy's own rings: rings as before.
    if (group_ || size() == 1 || sub_group_) {
        ring_collective(device_id, "all_reduce", true, true, data, count, step, label);
        return;
    }
    const Choice& choice = choice_for(count);
    const Ring ring = ring_for(device_id, "all_reduce");
    const std::int64_t start = ring.stream.now_ns();
    switch (choice.choice.algorithm) {
        case CollectiveAlgorithm::tree:
            tree_all_reduce(ring, data, count, step);
            break;
        case CollectiveAlgorithm::in_network:
        case CollectiveAlgorithm::reduction_server:
            switch_all_reduce(ring, data, count, step, choice.choice.algorithm);
            break;
        case CollectiveAlgorithm::hierarchical:
            hierarchical_all_reduce(ring, data, count, step);
            break;
        default: {
            StagingGuard staging(ring.device.memory(), bytes(max_chunk_elements(count, ring.n)));
            reduce_scatter_steps(ring, data, count, step, 0);
            all_gather_steps(ring, data, count, step, 0);
        }
    }
    record(ring, "all_reduce", count, step, start, label,
           std::string(name_of(choice.choice.algorithm)), choice.text);
}

namespace {

// Message streams of the tree and switch algorithms, apart from the ring's (subtag 0) and from
// the subtags strategies use for point-to-point streams (small numbers).
constexpr std::uint32_t kTreeSubtag = 0x7f000000u;  // + tree index

}  // namespace

void Communicator::receive_step(const Ring& ring, int src, std::uint32_t subtag, float* data,
                                std::size_t count, bool add, const std::vector<Flow>& concurrent,
                                TraceEvent& event) {
    transport_.context().check_dead_peer(ring.self_device, ring.op, ring.call,
                                         std::max(0, event.step_index));
    const std::string what = "device " + std::to_string(ring.self_device) + " " + event.label +
                             " receiving from device " + std::to_string(src);
    Message message = transport_.recv(src, ring.self_device, tag_ | subtag, what);
    if (message.payload->count != count)
        throw Error(what + ": received " + std::to_string(message.payload->count) +
                        " elements, expected " + std::to_string(count),
                    __FILE__, __LINE__);
    const Topology& topology = transport_.context().topology();
    const Flow in{src, ring.self_device};
    event.tier = topology.tier(src, ring.self_device);
    event.peer = src;
    event.bytes = bytes(count);
    ring.stream.advance_to(message.sent_at_ns + static_cast<std::int64_t>(topology.transfer_ns(
                                                    in, event.tier, bytes(count), concurrent)));
    transport_.receive_into(src, ring.self_device, tag_ | subtag, ring.device.ops(), message, data,
                            add);
    if (add) round_sum(ring.device, data, count);
    event.end_ns = ring.stream.now_ns();
}

// NCCL's double binary tree, unpipelined: the first half of the buffer goes up and down tree 0,
// the second half tree 1. Up: each rank adds its children's partial sums (in tree order) to its
// own and sends the result to its parent; down: each rank takes the root's sum from its parent
// and passes it to its children. Sends do not block, so doing tree 0's climb before tree 1's
// cannot deadlock.
void Communicator::tree_all_reduce(const Ring& ring, float* data, std::size_t count, int step) {
    const int n = ring.n;
    const BinaryTree trees[2] = {binary_tree(n, 0), binary_tree(n, 1)};
    const std::size_t begin[2] = {0, count / 2};
    const std::size_t length[2] = {count / 2, count - count / 2};
    const Topology& topology = transport_.context().topology();
    const auto rounds = all_reduce_rounds(CollectiveAlgorithm::tree, topology, member_ids_,
                                          concurrent_, bytes(count));
    const int height = trees[0].height;
    StagingGuard staging(ring.device.memory(), bytes(length[1]));
    const auto r = static_cast<std::size_t>(ring.rank);
    for (int t = 0; t < 2; ++t) {
        const BinaryTree& tree = trees[t];
        const std::uint32_t subtag = kTreeSubtag + static_cast<std::uint32_t>(t);
        for (int child : tree.children[r]) {
            const int round = height - tree.depth[static_cast<std::size_t>(child)];
            TraceEvent event =
                phase_step(true, "tree " + std::to_string(t) + " reduce", step, round, ring.stream);
            event.chunk = t;
            receive_step(ring, device_of(child), subtag, data + begin[t], length[t], true,
                         rounds[static_cast<std::size_t>(round)].flows, event);
            ring.stream.add_event(std::move(event));
        }
        if (tree.parent[r] >= 0)
            transport_.send(ring.self_device, device_of(tree.parent[r]), tag_ | subtag,
                            ring.device.ops(), data + begin[t], length[t], ring.stream.now_ns(), 0);
    }
    for (int t = 0; t < 2; ++t) {
        const BinaryTree& tree = trees[t];
        const std::uint32_t subtag = kTreeSubtag + 2 + static_cast<std::uint32_t>(t);
        if (tree.parent[r] >= 0) {
            const int round = height + tree.depth[r] - 1;
            TraceEvent event = phase_step(false, "tree " + std::to_string(t) + " broadcast", step,
                                          round, ring.stream);
            event.chunk = t;
            receive_step(ring, device_of(tree.parent[r]), subtag, data + begin[t], length[t], false,
                         rounds[static_cast<std::size_t>(round)].flows, event);
            ring.stream.add_event(std::move(event));
        }
        for (int child : tree.children[r])
            transport_.send(ring.self_device, device_of(child), tag_ | subtag, ring.device.ops(),
                            data + begin[t], length[t], ring.stream.now_ns(), 0);
    }
}

// A switch that reduces (NVLS, SHARP): every member sends its whole buffer up once and gets
// the sum back once, whatever the group's size. The switch adds the contributions in rank
// order; on the device clock the sum is ready when the last one has arrived.
// A reduction server works the same way, its reducers in the switch's place: each worker's
// 1/R of the buffer goes to each of R reducers, and the sums come back as they form.
void Communicator::switch_all_reduce(const Ring& ring, float* data, std::size_t count, int step,
                                     CollectiveAlgorithm algorithm) {
    const Topology& topology = transport_.context().topology();
    const bool reducers = algorithm == CollectiveAlgorithm::reduction_server;
    const LinkTier via = reducers ? LinkTier::inter_node : topology.switch_tier(member_ids_);
    const auto rounds =
        all_reduce_rounds(algorithm, topology, member_ids_, concurrent_, bytes(count));
    const std::string name = reducers                ? "reduction server"
                             : via == LinkTier::nvls ? "NVLS"
                                                     : "SHARP";
    // This member's slowest transfer of a round (to or from each reducer, or the switch).
    auto own_ns = [&](const Round& round, bool up) {
        const std::vector<double> per_byte = topology.ns_per_byte(round.flows);
        double slowest = 0.0;
        for (std::size_t i = 0; i < round.flows.size(); ++i)
            if ((up ? round.flows[i].src : round.flows[i].dst) == ring.self_device)
                slowest = std::max(slowest, topology.link(via).latency_us * 1e3 +
                                                static_cast<double>(round.bytes) * per_byte[i]);
        return slowest;
    };
    const std::uint64_t call = switch_calls_[static_cast<std::size_t>(ring.rank)]++;
    transport_.context().check_dead_peer(ring.self_device, ring.op, ring.call, 0);

    TraceEvent up = phase_step(true, reducers ? "to the reducers" : name + " reduce in the switch",
                               step, 0, ring.stream);
    up.bytes = bytes(count);
    up.tier = via;
    const std::int64_t arrival = up.start_ns + static_cast<std::int64_t>(own_ns(rounds[0], true));
    const std::string what = "device " + std::to_string(ring.self_device) + " " + name +
                             " all-reduce waiting for the switch";
    SwitchState& sw = *switch_;
    std::int64_t ready = 0;
    {
        std::unique_lock lock(sw.mutex);
        transport_.context().wait(
            lock, sw.cv, [&] { return sw.generation == call && sw.contributed == ring.rank; },
            what);
        if (ring.rank == 0) {
            sw.sum.assign(data, data + count);
        } else {
            for (std::size_t i = 0; i < count; ++i) sw.sum[i] += data[i];
        }
        if (dtype_ != DType::fp32 && count)
            ring.device.ops().round_to(dtype_, sw.sum.data(), count);
        sw.ready_ns = std::max(sw.ready_ns, arrival);
        ++sw.contributed;
        sw.cv.notify_all();
        transport_.context().wait(
            lock, sw.cv, [&] { return sw.generation == call && sw.contributed == ring.n; }, what);
        ready = sw.ready_ns;
    }
    ring.stream.advance_to(arrival);
    up.end_ns = ring.stream.now_ns();
    ring.stream.add_event(std::move(up));
    ring.stream.idle_until(ring.stream.now_ns(), ready, "wait for the switch's sum", step);

    TraceEvent down =
        phase_step(false, reducers ? "sums from the reducers" : name + " multicast of the sum",
                   step, 0, ring.stream);
    down.bytes = bytes(count);
    down.tier = via;
    std::copy(sw.sum.begin(), sw.sum.begin() + static_cast<std::ptrdiff_t>(count), data);
    // The sum streamed back while the uploads went on: after the last arrival, the last chunk.
    ring.stream.advance_to(ready + static_cast<std::int64_t>(own_ns(rounds[1], false)));
    down.end_ns = ring.stream.now_ns();
    ring.stream.add_event(std::move(down));
    {
        std::lock_guard lock(sw.mutex);
        if (++sw.read == ring.n) {
            sw.contributed = 0;
            sw.read = 0;
            sw.ready_ns = 0;
            ++sw.generation;
        }
    }
    sw.cv.notify_all();
}

// Reduce-scatter inside each node, all-reduce of this member's shard with the members at the
// same place in the other nodes, all-gather inside the node: only 1 / (devices per node) of the
// data crosses the slower tier.
void Communicator::hierarchical_all_reduce(const Ring& ring, float* data, std::size_t count,
                                           int step) {
    const auto [l, c] = sub_of_.at(ring.self_device);
    Communicator& local = *locals_[l];
    Communicator& cross = *crosses_[c];
    const int j = local.rank_of(ring.self_device);
    local.reduce_scatter(ring.self_device, data, count, step);
    const std::size_t b = chunk_begin(count, local.size(), j);
    const std::size_t e = chunk_end(count, local.size(), j);
    cross.all_reduce(ring.self_device, data + b, e - b, step);
    local.all_gather(ring.self_device, data, count, step);
}

void Communicator::reduce_scatter(int device_id, float* data, std::size_t count, int step,
                                  const std::string& label) {
    ring_collective(device_id, "reduce_scatter", true, false, data, count, step, label);
}

void Communicator::all_gather(int device_id, float* data, std::size_t count, int step,
                              const std::string& label) {
    ring_collective(device_id, "all_gather", false, true, data, count, step, label);
}

void Communicator::broadcast(int device_id, float* data, std::size_t count, int root_rank,
                             int step) {
    const Ring ring = ring_for(device_id, "broadcast");
    if (root_rank < 0 || root_rank >= ring.n)
        throw Error("broadcast root " + std::to_string(root_rank) + " outside a group of " +
                        std::to_string(ring.n),
                    __FILE__, __LINE__);
    const std::int64_t start = ring.stream.now_ns();
    if (ring.n > 1 && group_) {
        TraceEvent event;
        event.kind = EventKind::broadcast;
        event.label = "NCCL broadcast";
        event.step = step;
        event.bytes = bytes(count);
        event.start_ns = ring.stream.now_ns();
        group_->broadcast(ring.rank, data, count, root_rank);
        event.end_ns = ring.stream.now_ns();
        ring.stream.add_event(std::move(event));
    } else if (ring.n > 1) {
        StagingGuard staging(ring.device.memory(), bytes(count));
        // A chain along the ring: position 0 is the root, the last position only receives.
        const int position = wrap(ring.rank - root_rank, ring.n);
        transport_.context().check_dead_peer(device_id, ring.op, ring.call, position);
        const std::string label = "broadcast";
        if (position > 0) {
            Message message = transport_.recv(ring.left_device, ring.self_device, tag_,
                                              "device " + std::to_string(ring.self_device) +
                                                  " broadcast receiving from device " +
                                                  std::to_string(ring.left_device));
            TraceEvent event;
            event.kind = EventKind::broadcast;
            event.label = "broadcast recv";
            event.step = step;
            event.peer = ring.left_device;
            event.bytes = bytes(count);
            event.flow_id = message.flow_id;
            event.start_ns = ring.stream.now_ns();
            const Topology& topology = transport_.context().topology();
            event.tier = topology.tier(ring.left_device, ring.self_device);
            ring.stream.advance_to(message.sent_at_ns +
                                   static_cast<std::int64_t>(topology.alone_ns(
                                       ring.left_device, ring.self_device, event.bytes)));
            if (message.payload->count != count)
                throw Error("device " + std::to_string(ring.self_device) + " broadcast: received " +
                                std::to_string(message.payload->count) + " elements, expected " +
                                std::to_string(count),
                            __FILE__, __LINE__);
            transport_.receive_into(ring.left_device, ring.self_device, tag_, ring.device.ops(),
                                    message, data, false);
            event.end_ns = ring.stream.now_ns();
            ring.stream.add_event(std::move(event));
        }
        if (position < ring.n - 1) {
            TraceEvent event;
            event.kind = EventKind::broadcast;
            event.label = "broadcast send";
            event.step = step;
            event.peer = ring.right_device;
            event.bytes = bytes(count);
            event.flow_id = transport_.context().next_flow_id();
            event.flow_source = true;
            event.start_ns = ring.stream.now_ns();
            transport_.send(ring.self_device, ring.right_device, tag_, ring.device.ops(), data,
                            count, ring.stream.now_ns(), event.flow_id);
            event.end_ns = ring.stream.now_ns();
            ring.stream.add_event(std::move(event));
        }
    }
    record(ring, "broadcast", count, step, start, {});
}

void Communicator::all_to_all(int device_id, const float* send, float* recv, std::size_t count,
                              int step, const std::string& label) {
    const Ring ring = ring_for(device_id, "all_to_all");
    const std::size_t n = static_cast<std::size_t>(ring.n);
    if (count % n != 0)
        throw Error("all-to-all of " + std::to_string(count) + " elements over " +
                        std::to_string(ring.n) + " devices: the chunks must be equal",
                    __FILE__, __LINE__);
    const std::size_t m = count / n;
    auto chunk = [m](int rank) { return static_cast<std::size_t>(rank) * m; };
    const std::int64_t start = ring.stream.now_ns();
    ring.device.ops().copy(recv + chunk(ring.rank), send + chunk(ring.rank), m);
    std::optional<StagingGuard> staging;
    if (ring.n > 1 && !group_) staging.emplace(ring.device.memory(), bytes(m));
    for (int s = 1; s < ring.n; ++s) {
        const int to = wrap(ring.rank + s, ring.n), from = wrap(ring.rank - s, ring.n);
        transport_.context().check_dead_peer(ring.self_device, ring.op, ring.call, s - 1);
        TraceEvent event;
        event.kind = EventKind::all_to_all_step;
        event.label = label.empty() ? "all-to-all" : label;
        event.step = step;
        event.step_index = s - 1;
        event.chunk = to;
        event.peer = device_of(to);
        event.bytes = bytes(m);
        event.start_ns = ring.stream.now_ns();
        if (group_) {
            group_->exchange(ring.rank, send + chunk(to), m, to, recv + chunk(from), m, from);
        } else {
            transport_.send(ring.self_device, device_of(to), tag_, ring.device.ops(),
                            send + chunk(to), m, ring.stream.now_ns(), 0);
            const std::string what = "device " + std::to_string(ring.self_device) +
                                     " all-to-all step " + std::to_string(s - 1) +
                                     " receiving from device " + std::to_string(device_of(from));
            Message message = transport_.recv(device_of(from), ring.self_device, tag_, what);
            if (message.payload->count != m)
                throw Error(what + ": received " + std::to_string(message.payload->count) +
                                " elements, expected " + std::to_string(m),
                            __FILE__, __LINE__);
            // Step s: every member of every concurrent group sends s places on at once.
            const Topology& topology = transport_.context().topology();
            std::vector<Flow> flows;
            for (const auto& g : concurrent_)
                for (std::size_t r = 0; g.size() > 1 && r < g.size(); ++r)
                    flows.push_back({g[r], g[(r + static_cast<std::size_t>(s)) % g.size()]});
            const Flow in{device_of(from), ring.self_device};
            event.tier = topology.tier(in.src, in.dst);
            ring.stream.advance_to(
                message.sent_at_ns +
                static_cast<std::int64_t>(topology.transfer_ns(in, event.tier, bytes(m), flows)));
            transport_.receive_into(device_of(from), ring.self_device, tag_, ring.device.ops(),
                                    message, recv + chunk(from), false);
        }
        event.end_ns = ring.stream.now_ns();
        ring.stream.add_event(std::move(event));
    }
    record(ring, "all_to_all", count, step, start, label);
}

void Communicator::send(int device_id, int peer_device, const float* data, std::size_t count,
                        int step, const std::string& label, std::uint32_t subtag) {
    const Ring ring = ring_for(device_id, "send");
    transport_.context().check_dead_peer(device_id, ring.op, ring.call, 0);
    TraceEvent event;
    event.kind = EventKind::send;
    event.label = label;
    event.step = step;
    event.peer = peer_device;
    event.bytes = bytes(count);
    event.flow_source = true;
    if (group_) {
        event.flow_id = library_flow_id(device_id, peer_device, subtag, true);
        event.start_ns = ring.stream.now_ns();
        group_->send(ring.rank, data, count, rank_of(peer_device));
        event.end_ns = ring.stream.now_ns();
        ring.stream.add_event(std::move(event));
        return;
    }
    event.flow_id = transport_.context().next_flow_id();
    event.start_ns = ring.stream.now_ns();
    transport_.send(device_id, peer_device, tag_ | subtag, ring.device.ops(), data, count,
                    ring.stream.now_ns(), event.flow_id);
    event.end_ns = ring.stream.now_ns();
    ring.stream.add_event(std::move(event));
}

void Communicator::recv(int device_id, int peer_device, float* data, std::size_t count, int step,
                        const std::string& label, bool accumulate, std::uint32_t subtag) {
    const Ring ring = ring_for(device_id, "recv");
    transport_.context().check_dead_peer(device_id, ring.op, ring.call, 0);
    TraceEvent event;
    event.kind = EventKind::recv;
    event.label = label;
    event.step = step;
    event.peer = peer_device;
    event.bytes = bytes(count);
    if (group_) {
        // The library's receive also waits for the sender on the GPU: one event for both.
        event.flow_id = library_flow_id(peer_device, device_id, subtag, false);
        event.start_ns = ring.stream.now_ns();
        if (accumulate) {
            Buffer staging(ring.device.memory(), MemoryCategory::communication, count, Fill::zero,
                           dtype_);
            group_->recv(ring.rank, staging.data(), count, rank_of(peer_device));
            ring.device.ops().add(data, staging.data(), count);
            round_sum(ring.device, data, count);
        } else {
            group_->recv(ring.rank, data, count, rank_of(peer_device));
        }
        event.end_ns = ring.stream.now_ns();
        ring.stream.add_event(std::move(event));
        return;
    }
    StagingGuard staging(ring.device.memory(), bytes(count));
    const std::int64_t began = ring.stream.now_ns();
    Message message = transport_.recv(peer_device, device_id, tag_ | subtag,
                                      "device " + std::to_string(device_id) + " " + label +
                                          " receiving from device " + std::to_string(peer_device));
    if (message.payload->count != count)
        throw Error("device " + std::to_string(device_id) + " " + label + ": received " +
                        std::to_string(message.payload->count) + " elements, expected " +
                        std::to_string(count),
                    __FILE__, __LINE__);
    // Waiting for the sender is idle time; the recv itself is the transfer over the link. A
    // GPU queue waits for the sender's copy here, so its wait also shows as idle.
    ring.device.ops().wait_event(message.payload->ready);
    ring.stream.idle_until(began, message.sent_at_ns, "wait for " + label, step);
    event.flow_id = message.flow_id;
    event.start_ns = ring.stream.now_ns();
    const Topology& topology = transport_.context().topology();
    event.tier = topology.tier(peer_device, device_id);
    ring.stream.advance_to(message.sent_at_ns + static_cast<std::int64_t>(topology.alone_ns(
                                                    peer_device, device_id, event.bytes)));
    transport_.receive_into(peer_device, device_id, tag_ | subtag, ring.device.ops(), message, data,
                            accumulate);
    if (accumulate) round_sum(ring.device, data, count);
    event.end_ns = ring.stream.now_ns();
    ring.stream.add_event(std::move(event));
}

}  // namespace pd
