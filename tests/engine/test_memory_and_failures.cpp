// Memory accounting, out-of-memory, cancellation: the run stops cleanly, says what happened
// and where, and keeps the trace recorded so far.
#include <QtTest>
#include <map>

#include "engine_test_support.h"
#include "pd/device.h"
#include "pd/run_context.h"

using namespace pd;
using namespace pd::test;

class TestMemoryAndFailures : public QObject {
    Q_OBJECT
  private slots:
    void tracker_accounts_by_category() {
        RunContext ctx(ClockMode::wall, LinkModel{}, true, 5.0);
        MemoryTracker mem(3, 1000, ctx);
        {
            Buffer a(mem, MemoryCategory::parameters, 100);  // 400 bytes
            Buffer b(mem, MemoryCategory::activations, 50);  // 200 bytes
            QCOMPARE(mem.live(MemoryCategory::parameters), std::size_t{400});
            QCOMPARE(mem.live_total(), std::size_t{600});
            try {
                Buffer c(mem, MemoryCategory::gradients, 101);  // 404 bytes: 1004 > 1000
                QFAIL("allocation past capacity succeeded");
            } catch (const OutOfMemory& e) {
                QCOMPARE(e.info().device, 3);
                QCOMPARE(e.info().category, MemoryCategory::gradients);
                QCOMPARE(e.info().requested_bytes, std::size_t{404});
                QCOMPARE(e.info().live_bytes, std::size_t{600});
                QCOMPARE(e.info().capacity_bytes, std::size_t{1000});
                const std::string what = e.what();
                QVERIFY(what.find("device 3") != std::string::npos);
                QVERIFY(what.find("gradients") != std::string::npos);
            }
            Buffer moved = std::move(b);
            QCOMPARE(mem.live(MemoryCategory::activations), std::size_t{200});
        }
        QCOMPARE(mem.live_total(), std::size_t{0});
        QCOMPARE(mem.peak(MemoryCategory::parameters), std::size_t{400});
    }

    void parameters_that_do_not_fit() {
        RunConfig c = small_config(StrategyKind::dp, 2);
        c.capacity_bytes = 16 * 1024;  // far below the model's parameters
        const RunResult r = run_config(c);
        QCOMPARE(r.status, RunStatus::out_of_memory);
        QVERIFY(r.oom.has_value());
        QCOMPARE(r.oom->category, MemoryCategory::parameters);
        QCOMPARE(r.oom->capacity_bytes, std::size_t{16 * 1024});
        QVERIFY(r.error.find("out of memory") != std::string::npos);
        QVERIFY(r.final_parameters.empty());
        QCOMPARE(r.steps_completed, 0);
        bool marked = false;
        for (const auto& e : r.trace.events) marked |= e.kind == EventKind::oom;
        QVERIFY(marked);
        QCOMPARE(r.trace.devices, 2);
    }

    // Data parallelism replicates the model state, so every replica overflows at the same
    // allocation (the card wmp-dp-replicates-memory). Which device the run names must not
    // depend on which thread got there first: every device that overflowed is recorded (an
    // oom event on its lane, an entry in ooms) and the run names the lowest, run after run.
    void every_replica_that_overflows_is_named_the_same_way() {
        RunConfig c = small_config(StrategyKind::dp, 4);
        c.layers = 8;
        c.width = 256;
        c.batch = 32;
        c.steps = 2;
        c.optimizer = OptimizerKind::adamw;
        c.capacity_bytes = 40 * 1024 * 1024;
        c.clock = ClockMode::device;
        for (int attempt = 0; attempt < 4; ++attempt) {
            const RunResult r = run_config(c);
            QCOMPARE(r.status, RunStatus::out_of_memory);
            QVERIFY(r.oom.has_value());
            QCOMPARE(r.oom->device, 0);
            QCOMPARE(r.oom->category, MemoryCategory::optimizer_state);
            QCOMPARE(r.ooms.size(), std::size_t{4});
            for (int d = 0; d < 4; ++d) {
                QCOMPARE(r.ooms[static_cast<std::size_t>(d)].device, d);
                QCOMPARE(r.ooms[static_cast<std::size_t>(d)].category,
                         MemoryCategory::optimizer_state);
            }
            std::map<int, int> marks;
            for (const auto& e : r.trace.events)
                if (e.kind == EventKind::oom) ++marks[e.device];
            QCOMPARE(marks, (std::map<int, int>{{0, 1}, {1, 1}, {2, 1}, {3, 1}}));
            QVERIFY(r.error.find("device 0") != std::string::npos);
        }
    }

    // Activations overflow in the middle of a step: peers stuck in collectives are released.
    void activations_that_do_not_fit_mid_run() {
        RunConfig c = small_config(StrategyKind::dp, 4);
        c.batch = 4096;
        c.steps = 2;
        const RunResult probe = run_config(small_config(StrategyKind::dp, 4));
        QCOMPARE(probe.status, RunStatus::ok);
        // Enough for parameters, gradients and optimizer state, not for 1024 rows of activations.
        const std::size_t params_bytes = probe.final_parameters.size() * sizeof(float);
        c.capacity_bytes = params_bytes * 8;
        const RunResult r = run_config(c);
        QCOMPARE(r.status, RunStatus::out_of_memory);
        QVERIFY(r.oom.has_value());
        QVERIFY(r.oom->category == MemoryCategory::activations ||
                r.oom->category == MemoryCategory::workspace);
        // The partial trace holds the forward work that ran before the failure.
        int forwards = 0;
        for (const auto& e : r.trace.events)
            forwards += e.kind == EventKind::forward && e.label.find("failed") == std::string::npos;
        QVERIFY(forwards > 0);
    }

    void cancel_stops_the_run() {
        RunConfig c = small_config(StrategyKind::dp, 2);
        c.steps = 1000;
        Run run(c);
        const RunResult r = run.execute([&](const RunProgress& p) {
            if (p.steps_done == 2) run.cancel();
        });
        QCOMPARE(r.status, RunStatus::cancelled);
        QVERIFY(r.steps_completed >= 2);
        QVERIFY(r.steps_completed < 1000);
        QVERIFY(r.error.find("cancelled") != std::string::npos);
    }

    // A failure on the host side (here the caller's progress callback) ends the run with that
    // error, not a generic one, and keeps what was recorded.
    void host_side_failure_is_reported() {
        RunConfig c = small_config(StrategyKind::dp, 2);
        c.steps = 10;
        Run run(c);
        const RunResult r = run.execute([](const RunProgress& p) {
            if (p.phase == "training" && p.steps_done == 2)
                throw std::runtime_error("progress display broke");
        });
        QCOMPARE(r.status, RunStatus::failed);
        QVERIFY2(r.error.find("progress display broke") != std::string::npos, r.error.c_str());
        QCOMPARE(r.steps_completed, 2);
        QVERIFY(!r.trace.events.empty());
        QVERIFY(r.final_parameters.empty());
    }

    void cancel_before_start() {
        Run run(small_config(StrategyKind::single, 1));
        run.cancel();
        const RunResult r = run.execute();
        QCOMPARE(r.status, RunStatus::cancelled);
        QCOMPARE(r.steps_completed, 0);
    }

    void peak_memory_matches_the_model() {
        RunConfig c = small_config(StrategyKind::single, 1);
        c.optimizer = OptimizerKind::adamw;
        const RunResult r = run_config(c);
        QCOMPARE(r.status, RunStatus::ok);
        std::map<MemoryCategory, std::size_t> peak;
        for (const auto& s : r.trace.memory) peak[s.category] = std::max(peak[s.category], s.bytes);
        const std::size_t p = r.final_parameters.size() * sizeof(float);
        QCOMPARE(peak[MemoryCategory::parameters], p);
        QCOMPARE(peak[MemoryCategory::gradients], p);
        QCOMPARE(peak[MemoryCategory::optimizer_state], 2 * p);  // AdamW: m and v
        QVERIFY(peak[MemoryCategory::activations] > 0);
    }
};

QTEST_APPLESS_MAIN(TestMemoryAndFailures)
#include "test_memory_and_failures.moc"
