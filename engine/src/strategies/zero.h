#pragma once

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "strategies/replica.h"

namespace pd {

// ZeRO data parallelism over N devices. Each bucket of the flat parameter vector is split in
// N chunks (the communicator's chunking); device r owns chunk r of every bucket.
//   zero1: optimizer state sharded; gradients all-reduced; each device updates its chunks,
//          then parameters are all-gathered.
//   zero2: also gradients: each bucket is reduce-scattered as backward produces it and only
//          the owned chunk is kept; the full gradient lives only during backward.
//   zero3: also parameters: each unit's parameters are all-gathered just before its forward
//          and its backward and freed after; the next unit's all-gather is prefetched on the
//          comm stream; gradients are reduce-scattered per unit.
// Hybrid sharding (zero2/zero3, RunConfig::hybrid_shard): N is the devices of one node; each
// node holds a full set of shards, and each shard's reduced gradients are all-reduced with the
// same shard on the other nodes (FSDP's HYBRID_SHARD).
class Zero : public Strategy {
  public:
    Zero(RunEnvironment& env, int level);
    ~Zero() override;
    void enqueue_setup() override;
    void enqueue_step(int step) override;
    double step_loss() const override;
    std::vector<float> parameters() const override;
    std::vector<float> master_parameters() const override;
    std::vector<StateSlice> state_slices() override;

  private:
    struct Rank;
    void enqueue_step_stage12(Rank& rank, int step);
    void enqueue_step_stage3(Rank& rank, int step);
    void enqueue_shard_update(Rank& rank, int step, bool full_grads);
    void enqueue_offloaded_update(Rank& rank, int step, bool full_grads);
    void enqueue_parameter_fetch(Rank& rank, int u, int step);
    void enqueue_host_copy(Device& dev, int step, std::string label, std::size_t bytes,
                           LinkTier tier, const LinkModel& link, std::function<void()> copy);
    static MemoryTracker& offload_memory(Device& dev, OffloadDevice where);
    // reshard_to: after unit u's forward, this rank's slice of its gathered parameters.
    void keep_secondary(Rank& rank, int u);
    // quantized_gradients (qgZ), comm stream: unit u's gradients to their owners by an int8
    // all-to-all, summed into this rank's part (in place of the reduce-scatter).
    void quantized_gradient_exchange(Rank& rank, int u, int step);
    std::size_t own_begin(const GradBucket& b, int r) const;
    std::size_t own_end(const GradBucket& b, int r) const;

    RunEnvironment& env_;
    int level_;
    int replicas_;  // hybrid sharding: nodes, each holding one full set of shards; else 1
    int n_;         // devices a bucket is sharded over
    std::vector<GradBucket> buckets_;
    std::vector<std::size_t> shard_offset_;  // per bucket, per rank: where its chunk sits
    std::vector<std::unique_ptr<Communicator>> shards_;  // one per shard group
    std::vector<std::unique_ptr<Communicator>> across_;  // hybrid: one per shard position
    // zero3 with fp32_reduce (MixedPrecisionPolicy): the shard groups again, moving fp32.
    std::vector<std::unique_ptr<Communicator>> fp32_shards_;
    // zero3 with reshard_to k: groups of k consecutive devices for the backward all-gathers.
    std::vector<std::unique_ptr<Communicator>> reshard_groups_;
    // zero3 with quantized_weights (qwZ) or quantized_gradients (qgZ): the shard groups' int8
    // parameter all-gathers and gradient all-to-alls.
    std::vector<std::unique_ptr<Communicator>> int8_shards_;
    DType shard_dtype_;  // the parameter and gradient shards' type
    std::vector<std::unique_ptr<Rank>> ranks_;
};

}  // namespace pd
