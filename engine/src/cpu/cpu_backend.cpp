// The CPU backend: device memory is host memory, each stream's worker thread is the device,
// and every kernel runs right away on the calling stream's thread.
#include <algorithm>
#include <memory>

#include "backend/device_backend.h"
#include "cpu/kernels.h"
#include "pd/optimizer.h"

namespace pd {

namespace {

class CpuOps final : public DeviceOps {
  public:
    CpuOps() { cpu::init_blas_threads(); }

    float* allocate(std::size_t count) override { return new float[count](); }
    void release(float* data) noexcept override { delete[] data; }
    void copy(float* dst, const float* src, std::size_t count) override {
        std::copy_n(src, count, dst);
    }
    void fill_zero(float* dst, std::size_t count) override { std::fill_n(dst, count, 0.0f); }
    void upload(float* dst, const float* host, std::size_t count) override {
        std::copy_n(host, count, dst);
    }
    void download(float* host, const float* src, std::size_t count) override {
        std::copy_n(src, count, host);
    }
    void add(float* y, const float* x, std::size_t count) override {
        cpu::add_inplace(y, x, count);
    }
    void gemm(bool trans_a, bool trans_b, int m, int n, int k, float alpha, const float* a,
              const float* b, float beta, float* c) override {
        cpu::gemm(trans_a, trans_b, m, n, k, alpha, a, b, beta, c);
    }
    void linear_forward(const float* x, const float* w, const float* bias, int rows, int in,
                        int out, float* y) override {
        cpu::linear_forward(x, w, bias, rows, in, out, y);
    }
    void linear_backward(const float* x, const float* w, const float* dy, int rows, int in, int out,
                         float* dw, float* dbias, float* dx) override {
        cpu::linear_backward(x, w, dy, rows, in, out, dw, dbias, dx);
    }
    void gelu_forward(const float* a, float* g, std::size_t n) override {
        cpu::gelu_forward(a, g, n);
    }
    void gelu_backward(const float* a, const float* dg, float* da, std::size_t n) override {
        cpu::gelu_backward(a, dg, da, n);
    }
    void softmax_cross_entropy(const float* logits, const float* labels, int rows, int classes,
                               float scale, float* dlogits, double* loss_sum) override {
        const double loss =
            cpu::softmax_cross_entropy(logits, labels, rows, classes, scale, dlogits);
        if (loss_sum) *loss_sum += loss;
    }
    void bias_residual(float* out, const float* bias, const float* residual, int rows,
                       int width) override {
        for (int r = 0; r < rows; ++r)
            for (int j = 0; j < width; ++j) {
                const std::size_t i = static_cast<std::size_t>(r) * width + j;
                out[i] += bias[j] + residual[i];
            }
    }
    void optimizer_update(const OptimizerSettings& settings, int t, float* params,
                          const float* grads, float* state, std::size_t count) override {
        pd::optimizer_update(settings, t, params, grads, state, count);
    }
    double* allocate_scalar() override { return new double(0.0); }
    void release_scalar(double* s) noexcept override { delete s; }
    void zero_scalar(double* s) override { *s = 0.0; }
    double read_scalar(const double* s) override { return *s; }
    DeviceEvent record_event() override { return nullptr; }
    void wait_event(const DeviceEvent&) override {}
};

class CpuDeviceBackend final : public DeviceBackend {
  public:
    std::string name() const override { return "cpu"; }
    DeviceOps& ops() override { return ops_; }
    std::unique_ptr<StreamBackend> make_stream() override { return nullptr; }

  private:
    CpuOps ops_;
};

}  // namespace

DeviceOps& shared_cpu_ops() {
    static CpuOps ops;
    return ops;
}

std::unique_ptr<DeviceBackend> make_cpu_device_backend() {
    return std::make_unique<CpuDeviceBackend>();
}

}  // namespace pd
