#pragma once

#include <array>
#include <cstddef>
#include <optional>
#include <string_view>

namespace pd {

// Every live byte on a device is accounted under one of these. `gathered_parameters` is
// ZeRO-3's working set: full layers all-gathered for one forward or backward and freed after
// it, kept apart from the parameter shard the device owns (model state).
enum class MemoryCategory : int {
    parameters,
    gradients,
    optimizer_state,
    gathered_parameters,
    activations,
    communication,
    workspace,
};
inline constexpr std::size_t kMemoryCategoryCount = 7;

inline constexpr std::array<std::string_view, kMemoryCategoryCount> kMemoryCategoryNames = {
    "parameters",  "gradients",     "optimizer_state", "gathered_parameters",
    "activations", "communication", "workspace"};

inline std::string_view name_of(MemoryCategory c) {
    return kMemoryCategoryNames[static_cast<std::size_t>(c)];
}
std::optional<MemoryCategory> memory_category_from_name(std::string_view name);

// Where memory lives: a device's own (none), or the share of host memory (ZeRO-Offload) or
// NVMe (ZeRO-Infinity) that it offloads to (DeepSpeed's offload "device").
enum class OffloadDevice { none, cpu, nvme };
std::string_view name_of(OffloadDevice d);  // "none", "cpu", "nvme"

}  // namespace pd
