// The memory and kernels of one device, behind one interface so every strategy runs on every
// backend (ggml's shape: device, buffer, stream). A call made from one of the device's
// streams runs in that stream's order: on the CPU right away on the stream's thread, on CUDA
// launched on the stream's cudaStream_t. Pointers are the device's own memory.
#pragma once

#include <cstddef>
#include <memory>
#include <utility>

#include "pd/dtype.h"
#include "pd/fp8.h"

namespace pd {

struct OptimizerSettings;

// An ordering point on a device stream that work elsewhere must wait for (data handed from
// one stream to another outside Stream events, e.g. a transport payload). CPU streams are
// ordered by their threads and need none: their events are null.
using DeviceEvent = std::shared_ptr<void>;

// How a kernel stores a parameter gradient: added to what the buffer holds (micro-batches,
// or a buffer zeroed first), or written over it (a step's first and only contribution, so
// the buffer need not be zero-filled first: the result is the same bits).
enum class GradWrite { add, overwrite };

// What loss scaling and clipping read from a gradient before the update.
struct GradientCheck {
    std::size_t nonfinite = 0;  // inf or NaN values (GradScaler's found_inf when any)
    std::size_t zeros = 0;      // values exactly zero (underflow shows here in fp16)
    double sum_squares = 0.0;   // of the finite values, summed in double in index order
};

// What one FP8 cast saw (DeviceOps::cast_fp8), in the scaled domain (x times the scale).
struct Fp8CastStats {
    float amax = 0;              // the largest |x| before scaling: the tensor's amax
    std::size_t nonzero = 0;     // values not zero before the cast
    std::size_t saturated = 0;   // past the encoding's largest value, clamped to it
    std::size_t flushed = 0;     // not zero, rounded to zero (below half the smallest subnormal)
    double error_squares = 0.0;  // sum of (x s - fp8(x s))^2 over the finite values
    double value_squares = 0.0;  // sum of (x s)^2 over the finite values
};

class DeviceOps {
  public:
    virtual ~DeviceOps() = default;

    // Zero-filled storage for `count` floats. Release may come from any of the device's
    // streams or, once they are idle, from the host.
    virtual float* allocate(std::size_t count) = 0;
    // Storage whose contents are garbage, for a buffer its first kernel overwrites whole.
    virtual float* allocate_uninitialized(std::size_t count) { return allocate(count); }
    virtual void release(float* data) noexcept = 0;
    // Whether a released block may be handed out again at once, with no wait for work still
    // queued on it: true where kernels complete before their call returns (CPU). The CUDA
    // backend's stream-ordered pool (cudaMallocAsync) does its own caching.
    virtual bool reuses_freed_blocks() const { return false; }

    // `src` may live on another device of the same run (a transport payload).
    virtual void copy(float* dst, const float* src, std::size_t count) = 0;
    virtual void fill_zero(float* dst, std::size_t count) = 0;
    virtual void upload(float* dst, const float* host, std::size_t count) = 0;
    // Complete when it returns.
    virtual void download(float* host, const float* src, std::size_t count) = 0;

    virtual void add(float* y, const float* x, std::size_t count) = 0;
    // Rounds every value to `dtype` in place (pd::round_to): a 16-bit tensor's store; fp32
    // leaves the values as they are.
    virtual void round_to(DType dtype, float* data, std::size_t count) = 0;
    // C[m,n] = alpha * op(A) op(B) + beta * C, row-major.
    virtual void gemm(bool trans_a, bool trans_b, int m, int n, int k, float alpha, const float* a,
                      const float* b, float beta, float* c) = 0;
    // y[rows,out] = x[rows,in] w[in,out] + bias
    virtual void linear_forward(const float* x, const float* w, const float* bias, int rows, int in,
                                int out, float* y) = 0;
    // dw += x^T dy, dbias += column sums of dy (or = for GradWrite::overwrite), and (when
    // dx != nullptr) dx = dy w^T.
    virtual void linear_backward(const float* x, const float* w, const float* dy, int rows, int in,
                                 int out, float* dw, float* dbias, float* dx, GradWrite write) = 0;
    // FP8 (pd/fp8.h), CPU only so far. dst = round_to_fp8(encoding, src x scale): each value
    // the code of an FP8 number, held in fp32.
    virtual Fp8CastStats cast_fp8(Fp8Encoding encoding, float scale, const float* src, float* dst,
                                  std::size_t count);
    // An FP8 product: y = alpha (xq wq) + bias, alpha the inputs' inverse scales multiplied.
    virtual void scaled_linear_forward(const float* xq, const float* wq, const float* bias,
                                       int rows, int in, int out, float alpha, float* y);
    // Its backward: dw (+)= alpha_w xq^T dyq, dbias (+)= column sums of the unscaled dy (as
    // TE takes the bias gradient from the high-precision gradient), and, when dx is not null,
    // dx = alpha_x dyq wq^T.
    virtual void scaled_linear_backward(const float* xq, const float* wq, const float* dyq,
                                        const float* dy, int rows, int in, int out, float alpha_w,
                                        float alpha_x, float* dw, float* dbias, float* dx,
                                        GradWrite write);
    virtual void gelu_forward(const float* a, float* g, std::size_t n) = 0;
    virtual void gelu_backward(const float* a, const float* dg, float* da, std::size_t n) = 0;
    // Labels are class indices stored as floats (exact below 2^24). Adds the summed loss to
    // *loss_sum unless it is null; dlogits = (p - onehot) * scale.
    virtual void softmax_cross_entropy(const float* logits, const float* labels, int rows,
                                       int classes, float scale, float* dlogits,
                                       double* loss_sum) = 0;
    // out[r, j] += bias[j] + residual[r, j]
    virtual void bias_residual(float* out, const float* bias, const float* residual, int rows,
                               int width) = 0;
    // Transformer kernels (CPU only so far: other backends throw). LayerNorm over each row of
    // `width` (eps 1e-5, biased variance, as torch.nn.LayerNorm): y = (x - mean) * rstd * gamma
    // + beta, with stats[2r] = mean and stats[2r + 1] = rstd kept for backward.
    virtual void layer_norm_forward(const float* x, const float* gamma, const float* beta, int rows,
                                    int width, float* y, float* stats);
    // dx = the input gradient (overwritten); dgamma, dbeta accumulate.
    virtual void layer_norm_backward(const float* x, const float* gamma, const float* stats,
                                     const float* dy, int rows, int width, float* dx, float* dgamma,
                                     float* dbeta);
    // Causal multi-head self-attention of `seqs` sequences of `seq_len` tokens: q, k, v and out
    // are [seqs x seq_len, heads x head_dim] (head j in columns j*head_dim..), probs is
    // [seqs, heads, seq_len, seq_len], softmax(q k^T / sqrt(head_dim)) with the future masked
    // (zero above the diagonal), kept for backward; out = probs v.
    virtual void attention_forward(const float* q, const float* k, const float* v, int seqs,
                                   int seq_len, int heads, int head_dim, float* probs, float* out);
    // dq, dk, dv overwritten from the output gradient.
    virtual void attention_backward(const float* q, const float* k, const float* v,
                                    const float* probs, const float* dout, int seqs, int seq_len,
                                    int heads, int head_dim, float* dq, float* dk, float* dv);
    // Ring attention (context parallelism): this device's q_len queries of each of `seqs`
    // sequences against one block of kv_len keys and values (q [seqs x q_len, ld], k, v [seqs x
    // kv_len, ld], ld = heads x head_dim), causal by token position: key j is visible to query i
    // iff kv_pos[j] <= q_pos[i] (host arrays, the same for every sequence). Online softmax (as
    // FlashAttention's): per query row and head a running max m and sum l ([seqs, heads,
    // q_len]) and an unnormalised output acc, rescaled as each block raises the max.
    virtual void attention_block_forward(const float* q, const float* k, const float* v, int seqs,
                                         int q_len, int kv_len, int heads, int head_dim,
                                         const int* q_pos, const int* kv_pos, float* acc, float* m,
                                         float* l);
    // After every block: out = acc / l (in place) and m becomes the rows' log-sum-exp.
    virtual void attention_block_finish(float* acc, float* m, const float* l, int seqs, int q_len,
                                        int heads, int head_dim);
    // Backward against one block, from the output and its log-sum-exp: P = exp(S - lse),
    // dv += P^T dout, dS = P (dout v^T - rowsum(dout out)), dq += dS k / sqrt(d),
    // dk += dS^T q / sqrt(d).
    virtual void attention_block_backward(const float* q, const float* k, const float* v,
                                          const float* out, const float* dout, const float* lse,
                                          int seqs, int q_len, int kv_len, int heads, int head_dim,
                                          const int* q_pos, const int* kv_pos, float* dq, float* dk,
                                          float* dv);
    // Mixture of experts (CPU only so far). Routing of `seqs` sequences of seq_len tokens:
    // probs = softmax(logits) per token over `experts`; each token's top_k experts (ties to the
    // lower index); slots per sequence in GShard's order (every token's first choice in token
    // order, then the second choices, ...), at most `capacity` per expert and sequence.
    // routes [tokens, top_k, 3]: expert, slot (a row of a dispatch buffer [experts, seqs,
    // capacity], or -1 when dropped), gate (the probability). fractions [seqs, experts]: each
    // expert's share of the sequence's top_k x seq_len choices. *aux_sum (unless null) +=
    // aux_weight x experts x sum_e f_e P_e for every sequence (P_e: mean probability of e).
    virtual void moe_route(const float* logits, int seqs, int seq_len, int experts, int top_k,
                           int capacity, float aux_weight, float* probs, float* routes,
                           float* fractions, double* aux_sum);
    // dispatch[slot] = x[token] for every kept route (the caller zero-fills the rest).
    virtual void moe_dispatch(const float* x, const float* routes, int tokens, int top_k, int width,
                              float* dispatch);
    // out[token] = sum of gate x y[slot] over the token's kept routes (overwritten).
    virtual void moe_combine(const float* y, const float* routes, int tokens, int top_k, int width,
                             float* out);
    // dy[slot] = gate x dout[token] (the caller zero-fills the rest); dgate [tokens, top_k] =
    // dout[token] . y[slot], 0 for a dropped route.
    virtual void moe_combine_backward(const float* y, const float* routes, const float* dout,
                                      int tokens, int top_k, int width, float* dy, float* dgate);
    // dx[token] += ddispatch[slot] for every kept route.
    virtual void moe_dispatch_backward(const float* ddispatch, const float* routes, int tokens,
                                       int top_k, int width, float* dx);
    // The router's logit gradient: dp = dgate on kept routes + aux_scale x f (the
    // load-balancing loss's), through the softmax (overwritten).
    virtual void moe_router_backward(const float* probs, const float* routes,
                                     const float* fractions, const float* dgate, int seqs,
                                     int seq_len, int experts, int top_k, float aux_scale,
                                     float* dlogits);
    // Gradient statistics and in-place scaling (loss scaling's unscale, clipping's factor):
    // CPU only so far, as the mixed precisions and clipping that use them.
    virtual GradientCheck check_gradients(const float* grads, std::size_t count);
    // Products whose inputs are rounded below fp32 (ProductInputs tf32 or bf16): the relative
    // RMS error of the inputs rounded since the last call (then restarted); < 0 where none were.
    virtual double take_product_input_error() { return -1.0; }
    virtual void scale(float* data, std::size_t count, float factor);
    // One update at step t (1-based); `state` holds the optimizer's floats per parameter
    // (with master weights, the fp32 master copy last; `params` then get it rounded to bf16).
    virtual void optimizer_update(const OptimizerSettings& settings, int t, float* params,
                                  const float* grads, float* state, std::size_t count) = 0;

    // A double on the device that loss kernels add to; read once its stream synchronized.
    virtual double* allocate_scalar() = 0;
    virtual void release_scalar(double* s) noexcept = 0;
    virtual void zero_scalar(double* s) = 0;
    virtual double read_scalar(const double* s) = 0;

    virtual DeviceEvent record_event() = 0;
    virtual void wait_event(const DeviceEvent& event) = 0;
};

// A loss accumulator on a device, freed with its owner.
class DeviceScalar {
  public:
    DeviceScalar() = default;
    explicit DeviceScalar(DeviceOps& ops) : ops_(&ops), value_(ops.allocate_scalar()) {}
    DeviceScalar(DeviceScalar&& other) noexcept
        : ops_(other.ops_), value_(std::exchange(other.value_, nullptr)) {}
    DeviceScalar& operator=(DeviceScalar&& other) noexcept {
        std::swap(ops_, other.ops_);
        std::swap(value_, other.value_);
        return *this;
    }
    DeviceScalar(const DeviceScalar&) = delete;
    DeviceScalar& operator=(const DeviceScalar&) = delete;
    ~DeviceScalar() {
        if (value_) ops_->release_scalar(value_);
    }

    double* get() { return value_; }
    void zero() { ops_->zero_scalar(value_); }
    double read() const { return value_ ? ops_->read_scalar(value_) : 0.0; }

  private:
    DeviceOps* ops_ = nullptr;
    double* value_ = nullptr;
};

}  // namespace pd
