// The floating-point work of one training step, counted from the model's own products, and the
// utilisation figures read from it: model FLOPs utilisation (MFU, PaLM's Appendix B) and
// hardware FLOPs utilisation (HFU).
#pragma once

#include <optional>

#include "pd/fma_peak.h"
#include "pd/run_config.h"

namespace pd {

// FLOPs of one optimizer step of the whole job (every device together; a multiply-add counts
// 2). Every matrix product of every unit is counted for every token of the global batch:
//   forward, per token: input projection 2 x input_dim x h; MLP block (or a transformer's MLP)
//   2 x (h x 4h + 4h x h) = 16 h^2; transformer attention 2 x (h x 3h + h x h) = 8 h^2 for
//   its projections plus 4 x h x seq_len for the scores and their weighted sum (the square
//   counted whole, causal or not, as PaLM's 12 L H Q T); head 2 x h x classes.
//   backward: twice each product's forward (the input and the weight gradient), but the input
//   projection's once (its input needs no gradient).
// model: forward and backward, what MFU counts. hardware: what ran, adding what activation
// recomputation runs again (full: each MLP block's first product, 8 h^2 a token; selective
// re-runs the GELU alone, no product), what HFU counts. Element-wise work (GELU, LayerNorm,
// softmax, the optimizer) is left out of both, as PaLM and Megatron leave it out.
// six_nd: the 6 N D estimate with N the parameter count and D the step's tokens.
struct StepFlops {
    double model = 0;
    double hardware = 0;
    double six_nd = 0;
    double tokens = 0;      // D: tokens of the step's global batch
    double parameters = 0;  // N
};

// None for a mixture of experts (its products depend on the routing) and for a parameter
// server's asynchronous steps.
std::optional<StepFlops> step_flops(const RunConfig& config);

// Utilisation of `flops` per step over `step_time_s` on `devices` devices of `peak_gflops`
// each: flops / (step time x devices x peak).
double utilisation(double flops, double step_time_s, int devices, double peak_gflops);

}  // namespace pd
