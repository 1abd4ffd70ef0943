// Memory accounting, out-of-memory, cancellation: the run stops cleanly, says what happened
// and where, and keeps the trace recorded so far.
#include <QDir>
#include <QTemporaryDir>
#include <QtTest>
#include <fstream>
#include <iterator>
#include <map>

#include "engine_test_support.h"
#include "pd/atomic_file.h"
#include "pd/device.h"
#include "pd/exports.h"
#include "pd/memory_plan.h"
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
    // Issue 41 item 2: what a run needs of the host is known before anything is allocated.
    // 64 replicas of 4 blocks x 1024 each hold their AdamW state (16 bytes a parameter), so
    // the run needs 64 x 16 P of host memory on the CPU backend, where a device's memory is
    // the host's; with less available it is refused, naming both figures.
    void host_memory_need_is_known_before_the_run() {
        RunConfig c = small_config(StrategyKind::dp, 64);
        c.width = 1024;
        c.layers = 4;
        c.batch = 64;
        c.optimizer = OptimizerKind::adamw;
        const HostMemoryNeed need = host_memory_need(c);
        const double P = need.initial_parameters / 4;  // fp32 initial weights
        QVERIFY(P > 4.0 * 1024 * 1024);
        QCOMPARE(need.devices, 64 * 16 * P);
        const std::vector<ModelStateBytes> state = analytic_model_state(c);
        QCOMPARE(state.size(), std::size_t{64});
        QCOMPARE(state[63].optimizer_state, 8 * P);
        const std::string why =
            host_memory_shortage(c, HostMemoryAvailable{std::size_t{8} << 30, "MemAvailable"});
        QVERIFY2(why.find("needs at least 32.") != std::string::npos, why.c_str());
        QVERIFY2(why.find("8.0 GiB is available (MemAvailable)") != std::string::npos, why.c_str());
        QVERIFY(host_memory_shortage(c, HostMemoryAvailable{std::size_t{64} << 30, "MemAvailable"})
                    .empty());
        // A device's share is at most its capacity: a device that cannot hold its state runs
        // out on the device (the run shows where), not on the host.
        c.capacity_bytes = 1 << 20;
        QCOMPARE(host_memory_need(c).devices, 64.0 * (1 << 20));
        // ZeRO-3 shards all of it: a sixty-fourth each.
        c.strategy = StrategyKind::zero3;
        c.capacity_bytes = std::size_t{4} << 30;
        QCOMPARE(host_memory_need(c).devices, 16 * P);
    }

    // Before the fix the largest model allocated its 512 GiB of initial weights and died on
    // std::bad_alloc (exit 1); now the run is refused before it allocates anything.
    void a_run_larger_than_the_host_is_refused_before_it_allocates() {
        RunConfig c = small_config(StrategyKind::single, 1);
        c.width = 8192;
        c.layers = 256;
        const auto available = host_memory_available();
        QVERIFY(available.has_value());
        if (static_cast<double>(available->bytes) > host_memory_need(c).total())
            QSKIP("this host has more memory than the largest model needs");
        Run run(c);
        const RunResult r = run.execute();
        QCOMPARE(r.status, RunStatus::out_of_memory);
        QVERIFY2(r.error.find("of host memory") != std::string::npos, r.error.c_str());
        QVERIFY2(r.error.find("GiB of initial parameters") != std::string::npos, r.error.c_str());
        QCOMPARE(run.allocations_made(), std::size_t{0});
        QCOMPARE(r.steps_completed, 0);
    }

    // Issue 41 item 7: an output file is the old one or the whole new one, never cut.
    void an_output_file_is_replaced_whole_or_not_at_all() {
        QTemporaryDir dir;
        const std::string path = dir.filePath(QStringLiteral("trace.json")).toStdString();
        write_text_file(path, "old");
        {
            AtomicFile file(path);
            file.stream() << "half of a new fi";
            // Destroyed uncommitted, as by an exception mid-write: the old file stands.
        }
        auto read = [&] {
            std::ifstream in(path);
            return std::string(std::istreambuf_iterator<char>(in), {});
        };
        QCOMPARE(read(), std::string("old"));
        QCOMPARE(QDir(dir.path()).entryList(QDir::Files | QDir::Hidden).size(), 1);  // no temp
        const RunResult r = run_config(small_config(StrategyKind::dp, 2));
        write_chrome_trace_file(path, r.trace);
        QCOMPARE(read(), chrome_trace_json(r.trace));
        QCOMPARE(QDir(dir.path()).entryList(QDir::Files | QDir::Hidden).size(), 1);
        // Where no file can be written, the error names the path before anything is lost.
        bool refused = false;
        try {
            check_output_path(dir.filePath(QStringLiteral("missing/t.json")).toStdString(),
                              "--trace");
        } catch (const Error& e) {
            refused = std::string(e.what()).find("--trace: cannot write") != std::string::npos &&
                      std::string(e.what()).find("missing/t.json") != std::string::npos;
        }
        QVERIFY(refused);
    }
};

QTEST_APPLESS_MAIN(TestMemoryAndFailures)
#include "test_memory_and_failures.moc"
