// Properties every trace must have, whatever the strategy and clock.
#include <QtTest>
#include <cmath>
#include <map>
#include <set>

#include "engine_test_support.h"
#include "pd/scenario.h"

using namespace pd;
using namespace pd::test;

Q_DECLARE_METATYPE(pd::StrategyKind)
Q_DECLARE_METATYPE(pd::ClockMode)

class TestTraceInvariants : public QObject {
    Q_OBJECT
  private slots:
    void invariants_data() {
        QTest::addColumn<StrategyKind>("strategy");
        QTest::addColumn<int>("devices");
        QTest::addColumn<ClockMode>("clock");
        for (ClockMode clock : {ClockMode::device, ClockMode::wall}) {
            const char* cn = clock == ClockMode::device ? "device" : "wall";
            QTest::addRow("single_%s", cn) << StrategyKind::single << 1 << clock;
            QTest::addRow("dp3_%s", cn) << StrategyKind::dp << 3 << clock;
            QTest::addRow("dp4_%s", cn) << StrategyKind::dp << 4 << clock;
            QTest::addRow("ps4_%s", cn) << StrategyKind::ps << 4 << clock;
        }
    }

    void invariants() {
        QFETCH(StrategyKind, strategy);
        QFETCH(int, devices);
        QFETCH(ClockMode, clock);
        RunConfig c = small_config(strategy, devices);
        c.clock = clock;
        c.steps = 3;
        c.capacity_bytes = 4u << 20;
        const RunResult r = run_config(c);
        QVERIFY2(r.status == RunStatus::ok, r.error.c_str());
        const Trace& t = r.trace;
        QCOMPARE(t.clock, clock);
        QVERIFY(!t.events.empty());

        // Events on one stream never overlap.
        std::map<std::pair<int, int>, std::int64_t> last_end;
        for (const auto& e : t.events) {
            QVERIFY(e.end_ns >= e.start_ns);
            auto key = std::make_pair(e.device, static_cast<int>(e.stream));
            auto it = last_end.find(key);
            if (it != last_end.end())
                QVERIFY2(e.start_ns >= it->second,
                         qPrintable(QStringLiteral("overlap on device %1 stream %2 at %3")
                                        .arg(e.device)
                                        .arg(int(e.stream))
                                        .arg(e.start_ns)));
            last_end[key] = e.end_ns;
        }

        // Every all-reduce has exactly 2(n-1) steps on each device.
        for (int d = 0; d < devices; ++d) {
            int all_reduces = 0, ring_steps = 0;
            for (const auto& col : t.collectives)
                if (col.device == d && col.op == "all_reduce") ++all_reduces;
            for (const auto& e : t.events)
                if (e.device == d && (e.kind == EventKind::reduce_scatter_step ||
                                      e.kind == EventKind::all_gather_step))
                    ++ring_steps;
            QCOMPARE(ring_steps, all_reduces * 2 * (devices - 1));
            if (strategy == StrategyKind::dp) QVERIFY(all_reduces > 0);
        }

        // Memory samples never exceed capacity, per device, summed over categories.
        std::map<int, std::array<std::size_t, kMemoryCategoryCount>> live;
        for (const auto& s : t.memory) {
            auto& cur = live[s.device];
            cur[static_cast<std::size_t>(s.category)] = s.bytes;
            std::size_t total = 0;
            for (auto b : cur) total += b;
            QVERIFY(total <= t.capacity_bytes[static_cast<std::size_t>(s.device)]);
        }
        QVERIFY(!t.memory.empty());

        // Every send has its recv, matched by flow id, between the named peers.
        std::map<std::uint64_t, const TraceEvent*> sends, recvs;
        for (const auto& e : t.events) {
            if (!e.flow_id) continue;
            (e.flow_source ? sends : recvs)[e.flow_id] = &e;
        }
        QCOMPARE(sends.size(), recvs.size());
        for (const auto& [id, s] : sends) {
            QVERIFY(recvs.count(id));
            QCOMPARE(recvs[id]->device, s->peer);
            QCOMPARE(recvs[id]->peer, s->device);
            QCOMPARE(recvs[id]->bytes, s->bytes);
        }
        if (devices > 1) QVERIFY(!sends.empty());
        QCOMPARE(t.steps.size(), std::size_t{3});
    }

    // The device clock replays the same computation as if each device had its own core:
    // with a slow link, exposed communication grows.
    void slow_link_costs_time_on_device_clock() {
        RunConfig fast = small_config(StrategyKind::dp, 4);
        fast.overlap = false;
        fast.steps = 2;
        RunConfig slow = fast;
        slow.link.bytes_per_ns = 0.001;  // 1 MB/s
        const RunResult a = run_config(fast), b = run_config(slow);
        QCOMPARE(a.status, RunStatus::ok);
        QCOMPARE(b.status, RunStatus::ok);
        std::int64_t comm_a = 0, comm_b = 0;
        for (const auto& e : a.trace.events)
            if (is_communication(e.kind) && e.step >= 0) comm_a += e.duration_ns();
        for (const auto& e : b.trace.events)
            if (is_communication(e.kind) && e.step >= 0) comm_b += e.duration_ns();
        // Link cost alone: the parameters cross a 1 MB/s link at least once per step.
        QVERIFY(comm_b > comm_a);
        QCOMPARE(b.trace.link.bytes_per_ns, 0.001);
    }

    // The link's unit, end to end. The scenario says 0.008 Gb/s: 1 MB/s, 0.001 bytes per ns.
    // A transfer cannot arrive before its send began plus latency + bytes / bandwidth, 1.54 ms
    // for this 1536-byte activation; the recv then ends once the copy is done (microseconds).
    // Read as GB/s the same number would give 0.2 ms; a unit off by 8 the other way, 12 ms.
    void link_speed_unit_sets_transfer_time() {
        RunConfig c = small_config(StrategyKind::pipeline, 2);
        c.layers = 2;
        c.steps = 1;
        c.microbatches = 2;
        ConfigSources src;
        apply_scenario_json(R"({"link_gbps": 0.008, "link_latency_us": 5})", "card.json", c, src);
        QCOMPARE(c.link.bytes_per_ns, 0.001);
        const RunResult r = run_config(c);
        QCOMPARE(r.status, RunStatus::ok);
        const TraceEvent* recv = nullptr;
        for (const auto& e : r.trace.events)
            if (e.kind == EventKind::recv && e.device == 1 &&
                (!recv || e.start_ns < recv->start_ns))
                recv = &e;
        QVERIFY(recv);
        const TraceEvent* send = nullptr;
        for (const auto& e : r.trace.events)
            if (e.kind == EventKind::send && e.flow_id == recv->flow_id) send = &e;
        QVERIFY(send);
        // 24 samples in 2 micro-batches: 12 rows of width 32 floats.
        QCOMPARE(recv->bytes, std::size_t{12 * 32 * 4});
        const double link_ns = 5e3 + static_cast<double>(recv->bytes) / 0.001;  // 1.541 ms
        const double arrival = static_cast<double>(send->start_ns) + link_ns;
        const double end = static_cast<double>(recv->end_ns);
        QVERIFY2(end >= arrival - 1.0 && end < static_cast<double>(send->start_ns) + 2 * link_ns,
                 qPrintable(QStringLiteral("recv [%1, %2] ns, send at %3 ns, link %4 ns")
                                .arg(recv->start_ns)
                                .arg(recv->end_ns)
                                .arg(send->start_ns)
                                .arg(link_ns)));
    }

    // Run::share_run_so_far: progress carries copies of the run after steps 1 and 2 of 3,
    // each exactly the beginning of what the finished run records, and the finished run is
    // whole (the copies took nothing from it).
    void run_so_far_is_the_beginning_of_the_run_data() {
        QTest::addColumn<StrategyKind>("strategy");
        QTest::addColumn<int>("devices");
        QTest::addRow("dp2") << StrategyKind::dp << 2;
        QTest::addRow("pipeline2") << StrategyKind::pipeline << 2;
        QTest::addRow("zero3_2") << StrategyKind::zero3 << 2;
    }
    void run_so_far_is_the_beginning_of_the_run() {
        QFETCH(StrategyKind, strategy);
        QFETCH(int, devices);
        RunConfig c = small_config(strategy, devices);
        c.steps = 3;
        Run run(c);
        run.share_run_so_far(0);
        std::vector<std::shared_ptr<const RunResult>> copies;
        const RunResult r = run.execute([&](const RunProgress& p) {
            if (p.so_far) {
                QCOMPARE(p.so_far->steps_completed, p.steps_done);
                copies.push_back(p.so_far);
            }
        });
        QVERIFY2(r.status == RunStatus::ok, r.error.c_str());
        QVERIFY(!r.partial);
        QCOMPARE(copies.size(), std::size_t{2});  // none after the last step: the end follows
        const std::size_t whole = run_config(c).trace.events.size();
        QCOMPARE(r.trace.events.size(), whole);
        for (std::size_t i = 0; i < copies.size(); ++i) {
            const RunResult& so_far = *copies[i];
            const int steps = static_cast<int>(i) + 1;
            QVERIFY(so_far.partial);
            QCOMPARE(so_far.steps_completed, steps);
            QCOMPARE(so_far.trace.steps.size(), std::size_t(steps));
            QVERIFY(so_far.final_parameters.empty());
            QVERIFY(!so_far.trace.events.empty());
            // Per device and stream, the copy's events are the first of the run's.
            std::map<std::pair<int, int>, std::vector<const TraceEvent*>> all;
            for (const auto& e : r.trace.events)
                all[{e.device, static_cast<int>(e.stream)}].push_back(&e);
            std::map<std::pair<int, int>, std::size_t> seen;
            for (const auto& e : so_far.trace.events) {
                QVERIFY2(e.step < steps, qPrintable(QStringLiteral("an event of step %1 in the "
                                                                   "copy after %2 steps")
                                                        .arg(e.step)
                                                        .arg(steps)));
                const auto key = std::make_pair(e.device, static_cast<int>(e.stream));
                const std::size_t k = seen[key]++;
                QVERIFY(k < all[key].size());
                const TraceEvent& full = *all[key][k];
                QCOMPARE(e.label, full.label);
                QCOMPARE(e.start_ns, full.start_ns);
                QCOMPARE(e.end_ns, full.end_ns);
            }
            // Everything up to those steps is in the copy.
            for (const auto& [key, events] : all) {
                std::size_t expected = 0;
                for (const TraceEvent* e : events) expected += e->step < steps ? 1 : 0;
                QCOMPARE(seen[key], expected);
            }
            QVERIFY(so_far.trace.memory.size() <= r.trace.memory.size());
            QVERIFY(!so_far.trace.memory.empty());
        }
    }
};

QTEST_APPLESS_MAIN(TestTraceInvariants)
#include "test_trace_invariants.moc"
