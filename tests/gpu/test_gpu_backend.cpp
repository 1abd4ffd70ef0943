// The CUDA backend against the CPU: every strategy ends with the same parameters after 3
// steps (TF32 off), collectives are exact on crafted inputs for 1-8 virtual devices sharing a
// GPU, an out-of-memory on a virtual device's budget behaves as on the CPU, and the trace is
// timed by CUDA events. Without a usable GPU every case is skipped, saying why.
#include <QtTest>

#include <functional>
#include <memory>

#include "backend/device_backend.h"
#include "backend/device_ops.h"
#include "engine/crafted_collectives.h"
#include "engine/engine_test_support.h"
#include "pd/communicator.h"
#include "pd/run.h"
#include "pd/run_context.h"

using namespace pd;
using pd::test::relative_error;
using pd::test::run_config;

namespace {

RunConfig on_cuda(RunConfig c) {
    c.backend = BackendKind::cuda;
    c.clock = ClockMode::automatic;  // CUDA runs are timed by events (wall)
    return c;
}

RunConfig cpu_reference(RunConfig c) {
    c.backend = BackendKind::cpu;
    c.clock = ClockMode::device;
    return c;
}

RunConfig parity_config(StrategyKind strategy, int devices, OptimizerKind optimizer) {
    RunConfig c = pd::test::small_config(strategy, devices);
    c.steps = 3;
    c.optimizer = optimizer;
    return c;
}

// A group of virtual devices on the GPU(s), driven directly through the communicator.
struct GpuGroup {
    RunConfig config;
    RunContext ctx;
    Transport transport;
    std::unique_ptr<RunBackend> backend;
    std::vector<std::unique_ptr<Device>> devices;
    std::unique_ptr<Communicator> comm;

    explicit GpuGroup(int n)
        : config(make_config(n)), ctx(ClockMode::wall, LinkModel{}, true, 60.0), transport(ctx) {
        backend = make_run_backend(config, ctx);
        std::vector<Device*> members;
        for (int d = 0; d < n; ++d) {
            devices.push_back(
                std::make_unique<Device>(d, std::size_t{1} << 30, ctx, backend->make_device(d)));
            members.push_back(devices.back().get());
        }
        comm = std::make_unique<Communicator>(transport, members, 1);
    }
    ~GpuGroup() {
        for (auto& d : devices) d->comm().synchronize();
        transport.clear();
    }
    static RunConfig make_config(int n) {
        RunConfig c;
        c.backend = BackendKind::cuda;
        c.devices = n;
        return c;
    }
    void run(const std::function<void(int)>& body) {
        for (std::size_t d = 0; d < devices.size(); ++d)
            devices[d]->comm().enqueue([body, d] { body(static_cast<int>(d)); });
        for (auto& dev : devices) dev->comm().synchronize();
    }
};

}  // namespace

class TestGpuBackend : public QObject {
    Q_OBJECT
  private slots:
    void initTestCase() {
        const std::string why = backend_unavailable_reason(BackendKind::cuda);
        if (!why.empty()) QSKIP(qPrintable(QStringLiteral("no GPU here: %1").arg(why.c_str())));
    }

    void same_parameters_as_cpu_data() {
        QTest::addColumn<int>("strategy");
        QTest::addColumn<int>("devices");
        QTest::addColumn<int>("optimizer");
        QTest::addColumn<int>("schedule");
        QTest::addColumn<int>("dp");
        QTest::addColumn<int>("pp");
        QTest::addColumn<int>("tp");
        const int sgd = int(OptimizerKind::sgd), adamw = int(OptimizerKind::adamw);
        const int f1b = int(PipelineSchedule::one_f_one_b);
        for (int opt : {sgd, adamw}) {
            const char* o = opt == sgd ? "sgd" : "adamw";
            QTest::addRow("single %s", o)
                << int(StrategyKind::single) << 1 << opt << f1b << 1 << 1 << 1;
            QTest::addRow("dp2 %s", o) << int(StrategyKind::dp) << 2 << opt << f1b << 1 << 1 << 1;
            QTest::addRow("dp4 %s", o) << int(StrategyKind::dp) << 4 << opt << f1b << 1 << 1 << 1;
            QTest::addRow("ps 3 workers %s", o)
                << int(StrategyKind::ps) << 4 << opt << f1b << 1 << 1 << 1;
            QTest::addRow("zero1 n4 %s", o)
                << int(StrategyKind::zero1) << 4 << opt << f1b << 1 << 1 << 1;
            QTest::addRow("zero2 n2 %s", o)
                << int(StrategyKind::zero2) << 2 << opt << f1b << 1 << 1 << 1;
            QTest::addRow("zero3 n4 %s", o)
                << int(StrategyKind::zero3) << 4 << opt << f1b << 1 << 1 << 1;
            QTest::addRow("tp2 %s", o) << int(StrategyKind::tp) << 2 << opt << f1b << 1 << 1 << 1;
        }
        QTest::addRow("pipeline gpipe") << int(StrategyKind::pipeline) << 3 << adamw
                                        << int(PipelineSchedule::gpipe) << 1 << 1 << 1;
        QTest::addRow("pipeline 1f1b")
            << int(StrategyKind::pipeline) << 3 << adamw << f1b << 1 << 1 << 1;
        QTest::addRow("pipeline interleaved") << int(StrategyKind::pipeline) << 2 << adamw
                                              << int(PipelineSchedule::interleaved) << 1 << 1 << 1;
        QTest::addRow("hybrid 2x2x2")
            << int(StrategyKind::hybrid) << 8 << adamw << f1b << 2 << 2 << 2;
    }

    void same_parameters_as_cpu() {
        QFETCH(int, strategy);
        QFETCH(int, devices);
        QFETCH(int, optimizer);
        QFETCH(int, schedule);
        QFETCH(int, dp);
        QFETCH(int, pp);
        QFETCH(int, tp);
        RunConfig c = parity_config(StrategyKind(strategy), devices, OptimizerKind(optimizer));
        c.schedule = PipelineSchedule(schedule);
        if (c.strategy == StrategyKind::pipeline) {
            c.layers = 4;
            c.microbatches = 4;
            if (c.schedule == PipelineSchedule::interleaved) c.chunks = 2;
        }
        if (c.strategy == StrategyKind::hybrid) {
            c.layers = 4;
            c.mesh = Mesh{dp, pp, tp};
            c.microbatches = 2;
        }
        const RunResult expected = run_config(cpu_reference(c));
        QCOMPARE(expected.status, RunStatus::ok);
        const RunResult got = run_config(on_cuda(c));
        QVERIFY2(got.status == RunStatus::ok, got.error.c_str());
        const double err = relative_error(got.final_parameters, expected.final_parameters);
        QVERIFY2(err <= 1e-4, qPrintable(QStringLiteral("relative error %1").arg(err)));
        // The losses are the same numbers too (summed in another order).
        QCOMPARE(got.trace.steps.size(), expected.trace.steps.size());
        for (std::size_t s = 0; s < got.trace.steps.size(); ++s)
            QVERIFY(std::abs(got.trace.steps[s].loss - expected.trace.steps[s].loss) <=
                    1e-4 * std::abs(expected.trace.steps[s].loss));
    }

    void collectives_exact_on_virtual_devices_data() {
        QTest::addColumn<int>("n");
        QTest::addColumn<int>("count");
        for (int n = 1; n <= 8; ++n)
            for (int count : {1, 7, 1001, 65536 + 3})
                QTest::addRow("n%d_count%d", n, count) << n << count;
    }

    void collectives_exact_on_virtual_devices() {
        QFETCH(int, n);
        QFETCH(int, count);
        const auto cnt = static_cast<std::size_t>(count);
        GpuGroup g(n);
        // Each member uploads its crafted input, runs the collectives on its comm stream and
        // downloads the results in place of the inputs.
        pd::test::CraftedCollectives c(n, cnt);
        g.run([&](int r) {
            Device& dev = *g.devices[static_cast<std::size_t>(r)];
            const auto ri = static_cast<std::size_t>(r);
            auto on_device = [&](std::vector<float>& host, auto&& collective) {
                Buffer b(dev.memory(), MemoryCategory::communication, cnt);
                dev.ops().upload(b.data(), host.data(), cnt);
                collective(b.data());
                host = b.to_host();
            };
            on_device(c.all_reduce[ri], [&](float* d) { g.comm->all_reduce(r, d, cnt, 0); });
            on_device(c.reduce_scatter[ri],
                      [&](float* d) { g.comm->reduce_scatter(r, d, cnt, 0); });
            on_device(c.all_gather[ri], [&](float* d) { g.comm->all_gather(r, d, cnt, 0); });
            on_device(c.broadcast[ri], [&](float* d) { g.comm->broadcast(r, d, cnt, n - 1, 0); });
        });
        QVERIFY2(!g.ctx.aborted(), g.ctx.first_error_message().c_str());
        c.verify();
    }

    // Four devices share the GPU, each with a 1 MiB budget: the run stops with the same
    // out-of-memory (device, category) as the same run on the CPU, and keeps its trace.
    void out_of_memory_on_a_virtual_budget() {
        RunConfig c = parity_config(StrategyKind::dp, 4, OptimizerKind::adamw);
        c.width = 256;
        c.capacity_bytes = std::size_t{1} << 20;
        const RunResult cpu = run_config(cpu_reference(c));
        const RunResult gpu = run_config(on_cuda(c));
        QCOMPARE(cpu.status, RunStatus::out_of_memory);
        QCOMPARE(gpu.status, RunStatus::out_of_memory);
        QVERIFY(gpu.oom.has_value() && cpu.oom.has_value());
        QCOMPARE(gpu.oom->category, cpu.oom->category);
        QCOMPARE(gpu.oom->capacity_bytes, std::size_t{1} << 20);
        QVERIFY2(gpu.error.find("out of memory") != std::string::npos, gpu.error.c_str());
    }

    void trace_is_timed_by_cuda_events() {
        RunConfig c = parity_config(StrategyKind::dp, 4, OptimizerKind::adamw);
        const RunResult r = run_config(on_cuda(c));
        QVERIFY2(r.status == RunStatus::ok, r.error.c_str());
        QCOMPARE(r.trace.clock, ClockMode::wall);
        QCOMPARE(r.trace.backend, BackendKind::cuda);
        QCOMPARE(int(r.trace.device_names.size()), 4);
        for (const std::string& name : r.trace.device_names)
            QVERIFY2(name.find("(cuda:") != std::string::npos, name.c_str());
        QVERIFY(!r.trace.events.empty());
        for (const TraceEvent& e : r.trace.events) {
            QVERIFY(e.start_ns >= 0);
            QVERIFY(e.end_ns >= e.start_ns);
        }
        bool ring_step = false;
        for (const TraceEvent& e : r.trace.events)
            ring_step = ring_step || e.kind == EventKind::reduce_scatter_step;
        QVERIFY(ring_step);
        QCOMPARE(int(r.trace.gpu_memory_bytes.size()), 4);
        QVERIFY(r.trace.gpu_memory_bytes[0].second > 0);
    }
};

QTEST_GUILESS_MAIN(TestGpuBackend)
#include "test_gpu_backend.moc"
