// Tensor indices within a transformer unit, in ParamLayout::build's order, shared by every
// file that indexes them (transformer_units.cpp, ring_attention.cpp, the executor).
#pragma once

namespace pd::unit_tensors {

enum Attention { ln_g, ln_b, wq, bq, wk, wv, bv, wo, bo };  // keys have no bias
enum TransformerMlp { mlp_ln_g, mlp_ln_b, w1, b1, w2, b2 };
// A MoE unit: then expert e's w1, b1, w2, b2 at moe_expert0 + 4 x (e's local index) + 0..3.
enum Moe { moe_ln_g, moe_ln_b, router, moe_expert0 };
enum Expert { expert_w1, expert_b1, expert_w2, expert_b2 };
// The residual MLP model's block.
enum MlpBlock { block_w1, block_b1, block_w2, block_b2 };

}  // namespace pd::unit_tensors
