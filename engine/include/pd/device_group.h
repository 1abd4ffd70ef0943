// The devices of one configuration, created by its backend, for tools that drive devices
// directly (benchmarks, tests): a run's strategies get theirs from the runner instead.
#pragma once

#include <cstddef>
#include <memory>
#include <string>
#include <vector>

#include "pd/device.h"
#include "pd/run_config.h"
#include "pd/run_context.h"

namespace pd {

class RunBackend;

class DeviceGroup {
  public:
    // Throws BadInput when the configured backend cannot run here.
    DeviceGroup(const RunConfig& config, RunContext& ctx);
    ~DeviceGroup();
    DeviceGroup(const DeviceGroup&) = delete;
    DeviceGroup& operator=(const DeviceGroup&) = delete;

    int size() const { return static_cast<int>(devices_.size()); }
    Device& device(int i) { return *devices_[static_cast<std::size_t>(i)]; }
    std::vector<Device*> members();
    void synchronize();

  private:
    std::unique_ptr<RunBackend> backend_;  // outlives the devices
    std::vector<std::unique_ptr<Device>> devices_;
};

// Measurements through a device's own kernels, on its compute stream; best of `repeats`.
// Bytes per second of a device-local copy of `bytes` (read once, written once).
double measure_copy_bandwidth(Device& device, std::size_t bytes, int repeats = 5);
// Floating-point operations per second of C[m,n] = A[m,k] B[k,n] (2mnk per product),
// `products` back to back per repeat.
double measure_gemm_flops(Device& device, int m, int n, int k, int products, int repeats = 3);
// The OpenBLAS kernel table the CPU backend's products run on, and who chose it.
std::string cpu_blas_kernels();
// Which small products the CPU backend runs on its own kernel instead (cpu/small_gemm.h).
std::string cpu_small_gemm();

}  // namespace pd
