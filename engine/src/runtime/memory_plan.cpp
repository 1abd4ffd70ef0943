#include "pd/memory_plan.h"

#include <sys/resource.h>

#include <algorithm>
#include <fstream>
#include <sstream>

#include "model/shard_layout.h"
#include "pd/metrics.h"
#include "pd/model.h"
#include "pd/optimizer.h"
#include "pd/units.h"

namespace pd {

std::vector<ModelStateBytes> analytic_model_state(const RunConfig& config) {
    const ModelShape shape = model_shape(config);
    const ParamLayout layout = ParamLayout::build(shape);
    const double element = static_cast<double>(bytes_of(config.tensor_dtype()));
    const double P = static_cast<double>(layout.total) * element;
    // Optimizer state bytes per parameter over the parameter's own bytes (K = 12 for
    // mixed-precision Adam, 8 for SGD momentum; 8 and 4 in fp32).
    OptimizerSettings optimizer = OptimizerSettings::from(config);
    optimizer.set_tensors(layout);
    // (adamw8bit, single or dp only: its packed codes, absmaxes and small tensors' fp32 states.)
    const double k = static_cast<double>(optimizer.state_floats(layout.total)) *
                     static_cast<double>(sizeof(float)) /
                     (static_cast<double>(layout.total) * element);
    // Sharded over every device, or (hybrid sharding) over the devices of one node.
    const double N = config.hybrid_shard
                         ? config.devices / std::max(1, config.cluster.node_count(config.devices))
                         : config.devices;
    const Mesh mesh = config.effective_mesh();
    const std::vector<StageBoundary> bounds = stage_boundaries(config);

    std::vector<ModelStateBytes> out;
    for (int d = 0; d < config.devices; ++d) {
        double params = P, grads = P, state = k * P;
        switch (config.strategy) {
            case StrategyKind::single:
            case StrategyKind::dp:
            case StrategyKind::cp:  // every device holds the whole model
                break;
            case StrategyKind::ps:
                if (d > 0) state = 0;  // workers keep no optimizer state
                break;
            case StrategyKind::zero1:
                state = k * P / N;
                break;
            case StrategyKind::zero2:
                grads = P / N;
                state = k * P / N;
                break;
            case StrategyKind::zero3:
                params = grads = P / N;
                state = k * P / N;
                // MixedPrecisionPolicy: fp32 parameter and gradient shards (twice bf16's).
                if (config.fp32_reduce) params = grads = 2 * P / N;
                break;
            case StrategyKind::pipeline:
            case StrategyKind::tp:
            case StrategyKind::hybrid: {
                // This device's chunks, each sharded over its tensor-parallel group.
                const int stage = d / (mesh.tp * mesh.dp);
                const int tp_rank = d % mesh.tp;
                double local = 0;
                for (const auto& b : bounds)
                    if (b.device_stage == stage)
                        local += static_cast<double>(ShardLayout(shape, layout, b.first_unit,
                                                                 b.end_unit, tp_rank, mesh.tp)
                                                         .size()) *
                                 element;
                params = grads = local;
                state = k * local;
                break;
            }
            case StrategyKind::ep: {  // everything but the other devices' experts
                const int group = config.devices / std::max(1, config.mesh.dp);
                params = grads = static_cast<double>(ShardLayout(shape, layout, 0, layout.units, 0,
                                                                 1, d % group, group)
                                                         .size()) *
                                 element;
                state = k * params;
                break;
            }
        }
        // Offloaded to host memory or NVMe (analytic_host_state, analytic_nvme_state).
        if (config.offloads()) state = 0;
        if (config.offload_param != OffloadDevice::none) params = 0;
        out.push_back({params, grads, state});
    }
    return out;
}

namespace {

// The offloaded shards' bytes kept on `where` (host memory or NVMe) at rest: the parameter
// shard where offload_param puts it (host memory when only the optimizer is offloaded), the
// fp32 gradient shard in host memory, the optimizer state where offload_optimizer puts it.
std::vector<ModelStateBytes> analytic_offloaded_state(const RunConfig& config,
                                                      OffloadDevice where) {
    std::vector<ModelStateBytes> out(static_cast<std::size_t>(config.devices));
    if (!config.offloads()) return out;
    const ParamLayout layout = ParamLayout::build(model_shape(config));
    OptimizerSettings optimizer = OptimizerSettings::from(config);
    optimizer.set_tensors(layout);
    const double N = config.devices;
    const double psi = static_cast<double>(layout.total);
    const OffloadDevice params_on =
        config.offload_param == OffloadDevice::none ? OffloadDevice::cpu : config.offload_param;
    for (ModelStateBytes& s : out) {
        if (params_on == where)
            s.parameters = psi * static_cast<double>(bytes_of(config.tensor_dtype())) / N;
        if (where == OffloadDevice::cpu) s.gradients = psi * static_cast<double>(sizeof(float)) / N;
        if (config.offload_optimizer == where)
            s.optimizer_state = static_cast<double>(optimizer.state_floats(layout.total)) *
                                static_cast<double>(sizeof(float)) / N;
    }
    return out;
}

}  // namespace

std::vector<ModelStateBytes> analytic_host_state(const RunConfig& config) {
    return analytic_offloaded_state(config, OffloadDevice::cpu);
}

std::vector<ModelStateBytes> analytic_nvme_state(const RunConfig& config) {
    return analytic_offloaded_state(config, OffloadDevice::nvme);
}

HostMemoryNeed host_memory_need(const RunConfig& config) {
    HostMemoryNeed need;
    need.initial_parameters = static_cast<double>(ParamLayout::build(model_shape(config)).total) *
                              static_cast<double>(sizeof(float));
    if (config.backend == BackendKind::cpu)
        for (const ModelStateBytes& s : analytic_model_state(config))
            need.devices += std::min(s.total(), static_cast<double>(config.capacity_bytes));
    for (const ModelStateBytes& s : analytic_host_state(config))
        need.devices += std::min(s.total(), static_cast<double>(config.host_capacity_bytes));
    // The NVMe tier is emulated in this process's memory too.
    for (const ModelStateBytes& s : analytic_nvme_state(config))
        need.devices += std::min(s.total(), static_cast<double>(config.nvme_capacity_bytes));
    return need;
}

namespace {

// A "Name:   123 kB" line of a /proc file, in bytes.
std::optional<std::size_t> proc_kb(const char* file, const std::string& name) {
    std::ifstream in(file);
    std::string line;
    while (std::getline(in, line)) {
        if (line.compare(0, name.size(), name) != 0 || line.size() <= name.size() ||
            line[name.size()] != ':')
            continue;
        std::istringstream fields(line.substr(name.size() + 1));
        unsigned long long kb = 0;
        if (fields >> kb) return static_cast<std::size_t>(kb) * 1024;
    }
    return std::nullopt;
}

std::optional<std::size_t> read_number(const std::string& file) {
    std::ifstream in(file);
    std::string word;
    if (!(in >> word) || word == "max") return std::nullopt;
    try {
        return static_cast<std::size_t>(std::stoull(word));
    } catch (...) {
        return std::nullopt;
    }
}

// cgroup v2: this process's group's memory.max less memory.current.
std::optional<std::size_t> cgroup_memory_left() {
    std::ifstream in("/proc/self/cgroup");
    std::string line;
    while (std::getline(in, line)) {
        if (line.rfind("0::", 0) != 0) continue;
        const std::string dir = "/sys/fs/cgroup" + line.substr(3);
        const auto max = read_number(dir + "/memory.max");
        const auto current = read_number(dir + "/memory.current");
        if (max && current) return *max > *current ? *max - *current : 0;
    }
    return std::nullopt;
}

}  // namespace

std::optional<HostMemoryAvailable> host_memory_available() {
    std::optional<HostMemoryAvailable> best;
    auto consider = [&](std::optional<std::size_t> bytes, const char* source) {
        if (bytes && (!best || *bytes < best->bytes)) best = HostMemoryAvailable{*bytes, source};
    };
    consider(proc_kb("/proc/meminfo", "MemAvailable"), "MemAvailable");
    rlimit limit{};
    if (getrlimit(RLIMIT_AS, &limit) == 0 && limit.rlim_cur != RLIM_INFINITY) {
        const std::size_t used = proc_kb("/proc/self/status", "VmSize").value_or(0);
        const auto cap = static_cast<std::size_t>(limit.rlim_cur);
        consider(cap > used ? cap - used : 0, "ulimit -v");
    }
    consider(cgroup_memory_left(), "cgroup memory.max");
    return best;
}

std::string host_memory_shortage(const RunConfig& config,
                                 const std::optional<HostMemoryAvailable>& available) {
    if (!available) return {};
    const HostMemoryNeed need = host_memory_need(config);
    if (need.total() <= static_cast<double>(available->bytes)) return {};
    std::string out = "the run needs at least " + format_bytes(need.total()) + " of host memory (" +
                      format_bytes(need.initial_parameters) + " of initial parameters";
    if (need.devices > 0)
        out += ", " + format_bytes(need.devices) + " for " + std::to_string(config.devices) +
               (config.devices == 1 ? " device's" : " devices'") +
               " parameters, gradients and optimizer state";
    out += ") and " + format_bytes(static_cast<double>(available->bytes)) + " is available (" +
           available->source + "): use fewer or narrower layers or fewer devices";
    return out;
}

}  // namespace pd
