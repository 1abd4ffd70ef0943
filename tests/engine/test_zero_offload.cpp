// ZeRO-Offload (offload_optimizer cpu): the optimizer state, an fp32 copy of each shard and its
// gradients live in host memory, the CPU updates them on the device's host stream, and PCIe
// carries the gradient shard down and the updated shard back every step. The arithmetic is
// the same update on the same values, so every number equals the run without offload.
#include <QtTest>

#include "engine_test_support.h"
#include "pd/error.h"
#include "pd/memory_plan.h"
#include "pd/metrics.h"

using namespace pd;
using namespace pd::test;

namespace {

RunConfig offload_config(StrategyKind strategy, bool offload) {
    RunConfig c = small_config(strategy, 4);
    c.batch = 32;
    c.steps = 3;
    c.offload_optimizer = offload ? OffloadDevice::cpu : OffloadDevice::none;
    return c;
}

int count_events(const RunResult& r, StreamKind stream, EventKind kind) {
    int n = 0;
    for (const TraceEvent& e : r.trace.events)
        n += e.stream == stream && e.kind == kind && e.step >= 0 ? 1 : 0;
    return n;
}

}  // namespace

class TestZeroOffload : public QObject {
    Q_OBJECT

  private slots:
    void offloading_moves_the_state_to_the_host_and_changes_no_number_data() {
        QTest::addColumn<int>("strategy");
        QTest::addColumn<int>("precision");
        for (const StrategyKind s : {StrategyKind::zero1, StrategyKind::zero2, StrategyKind::zero3})
            for (const Precision p : {Precision::fp32, Precision::bf16_mixed})
                QTest::addRow("%s %s", std::string(name_of(s)).c_str(),
                              std::string(name_of(p)).c_str())
                    << static_cast<int>(s) << static_cast<int>(p);
    }
    void offloading_moves_the_state_to_the_host_and_changes_no_number() {
        QFETCH(int, strategy);
        QFETCH(int, precision);
        RunConfig a = offload_config(static_cast<StrategyKind>(strategy), false);
        a.precision = static_cast<Precision>(precision);
        RunConfig b = a;
        b.offload_optimizer = OffloadDevice::cpu;
        const RunResult plain = run_config(a), offloaded = run_config(b);
        QCOMPARE(plain.status, RunStatus::ok);
        QCOMPARE(offloaded.status, RunStatus::ok);
        QCOMPARE(offloaded.final_parameters, plain.final_parameters);
        for (std::size_t k = 0; k < plain.trace.steps.size(); ++k)
            QCOMPARE(offloaded.trace.steps[k].loss, plain.trace.steps[k].loss);

        const RunMetrics mp = compute_metrics(plain.trace, a);
        const RunMetrics mo = compute_metrics(offloaded.trace, b);
        for (int d = 0; d < b.devices; ++d) {
            const ModelStateMetrics& p = mp.model_state[static_cast<std::size_t>(d)];
            const ModelStateMetrics& o = mo.model_state[static_cast<std::size_t>(d)];
            // The device keeps no optimizer state; the host keeps exactly what it held.
            QCOMPARE(o.optimizer_state, std::size_t{0});
            QVERIFY(p.optimizer_state > 0);
            QCOMPARE(o.host_optimizer_state, p.optimizer_state);
            QCOMPARE(o.parameters, p.parameters);
            // Host memory: the state, the shard in the run's dtype and its fp32 gradients,
            // as the analytic figure says (within the chunks' rounding).
            QVERIFY(std::abs(static_cast<double>(o.host_total()) - o.analytic_host) <=
                    0.01 * o.analytic_host);
        }
        // Each step, each device: one update on its host stream, none on its compute stream,
        // and two PCIe copies of its shard (gradients down, parameters up).
        const int steps = b.steps, devices = b.devices;
        QCOMPARE(count_events(offloaded, StreamKind::host, EventKind::optimizer), steps * devices);
        QCOMPARE(count_events(offloaded, StreamKind::compute, EventKind::optimizer), 0);
        QCOMPARE(count_events(offloaded, StreamKind::host, EventKind::copy), 2 * steps * devices);
        QCOMPARE(count_events(plain, StreamKind::host, EventKind::copy), 0);
        const double pcie =
            mo.cluster.tiers[static_cast<std::size_t>(LinkTier::host)].bytes_per_step;
        double shard_bytes = 0;
        for (const ModelStateMetrics& o : mo.model_state)
            shard_bytes += static_cast<double>(o.host_parameters);
        QCOMPARE(pcie, 2 * shard_bytes);
        QCOMPARE(mp.cluster.tiers[static_cast<std::size_t>(LinkTier::host)].bytes_per_step, 0.0);
    }

    void the_host_budget_is_its_own() {
        RunConfig c = offload_config(StrategyKind::zero2, true);
        c.host_capacity_bytes = 1024;  // the state cannot fit
        const RunResult r = run_config(c);
        QCOMPARE(r.status, RunStatus::out_of_memory);
        // The same budget as device memory alone fits: the device keeps no state.
        c.host_capacity_bytes = std::size_t{64} << 20;
        QCOMPARE(run_config(c).status, RunStatus::ok);
    }

    void what_it_cannot_run_is_refused_by_name() {
        RunConfig c = offload_config(StrategyKind::zero2, true);
        c.optimizer = OptimizerKind::lamb;
        try {
            validate(c, {{"offload_optimizer", "--offload-optimizer"}});
            QFAIL("lamb accepted");
        } catch (const BadInput& e) {
            QVERIFY2(std::string(e.what()).find("--offload-optimizer") != std::string::npos,
                     e.what());
        }
        c = offload_config(StrategyKind::zero3, true);
        c.quantized_gradients = true;
        QVERIFY_THROWS_EXCEPTION(BadInput, validate(c, {}));
        c = offload_config(StrategyKind::zero2, true);
        c.host_capacity_bytes = 0;
        QVERIFY_THROWS_EXCEPTION(BadInput, validate(c, {}));
        QVERIFY(!setting_applies(offload_config(StrategyKind::dp, true), "offload_optimizer"));
    }
};

QTEST_APPLESS_MAIN(TestZeroOffload)
#include "test_zero_offload.moc"
