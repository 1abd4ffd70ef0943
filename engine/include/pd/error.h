// Engine errors. The engine never exits: every failure travels upward as one of these,
// carrying where it was raised so a report can point at the code.
#pragma once

#include <cstddef>
#include <stdexcept>
#include <string>

#include "pd/memory_category.h"

namespace pd {

class Error : public std::runtime_error {
  public:
    Error(const std::string& message, const char* file, int line);
    const std::string& where() const { return where_; }

  private:
    std::string where_;
};

// A value a user supplied (flag, scenario key) is unusable. `key` names it.
class BadInput : public Error {
  public:
    BadInput(std::string key, const std::string& reason, const char* file, int line);
    const std::string& key() const { return key_; }

  private:
    std::string key_;
};

struct OomInfo {
    int device = -1;
    MemoryCategory category = MemoryCategory::workspace;
    std::size_t requested_bytes = 0;
    std::size_t live_bytes = 0;
    std::size_t capacity_bytes = 0;
    bool injected = false;  // a FaultPlan's planned failure, not a real shortage
    // The device's own memory (none), or its share of host memory (ZeRO-Offload) or NVMe.
    OffloadDevice where = OffloadDevice::none;
    std::string describe() const;
};

class OutOfMemory : public Error {
  public:
    OutOfMemory(const OomInfo& info, const char* file, int line);
    const OomInfo& info() const { return info_; }

  private:
    OomInfo info_;
};

// Raised on every other participant once the run has been aborted (by a failing peer or a
// cancel), so that no thread stays blocked in a collective.
class Aborted : public Error {
  public:
    using Error::Error;
};

// A device that stopped working mid-run (a dead GPU, a killed rank): raised on its own stream.
class DeviceFailure : public Error {
  public:
    using Error::Error;
};

class Cancelled : public Error {
  public:
    using Error::Error;
};

class CollectiveTimeout : public Error {
  public:
    using Error::Error;
};

}  // namespace pd

#define PD_THROW(Type, ...) throw Type(__VA_ARGS__, __FILE__, __LINE__)
