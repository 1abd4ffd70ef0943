// Collectives over a group of devices, written as explicit ring steps so every step is a
// traced event (phase, step index, chunk, peer, bytes). Any group size >= 1 and any element
// count: chunk i of a buffer is [i*count/n, (i+1)*count/n), so chunks may be uneven or empty.
//
// Each call runs on the calling device's current stream thread and blocks until its part is
// done. All members must issue the same collectives in the same order, from one stream each.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <tuple>
#include <vector>

#include "pd/device.h"
#include "pd/topology.h"
#include "pd/transport.h"

namespace pd {

class GroupCollectives;

class Communicator {
  public:
    // `members` are the devices of the group in ring order; `group_id` keeps this group's
    // messages apart from other groups' on the same device pairs.
    // When the members' backend has a library for them (NCCL, each member its own GPU), the
    // same steps run through it; otherwise data moves through `transport`.
    // `dtype` is the element type the group moves: every byte count it reports (trace
    // events, collective records, the device clock's link time, staging memory) is
    // bytes_of(dtype) per element, and under bf16 every sum it forms (each reduce-scatter
    // step, an accumulating receive) is rounded to bf16 where it is stored, as a bf16 ring
    // reduction does.
    Communicator(Transport& transport, std::vector<Device*> members, std::uint32_t group_id,
                 DType dtype = DType::fp32);
    ~Communicator();
    bool uses_library() const { return group_ != nullptr; }

    // The groups that run the same collectives at the same time as this one (every group of
    // a mesh axis; this group among them, device ids in ring order): their transfers share
    // ports and NICs with this group's on the device clock (pd/topology.h). Default: this
    // group alone. Call before the run's streams start.
    void set_concurrent_groups(std::vector<std::vector<int>> groups);
    DType dtype() const { return dtype_; }

    int size() const { return static_cast<int>(members_.size()); }
    int rank_of(int device_id) const;  // throws if not a member
    int device_of(int rank) const { return members_[static_cast<std::size_t>(rank)]->id(); }

    static std::size_t chunk_begin(std::size_t count, int n, int chunk);
    static std::size_t chunk_end(std::size_t count, int n, int chunk) {
        return chunk_begin(count, n, chunk + 1);
    }

    // `label` names the call in the trace's collective records ("tp forward block 2").
    // In place: every member ends with the element-wise sum. The algorithm is the run's
    // allreduce_algorithm (ring unless set; pd/cluster.h), chosen per call as
    // choose_all_reduce says; each one's summation order is its own (ring: along the ring;
    // tree: children into parents; hierarchical: in the node, then across; in-network: in
    // rank order), so sums agree exactly on inputs whose every partial sum is exact.
    void all_reduce(int device_id, float* data, std::size_t count, int step,
                    const std::string& label = {});
    // In place: member r ends with the sum in chunk r; other chunks are scratch.
    void reduce_scatter(int device_id, float* data, std::size_t count, int step,
                        const std::string& label = {});
    // In place: member r contributes chunk r; every member ends with all chunks.
    void all_gather(int device_id, float* data, std::size_t count, int step,
                    const std::string& label = {});
    // Root's data ends on every member (a chain along the ring).
    void broadcast(int device_id, float* data, std::size_t count, int root_rank, int step);
    // `send` holds one chunk of count / n elements per member, in rank order; member r's chunk
    // for member j ends as chunk r of j's `recv` (its own chunk is copied). n - 1 pairwise
    // exchanges, each a traced step: at step s member r sends to r + s and receives from r - s
    // (the pairwise schedule of NCCL's and MPI's all-to-all). `count` must divide by n.
    void all_to_all(int device_id, const float* send, float* recv, std::size_t count, int step,
                    const std::string& label = {});
    // Point to point. `subtag` keeps independent message streams between the same two devices
    // apart (e.g. a pipeline's activations and gradients), so each stays in order.
    void send(int device_id, int peer_device, const float* data, std::size_t count, int step,
              const std::string& label, std::uint32_t subtag = 0);
    void recv(int device_id, int peer_device, float* data, std::size_t count, int step,
              const std::string& label, bool accumulate = false, std::uint32_t subtag = 0);

  private:
    enum class Combine { copy, add };
    struct Ring;
    struct SwitchState;
    struct Choice;
    // A sub-group of a hierarchical all-reduce: runs rings only and records no calls of its
    // own (its steps are the parent call's).
    Communicator(Transport& transport, std::vector<Device*> members, std::uint32_t group_id,
                 DType dtype, bool sub_group);
    const Choice& choice_for(std::size_t count);
    void tree_all_reduce(const Ring& ring, float* data, std::size_t count, int step);
    void switch_all_reduce(const Ring& ring, float* data, std::size_t count, int step,
                           CollectiveAlgorithm algorithm);
    void hierarchical_all_reduce(const Ring& ring, float* data, std::size_t count, int step);
    // Receives `count` elements from `src` under `subtag` into `data` (adding or copying), the
    // device clock advanced by the transfer's modelled time beside `concurrent`.
    void receive_step(const Ring& ring, int src, std::uint32_t subtag, float* data,
                      std::size_t count, bool add, const std::vector<Flow>& concurrent,
                      TraceEvent& event);
    void rebuild_flows();
    void reduce_scatter_steps(const Ring& ring, float* data, std::size_t count, int step,
                              int chunk_offset);
    void all_gather_steps(const Ring& ring, float* data, std::size_t count, int step,
                          int chunk_offset);
    // One ring step: send [send_chunk] right, receive [recv_chunk] from the left, combine.
    void ring_step(const Ring& ring, float* data, std::size_t count, int send_chunk, int recv_chunk,
                   Combine combine, EventKind kind, int step_index, int step);
    Ring ring_for(int device_id, const char* op) const;
    // Reduce-scatter steps, then (or only) all-gather steps, recorded as one call of `op`.
    void ring_collective(int device_id, const char* op, bool reduce, bool gather, float* data,
                         std::size_t count, int step, const std::string& label);
    void record(const Ring& ring, const char* op, std::size_t count, int step,
                std::int64_t start_ns, const std::string& label,
                const std::string& algorithm = "ring", const std::string& choice = {}) const;

    // The library path (see uses_library).
    void library_ring_step(const Ring& ring, float* data, std::size_t count, int send_chunk,
                           int recv_chunk, Combine combine, TraceEvent& event);
    bool library_native_call(const Ring& ring, const char* op, float* data, std::size_t count,
                             int step);
    // Flow ids pairing the n-th send on a channel with its n-th receive, when no message
    // carries one from sender to receiver.
    std::uint64_t library_flow_id(int src, int dst, std::uint32_t subtag, bool sending);

    std::size_t bytes(std::size_t count) const { return count * bytes_of(dtype_); }
    // After a sum was stored in `data` (bf16 only).
    void round_sum(Device& device, float* data, std::size_t count) const;

    Transport& transport_;
    std::vector<Device*> members_;
    std::vector<int> member_ids_;
    bool sub_group_ = false;
    std::vector<std::vector<int>> concurrent_;  // device ids, this group's among them
    std::vector<Flow> ring_flows_;              // every concurrent group's ring, one step
    std::map<int, double> ring_ns_per_byte_;    // receiving device -> its incoming flow's cost
    // Hierarchical all-reduce: the group's members per node and per position across nodes.
    std::vector<std::unique_ptr<Communicator>> locals_, crosses_;
    std::map<int, std::pair<std::size_t, std::size_t>> sub_of_;  // device -> (local, cross)
    std::unique_ptr<SwitchState> switch_;
    std::vector<std::uint64_t> switch_calls_;  // per rank: in-network calls made
    std::mutex choice_mutex_;
    std::map<std::size_t, std::unique_ptr<Choice>> choices_;  // by element count
    std::uint64_t tag_;
    DType dtype_;
    std::unique_ptr<GroupCollectives> group_;
    std::mutex flow_mutex_;
    std::map<std::tuple<int, int, std::uint32_t>, std::uint64_t> sends_, recvs_;
    std::map<std::tuple<int, int, std::uint32_t, std::uint64_t>, std::uint64_t> flows_;
};

}  // namespace pd
