// ZeRO-Infinity: ZeRO-3 with the parameter shard kept off the device (offload_param cpu or
// nvme) and the optimizer state on NVMe (offload_optimizer nvme). Each unit's own chunk crosses
// PCIe (read from NVMe first) before its all-gather; the update swaps each unit's NVMe-resident
// state and parameters through host buffers. The arithmetic is the same update on the same
// values, so every number equals plain zero3's; what moves is where the bytes live and what
// crosses each link.
#include <QtTest>

#include <algorithm>

#include "engine_test_support.h"
#include "pd/error.h"
#include "pd/memory_plan.h"
#include "pd/metrics.h"

using namespace pd;
using namespace pd::test;

namespace {

RunConfig infinity_config(OffloadDevice optimizer, OffloadDevice params) {
    RunConfig c = small_config(StrategyKind::zero3, 4);
    c.batch = 32;
    c.steps = 3;
    c.offload_optimizer = optimizer;
    c.offload_param = params;
    return c;
}

double tier_bytes(const RunMetrics& m, LinkTier t) {
    return m.cluster.tiers[static_cast<std::size_t>(t)].bytes_per_step;
}

// How validate names a setting given no sources: its command-line flag.
std::string flag(std::string key) {
    std::replace(key.begin(), key.end(), '_', '-');
    return "--" + key;
}

std::size_t peak_of(const std::vector<MemorySample>& samples, int device, MemoryCategory c) {
    std::size_t peak = 0;
    for (const MemorySample& s : samples)
        if (s.device == device && s.category == c) peak = std::max(peak, s.bytes);
    return peak;
}

}  // namespace

class TestZeroInfinity : public QObject {
    Q_OBJECT

  private slots:
    void every_placement_changes_no_number_data() {
        QTest::addColumn<int>("optimizer");
        QTest::addColumn<int>("params");
        QTest::addColumn<int>("precision");
        const std::pair<OffloadDevice, OffloadDevice> placements[] = {
            {OffloadDevice::cpu, OffloadDevice::cpu},
            {OffloadDevice::nvme, OffloadDevice::none},
            {OffloadDevice::nvme, OffloadDevice::cpu},
            {OffloadDevice::nvme, OffloadDevice::nvme},
            {OffloadDevice::cpu, OffloadDevice::nvme}};
        for (const auto& [o, p] : placements)
            for (const Precision precision : {Precision::fp32, Precision::bf16_mixed})
                QTest::addRow("optimizer %s param %s %s", std::string(name_of(o)).c_str(),
                              std::string(name_of(p)).c_str(),
                              std::string(name_of(precision)).c_str())
                    << static_cast<int>(o) << static_cast<int>(p) << static_cast<int>(precision);
    }
    void every_placement_changes_no_number() {
        QFETCH(int, optimizer);
        QFETCH(int, params);
        QFETCH(int, precision);
        RunConfig a = infinity_config(OffloadDevice::none, OffloadDevice::none);
        a.precision = static_cast<Precision>(precision);
        RunConfig b = a;
        b.offload_optimizer = static_cast<OffloadDevice>(optimizer);
        b.offload_param = static_cast<OffloadDevice>(params);
        validate(b, {});
        const RunResult plain = run_config(a), offloaded = run_config(b);
        QCOMPARE(plain.status, RunStatus::ok);
        QVERIFY2(offloaded.status == RunStatus::ok, offloaded.error.c_str());
        QCOMPARE(offloaded.final_parameters, plain.final_parameters);
        for (std::size_t k = 0; k < plain.trace.steps.size(); ++k)
            QCOMPARE(offloaded.trace.steps[k].loss, plain.trace.steps[k].loss);

        const RunMetrics mp = compute_metrics(plain.trace, a);
        const RunMetrics mo = compute_metrics(offloaded.trace, b);
        const bool state_nvme = b.offload_optimizer == OffloadDevice::nvme;
        const bool params_off = b.offload_param != OffloadDevice::none;
        const bool params_nvme = b.offload_param == OffloadDevice::nvme;
        double shard_bytes = 0, state_bytes = 0;
        for (int d = 0; d < b.devices; ++d) {
            const ModelStateMetrics& p = mp.model_state[static_cast<std::size_t>(d)];
            const ModelStateMetrics& o = mo.model_state[static_cast<std::size_t>(d)];
            shard_bytes += static_cast<double>(p.parameters);
            state_bytes += static_cast<double>(p.optimizer_state);
            // The device keeps no optimizer state, and no parameters when they are offloaded.
            QCOMPARE(o.optimizer_state, std::size_t{0});
            QCOMPARE(o.parameters, params_off ? std::size_t{0} : p.parameters);
            QCOMPARE(o.gradients, p.gradients);
            // The state sits on NVMe or in host memory, exactly the bytes the device held.
            QCOMPARE(o.nvme_optimizer_state, state_nvme ? p.optimizer_state : std::size_t{0});
            QCOMPARE(o.host_optimizer_state, state_nvme ? std::size_t{0} : p.optimizer_state);
            QCOMPARE(o.nvme_parameters, params_nvme ? p.parameters : std::size_t{0});
            QCOMPARE(o.host_parameters, params_nvme ? std::size_t{0} : p.parameters);
            // Both tiers as the analytic figures say (within the chunks' rounding).
            QVERIFY(std::abs(static_cast<double>(o.host_total()) - o.analytic_host) <=
                    0.01 * o.analytic_host);
            QVERIFY(std::abs(static_cast<double>(o.nvme_total()) - o.analytic_nvme) <=
                    0.01 * std::max(1.0, o.analytic_nvme));
            // Swapped a unit at a time: host memory never holds the whole NVMe-resident state.
            if (state_nvme) {
                const std::size_t swap =
                    peak_of(offloaded.trace.host_memory, d, MemoryCategory::optimizer_state);
                QVERIFY(swap > 0);
                QVERIFY2(swap < o.nvme_optimizer_state, "the state was swapped in whole");
            }
        }
        // PCIe per step: the gradient shard down, then either the updated shard up (ZeRO-Offload)
        // or each unit's chunk up before each of its two gathers (forward and backward).
        QCOMPARE(tier_bytes(mo, LinkTier::host), (params_off ? 3 : 2) * shard_bytes);
        // NVMe per step: state read and written once; an NVMe shard read for both gathers and the
        // update, written once.
        const double nvme =
            (state_nvme ? 2 * state_bytes : 0) + (params_nvme ? 4 * shard_bytes : 0);
        QCOMPARE(tier_bytes(mo, LinkTier::nvme), nvme);
        QCOMPARE(tier_bytes(mp, LinkTier::nvme), 0.0);
    }

    void zero1_and_zero2_swap_the_state_from_nvme_too() {
        for (const StrategyKind s : {StrategyKind::zero1, StrategyKind::zero2}) {
            RunConfig a = infinity_config(OffloadDevice::none, OffloadDevice::none);
            a.strategy = s;
            RunConfig b = a;
            b.offload_optimizer = OffloadDevice::nvme;
            const RunResult plain = run_config(a), offloaded = run_config(b);
            QVERIFY2(offloaded.status == RunStatus::ok, offloaded.error.c_str());
            QCOMPARE(offloaded.final_parameters, plain.final_parameters);
            const RunMetrics mo = compute_metrics(offloaded.trace, b);
            QVERIFY(mo.model_state.front().nvme_optimizer_state > 0);
            QCOMPARE(mo.model_state.front().host_optimizer_state, std::size_t{0});
        }
    }

    // The card's case: model states larger than device and host memory together still train
    // when the optimizer state and parameter shard live on NVMe.
    void nvme_holds_what_device_and_host_memory_cannot() {
        RunConfig c = infinity_config(OffloadDevice::cpu, OffloadDevice::cpu);
        c.layers = 6;
        c.width = 128;
        const std::size_t state = static_cast<std::size_t>(analytic_host_state(c).front().total());
        c.host_capacity_bytes = state / 2;  // ZeRO-Offload's host share cannot hold it
        QCOMPARE(run_config(c).status, RunStatus::out_of_memory);
        c.offload_optimizer = OffloadDevice::nvme;
        c.offload_param = OffloadDevice::nvme;
        const RunResult r = run_config(c);
        QVERIFY2(r.status == RunStatus::ok, r.error.c_str());
        const RunMetrics m = compute_metrics(r.trace, c);
        QVERIFY(static_cast<double>(m.model_state.front().nvme_total()) >
                static_cast<double>(c.host_capacity_bytes));
    }

    void the_nvme_budget_is_its_own_and_says_so() {
        RunConfig c = infinity_config(OffloadDevice::nvme, OffloadDevice::nvme);
        c.nvme_capacity_bytes = 1024;
        const RunResult r = run_config(c);
        QCOMPARE(r.status, RunStatus::out_of_memory);
        QVERIFY(r.oom.has_value());
        QCOMPARE(r.oom->where, OffloadDevice::nvme);
        QVERIFY2(r.oom->describe().find("NVMe") != std::string::npos, r.oom->describe().c_str());
    }

    void what_it_cannot_run_is_refused_by_name() {
        auto refused_key = [](const RunConfig& c) -> std::string {
            try {
                validate(c, {});
            } catch (const BadInput& e) {
                return e.key();
            }
            return "";
        };
        RunConfig c = infinity_config(OffloadDevice::cpu, OffloadDevice::cpu);
        c.strategy = StrategyKind::zero2;
        QCOMPARE(refused_key(c), flag("offload_param"));
        c = infinity_config(OffloadDevice::none, OffloadDevice::nvme);
        QCOMPARE(refused_key(c), flag("offload_param"));
        c = infinity_config(OffloadDevice::nvme, OffloadDevice::none);
        c.nvme_capacity_bytes = 0;
        QCOMPARE(refused_key(c), flag("nvme_capacity"));
        c = infinity_config(OffloadDevice::nvme, OffloadDevice::none);
        c.nvme_read.bytes_per_ns = 0;
        QCOMPARE(refused_key(c), flag("nvme_read_gbps"));
        QVERIFY(!setting_applies(infinity_config(OffloadDevice::cpu, OffloadDevice::none),
                                 "nvme_capacity"));
        QVERIFY(setting_applies(infinity_config(OffloadDevice::cpu, OffloadDevice::nvme),
                                "nvme_capacity"));
    }
};

QTEST_APPLESS_MAIN(TestZeroInfinity)
#include "test_zero_infinity.moc"
