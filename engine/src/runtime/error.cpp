#include "pd/error.h"

#include <cstring>

#include "pd/units.h"

namespace pd {

namespace {
std::string basename_of(const char* file) {
    const char* slash = std::strrchr(file, '/');
    return slash ? slash + 1 : file;
}
}  // namespace

Error::Error(const std::string& message, const char* file, int line)
    : std::runtime_error(message), where_(basename_of(file) + ":" + std::to_string(line)) {}

BadInput::BadInput(std::string key, const std::string& reason, const char* file, int line)
    : Error(key + ": " + reason, file, line), key_(std::move(key)) {}

std::string OomInfo::describe() const {
    const char* whose = where == OffloadDevice::cpu    ? "the host memory of device "
                        : where == OffloadDevice::nvme ? "the NVMe share of device "
                                                       : "device ";
    return whose + std::to_string(device) + " out of memory: allocating " +
           format_bytes(static_cast<double>(requested_bytes)) + " of " +
           std::string(name_of(category)) + " with " +
           format_bytes(static_cast<double>(live_bytes)) + " live of " +
           format_bytes(static_cast<double>(capacity_bytes)) + " capacity" +
           (injected ? " (an injected fault: the allocation was made to fail)" : "");
}

OutOfMemory::OutOfMemory(const OomInfo& info, const char* file, int line)
    : Error(info.describe(), file, line), info_(info) {}

std::optional<MemoryCategory> memory_category_from_name(std::string_view name) {
    for (std::size_t i = 0; i < kMemoryCategoryCount; ++i)
        if (kMemoryCategoryNames[i] == name) return static_cast<MemoryCategory>(i);
    return std::nullopt;
}

}  // namespace pd
