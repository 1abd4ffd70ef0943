// `cp`: context parallelism. Every device holds the whole model and every sequence of the
// batch, but only its part of each sequence's tokens: the input projection, LayerNorms, MLPs
// and head work on those tokens alone, and attention is ring attention (Liu et al. 2023):
// keys and values pass round the devices on the comm stream, each block's transfer overlapped
// with the attention of the block before it, combined by an online softmax. In backward the
// blocks go round again, each carrying its key and value gradients back to its owner. The
// parameter gradients, partial sums over each device's tokens, are all-reduced before the
// update. With load balancing each device holds two mirrored chunks (Llama 3's), so causal
// attention costs every device the same; without it the last device's queries see every key
// and the first device's only its own. With `dp` replicas (a dp x cp mesh), devices
// r x cp .. r x cp + cp - 1 form replica r's ring and take its slice of the batch.
// With cp_ulysses, attention is DeepSpeed-Ulysses' instead (ulysses_exchange.h): an all-to-all
// from sequence shards to head shards, attention on whole sequences of heads / cp of the heads,
// an all-to-all back; everything else is as above.
#pragma once

#include <memory>
#include <vector>

#include "model/model_executor.h"
#include "strategies/strategy.h"
#include "strategies/ulysses_exchange.h"

namespace pd {

class ContextParallel : public Strategy {
  public:
    explicit ContextParallel(RunEnvironment& env);
    ~ContextParallel() override;
    void enqueue_setup() override;
    void enqueue_step(int step) override;
    double step_loss() const override;
    std::vector<float> parameters() const override;

    // The positions of device r's tokens in every sequence (ascending).
    static std::vector<int> token_positions(int seq_len, int devices, int rank, bool balanced);

  private:
    struct Rank;
    void enqueue_ring_forward(Rank& rank, int unit, int step);
    void enqueue_ring_backward(Rank& rank, int unit, int step);
    // Comm stream, after compute's work so far: sends ring slot i on to the next device and
    // receives the previous device's block into slot i + 1 (past the last, into rank.own).
    void enqueue_ring_pass(Rank& rank, int step, int i, bool backward);
    // The compute event of ring step i, and the positions of the block it reads.
    TraceEvent block_event(const Rank& rank, EventKind kind, int unit, int step, int i,
                           std::vector<int>& kv_pos) const;
    struct UlyssesUnit;
    UlyssesUnit ulysses_unit(Rank& rank, int unit) const;
    void enqueue_ulysses_forward(Rank& rank, int unit, int step);
    void enqueue_ulysses_backward(Rank& rank, int unit, int step);
    // Comm stream, after compute's work so far: the ring's all-to-all of rank.send into
    // rank.recv; compute waits for it.
    void enqueue_ulysses_all_to_all(Rank& rank, int step, const std::string& label);

    RunEnvironment& env_;
    ModelShape local_shape_;              // seq_len = this device's tokens of each sequence
    int dp_ = 1, cp_ = 1;                 // data-parallel replicas x devices in each ring
    std::unique_ptr<Communicator> comm_;  // all devices: the gradients
    std::vector<std::unique_ptr<Communicator>> rings_;
    std::vector<std::unique_ptr<Rank>> ranks_;
    std::unique_ptr<UlyssesExchange> ulysses_;  // with cp_ulysses: one ring's layouts
};

}  // namespace pd
