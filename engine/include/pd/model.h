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
std::vector<float> initial_parameters(const ModelShape& shape, std::uint64_t seed);

// A seeded teacher-student task: inputs are Gaussian, labels are the argmax of a fixed random
// two-layer teacher. Sample i of step s is the same whichever device draws it.
class SyntheticTask {
  public:
    SyntheticTask(const ModelShape& shape, std::uint64_t seed);
    // Writes `count` samples starting at global index `first` of `step`: x is [count,
    // input_dim], labels has `count` entries.
    void batch(int step, int first, int count, float* x, int* labels) const;

  private:
    static constexpr int kTeacherHidden = 32;
    ModelShape shape_;
    std::uint64_t seed_;
    std::vector<float> teacher_w1_;  // [input_dim, kTeacherHidden]
    std::vector<float> teacher_w2_;  // [kTeacherHidden, classes]
};

}  // namespace pd
