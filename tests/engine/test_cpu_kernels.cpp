// The CPU backend's speed parts, held to numbers: the vectorised element-wise kernels against
// double-precision references with the error bounds elementwise.h states, the intra-op pool
// (every index once, errors surfaced, a second caller never blocked), threaded products equal
// to one call, the caching allocator (reuse, reserved vs live, out-of-memory still where live
// bytes pass capacity), and the `threads` setting.
#include <QtTest>
#include <atomic>
#include <cmath>
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
};

QTEST_GUILESS_MAIN(TestCpuKernels)
#include "test_cpu_kernels.moc"
