#pragma once

#include <memory>
#include <vector>

#include "model/model_executor.h"
#include "strategies/device_mesh.h"
#include "strategies/pipeline_schedule.h"
#include "strategies/strategy.h"

namespace pd {

// `pipeline`, `tp` and `hybrid`: a dp x pp x tp mesh. The model's units are split into
// pp x v chunks balanced by parameter count (device at stage s holds chunks s, s + pp, ...);
// each block inside a chunk is sharded over the tp group (Megatron column/row split, one
// all-reduce in forward and one in backward); activations and their gradients cross stages
// with send/recv; each dp replica takes a slice of the batch in micro-batches, accumulates
// gradients, and all-reduces them over its dp group before one optimizer step.
class MeshParallel : public Strategy {
  public:
    explicit MeshParallel(RunEnvironment& env);
    ~MeshParallel() override;
    void enqueue_setup() override;
    void enqueue_step(int step) override;
    double step_loss() const override;
    std::vector<float> parameters() const override;
    std::vector<float> master_parameters() const override;

    // First unit of each global chunk, then the end (for reporting stage boundaries).
    const std::vector<int>& chunk_bounds() const { return bounds_; }

  private:
    struct Chunk;
    struct Rank;
    void enqueue_forward(Rank& rank, Chunk& chunk, int step, int mb);
    // `pass`: the whole backward, or (zero-bubble schedules) B or W alone.
    void enqueue_backward(Rank& rank, Chunk& chunk, int step, int mb, PipelinePass pass);
    void enqueue_weight_grad(Rank& rank, Chunk& chunk, int step, int mb);
    // The chunk `global` of this rank's pipeline row, when this rank holds it (ZB-V's turn).
    Chunk* local_chunk(Rank& rank, int global);
    // Point to point between neighbouring chunks on the comm stream; compute waits for a
    // receive, a send waits for compute.
    void enqueue_receive(Rank& rank, Chunk& chunk, int step, int mb, int from_chunk,
                         bool activations);
    void enqueue_send(Rank& rank, Chunk& chunk, int step, int mb, int to_chunk, bool activations);
    // Tensor parallelism between a block's two phases: all-reduce the partial result over
    // the tp group on the comm stream, then finish the block on the compute stream.
    enum class TpPhase { forward, backward, input_grad };
    // (Sequence parallelism: a reduce-scatter instead, leaving each device its tokens' sum.)
    void enqueue_tp_sum(Rank& rank, Chunk& chunk, TraceEvent ev, TpPhase phase);
    // Sequence parallelism before a block's phase a: forward, the LayerNorm on this device's
    // tokens and an all-gather of its output; backward, all-gathers of the output gradient
    // and of the kept LayerNorm output shard.
    void enqueue_sp_gather(Rank& rank, Chunk& chunk, TraceEvent ev, bool forward);
    // Sequence parallelism after backward: sums the gradients of the parameters each device
    // applied to its own tokens only (LayerNorms, input projection, head) over the tp group.
    void enqueue_sp_gradient_sum(Rank& rank, int step);
    // Runs `body` on the comm stream after the compute stream's work so far, and makes later
    // compute work wait for it.
    void on_comm_between(Rank& rank, int step, std::function<void()> body);

    RunEnvironment& env_;
    std::unique_ptr<DeviceMesh> mesh_;
    int pp_, tp_, dp_, v_, m_, rows_per_mb_;
    bool sp_ = false;  // sequence parallelism
    std::vector<int> bounds_;
    std::vector<std::vector<PipelineOp>> program_;  // each stage's ops, the same every step
    std::vector<std::unique_ptr<Rank>> ranks_;
};

}  // namespace pd
