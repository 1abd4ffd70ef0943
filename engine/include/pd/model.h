// The model every strategy trains: an input projection, `layers` residual MLP blocks (a
// transformer's feed-forward block: Linear h->4h, GELU, Linear 4h->h, plus the residual) and a
// classifier head with softmax cross-entropy. Parameters live in one flat float array whose
// layout is shared by all strategies, so shards, buckets and comparisons are plain ranges.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace pd {

struct ModelShape {
    int input_dim = 32;
    int width = 128;
    int layers = 4;
    int classes = 10;
    int hidden() const { return 4 * width; }
};

struct TensorSpec {
    std::string name;  // e.g. "block2.w1"
    std::size_t offset = 0;
    std::size_t count = 0;
    int rows = 0;  // weights are [rows, cols] row-major (in x out); biases have rows = 1
    int cols = 0;
    int unit = 0;  // 0 = input projection, 1..L = blocks, L+1 = head
};

// Units are the model's pieces in forward order: unit 0 is the input projection, units
// 1..L are the blocks, unit L+1 is the head.
struct ParamLayout {
    std::vector<TensorSpec> tensors;
    std::size_t total = 0;
    int units = 0;

    static ParamLayout build(const ModelShape& shape);
    // Parameter range [begin, end) of one unit.
    std::size_t unit_begin(int unit) const;
    std::size_t unit_end(int unit) const;
};

// Deterministic initial parameters: the same seed gives the same weights on every strategy.
// Weights are fan-in scaled normals except the classifier head, which starts at zero.
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
class SyntheticTask {
  public:
    SyntheticTask(const ModelShape& shape, std::uint64_t seed);
    // Writes `count` samples starting at global index `first` of `step`: x is [count,
    // input_dim], labels has `count` entries.
    void batch(int step, int first, int count, float* x, int* labels) const;

    static constexpr double kPrototypeScale = 3.0;

  private:
    ModelShape shape_;
    std::uint64_t seed_;
    std::vector<float> prototypes_;  // [classes, input_dim]
};

}  // namespace pd
