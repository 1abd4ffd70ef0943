// The CPU backend: device memory is host memory, each stream's worker thread is the device,
// and every kernel runs right away on the calling stream's thread.
#include <algorithm>
#include <array>
#include <cmath>
#include <cstdlib>
#include <memory>
#include <new>
#include <vector>

#include "backend/device_backend.h"
#include "cpu/elementwise.h"
#include "cpu/fp8_cast.h"
#include "cpu/kernels.h"
#include "cpu/moe_kernels.h"
#include "cpu/transformer_kernels.h"
#include "pd/optimizer.h"

namespace pd {

namespace {

// Items per intra-op part below which splitting costs more than it saves (waking a thread
// takes tens of microseconds): GELU costs some 30 flops an element, the others a few.
constexpr std::size_t kGeluGrain = 32 * 1024;
constexpr std::size_t kUpdateGrain = 64 * 1024;
constexpr std::size_t kAddGrain = 128 * 1024;

class CpuOps final : public DeviceOps {
  public:
    explicit CpuOps(int threads, ProductInputs inputs = ProductInputs::fp32)
        : pool_(threads), inputs_(inputs) {
        cpu::init_blas_threads();
    }

    // 64-byte aligned (a cache line, and whole vectors for the element-wise loops).
    float* allocate(std::size_t count) override {
        float* p = allocate_uninitialized(count);
        std::fill_n(p, count, 0.0f);
        return p;
    }
    float* allocate_uninitialized(std::size_t count) override {
        const std::size_t bytes = (std::max<std::size_t>(count, 1) * sizeof(float) + 63) / 64 * 64;
        void* p = std::aligned_alloc(64, bytes);
        if (!p) throw std::bad_alloc();
        return static_cast<float*>(p);
    }
    void release(float* data) noexcept override { std::free(data); }
    // Kernels run to completion on the calling thread before it goes on, so a freed block is
    // never still in use and may be handed out again at once.
    bool reuses_freed_blocks() const override { return true; }

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
        pool_.parallel_for(count, kAddGrain, [&](std::size_t lo, std::size_t hi) {
            cpu::add_inplace(y + lo, x + lo, hi - lo);
        });
    }
    void round_to(DType dtype, float* data, std::size_t count) override {
        if (dtype == DType::fp32 || dtype == DType::int8) return;  // int8: quantized already
        pool_.parallel_for(count, kAddGrain, [&](std::size_t lo, std::size_t hi) {
            if (dtype == DType::bf16)
                cpu::round_to_bf16(data + lo, hi - lo);
            else
                cpu::round_to_fp16(data + lo, hi - lo);
        });
    }
    void gemm(bool trans_a, bool trans_b, int m, int n, int k, float alpha, const float* a,
              const float* b, float beta, float* c) override {
        if (inputs_ != ProductInputs::fp32) {
            a = rounded_copy(0, a, static_cast<std::size_t>(m) * k);
            b = rounded_copy(1, b, static_cast<std::size_t>(k) * n);
        }
        cpu::gemm(pool_, trans_a, trans_b, m, n, k, alpha, a, b, beta, c);
    }
    void linear_forward(const float* x, const float* w, const float* bias, int rows, int in,
                        int out, float* y) override {
        if (inputs_ != ProductInputs::fp32) {
            x = rounded_copy(0, x, static_cast<std::size_t>(rows) * in);
            w = rounded_copy(1, w, static_cast<std::size_t>(in) * out);
        }
        cpu::linear_forward(pool_, x, w, bias, rows, in, out, y);
    }
    void linear_backward(const float* x, const float* w, const float* dy, int rows, int in, int out,
                         float* dw, float* dbias, float* dx, GradWrite write) override {
        // Both products (dw = x^T dy, dx = dy w^T) take rounded inputs; the bias gradient is a
        // sum.
        if (inputs_ != ProductInputs::fp32) {
            const bool add = write == GradWrite::add;
            const float* xr = rounded_copy(0, x, static_cast<std::size_t>(rows) * in);
            const float* dyr = rounded_copy(2, dy, static_cast<std::size_t>(rows) * out);
            cpu::gemm(pool_, true, false, in, out, rows, 1.0f, xr, dyr, add ? 1.0f : 0.0f, dw);
            // The bias gradient is a sum, not a product: the fp32 dy's column sums.
            for (int j = 0; j < out; ++j) {
                float sum = add ? dbias[j] : 0.0f;
                for (int r = 0; r < rows; ++r) sum += dy[static_cast<std::size_t>(r) * out + j];
                dbias[j] = sum;
            }
            if (dx)
                cpu::gemm(pool_, false, true, rows, in, out, 1.0f, dyr,
                          rounded_copy(1, w, static_cast<std::size_t>(in) * out), 0.0f, dx);
            return;
        }
        cpu::linear_backward(pool_, x, w, dy, rows, in, out, dw, dbias, dx,
                             write == GradWrite::add);
    }
    Fp8CastStats cast_fp8(Fp8Encoding encoding, float scale, const float* src, float* dst,
                          std::size_t count) override {
        return cpu::cast_fp8(encoding, scale, src, dst, count);
    }
    void scaled_linear_forward(const float* xq, const float* wq, const float* bias, int rows,
                               int in, int out, float alpha, float* y) override {
        cpu::broadcast_rows(y, bias, static_cast<std::size_t>(rows), static_cast<std::size_t>(out));
        cpu::gemm(pool_, false, false, rows, out, in, alpha, xq, wq, 1.0f, y);
    }
    void scaled_linear_backward(const float* xq, const float* wq, const float* dyq, const float* dy,
                                int rows, int in, int out, float alpha_w, float alpha_x, float* dw,
                                float* dbias, float* dx, GradWrite write) override {
        const bool add = write == GradWrite::add;
        cpu::gemm(pool_, true, false, in, out, rows, alpha_w, xq, dyq, add ? 1.0f : 0.0f, dw);
        if (!add) std::fill_n(dbias, out, 0.0f);
        cpu::add_column_sums(dbias, dy, static_cast<std::size_t>(rows),
                             static_cast<std::size_t>(out));
        if (dx) cpu::gemm(pool_, false, true, rows, in, out, alpha_x, dyq, wq, 0.0f, dx);
    }
    void gelu_forward(const float* a, float* g, std::size_t n) override {
        pool_.parallel_for(n, kGeluGrain, [&](std::size_t lo, std::size_t hi) {
            cpu::gelu_forward(a + lo, g + lo, hi - lo);
        });
    }
    void gelu_backward(const float* a, const float* dg, float* da, std::size_t n) override {
        pool_.parallel_for(n, kGeluGrain, [&](std::size_t lo, std::size_t hi) {
            cpu::gelu_backward(a + lo, dg + lo, da + lo, hi - lo);
        });
    }
    void softmax_cross_entropy(const float* logits, const float* labels, int rows, int classes,
                               float scale, float* dlogits, double* loss_sum) override {
        // A few rows of a few classes: one thread, in row order (the summed loss is the same
        // at every thread count).
        const double loss =
            cpu::softmax_cross_entropy(logits, labels, rows, classes, scale, dlogits);
        if (loss_sum) *loss_sum += loss;
    }
    void bias_residual(float* out, const float* bias, const float* residual, int rows,
                       int width) override {
        const std::size_t w = static_cast<std::size_t>(width);
        pool_.parallel_for(static_cast<std::size_t>(rows), std::max<std::size_t>(1, kAddGrain / w),
                           [&](std::size_t lo, std::size_t hi) {
                               cpu::bias_residual(out + lo * w, bias, residual + lo * w, hi - lo,
                                                  w);
                           });
    }
    void layer_norm_forward(const float* x, const float* gamma, const float* beta, int rows,
                            int width, float* y, float* stats) override {
        cpu::layer_norm_forward(pool_, x, gamma, beta, rows, width, y, stats);
    }
    void layer_norm_backward(const float* x, const float* gamma, const float* stats,
                             const float* dy, int rows, int width, float* dx, float* dgamma,
                             float* dbeta) override {
        cpu::layer_norm_backward(x, gamma, stats, dy, rows, width, dx, dgamma, dbeta);
    }
    void attention_forward(const float* q, const float* k, const float* v, int seqs, int seq_len,
                           int heads, int head_dim, float* probs, float* out) override {
        cpu::attention_forward(pool_, q, k, v, seqs, seq_len, heads, head_dim, probs, out);
    }
    void attention_backward(const float* q, const float* k, const float* v, const float* probs,
                            const float* dout, int seqs, int seq_len, int heads, int head_dim,
                            float* dq, float* dk, float* dv) override {
        cpu::attention_backward(pool_, q, k, v, probs, dout, seqs, seq_len, heads, head_dim, dq, dk,
                                dv);
    }
    void attention_block_forward(const float* q, const float* k, const float* v, int seqs,
                                 int q_len, int kv_len, int heads, int head_dim, const int* q_pos,
                                 const int* kv_pos, float* acc, float* m, float* l) override {
        cpu::attention_block_forward(pool_, q, k, v, seqs, q_len, kv_len, heads, head_dim, q_pos,
                                     kv_pos, acc, m, l);
    }
    void attention_block_finish(float* acc, float* m, const float* l, int seqs, int q_len,
                                int heads, int head_dim) override {
        cpu::attention_block_finish(acc, m, l, seqs, q_len, heads, head_dim);
    }
    void attention_block_backward(const float* q, const float* k, const float* v, const float* out,
                                  const float* dout, const float* lse, int seqs, int q_len,
                                  int kv_len, int heads, int head_dim, const int* q_pos,
                                  const int* kv_pos, float* dq, float* dk, float* dv) override {
        cpu::attention_block_backward(pool_, q, k, v, out, dout, lse, seqs, q_len, kv_len, heads,
                                      head_dim, q_pos, kv_pos, dq, dk, dv);
    }
    void moe_route(const float* logits, int seqs, int seq_len, int experts, int top_k, int capacity,
                   float aux_weight, float* probs, float* routes, float* fractions,
                   double* aux_sum) override {
        cpu::moe_route(logits, seqs, seq_len, experts, top_k, capacity, aux_weight, probs, routes,
                       fractions, aux_sum);
    }
    void moe_dispatch(const float* x, const float* routes, int tokens, int top_k, int width,
                      float* dispatch) override {
        cpu::moe_dispatch(x, routes, tokens, top_k, width, dispatch);
    }
    void moe_combine(const float* y, const float* routes, int tokens, int top_k, int width,
                     float* out) override {
        cpu::moe_combine(y, routes, tokens, top_k, width, out);
    }
    void moe_combine_backward(const float* y, const float* routes, const float* dout, int tokens,
                              int top_k, int width, float* dy, float* dgate) override {
        cpu::moe_combine_backward(y, routes, dout, tokens, top_k, width, dy, dgate);
    }
    void moe_dispatch_backward(const float* ddispatch, const float* routes, int tokens, int top_k,
                               int width, float* dx) override {
        cpu::moe_dispatch_backward(ddispatch, routes, tokens, top_k, width, dx);
    }
    void moe_router_backward(const float* probs, const float* routes, const float* fractions,
                             const float* dgate, int seqs, int seq_len, int experts, int top_k,
                             float aux_scale, float* dlogits) override {
        cpu::moe_router_backward(probs, routes, fractions, dgate, seqs, seq_len, experts, top_k,
                                 aux_scale, dlogits);
    }
    void optimizer_update(const OptimizerSettings& settings, int t, float* params,
                          const float* grads, float* state, std::size_t count) override {
        if (settings.per_tensor()) {  // LAMB's norms, 8-bit blocks: each thread whole tensors
            pool_.parallel_for(settings.tensors.size(), 1, [&](std::size_t lo, std::size_t hi) {
                pd::optimizer_update_tensors(settings, t, params, grads, state, count, lo, hi);
            });
            return;
        }
        pool_.parallel_for(count, kUpdateGrain, [&](std::size_t lo, std::size_t hi) {
            // The state is laid out [m..., v...]: each part takes its slice of both.
            pd::optimizer_update_range(settings, t, params, grads, state, count, lo, hi);
        });
    }
    GradientCheck check_gradients(const float* grads, std::size_t count) override {
        // One thread, in index order: the sum of squares is the same on every run.
        GradientCheck check;
        for (std::size_t i = 0; i < count; ++i) {
            const float g = grads[i];
            if (!std::isfinite(g)) {
                ++check.nonfinite;
                continue;
            }
            if (g == 0.0f) ++check.zeros;
            check.sum_squares += static_cast<double>(g) * static_cast<double>(g);
        }
        return check;
    }
    double take_product_input_error() override {
        const double e = value_squares_ > 0 ? std::sqrt(error_squares_ / value_squares_) : -1.0;
        error_squares_ = value_squares_ = 0;
        return e;
    }
    void scale(float* data, std::size_t count, float factor) override {
        pool_.parallel_for(count, kAddGrain, [&](std::size_t lo, std::size_t hi) {
            for (std::size_t i = lo; i < hi; ++i) data[i] *= factor;
        });
    }
    double* allocate_scalar() override { return new double(0.0); }
    void release_scalar(double* s) noexcept override { delete s; }
    void zero_scalar(double* s) override { *s = 0.0; }
    double read_scalar(const double* s) override { return *s; }
    DeviceEvent record_event() override { return nullptr; }
    void wait_event(const DeviceEvent&) override {}

  private:
    // An operand rounded to the product input type in scratch slot `slot` (one per operand of
    // a call; each stream's calls are ordered, and a device's two streams never run products
    // at once), its rounding error counted.
    const float* rounded_copy(int slot, const float* src, std::size_t count) {
        std::vector<float>& dst = scratch_[static_cast<std::size_t>(slot)];
        dst.resize(count);
        const bool tf32 = inputs_ == ProductInputs::tf32;
        double error = 0, value = 0;
        for (std::size_t i = 0; i < count; ++i) {
            const float x = src[i];
            const float r = tf32 ? round_to_tf32(x) : round_to_bf16(x);
            dst[i] = r;
            const double e = static_cast<double>(x) - r;
            error += e * e;
            value += static_cast<double>(x) * x;
        }
        error_squares_ += error;
        value_squares_ += value;
        return dst.data();
    }
    cpu::IntraOpPool pool_;
    ProductInputs inputs_ = ProductInputs::fp32;
    std::array<std::vector<float>, 3> scratch_;
    double error_squares_ = 0, value_squares_ = 0;
};

class CpuDeviceBackend final : public DeviceBackend {
  public:
    CpuDeviceBackend(int threads, ProductInputs inputs) : ops_(threads, inputs) {}
    std::string name() const override { return "cpu"; }
    DeviceOps& ops() override { return ops_; }
    std::unique_ptr<StreamBackend> make_stream() override { return nullptr; }

  private:
    CpuOps ops_;
};

}  // namespace

DeviceOps& shared_cpu_ops() {
    static CpuOps ops(1);
    return ops;
}

std::unique_ptr<DeviceBackend> make_cpu_device_backend(int intra_op_threads, ProductInputs inputs) {
    return std::make_unique<CpuDeviceBackend>(intra_op_threads, inputs);
}

}  // namespace pd
