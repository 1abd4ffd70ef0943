// DDP's powerSGD_hook (torch.distributed.algorithms.ddp_comm_hooks.powerSGD_hook; Vogels et al.,
// "PowerSGD: Practical Low-Rank Gradient Compression for Distributed Optimization", 2019) for
// the dp strategy: low-rank all-reduces in place of a bucket's plain one.
#pragma once

#include <cstdint>
#include <vector>

#include "pd/communicator.h"
#include "pd/device.h"
#include "pd/model.h"
#include "pd/run_config.h"
#include "strategies/replica.h"

namespace pd {

// One gradient tensor of a bucket as torch's hook sees it: the matrix M = tensor.view(shape[0],
// -1) of a torch Linear weight [out, in], which is the engine's [in, out] weight transposed:
// n = out rows, m = in columns. Vectors (biases) and matrices that would not shrink
// min_compression_rate times are all-reduced whole.
struct PowerSgdTensor {
    std::size_t offset = 0;  // in the flat gradient
    std::size_t count = 0;
    int n = 0, m = 0;
    int rank = 0;  // min(n, m, matrix rank)
    bool compress = false;
};

struct PowerSgdBucket {
    std::size_t begin = 0, end = 0;
    std::vector<PowerSgdTensor> tensors;  // ascending offset
    std::size_t p_count = 0, q_count = 0, uncompressed_count = 0;
};

std::vector<PowerSgdBucket> powersgd_buckets(const ParamLayout& layout,
                                             const std::vector<GradBucket>& buckets,
                                             const RunConfig::PowerSgd& settings);

// The standard normal values a step draws for a compressed tensor's Q before orthogonalising it
// (torch draws them from its own generator; the engine from its seeded one, the same on every
// replica, and the --dump-dir writes them for a replay).
void powersgd_random_q(std::uint64_t seed, int step, int bucket, int tensor, float* q,
                       std::size_t count);

// The columns of a row-major rows x cols matrix made orthonormal in place, as torch's
// _orthogonalize: Gram-Schmidt (epsilon 0) for 1 or 2 columns, else the Q of a Householder QR
// (LAPACK's, in double here), which stays orthogonal where the columns are nearly dependent
// (a low-rank gradient times a wider Q).
void orthogonalize_columns(float* a, int rows, int cols);

// One replica's hook state: error feedback and the warm-start Qs, per bucket.
class PowerSgdReplica {
  public:
    PowerSgdReplica(const RunConfig& config, const std::vector<PowerSgdBucket>& buckets,
                    Device& device);
    // On the device's comm stream: bucket `b` of `grads` (the engine's gradients, already
    // divided by the replica count) all-reduced as the hook does it, in place.
    void reduce(Communicator& comm, int b, float* grads, int step);

  private:
    struct State {
        Buffer error, q, p, staging, input;
        bool has_q = false, has_error = false;
    };
    const RunConfig& config_;
    const std::vector<PowerSgdBucket>& buckets_;
    Device& device_;
    std::vector<State> state_;
};

}  // namespace pd
