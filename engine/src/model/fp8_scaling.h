// Transformer Engine's delayed scaling (DelayedScaling) for the FP8 products of one device's
// MLP blocks: each FP8 tensor has its own scale and amax history (TE's fp8_meta).
//
// A block has four forward FP8 tensors (the first product's input and weight, the second's
// input and weight, E4M3) and two backward ones (each product's output gradient: E5M2 under
// HYBRID, E4M3 under the E4M3 format). A cast uses the tensor's current scale and writes the
// tensor's amax into its history's slot 0. After each forward pass (each backward pass) the
// forward (backward) tensors' scales are updated as TE's amax_and_scale_update does:
//   amax  = max of the history (amax_compute_algo "max") or its slot 0 ("most_recent");
//   scale = fp8_max / amax / 2^margin, kept as it was where amax is 0 or not finite;
//   the history rolled one slot back (slot 0 takes slot 1's, the current amax moves to the
//   end) and slot 0 zeroed for the next pass.
// Every scale starts at 1 with an empty (zero) history, so the first pass casts unscaled.
// Amaxes are this device's own (TE's reduce_amax=False: no all-reduce over data-parallel
// replicas).
#pragma once

#include <array>
#include <vector>

#include "backend/device_ops.h"
#include "pd/fp8.h"

namespace pd {

enum class Fp8Role : int { input1, weight1, input2, weight2, grad_output2, grad_output1 };
inline constexpr int kFp8Roles = 6;

// What the casts of one step did, forward tensors and gradients apart.
struct Fp8StepStats {
    Fp8CastStats forward, gradients;
    float min_scale = 0, max_scale = 0;  // over the block tensors' scales this step's casts used
};

class Fp8Scaling {
  public:
    Fp8Scaling(const Fp8Recipe& recipe, int units);

    const Fp8Recipe& recipe() const { return recipe_; }
    static bool is_gradient(Fp8Role role) { return role >= Fp8Role::grad_output2; }
    Fp8Encoding encoding(Fp8Role role) const {
        return is_gradient(role) ? recipe_.gradient_encoding() : recipe_.forward_encoding();
    }

    // Casts `src` into `dst` with the tensor's current scale, records its amax and the
    // cast's counts; returns the scale used.
    float cast(DeviceOps& ops, int unit, Fp8Role role, const float* src, float* dst,
               std::size_t count);
    // The same cast with a given scale, nothing recorded (backward re-casting what forward
    // cast: the same FP8 values TE keeps from forward).
    static void recast(DeviceOps& ops, Fp8Encoding encoding, float scale, const float* src,
                       float* dst, std::size_t count);
    // amax_and_scale_update for the forward (or the backward) tensors.
    void update(bool forward);
    // The counts since the last take, then cleared.
    Fp8StepStats take_step_stats();

    // For tests: a tensor's scale and history.
    float scale(int unit, Fp8Role role) const { return meta(unit, role).scale; }
    const std::vector<float>& history(int unit, Fp8Role role) const {
        return meta(unit, role).history;
    }

  private:
    struct Meta {
        float scale = 1.0f;
        std::vector<float> history;  // amax_history_len slots, slot 0 the current pass's
        bool cast = false;           // cast since the last stats were taken
    };
    Meta& meta(int unit, Fp8Role role) {
        return metas_[static_cast<std::size_t>(unit) * kFp8Roles + static_cast<std::size_t>(role)];
    }
    const Meta& meta(int unit, Fp8Role role) const {
        return metas_[static_cast<std::size_t>(unit) * kFp8Roles + static_cast<std::size_t>(role)];
    }

    Fp8Recipe recipe_;
    int units_;
    std::vector<Meta> metas_;
    Fp8StepStats stats_;
};

void add_to(Fp8CastStats& total, const Fp8CastStats& one);
void add_to(Fp8StepStats& total, const Fp8StepStats& one);

}  // namespace pd
