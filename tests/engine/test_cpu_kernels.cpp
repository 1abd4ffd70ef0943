// The CPU backend's speed parts, held to numbers: the vectorised element-wise kernels against
// double-precision references with the error bounds elementwise.h states, the intra-op pool
// (every index once, errors surfaced, a second caller never blocked), threaded products equal
// to one call, the caching allocator (reuse, reserved vs live, out-of-memory still where live
// bytes pass capacity), and the `threads` setting. The transformer kernels (LayerNorm and
// causal multi-head attention, forward and backward) against double-precision references,
// the attention reference's gradients against finite differences, and every transformer
// kernel bit for bit at 1 and 4 intra-op threads.
#include <QtTest>
#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstring>
#include <limits>
#include <map>
#include <random>
#include <thread>
#include <vector>

#include "backend/device_backend.h"
#include "backend/device_ops.h"
#include "cpu/elementwise.h"
#include "cpu/intra_op_pool.h"
#include "cpu/kernels.h"
#include "engine_test_support.h"
#include "pd/device.h"
#include "pd/error.h"
#include "pd/optimizer.h"
#include "pd/run_context.h"

using namespace pd;
using namespace pd::test;

namespace {

constexpr double kK = 0.7978845608028654, kC = 0.044715;

double gelu_ref(double x) {
    return 0.5 * x * (1.0 + std::tanh(kK * (x + kC * x * x * x)));
}

double gelu_grad_ref(double x) {
    const double t = std::tanh(kK * (x + kC * x * x * x));
    return 0.5 * (1.0 + t) + 0.5 * x * (1.0 - t * t) * kK * (1.0 + 3.0 * kC * x * x);
}

std::vector<float> random_floats(std::size_t n, unsigned seed, float scale = 1.0f) {
    std::mt19937 gen(seed);
    std::normal_distribution<float> dist(0.0f, scale);
    std::vector<float> v(n);
    for (float& x : v) x = dist(gen);
    return v;
}

// A linear layer's random input x [rows, in], weight w [in, out] and output gradient
// dy [rows, out], from seeds seed, seed + 1 and seed + 2.
struct LinearLayerInputs {
    std::vector<float> x, w, dy;
};
LinearLayerInputs linear_layer_inputs(int rows, int in, int out, unsigned seed) {
    const auto r = static_cast<std::size_t>(rows), i = static_cast<std::size_t>(in),
               o = static_cast<std::size_t>(out);
    return {random_floats(r * i, seed), random_floats(i * o, seed + 1),
            random_floats(r * o, seed + 2)};
}

// Scaled error: the largest |got - ref| over a tensor, over its largest |ref| (1e-30 floor).
// fp32 kernels are held to this against double references, so a bound reads in units of the
// tensor's own scale whatever its magnitude.
double scaled_error(const std::vector<float>& got, const std::vector<double>& ref) {
    if (got.size() != ref.size()) return INFINITY;
    double diff = 0, top = 0;
    for (std::size_t i = 0; i < ref.size(); ++i) {
        diff = std::max(diff, std::fabs(double(got[i]) - ref[i]));
        if (std::isnan(got[i])) diff = INFINITY;
        top = std::max(top, std::fabs(ref[i]));
    }
    return diff / std::max(top, 1e-30);
}

// The scaled error of each row of `width` on its own scale, the worst row's.
double row_scaled_error(const std::vector<float>& got, const std::vector<double>& ref, int width) {
    if (got.size() != ref.size()) return INFINITY;
    const std::size_t w = static_cast<std::size_t>(width);
    double worst = 0;
    for (std::size_t at = 0; at < ref.size(); at += w)
        worst = std::max(worst,
                         scaled_error(std::vector<float>(got.begin() + at, got.begin() + at + w),
                                      std::vector<double>(ref.begin() + at, ref.begin() + at + w)));
    return worst;
}

// LayerNorm inputs whose rows differ in offset and spread: (3, 2), where the mean must be
// taken away, and (0.05, 0.1) and (-0.01, 0.02), where the variance is small enough (4e-4)
// that eps (1e-5) moves the result by about 1%.
std::vector<float> layer_norm_input(int rows, int width, unsigned seed) {
    auto x = random_floats(static_cast<std::size_t>(rows) * width, seed);
    const float offset[] = {3.0f, 0.05f, -0.01f}, spread[] = {2.0f, 0.1f, 0.02f};
    for (std::size_t i = 0; i < x.size(); ++i) {
        const std::size_t kind = i / static_cast<std::size_t>(width) % 3;
        x[i] = offset[kind] + spread[kind] * x[i];
    }
    return x;
}

std::vector<double> widen(const std::vector<float>& v) {
    return std::vector<double>(v.begin(), v.end());
}

std::vector<double> scaled(std::vector<double> v, double factor) {
    for (double& x : v) x *= factor;
    return v;
}

// Bit for bit, NaN and the sign of zero included.
bool same_bits(const std::vector<float>& a, const std::vector<float>& b) {
    return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0;
}

// LayerNorm in double, as torch.nn.LayerNorm: biased variance, eps 1e-5.
struct LayerNormRef {
    std::vector<double> y, mean, rstd;
};

LayerNormRef layer_norm_ref(const std::vector<double>& x, const std::vector<double>& gamma,
                            const std::vector<double>& beta, int rows, int width) {
    const std::size_t w = static_cast<std::size_t>(width);
    LayerNormRef r{std::vector<double>(x.size()), {}, {}};
    for (std::size_t row = 0; row < static_cast<std::size_t>(rows); ++row) {
        const double* xr = &x[row * w];
        double mean = 0, var = 0;
        for (std::size_t j = 0; j < w; ++j) mean += xr[j];
        mean /= static_cast<double>(w);
        for (std::size_t j = 0; j < w; ++j) var += (xr[j] - mean) * (xr[j] - mean);
        var /= static_cast<double>(w);
        const double rstd = 1.0 / std::sqrt(var + 1e-5);
        for (std::size_t j = 0; j < w; ++j)
            r.y[row * w + j] = (xr[j] - mean) * rstd * gamma[j] + beta[j];
        r.mean.push_back(mean);
        r.rstd.push_back(rstd);
    }
    return r;
}

// The textbook LayerNorm backward in double: with xhat = (x - mean) rstd and g = dy gamma,
// dx = rstd (g - mean(g) - xhat mean(g xhat)), dgamma = sum over rows of dy xhat, dbeta = sum dy.
struct LayerNormGradRef {
    std::vector<double> dx, dgamma, dbeta;
};

LayerNormGradRef layer_norm_backward_ref(const std::vector<double>& x,
                                         const std::vector<double>& gamma,
                                         const std::vector<double>& dy, int rows, int width) {
    const std::size_t w = static_cast<std::size_t>(width);
    const LayerNormRef f = layer_norm_ref(x, gamma, std::vector<double>(w), rows, width);
    LayerNormGradRef r{std::vector<double>(x.size()), std::vector<double>(w),
                       std::vector<double>(w)};
    for (std::size_t row = 0; row < static_cast<std::size_t>(rows); ++row) {
        std::vector<double> xhat(w), g(w);
        double mean_g = 0, mean_gx = 0;
        for (std::size_t j = 0; j < w; ++j) {
            xhat[j] = (x[row * w + j] - f.mean[row]) * f.rstd[row];
            g[j] = dy[row * w + j] * gamma[j];
            mean_g += g[j] / static_cast<double>(w);
            mean_gx += g[j] * xhat[j] / static_cast<double>(w);
            r.dgamma[j] += dy[row * w + j] * xhat[j];
            r.dbeta[j] += dy[row * w + j];
        }
        for (std::size_t j = 0; j < w; ++j)
            r.dx[row * w + j] = f.rstd[row] * (g[j] - mean_g - xhat[j] * mean_gx);
    }
    return r;
}

// One attention call's sizes; q, k, v, out are [rows(), width()], head j in columns
// j * head_dim .. (j + 1) * head_dim, probs [seqs, heads, seq_len, seq_len].
struct AttentionShape {
    int seqs, seq_len, heads, head_dim;
    std::size_t rows() const { return static_cast<std::size_t>(seqs) * seq_len; }
    std::size_t width() const { return static_cast<std::size_t>(heads) * head_dim; }
    std::size_t elements() const { return rows() * width(); }
    std::size_t probs() const {
        return static_cast<std::size_t>(seqs) * heads * seq_len * static_cast<std::size_t>(seq_len);
    }
    QString text() const {
        return QString("seqs %1 seq_len %2 heads %3 head_dim %4")
            .arg(seqs)
            .arg(seq_len)
            .arg(heads)
            .arg(head_dim);
    }
};

// Naive causal attention in double: scores q.k / sqrt(d) for c <= i, a max-shifted softmax,
// out = P V.
struct AttentionRef {
    std::vector<double> probs, out;
};

AttentionRef attention_ref(const std::vector<double>& q, const std::vector<double>& k,
                           const std::vector<double>& v, const AttentionShape& s) {
    const std::size_t S = static_cast<std::size_t>(s.seq_len),
                      d = static_cast<std::size_t>(s.head_dim);
    const std::size_t ld = s.width();
    const double scale = 1.0 / std::sqrt(static_cast<double>(s.head_dim));
    AttentionRef r{std::vector<double>(s.probs()), std::vector<double>(s.elements())};
    for (std::size_t b = 0; b < static_cast<std::size_t>(s.seqs); ++b)
        for (std::size_t j = 0; j < static_cast<std::size_t>(s.heads); ++j) {
            double* p = &r.probs[(b * s.heads + j) * S * S];
            auto at = [&](const std::vector<double>& t, std::size_t token, std::size_t col) {
                return t[(b * S + token) * ld + j * d + col];
            };
            for (std::size_t i = 0; i < S; ++i) {
                double top = -INFINITY;
                for (std::size_t c = 0; c <= i; ++c) {
                    double dot = 0;
                    for (std::size_t t = 0; t < d; ++t) dot += at(q, i, t) * at(k, c, t);
                    p[i * S + c] = dot * scale;
                    top = std::max(top, p[i * S + c]);
                }
                double sum = 0;
                for (std::size_t c = 0; c <= i; ++c)
                    sum += p[i * S + c] = std::exp(p[i * S + c] - top);
                for (std::size_t c = 0; c <= i; ++c) p[i * S + c] /= sum;
                for (std::size_t t = 0; t < d; ++t) {
                    double o = 0;
                    for (std::size_t c = 0; c <= i; ++c) o += p[i * S + c] * at(v, c, t);
                    r.out[(b * S + i) * ld + j * d + t] = o;
                }
            }
        }
    return r;
}

// The analytic backward in double: dV = P^T dO, dP = dO V^T, dS = P (dP - rowsum(P dP)),
// dQ = dS K / sqrt(d), dK = dS^T Q / sqrt(d).
struct AttentionGradRef {
    std::vector<double> dq, dk, dv;
};

AttentionGradRef attention_backward_ref(const std::vector<double>& q, const std::vector<double>& k,
                                        const std::vector<double>& v,
                                        const std::vector<double>& probs,
                                        const std::vector<double>& dout, const AttentionShape& s) {
    const std::size_t S = static_cast<std::size_t>(s.seq_len),
                      d = static_cast<std::size_t>(s.head_dim);
    const std::size_t ld = s.width();
    const double scale = 1.0 / std::sqrt(static_cast<double>(s.head_dim));
    AttentionGradRef r{std::vector<double>(s.elements()), std::vector<double>(s.elements()),
                       std::vector<double>(s.elements())};
    for (std::size_t b = 0; b < static_cast<std::size_t>(s.seqs); ++b)
        for (std::size_t j = 0; j < static_cast<std::size_t>(s.heads); ++j) {
            const double* p = &probs[(b * s.heads + j) * S * S];
            auto idx = [&](std::size_t token, std::size_t col) {
                return (b * S + token) * ld + j * d + col;
            };
            std::vector<double> ds(S * S);
            for (std::size_t i = 0; i < S; ++i) {
                for (std::size_t c = 0; c < S; ++c)
                    for (std::size_t t = 0; t < d; ++t)
                        ds[i * S + c] += dout[idx(i, t)] * v[idx(c, t)];  // dP
                double dot = 0;
                for (std::size_t c = 0; c < S; ++c) dot += p[i * S + c] * ds[i * S + c];
                for (std::size_t c = 0; c < S; ++c)
                    ds[i * S + c] = p[i * S + c] * (ds[i * S + c] - dot);
            }
            for (std::size_t i = 0; i < S; ++i)
                for (std::size_t c = 0; c < S; ++c)
                    for (std::size_t t = 0; t < d; ++t) {
                        r.dv[idx(c, t)] += p[i * S + c] * dout[idx(i, t)];
                        r.dq[idx(i, t)] += ds[i * S + c] * k[idx(c, t)] * scale;
                        r.dk[idx(c, t)] += ds[i * S + c] * q[idx(i, t)] * scale;
                    }
        }
    return r;
}

// The attention shapes the kernels are held to: one token (a softmax of one entry), head
// widths that are and are not a multiple of a vector, one to four heads, several sequences.
const AttentionShape kAttentionShapes[] = {{1, 1, 1, 4},   {2, 1, 4, 4}, {1, 5, 1, 8},
                                           {2, 5, 3, 8},   {3, 5, 2, 5}, {1, 16, 2, 16},
                                           {3, 16, 4, 16}, {2, 16, 3, 7}};

constexpr float kGarbage = std::numeric_limits<float>::quiet_NaN();

}  // namespace

class TestCpuKernels : public QObject {
    Q_OBJECT
  private slots:
    void gelu_is_within_its_stated_error() {
        std::vector<float> x;
        for (int i = -100000; i <= 100000; ++i) x.push_back(static_cast<float>(i * 1e-4));
        std::vector<float> g(x.size()), d(x.size()), ones(x.size(), 1.0f);
        cpu::gelu_forward(x.data(), g.data(), x.size());
        cpu::gelu_backward(x.data(), ones.data(), d.data(), x.size());
        double forward = 0, backward = 0;
        for (std::size_t i = 0; i < x.size(); ++i) {
            const double xi = x[i];
            forward =
                std::max(forward, std::fabs(g[i] - gelu_ref(xi)) / std::max(1.0, std::fabs(xi)));
            backward = std::max(backward, std::fabs(d[i] - gelu_grad_ref(xi)));
        }
        qInfo("GELU |x| <= 10: forward %.3g x max(1,|x|), backward %.3g", forward, backward);
        QVERIFY2(forward <= 3e-7, qPrintable(QString::number(forward)));
        QVERIFY2(backward <= 4e-7, qPrintable(QString::number(backward)));
        // The tails stay finite and right in the limit: GELU(-40) ~ 0, GELU(40) = 40.
        const float tails[] = {-40.0f, 40.0f, 1e30f};
        float out[3], grad[3];
        const float one[3] = {1, 1, 1};
        cpu::gelu_forward(tails, out, 3);
        cpu::gelu_backward(tails, one, grad, 3);
        QVERIFY(std::fabs(out[0]) < 1e-30f);
        QCOMPARE(out[1], 40.0f);
        QCOMPARE(out[2], 1e30f);
        for (float v : grad) QVERIFY(std::isfinite(v));
        QVERIFY(std::fabs(grad[0]) < 1e-30f);
        QCOMPARE(grad[1], 1.0f);
    }

    void gelu_backward_may_write_over_its_gradient() {
        const auto a = random_floats(1001, 1, 3.0f);
        auto dg = random_floats(1001, 2);
        std::vector<float> separate(dg.size());
        cpu::gelu_backward(a.data(), dg.data(), separate.data(), dg.size());
        cpu::gelu_backward(a.data(), dg.data(), dg.data(), dg.size());
        QCOMPARE(dg, separate);
    }

    void softmax_cross_entropy_matches_double_precision() {
        const std::size_t rows = 37, classes = 10;
        const auto logits = random_floats(rows * classes, 3, 4.0f);
        std::vector<float> labels(rows);
        for (std::size_t r = 0; r < rows; ++r) labels[r] = static_cast<float>((r * 7) % classes);
        std::vector<float> dz(rows * classes);
        const float scale = 1.0f / rows;
        const double loss = cpu::softmax_cross_entropy(logits.data(), labels.data(), rows, classes,
                                                       scale, dz.data());
        double ref_loss = 0, worst_grad = 0;
        for (std::size_t r = 0; r < rows; ++r) {
            const float* z = &logits[r * classes];
            double m = z[0], sum = 0;
            for (std::size_t j = 0; j < classes; ++j) m = std::max(m, double(z[j]));
            for (std::size_t j = 0; j < classes; ++j) sum += std::exp(z[j] - m);
            const std::size_t label = static_cast<std::size_t>(labels[r]);
            ref_loss += std::log(sum) - (z[label] - m);
            for (std::size_t j = 0; j < classes; ++j) {
                const double p = std::exp(z[j] - m) / sum;
                const double ref = (p - (j == label ? 1.0 : 0.0)) * scale;
                worst_grad = std::max(worst_grad, std::fabs(dz[r * classes + j] - ref));
            }
        }
        QVERIFY2(std::fabs(loss - ref_loss) <= 1e-6 * ref_loss,
                 qPrintable(QString("%1 vs %2").arg(loss).arg(ref_loss)));
        QVERIFY2(worst_grad <= 1e-7 * scale * 10, qPrintable(QString::number(worst_grad)));
    }

    void adamw_matches_the_scalar_formula() {
        const std::size_t n = 1003;  // not a multiple of any vector width
        auto p = random_floats(n, 4), m = random_floats(n, 5, 0.1f), v = random_floats(n, 6, 0.1f);
        for (float& x : v) x = x * x;
        const auto g = random_floats(n, 7);
        auto p_ref = p, m_ref = m, v_ref = v;
        OptimizerSettings s;
        s.lr = 1e-3f;
        std::vector<float> state(2 * n);
        std::copy(m.begin(), m.end(), state.begin());
        std::copy(v.begin(), v.end(), state.begin() + n);
        optimizer_update(s, 3, p.data(), g.data(), state.data(), n);
        const double bc1 = 1 - std::pow(double(s.beta1), 3), bc2 = 1 - std::pow(double(s.beta2), 3);
        double worst = 0;
        for (std::size_t i = 0; i < n; ++i) {  // torch.optim.AdamW's update, in double
            const double mi = s.beta1 * double(m_ref[i]) + (1 - s.beta1) * double(g[i]);
            const double vi = s.beta2 * double(v_ref[i]) + (1 - s.beta2) * double(g[i]) * g[i];
            double pi = double(p_ref[i]) * (1 - double(s.lr) * s.weight_decay);
            pi -= s.lr / bc1 * mi / (std::sqrt(vi) / std::sqrt(bc2) + s.eps);
            worst = std::max(worst, std::fabs(p[i] - pi) / std::max(1e-3, std::fabs(pi)));
            const double terms = s.beta1 * std::fabs(m_ref[i]) + (1 - s.beta1) * std::fabs(g[i]);
            QVERIFY(std::fabs(state[i] - mi) <= 1e-6 * std::max(1e-3, terms));
        }
        QVERIFY2(worst <= 1e-6, qPrintable(QString::number(worst)));
        // A range update equals the whole update on that range.
        std::vector<float> p2 = p_ref, state2(2 * n);
        std::copy(m_ref.begin(), m_ref.end(), state2.begin());
        std::copy(v_ref.begin(), v_ref.end(), state2.begin() + n);
        optimizer_update_range(s, 3, p2.data(), g.data(), state2.data(), n, 0, 500);
        optimizer_update_range(s, 3, p2.data(), g.data(), state2.data(), n, 500, n);
        QCOMPARE(p2, p);
        QCOMPARE(state2, state);
    }

    void pool_runs_every_index_once() {
        for (int threads : {1, 2, 3, 5}) {
            cpu::IntraOpPool pool(threads);
            QCOMPARE(pool.threads(), threads);
            for (std::size_t n : {std::size_t{0}, std::size_t{1}, std::size_t{7}, std::size_t{1000},
                                  std::size_t{100003}}) {
                std::vector<std::atomic<int>> hits(n);
                pool.parallel_for(n, 10, [&](std::size_t lo, std::size_t hi) {
                    for (std::size_t i = lo; i < hi; ++i) hits[i].fetch_add(1);
                });
                for (std::size_t i = 0; i < n; ++i) QCOMPARE(hits[i].load(), 1);
            }
        }
    }

    void pool_back_to_back_kernels_run_each_part_once() {
        // Parts are claimed: a worker that wakes late for a kernel that has ended must claim
        // nothing of it, nor of the next one with the old kernel's function (each kernel's
        // function writes its own, then destroyed, counters: a stale call lands elsewhere).
        cpu::IntraOpPool pool(3);
        long long total = 0;
        for (int kernel = 0; kernel < 20000; ++kernel) {
            const int parts = 1 + kernel % 3;
            std::vector<std::atomic<int>> hits(static_cast<std::size_t>(parts));
            pool.run(parts, [&](int part) { hits[static_cast<std::size_t>(part)].fetch_add(1); });
            for (const auto& h : hits) {
                if (h.load() != 1)
                    QFAIL(qPrintable(
                        QString("kernel %1: a part ran %2 times").arg(kernel).arg(h.load())));
                total += h.load();
            }
        }
        QCOMPARE(total, 39999LL);  // 6667 kernels of 1 part, 6667 of 2, 6666 of 3
    }

    void pool_rethrows_a_parts_error() {
        cpu::IntraOpPool pool(3);
        bool thrown = false;
        try {
            pool.run(3, [](int part) {
                if (part == 2) throw std::runtime_error("part 2 failed");
            });
        } catch (const std::runtime_error& e) {
            thrown = std::string(e.what()) == "part 2 failed";
        }
        QVERIFY(thrown);
        // and stays usable
        std::atomic<int> sum{0};
        pool.run(3, [&](int part) { sum += part + 1; });
        QCOMPARE(sum.load(), 6);
    }

    void pool_second_caller_runs_inline() {
        // A device's two streams call kernels at once: both finish, each with its own result.
        cpu::IntraOpPool pool(2);
        std::vector<long long> results(2);
        auto caller = [&](int who) {
            for (int round = 0; round < 200; ++round) {
                std::atomic<long long> sum{0};
                pool.parallel_for(1000, 100, [&](std::size_t lo, std::size_t hi) {
                    long long s = 0;
                    for (std::size_t i = lo; i < hi; ++i) s += static_cast<long long>(i);
                    sum += s;
                });
                results[static_cast<std::size_t>(who)] += sum.load();
            }
        };
        std::thread other(caller, 1);
        caller(0);
        other.join();
        QCOMPARE(results[0], 200LL * 499500);
        QCOMPARE(results[1], 200LL * 499500);
    }

    void threaded_products_equal_one_call() {
        cpu::init_blas_threads();
        cpu::IntraOpPool one(1), four(4);
        struct Shape {
            bool ta, tb;
            int m, n, k;
        };
        // Tall (split by rows) and wide (split by columns), each transpose combination.
        for (const Shape s : {Shape{false, false, 256, 64, 512}, Shape{true, false, 512, 96, 256},
                              Shape{false, true, 64, 512, 300}, Shape{true, true, 48, 700, 256}}) {
            const auto a = random_floats(static_cast<std::size_t>(s.m) * s.k, 8);
            const auto b = random_floats(static_cast<std::size_t>(s.k) * s.n, 9);
            auto c1 = random_floats(static_cast<std::size_t>(s.m) * s.n, 10), c4 = c1;
            cpu::gemm(one, s.ta, s.tb, s.m, s.n, s.k, 0.5f, a.data(), b.data(), 1.0f, c1.data());
            cpu::gemm(four, s.ta, s.tb, s.m, s.n, s.k, 0.5f, a.data(), b.data(), 1.0f, c4.data());
            QVERIFY2(relative_error(c4, c1) <= 1e-6,
                     qPrintable(QString("%1x%2x%3").arg(s.m).arg(s.n).arg(s.k)));
        }
    }

    // A step's first backward writes its weight and bias gradients over whatever the buffer
    // held (here NaN): the same bits as adding them to a zeroed buffer, at 1 and 3 threads.
    void linear_backward_overwrite_equals_add_to_zero() {
        cpu::init_blas_threads();
        const int rows = 64, in = 96, out = 200;
        const auto [x, w, dy] = linear_layer_inputs(rows, in, out, 21);
        for (const int threads : {1, 3}) {
            cpu::IntraOpPool pool(threads);
            const float nan = std::numeric_limits<float>::quiet_NaN();
            std::vector<float> dw_add(static_cast<std::size_t>(in) * out, 0.0f),
                db_add(static_cast<std::size_t>(out), 0.0f),
                dx_add(static_cast<std::size_t>(rows) * in);
            std::vector<float> dw_over(dw_add.size(), nan), db_over(db_add.size(), nan),
                dx_over(dx_add.size(), nan);
            cpu::linear_backward(pool, x.data(), w.data(), dy.data(), rows, in, out, dw_add.data(),
                                 db_add.data(), dx_add.data(), true);
            cpu::linear_backward(pool, x.data(), w.data(), dy.data(), rows, in, out, dw_over.data(),
                                 db_over.data(), dx_over.data(), false);
            QVERIFY(std::any_of(dw_add.begin(), dw_add.end(), [](float v) { return v != 0.0f; }));
            QCOMPARE(dw_over, dw_add);  // NaN anywhere would compare unequal
            QCOMPARE(db_over, db_add);
            QCOMPARE(dx_over, dx_add);
        }
    }

    // A linear layer's backward split over the pool gives one thread's gradients (dW
    // accumulated, dx overwritten), at every thread count, odd ones included.
    void threaded_linear_backward_equals_one_thread() {
        cpu::init_blas_threads();
        const int rows = 96, in = 128, out = 320;
        const auto [x, w, dy] = linear_layer_inputs(rows, in, out, 11);
        const auto dw0 = random_floats(static_cast<std::size_t>(in) * out, 14);
        const auto db0 = random_floats(static_cast<std::size_t>(out), 15);
        struct Grads {
            std::vector<float> dw, db, dx;
        };
        auto run = [&](int threads, bool with_dx) {
            cpu::IntraOpPool pool(threads);
            Grads g{dw0, db0, random_floats(static_cast<std::size_t>(rows) * in, 16)};
            cpu::linear_backward(pool, x.data(), w.data(), dy.data(), rows, in, out, g.dw.data(),
                                 g.db.data(), with_dx ? g.dx.data() : nullptr, true);
            return g;
        };
        for (const bool with_dx : {true, false}) {
            const Grads ref = run(1, with_dx);
            QVERIFY(relative_error(ref.dw, dw0) > 1e-3);  // the gradient was added
            for (const int threads : {2, 3, 4}) {
                const Grads g = run(threads, with_dx);
                const QString what = QString("%1 threads, dx %2").arg(threads).arg(with_dx);
                QVERIFY2(relative_error(g.dw, ref.dw) <= 1e-6, qPrintable(what));
                QVERIFY2(relative_error(g.db, ref.db) <= 1e-6, qPrintable(what));
                QVERIFY2(relative_error(g.dx, ref.dx) <= 1e-6, qPrintable(what));
            }
        }
    }

    void caching_allocator_reuses_blocks() {
        RunContext ctx(ClockMode::wall, LinkModel{}, false, 5.0);
        auto backend = make_cpu_device_backend(1);
        MemoryTracker mem(0, 1 << 20, ctx, backend->ops());
        float* first = nullptr;
        {
            Buffer a(mem, MemoryCategory::activations, 1000, Fill::none);
            first = a.data();
            for (std::size_t i = 0; i < a.size(); ++i) a.data()[i] = 7.0f;  // dirty it
            QCOMPARE(mem.live_total(), std::size_t{4000});
            QCOMPARE(mem.reserved(), std::size_t{4096});  // whole 512-byte blocks
        }
        QCOMPARE(mem.live_total(), std::size_t{0});
        QCOMPARE(mem.reserved(), std::size_t{4096});  // cached, not returned
        const std::size_t from_system = mem.system_allocations();
        for (int step = 0; step < 5; ++step) {  // a steady state asks the system for nothing
            Buffer b(mem, MemoryCategory::activations, 1000, Fill::zero);
            QCOMPARE(b.data(), first);
            for (std::size_t i = 0; i < b.size(); ++i) QCOMPARE(b.data()[i], 0.0f);  // refilled
        }
        QCOMPARE(mem.system_allocations(), from_system);
        QCOMPARE(mem.peak_reserved(), std::size_t{4096});
    }

    void out_of_memory_counts_live_bytes_not_the_cache() {
        RunContext ctx(ClockMode::wall, LinkModel{}, false, 5.0);
        auto backend = make_cpu_device_backend(1);
        MemoryTracker mem(2, 8192, ctx, backend->ops());
        { Buffer cached(mem, MemoryCategory::workspace, 1500); }  // 6 KiB block, now cached
        QCOMPARE(mem.reserved(), std::size_t{6144});
        // 5000 B live fits 8 KiB: the cache is emptied to make room, not an out-of-memory.
        Buffer b(mem, MemoryCategory::activations, 1250);
        QCOMPARE(mem.live_total(), std::size_t{5000});
        QVERIFY(mem.reserved() <= mem.capacity());
        try {
            Buffer c(mem, MemoryCategory::gradients, 1000);  // 5000 + 4000 > 8192
            QFAIL("allocation past capacity succeeded");
        } catch (const OutOfMemory& e) {
            QCOMPARE(e.info().device, 2);
            QCOMPARE(e.info().live_bytes, std::size_t{5000});
            QCOMPARE(e.info().requested_bytes, std::size_t{4000});
        }
        QCOMPARE(mem.live_total(), std::size_t{5000});
    }

    void a_runs_trace_records_reserved_memory() {
        RunConfig c = small_config(StrategyKind::dp, 2);
        const RunResult r = run_config(c);
        QCOMPARE(r.status, RunStatus::ok);
        QCOMPARE(r.trace.peak_reserved_bytes.size(), std::size_t{2});
        for (int d = 0; d < 2; ++d) {
            std::size_t peak_live = 0;
            std::map<MemoryCategory, std::size_t> live;
            for (const auto& s : r.trace.memory) {
                if (s.device != d) continue;
                live[s.category] = s.bytes;
                std::size_t total = 0;
                for (const auto& [cat, bytes] : live) total += bytes;
                peak_live = std::max(peak_live, total);
            }
            QVERIFY(peak_live > 0);
            // Reserved holds every live byte, and blocks cached besides.
            QVERIFY2(r.trace.peak_reserved_bytes[static_cast<std::size_t>(d)] >= peak_live,
                     qPrintable(QString("%1 < %2")
                                    .arg(r.trace.peak_reserved_bytes[static_cast<std::size_t>(d)])
                                    .arg(peak_live)));
        }
    }

    void intra_op_threads_keep_the_numbers() {
        for (StrategyKind s : {StrategyKind::single, StrategyKind::tp}) {
            RunConfig c = small_config(s, s == StrategyKind::single ? 1 : 2);
            c.width = 256;  // products large enough to be split
            c.batch = 64;
            c.steps = 3;
            c.clock = ClockMode::wall;
            c.threads = 1;
            const RunResult one = run_config(c);
            c.threads = 3;
            const RunResult three = run_config(c);
            QCOMPARE(one.status, RunStatus::ok);
            QCOMPARE(three.status, RunStatus::ok);
            QCOMPARE(three.trace.intra_op_threads, 3);
            QVERIFY(relative_error(three.final_parameters, one.final_parameters) <= 1e-6);
        }
    }

    void threads_setting_resolves_and_validates() {
        RunConfig c;
        c.devices = 2;
        c.strategy = StrategyKind::dp;
        QCOMPARE(resolve_intra_op_threads(c, ClockMode::wall, 8), 4);  // hardware / devices
        QCOMPARE(resolve_intra_op_threads(c, ClockMode::wall, 1), 1);  // at least 1
        QCOMPARE(resolve_intra_op_threads(c, ClockMode::device, 8), 1);
        c.threads = 3;
        QCOMPARE(resolve_intra_op_threads(c, ClockMode::wall, 8), 3);
        QCOMPARE(resolve_intra_op_threads(c, ClockMode::device, 8), 1);
        c.threads = -1;
        try {
            validate(c, {{"threads", "scenario key 'threads'"}});
            QFAIL("threads -1 accepted");
        } catch (const BadInput& e) {
            QVERIFY(std::string(e.what()).find("scenario key 'threads'") != std::string::npos);
        }
    }

    void layer_norm_forward_matches_double_precision() {
        // Each y is a few fp32 roundings of exact row statistics (the kernel sums in double):
        // x - mean, * rstd, * gamma, + beta, with mean and rstd themselves rounded to fp32.
        // That is some 1e-7 of the row's scale (measured 1.6e-7); the bound, 1e-6, leaves
        // room for the rounding to compound and none for a wrong formula (eps 1e-6 or a
        // variance over width - 1 fail it by far on the rows of small spread). mean and rstd
        // are one rounding of a double each: 1e-6 of the row's deviation and of rstd.
        auto backend = make_cpu_device_backend(1);
        DeviceOps& ops = backend->ops();
        double worst_y = 0, worst_stats = 0;
        unsigned seed = 100;
        for (int rows : {1, 7, 64})
            for (int width : {8, 64, 130}) {
                const std::size_t w = static_cast<std::size_t>(width), n = rows * w;
                const auto x = layer_norm_input(rows, width, ++seed);
                auto gamma = random_floats(w, ++seed, 0.5f);
                for (float& g : gamma) g += 1.0f;
                const auto beta = random_floats(w, ++seed, 0.5f);
                std::vector<float> y(n, kGarbage),
                    stats(2 * static_cast<std::size_t>(rows), kGarbage);
                ops.layer_norm_forward(x.data(), gamma.data(), beta.data(), rows, width, y.data(),
                                       stats.data());
                const LayerNormRef ref =
                    layer_norm_ref(widen(x), widen(gamma), widen(beta), rows, width);
                const double err_y = row_scaled_error(y, ref.y, width);
                double err_stats = 0;
                for (std::size_t r = 0; r < static_cast<std::size_t>(rows); ++r) {
                    err_stats =
                        std::max(err_stats, std::fabs(stats[2 * r] - ref.mean[r]) * ref.rstd[r]);
                    err_stats = std::max(err_stats,
                                         std::fabs(stats[2 * r + 1] - ref.rstd[r]) / ref.rstd[r]);
                    if (std::isnan(stats[2 * r]) || std::isnan(stats[2 * r + 1]))
                        err_stats = INFINITY;
                }
                const QString where = QString("rows %1 width %2").arg(rows).arg(width);
                QVERIFY2(err_y <= 1e-6, qPrintable(where + ": y " + QString::number(err_y)));
                QVERIFY2(err_stats <= 1e-6,
                         qPrintable(where + ": stats " + QString::number(err_stats)));
                worst_y = std::max(worst_y, err_y);
                worst_stats = std::max(worst_stats, err_stats);
            }
        qInfo("LayerNorm forward: y %.3g of scale, mean/rstd %.3g", worst_y, worst_stats);
    }

    void layer_norm_backward_matches_double_precision() {
        // dx = rstd (g - mean(g) - xhat mean(g xhat)) from fp32 stats and fp32 products with
        // double row sums: a few roundings of terms of the row's own size, some 1e-7 of its
        // scale. dgamma and dbeta sum one fp32 term per row, in fp32: up to `rows` roundings
        // of partial sums about as large as the result, still some 1e-7 at 64 rows (measured
        // 3e-7). The bound is 2e-6 for all three. dx is overwritten (it starts as NaN and a
        // second call gives the same bits); dgamma and dbeta accumulate (a second call
        // doubles them).
        auto backend = make_cpu_device_backend(1);
        DeviceOps& ops = backend->ops();
        double worst_dx = 0, worst_dg = 0, worst_db = 0;
        unsigned seed = 200;
        for (int rows : {1, 7, 64})
            for (int width : {8, 64, 130}) {
                const std::size_t w = static_cast<std::size_t>(width), n = rows * w;
                const auto x = layer_norm_input(rows, width, ++seed);
                auto gamma = random_floats(w, ++seed, 0.5f);
                for (float& g : gamma) g += 1.0f;
                const auto beta = random_floats(w, ++seed, 0.5f);
                const auto dy = random_floats(n, ++seed);
                std::vector<float> y(n), stats(2 * static_cast<std::size_t>(rows));
                ops.layer_norm_forward(x.data(), gamma.data(), beta.data(), rows, width, y.data(),
                                       stats.data());
                std::vector<float> dx(n, kGarbage), dgamma(w, 0.0f), dbeta(w, 0.0f);
                ops.layer_norm_backward(x.data(), gamma.data(), stats.data(), dy.data(), rows,
                                        width, dx.data(), dgamma.data(), dbeta.data());
                const LayerNormGradRef ref =
                    layer_norm_backward_ref(widen(x), widen(gamma), widen(dy), rows, width);
                const QString where = QString("rows %1 width %2").arg(rows).arg(width);
                const double err_dx = row_scaled_error(dx, ref.dx, width);
                const double err_dg = scaled_error(dgamma, ref.dgamma);
                const double err_db = scaled_error(dbeta, ref.dbeta);
                QVERIFY2(err_dx <= 2e-6, qPrintable(where + ": dx " + QString::number(err_dx)));
                QVERIFY2(err_dg <= 2e-6, qPrintable(where + ": dgamma " + QString::number(err_dg)));
                QVERIFY2(err_db <= 2e-6, qPrintable(where + ": dbeta " + QString::number(err_db)));
                worst_dx = std::max(worst_dx, err_dx);
                worst_dg = std::max(worst_dg, err_dg);
                worst_db = std::max(worst_db, err_db);

                const auto first_dx = dx;
                ops.layer_norm_backward(x.data(), gamma.data(), stats.data(), dy.data(), rows,
                                        width, dx.data(), dgamma.data(), dbeta.data());
                QVERIFY2(same_bits(dx, first_dx), qPrintable(where + ": dx accumulated"));
                const double twice_dg = scaled_error(dgamma, scaled(ref.dgamma, 2.0));
                const double twice_db = scaled_error(dbeta, scaled(ref.dbeta, 2.0));
                QVERIFY2(twice_dg <= 2e-6,
                         qPrintable(where + ": dgamma twice " + QString::number(twice_dg)));
                QVERIFY2(twice_db <= 2e-6,
                         qPrintable(where + ": dbeta twice " + QString::number(twice_db)));
            }
        qInfo("LayerNorm backward: dx %.3g, dgamma %.3g, dbeta %.3g of scale", worst_dx, worst_dg,
              worst_db);
    }

    void layer_norm_reference_gradients_match_finite_differences() {
        // The backward reference above is the textbook formula; central differences of the
        // double forward, loss sum(y * R), check that formula itself (h = 1e-5: truncation
        // h^2 and rounding 1e-16 / h both far under the 1e-8 bound).
        const int rows = 3, width = 6;
        const std::size_t n = rows * static_cast<std::size_t>(width);
        auto x = widen(random_floats(n, 300, 2.0f));
        const auto gamma = widen(random_floats(width, 301, 1.0f));
        const auto beta = widen(random_floats(width, 302, 1.0f));
        const auto r = widen(random_floats(n, 303));
        auto loss = [&](const std::vector<double>& xs, const std::vector<double>& g) {
            const auto y = layer_norm_ref(xs, g, beta, rows, width).y;
            double l = 0;
            for (std::size_t i = 0; i < n; ++i) l += y[i] * r[i];
            return l;
        };
        const LayerNormGradRef grads = layer_norm_backward_ref(x, gamma, r, rows, width);
        const double h = 1e-5;
        double worst = 0;
        for (std::size_t i = 0; i < n; ++i) {
            const double keep = x[i];
            x[i] = keep + h;
            const double up = loss(x, gamma);
            x[i] = keep - h;
            const double down = loss(x, gamma);
            x[i] = keep;
            worst = std::max(worst, std::fabs((up - down) / (2 * h) - grads.dx[i]));
        }
        auto g = gamma;
        for (std::size_t j = 0; j < g.size(); ++j) {
            const double keep = g[j];
            g[j] = keep + h;
            const double up = loss(x, g);
            g[j] = keep - h;
            const double down = loss(x, g);
            g[j] = keep;
            worst = std::max(worst, std::fabs((up - down) / (2 * h) - grads.dgamma[j]));
        }
        qInfo("LayerNorm reference vs central differences: %.3g", worst);
        QVERIFY2(worst <= 1e-8, qPrintable(QString::number(worst)));
    }

    void attention_forward_matches_double_precision() {
        // Probabilities: expf of a score that is itself a short fp32 dot product, then one
        // fp32 multiply by the rounded reciprocal of a double sum: a few ulps of each value,
        // so 1e-6 absolute (they lie in [0, 1]). A row sums to 1 to those few ulps: 1e-6.
        // Above the diagonal, exactly 0. out = P V, an fp32 product over at most seq_len
        // terms: 1e-6 of the output's scale.
        auto backend = make_cpu_device_backend(1);
        DeviceOps& ops = backend->ops();
        double worst_p = 0, worst_sum = 0, worst_out = 0;
        unsigned seed = 400;
        for (const AttentionShape& s : kAttentionShapes) {
            const auto q = random_floats(s.elements(), ++seed, 1.5f);
            const auto k = random_floats(s.elements(), ++seed, 1.5f);
            const auto v = random_floats(s.elements(), ++seed);
            std::vector<float> probs(s.probs(), kGarbage), out(s.elements(), kGarbage);
            ops.attention_forward(q.data(), k.data(), v.data(), s.seqs, s.seq_len, s.heads,
                                  s.head_dim, probs.data(), out.data());
            const AttentionRef ref = attention_ref(widen(q), widen(k), widen(v), s);
            const std::size_t S = static_cast<std::size_t>(s.seq_len);
            double err_p = 0, err_sum = 0;
            for (std::size_t m = 0; m < s.probs() / (S * S); ++m)
                for (std::size_t i = 0; i < S; ++i) {
                    double sum = 0;
                    for (std::size_t c = 0; c < S; ++c) {
                        const std::size_t at = (m * S + i) * S + c;
                        if (c > i)
                            QVERIFY2(probs[at] == 0.0f,
                                     qPrintable(s.text() + QString(": probs[%1][%2][%3] = %4")
                                                               .arg(m)
                                                               .arg(i)
                                                               .arg(c)
                                                               .arg(probs[at])));
                        sum += probs[at];
                        err_p = std::max(err_p, std::fabs(probs[at] - ref.probs[at]));
                        if (std::isnan(probs[at])) err_p = INFINITY;
                    }
                    err_sum = std::max(err_sum, std::fabs(sum - 1.0));
                }
            const double err_out = scaled_error(out, ref.out);
            QVERIFY2(err_p <= 1e-6, qPrintable(s.text() + ": probs " + QString::number(err_p)));
            QVERIFY2(err_sum <= 1e-6,
                     qPrintable(s.text() + ": row sum " + QString::number(err_sum)));
            QVERIFY2(err_out <= 1e-6, qPrintable(s.text() + ": out " + QString::number(err_out)));
            worst_p = std::max(worst_p, err_p);
            worst_sum = std::max(worst_sum, err_sum);
            worst_out = std::max(worst_out, err_out);
        }
        qInfo("attention forward: probs %.3g absolute, row sums %.3g, out %.3g of scale", worst_p,
              worst_sum, worst_out);
    }

    void attention_backward_matches_double_precision() {
        // The kernel's own fp32 probabilities feed its backward (as in a run); the reference
        // recomputes them in double. dV = P^T dO and dP = dO V^T are short fp32 products;
        // dS = P (dP - rowsum(P dP)) subtracts terms of dP's size, so dq and dk carry a few
        // ulps of dP's scale, which random inputs keep near their own: measured 3e-7 of each
        // tensor's scale, bound 2e-6.
        auto backend = make_cpu_device_backend(1);
        DeviceOps& ops = backend->ops();
        double worst_dq = 0, worst_dk = 0, worst_dv = 0;
        unsigned seed = 500;
        for (const AttentionShape& s : kAttentionShapes) {
            const auto q = random_floats(s.elements(), ++seed, 1.5f);
            const auto k = random_floats(s.elements(), ++seed, 1.5f);
            const auto v = random_floats(s.elements(), ++seed);
            const auto dout = random_floats(s.elements(), ++seed);
            std::vector<float> probs(s.probs()), out(s.elements());
            ops.attention_forward(q.data(), k.data(), v.data(), s.seqs, s.seq_len, s.heads,
                                  s.head_dim, probs.data(), out.data());
            std::vector<float> dq(s.elements(), kGarbage), dk(s.elements(), kGarbage),
                dv(s.elements(), kGarbage);
            ops.attention_backward(q.data(), k.data(), v.data(), probs.data(), dout.data(), s.seqs,
                                   s.seq_len, s.heads, s.head_dim, dq.data(), dk.data(), dv.data());
            const auto qd = widen(q), kd = widen(k), vd = widen(v);
            const AttentionRef fwd = attention_ref(qd, kd, vd, s);
            const AttentionGradRef ref =
                attention_backward_ref(qd, kd, vd, fwd.probs, widen(dout), s);
            const double err_dq = scaled_error(dq, ref.dq), err_dk = scaled_error(dk, ref.dk),
                         err_dv = scaled_error(dv, ref.dv);
            // One token: its only probability is 1, so dS, dq and dk are exactly 0.
            if (s.seq_len == 1) {
                for (std::size_t i = 0; i < dq.size(); ++i) {
                    QCOMPARE(dq[i], 0.0f);
                    QCOMPARE(dk[i], 0.0f);
                }
            } else {
                QVERIFY2(err_dq <= 2e-6, qPrintable(s.text() + ": dq " + QString::number(err_dq)));
                QVERIFY2(err_dk <= 2e-6, qPrintable(s.text() + ": dk " + QString::number(err_dk)));
                worst_dq = std::max(worst_dq, err_dq);
                worst_dk = std::max(worst_dk, err_dk);
            }
            QVERIFY2(err_dv <= 2e-6, qPrintable(s.text() + ": dv " + QString::number(err_dv)));
            worst_dv = std::max(worst_dv, err_dv);
        }
        qInfo("attention backward: dq %.3g, dk %.3g, dv %.3g of scale", worst_dq, worst_dk,
              worst_dv);
    }

    void attention_reference_gradients_match_finite_differences() {
        // The analytic formulas the backward reference uses, against central differences of
        // the double forward with loss sum(out * R): h = 1e-5 leaves truncation (h^2) and
        // rounding (1e-16 / h) errors far under the 1e-8 bound, and a wrong term (a missing
        // scale, the softmax's rowsum, the mask) is off by O(1).
        const AttentionShape s{2, 4, 2, 3};
        std::vector<double> t[3] = {widen(random_floats(s.elements(), 600, 1.5f)),
                                    widen(random_floats(s.elements(), 601, 1.5f)),
                                    widen(random_floats(s.elements(), 602))};
        const auto r = widen(random_floats(s.elements(), 603));
        auto loss = [&] {
            const auto out = attention_ref(t[0], t[1], t[2], s).out;
            double l = 0;
            for (std::size_t i = 0; i < out.size(); ++i) l += out[i] * r[i];
            return l;
        };
        const AttentionGradRef grads = attention_backward_ref(
            t[0], t[1], t[2], attention_ref(t[0], t[1], t[2], s).probs, r, s);
        const std::vector<double>* analytic[3] = {&grads.dq, &grads.dk, &grads.dv};
        const double h = 1e-5;
        double worst = 0, largest = 0;
        for (int which = 0; which < 3; ++which)
            for (std::size_t i = 0; i < s.elements(); ++i) {
                const double keep = t[which][i];
                t[which][i] = keep + h;
                const double up = loss();
                t[which][i] = keep - h;
                const double down = loss();
                t[which][i] = keep;
                const double a = (*analytic[which])[i];
                worst = std::max(worst, std::fabs((up - down) / (2 * h) - a));
                largest = std::max(largest, std::fabs(a));
            }
        qInfo("attention reference vs central differences: %.3g (gradients up to %.3g)", worst,
              largest);
        QVERIFY(largest > 0.1);  // the check has something to check
        QVERIFY2(worst <= 1e-8, qPrintable(QString::number(worst)));
    }

    void transformer_kernels_are_the_same_at_1_and_4_threads() {
        // Each LayerNorm row and each (sequence, head) pair is computed whole by one thread in
        // a fixed order, so the split must not change a bit. 300 rows and 3 x 4 pairs give
        // four parts at four threads.
        auto one = make_cpu_device_backend(1), four = make_cpu_device_backend(4);
        struct Results {
            std::vector<float> y, stats, dx, dgamma, dbeta, probs, out, dq, dk, dv;
        };
        const int rows = 300, width = 130;
        const std::size_t n = rows * static_cast<std::size_t>(width);
        const auto x = random_floats(n, 700, 2.0f), gamma = random_floats(width, 701),
                   beta = random_floats(width, 702), dy = random_floats(n, 703);
        const AttentionShape s{3, 37, 4, 16};
        const auto q = random_floats(s.elements(), 704, 1.5f),
                   k = random_floats(s.elements(), 705, 1.5f), v = random_floats(s.elements(), 706),
                   dout = random_floats(s.elements(), 707);
        auto compute = [&](DeviceOps& ops) {
            Results r{std::vector<float>(n, kGarbage),
                      std::vector<float>(2 * static_cast<std::size_t>(rows), kGarbage),
                      std::vector<float>(n, kGarbage),
                      std::vector<float>(width, 0.0f),
                      std::vector<float>(width, 0.0f),
                      std::vector<float>(s.probs(), kGarbage),
                      std::vector<float>(s.elements(), kGarbage),
                      std::vector<float>(s.elements(), kGarbage),
                      std::vector<float>(s.elements(), kGarbage),
                      std::vector<float>(s.elements(), kGarbage)};
            ops.layer_norm_forward(x.data(), gamma.data(), beta.data(), rows, width, r.y.data(),
                                   r.stats.data());
            ops.layer_norm_backward(x.data(), gamma.data(), r.stats.data(), dy.data(), rows, width,
                                    r.dx.data(), r.dgamma.data(), r.dbeta.data());
            ops.attention_forward(q.data(), k.data(), v.data(), s.seqs, s.seq_len, s.heads,
                                  s.head_dim, r.probs.data(), r.out.data());
            ops.attention_backward(q.data(), k.data(), v.data(), r.probs.data(), dout.data(),
                                   s.seqs, s.seq_len, s.heads, s.head_dim, r.dq.data(), r.dk.data(),
                                   r.dv.data());
            return r;
        };
        const Results a = compute(one->ops()), b = compute(four->ops());
        QVERIFY(same_bits(a.y, b.y));
        QVERIFY(same_bits(a.stats, b.stats));
        QVERIFY(same_bits(a.dx, b.dx));
        QVERIFY(same_bits(a.dgamma, b.dgamma));
        QVERIFY(same_bits(a.dbeta, b.dbeta));
        QVERIFY(same_bits(a.probs, b.probs));
        QVERIFY(same_bits(a.out, b.out));
        QVERIFY(same_bits(a.dq, b.dq));
        QVERIFY(same_bits(a.dk, b.dk));
        QVERIFY(same_bits(a.dv, b.dv));
        for (const float* p : {a.y.data(), a.dx.data(), a.out.data(), a.dq.data()})
            QVERIFY(std::isfinite(p[0]));  // the garbage was overwritten
    }
};

QTEST_GUILESS_MAIN(TestCpuKernels)
#include "test_cpu_kernels.moc"
