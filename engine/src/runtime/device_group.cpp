#include "pd/device_group.h"

#include <algorithm>
#include <chrono>

#include "backend/device_backend.h"
#include "backend/device_ops.h"
#include "cpu/kernels.h"
#include "cpu/small_gemm.h"
#include "pd/error.h"

namespace pd {

DeviceGroup::DeviceGroup(const RunConfig& config, RunContext& ctx)
    : backend_(make_run_backend(config, ctx)) {
    for (int d = 0; d < config.devices; ++d)
        devices_.push_back(
            std::make_unique<Device>(d, config.capacity_bytes, ctx, backend_->make_device(d)));
}

DeviceGroup::~DeviceGroup() {
    synchronize();
}

std::vector<Device*> DeviceGroup::members() {
    std::vector<Device*> out;
    for (auto& d : devices_) out.push_back(d.get());
    return out;
}

void DeviceGroup::synchronize() {
    for (auto& d : devices_) d->synchronize();
}

namespace {

using Clock = std::chrono::steady_clock;

// Best time of `repeats` runs of `body` on the device's compute stream, each run waited for
// from the host (so a GPU's queue is drained inside the measured time).
template <class Body>
double best_seconds(Device& device, int repeats, Body body) {
    double best = 0;
    for (int r = 0; r < repeats; ++r) {
        const auto t0 = Clock::now();
        device.compute().enqueue(body);
        device.compute().synchronize();
        const double s = std::chrono::duration<double>(Clock::now() - t0).count();
        if (r == 0 || s < best) best = s;
    }
    return best;
}

}  // namespace

double measure_copy_bandwidth(Device& device, std::size_t bytes, int repeats) {
    const std::size_t count = std::max<std::size_t>(bytes / sizeof(float), 1);
    MemoryTracker& mem = device.memory();
    Buffer src, dst;
    device.compute().enqueue([&] {
        src = Buffer(mem, MemoryCategory::workspace, count);
        dst = Buffer(mem, MemoryCategory::workspace, count);
        mem.ops().copy(dst.data(), src.data(), count);  // first touch
    });
    device.compute().synchronize();
    const double s =
        best_seconds(device, repeats, [&] { mem.ops().copy(dst.data(), src.data(), count); });
    device.compute().enqueue([&] {
        src.reset();
        dst.reset();
    });
    device.compute().synchronize();
    return static_cast<double>(count * sizeof(float)) / s;
}

double measure_gemm_flops(Device& device, int m, int n, int k, int products, int repeats) {
    MemoryTracker& mem = device.memory();
    Buffer a, b, c;
    device.compute().enqueue([&] {
        a = Buffer(mem, MemoryCategory::workspace, static_cast<std::size_t>(m) * k);
        b = Buffer(mem, MemoryCategory::workspace, static_cast<std::size_t>(k) * n);
        c = Buffer(mem, MemoryCategory::workspace, static_cast<std::size_t>(m) * n);
        mem.ops().gemm(false, false, m, n, k, 1.0f, a.data(), b.data(), 0.0f, c.data());
    });
    device.compute().synchronize();
    const double s = best_seconds(device, repeats, [&] {
        for (int i = 0; i < products; ++i)
            mem.ops().gemm(false, false, m, n, k, 1.0f, a.data(), b.data(), 0.0f, c.data());
    });
    device.compute().enqueue([&] {
        a.reset();
        b.reset();
        c.reset();
    });
    device.compute().synchronize();
    return 2.0 * m * n * static_cast<double>(k) * products / s;
}

std::string cpu_blas_kernels() {
    return cpu::blas_kernels();
}

std::string cpu_small_gemm() {
    return cpu::small_gemm_description();
}

void cpu_profile_products(bool on) {
    cpu::profile_products(on);
}

std::vector<CpuProductClass> cpu_product_profile() {
    std::vector<CpuProductClass> out;
    for (const cpu::ProductClass& p : cpu::product_profile())
        out.push_back(
            {p.trans_a, p.trans_b, p.m, p.n, p.k, p.kernel, p.calls, p.seconds, p.one_thread});
    return out;
}

}  // namespace pd
