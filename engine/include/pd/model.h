// The model every strategy trains: an input projection, `layers` blocks and a classifier head
// with softmax cross-entropy. Parameters live in one flat float array whose layout is shared by
// all strategies, so shards, buckets and comparisons are plain ranges.
//
// mlp: each block is a residual MLP (a transformer's feed-forward block: Linear h->4h, GELU,
// Linear 4h->h, plus the residual) on independent samples.
// transformer: each block is a pre-LayerNorm transformer block on sequences of seq_len tokens,
// as two units: attention, x + Wo·attn(LN1(x)) (causal multi-head self-attention over heads
// of h / heads), then MLP, x + W2·gelu(W1·LN2(x)). No position embedding (a causal model
// tells positions apart by what it can attend to) and no final LayerNorm. The input
// projection and the head act on every token; the loss is the mean over all tokens.
// With experts (a mixture of experts, Switch Transformer / GShard) each block's MLP unit is a
// MoE unit: x + sum over the token's top-k experts e of g_e · MLP_e(LN2(x)), g = the router's
// softmax over LN2(x)·Wr (not renormalised over the top k, as Switch's top-1 and DeepSeek-V2's
// top-k gates). Each expert takes at most `expert_capacity()` tokens of each sequence, first
// come first served in GShard's order (every token's first choice, then the second choices);
// a token an expert has no room for is dropped from that expert. The capacity is counted per
// sequence so that every strategy, whatever slice of the batch a device holds, routes alike.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace pd {

struct RunConfig;

// What each unit of the model is (see ModelShape::unit_kind).
enum class UnitKind { input, mlp, attention, moe, head };

struct ModelShape {
    int input_dim = 32;
    int width = 128;
    int layers = 4;
    int classes = 10;
    bool transformer = false;
    int heads = 1;    // transformer only
    int seq_len = 1;  // tokens per sample: 1 for the MLP
    int experts = 0;  // transformer: 0 = dense MLPs; else each MLP is a mixture of experts
    int top_k = 1;
    double capacity_factor = 1.25;
    double aux_loss_weight = 0.01;
    bool moe() const { return transformer && experts > 0; }
    // Tokens of one sequence each expert has room for: ceil(factor x top_k x seq_len /
    // experts), at least 1 and at most seq_len (a token picks an expert once).
    int expert_capacity() const;
    int hidden() const { return 4 * width; }
    int head_dim() const { return width / heads; }
    // Tokens in `samples` samples: the rows every linear layer sees.
    int tokens(int samples) const { return samples * seq_len; }
    // Units 0 and units() - 1 are the input projection and the head; between them one unit
    // per MLP block, or two per transformer block (attention, then MLP).
    int units() const { return (transformer ? 2 * layers : layers) + 2; }
    UnitKind unit_kind(int unit) const;
    // The block a unit belongs to (0-based; -1 for the input projection and the head).
    int block_of(int unit) const;
    // How the timeline names the unit: "input", "block", "attention", "MLP", "MoE", "head".
    const char* unit_name(int unit) const;
};

// The shape a run's config asks for.
ModelShape model_shape(const RunConfig& config);

struct TensorSpec {
    std::string name;  // e.g. "block2.w1"
    std::size_t offset = 0;
    std::size_t count = 0;
    int rows = 0;  // weights are [rows, cols] row-major (in x out); biases have rows = 1
    int cols = 0;
    int unit = 0;     // 0 = input projection, 1..units-2 = blocks (or sublayers), last = head
    int expert = -1;  // a MoE expert's tensor: which expert
};

// Units are the model's pieces in forward order: unit 0 is the input projection, then the
// blocks (MLP: one unit each; transformer: attention and MLP units), and last the head.
//
// Tensors of each unit, in the order its code indexes them:
//   input:      w [input_dim, h], b
//   mlp block:  w1 [h, 4h], b1, w2 [4h, h], b2
//   attention:  ln1.g, ln1.b, wq [h, h], bq, wk (no bias), wv, bv, wo [h, h], bo
//   transformer MLP: ln2.g, ln2.b, w1, b1, w2, b2
//   MoE:        ln2.g, ln2.b, router [h, experts], then per expert e: w1, b1, w2, b2
//   head:       w [h, classes], b
struct ParamLayout {
    std::vector<TensorSpec> tensors;
    std::size_t total = 0;
    int units = 0;

    static ParamLayout build(const ModelShape& shape);
    // Parameter range [begin, end) of one unit.
    std::size_t unit_begin(int unit) const;
    std::size_t unit_end(int unit) const;
};

// The activation memory one micro-batch of `samples` sequences keeps for backward on one
// device of a transformer, after Korthikanti et al., "Reducing Activation Recomputation in
// Large Transformer Models" (2022), whose per-block figure in 16-bit with dropout is
// s·b·h·(34 + 5·a·s/h) bytes (tensor parallel: s·b·h·(10 + 24/t + 5·a·s/(h·t)); with sequence
// parallelism all of it over t). This engine keeps fp32 and has no dropout, so per block:
//   attention: LN input and output 8sbh, q, k, v and the attention output 16sbh/t, the
//              probabilities 4as²b/t;  MLP: LN input and output 8sbh, GELU input and output
//              32sbh/t;  both LayerNorms' mean and rstd 16sb,
// that is s·b·h·(16 + 48/t + 4·a·s/(h·t)) + 16·s·b bytes (sequence parallel: everything over
// t, s·b·h·(64 + 4·a·s/h)/t + 16·s·b/t). Outside the blocks: the inputs (4·s·b·input_dim), the
// head's input (4sbh) and its logits' gradient (4·s·b·classes), over t under sequence
// parallelism. s·b = tokens, a = heads.
struct ActivationEstimate {
    double per_block = 0;
    double outside_blocks = 0;
    double total(int blocks) const { return per_block * blocks + outside_blocks; }
};
ActivationEstimate transformer_activation_bytes(const ModelShape& shape, int samples, int tp,
                                                bool sequence_parallel);

// Deterministic initial parameters: the same seed gives the same weights on every strategy.
// Weights are fan-in scaled normals except the classifier head, which starts at zero;
// biases start at zero and LayerNorm gains at one.
std::vector<float> initial_parameters(const ModelShape& shape, std::uint64_t seed);

// A seeded teacher-student task the student can learn in the 2-6 steps a card runs: each
// class has a fixed random prototype (entries N(0, kPrototypeScale^2)); a sample is a uniform
// label and its prototype plus unit Gaussian noise. The teacher is therefore linear with a wide
// margin (two prototypes lie about kPrototypeScale * sqrt(2 * input_dim) noise deviations
// apart), so even the zero-initialised head's first update, a step along the class means of
// the body's features, lowers the loss on the next, fresh batch; a random nonlinear teacher
// (what this used to be) lowered the loss by only 2-8% in six AdamW steps, and not steadily.
// Samples are fresh every step (no dataset is cycled), so a falling loss is generalisation, not
// memory. Sample i of step s is the same whichever device draws it.
//
// transformer: a sample is a sequence of seq_len tokens that share one uniform label; each
// token is the label's prototype plus Gaussian noise of kSequenceNoise deviations, so one token
// alone is ambiguous and a token that attends to the earlier ones can average the noise away.
// Every token is labelled (next-token style: a loss at every position).
class SyntheticTask {
  public:
    // `input_scale` multiplies every input value (RunConfig::input_scale; 1: as drawn).
    SyntheticTask(const ModelShape& shape, std::uint64_t seed, float input_scale = 1.0f);
    // Writes `count` samples starting at global index `first` of `step`: x is [count x
    // seq_len, input_dim], labels has count x seq_len entries (one per token).
    void batch(int step, int first, int count, float* x, int* labels) const;
    // Example `id` of a dataset (pd/dataset.h): the same sample whenever it is read.
    void example(int id, float* x, int* labels) const;

    static constexpr double kPrototypeScale = 3.0;
    static constexpr double kSequenceNoise = 3.0;

  private:
    void draw(std::uint64_t sample_seed, float* x, int* labels) const;

    ModelShape shape_;
    std::uint64_t seed_;
    float input_scale_;
    std::vector<float> prototypes_;  // [classes, input_dim]
};

}  // namespace pd
