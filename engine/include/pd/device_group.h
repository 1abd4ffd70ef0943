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

// The CPU backend's products by shape while profiling is on (paralleldeck-run --verbose):
// which kernel ran each and the wall time it took, summed, as the run ran.
struct CpuProductClass {
    bool trans_a = false, trans_b = false;
    int m = 0, n = 0, k = 0;
    std::string kernel;  // e.g. "own AVX2, packed", "OpenBLAS Zen"
    long long calls = 0;
    double seconds = 0;
    bool one_thread = false;  // each call on one thread (attention's per-head products)
    double gflops() const {
        return seconds > 0 ? 2.0 * m * n * double(k) * calls / seconds / 1e9 : 0;
    }
};
void cpu_profile_products(bool on);  // on: starts afresh
std::vector<CpuProductClass> cpu_product_profile();

}  // namespace pd
