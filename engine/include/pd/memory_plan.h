// What a run will need of memory before it allocates any: the analytic bytes of parameters,
// gradients and optimizer state on each device, and what the host must hold (the initial
// parameters, and on the CPU backend every device's memory, which is the host's). A run that
// cannot fit in the host's memory is refused before it starts, by name and figure, instead of
// dying on std::bad_alloc or the kernel's OOM killer part-way through.
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <vector>

#include "pd/run_config.h"

namespace pd {

// Analytic bytes per device of parameters, gradients and optimizer state at rest: the ZeRO
// paper's 2P + 2P + KP for mixed precision and 4P + 4P + KP in fp32, sharded by the strategy.
struct ModelStateBytes {
    double parameters = 0, gradients = 0, optimizer_state = 0;
    double total() const { return parameters + gradients + optimizer_state; }
};
std::vector<ModelStateBytes> analytic_model_state(const RunConfig& config);
// ZeRO-Offload (offload_optimizer cpu): what each device keeps in host memory (its shard's
// parameters in the run's dtype, its gradients in fp32, its optimizer state; in zero1-3 the
// shards divide by the devices); all zero without offload. ZeRO-Infinity moves the optimizer
// state (offload_optimizer nvme) and the parameter shard (offload_param nvme) to NVMe:
// analytic_nvme_state.
std::vector<ModelStateBytes> analytic_host_state(const RunConfig& config);
std::vector<ModelStateBytes> analytic_nvme_state(const RunConfig& config);

struct HostMemoryNeed {
    double initial_parameters = 0;  // the fp32 initial weights every strategy starts from
    // CPU backend: what the devices hold at least (their model state, activations where the
    // estimate exists), each at most its capacity; 0 on a GPU, whose memory is its own.
    double devices = 0;
    double total() const { return initial_parameters + devices; }
};
HostMemoryNeed host_memory_need(const RunConfig& config);

// What this process may still allocate: the least of the memory the kernel says is available
// (MemAvailable), what `ulimit -v` leaves of the address space, and what the cgroup's limit
// leaves; nullopt when none of them can be read.
struct HostMemoryAvailable {
    std::size_t bytes = 0;
    std::string source;  // which limit decided: "MemAvailable", "ulimit -v", "cgroup memory.max"
};
std::optional<HostMemoryAvailable> host_memory_available();

// Why the run does not fit in `available`: a sentence naming what it needs and what there is;
// empty when it fits (or nothing is known of the host).
std::string host_memory_shortage(const RunConfig& config,
                                 const std::optional<HostMemoryAvailable>& available);
inline std::string host_memory_shortage(const RunConfig& config) {
    return host_memory_shortage(config, host_memory_available());
}

}  // namespace pd
