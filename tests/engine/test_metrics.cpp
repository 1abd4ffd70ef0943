// Metrics are computed from the trace: hand-made traces with known answers.
#include <QtTest>

#include "pd/metrics.h"

using namespace pd;

namespace {
TraceEvent ev(int device, StreamKind stream, EventKind kind, int step, std::int64_t start,
              std::int64_t end) {
    TraceEvent e;
    e.device = device;
    e.stream = stream;
    e.kind = kind;
    e.step = step;
    e.start_ns = start;
    e.end_ns = end;
    return e;
}
}  // namespace

class TestMetrics : public QObject {
    Q_OBJECT
  private slots:
    void bus_bandwidth_factors_data() {
        QTest::addColumn<QString>("op");
        QTest::addColumn<int>("n");
        QTest::addColumn<double>("factor");
        QTest::addRow("allreduce 4") << "all_reduce" << 4 << 1.5;
        QTest::addRow("allreduce 2") << "all_reduce" << 2 << 1.0;
        QTest::addRow("reduce_scatter 4") << "reduce_scatter" << 4 << 0.75;
        QTest::addRow("all_gather 8") << "all_gather" << 8 << 0.875;
        QTest::addRow("broadcast 4") << "broadcast" << 4 << 1.0;
    }
    void bus_bandwidth_factors() {
        QFETCH(QString, op);
        QFETCH(int, n);
        QFETCH(double, factor);
        QCOMPARE(bus_bandwidth_factor(op.toStdString(), n), factor);
    }

    void exposed_and_overlapped_communication() {
        Trace t;
        t.devices = 1;
        // Compute busy 0-100 and 150-200; communication 80-160: 20 + 10 overlapped, 30 exposed.
        t.events.push_back(ev(0, StreamKind::compute, EventKind::forward, 0, 0, 100));
        t.events.push_back(ev(0, StreamKind::compute, EventKind::backward, 0, 150, 200));
        t.events.push_back(ev(0, StreamKind::comm, EventKind::reduce_scatter_step, 0, 80, 120));
        t.events.push_back(ev(0, StreamKind::comm, EventKind::all_gather_step, 0, 120, 160));
        t.steps.push_back({0, 1.5});
        const RunMetrics m = compute_metrics(t, 10);
        QCOMPARE(m.devices.size(), std::size_t{1});
        QCOMPARE(m.devices[0].comm_s, 80e-9);
        QCOMPARE(m.devices[0].overlapped_comm_s, 30e-9);
        QCOMPARE(m.devices[0].exposed_comm_s, 50e-9);
        QCOMPARE(m.devices[0].busy_s, 150e-9);
        QCOMPARE(m.devices[0].idle_s, 50e-9);
        QCOMPARE(m.steps[0].time_s, 200e-9);
        QCOMPARE(m.median_step_time_s, 200e-9);
        QCOMPARE(m.samples_per_s, 10 / 200e-9);
        QCOMPARE(m.final_loss, 1.5);
    }

    void median_and_peaks() {
        Trace t;
        t.devices = 2;
        for (int s = 0; s < 3; ++s) {
            const std::int64_t len = s == 1 ? 500 : 100 * (s + 1);  // 100, 500, 300
            t.events.push_back(
                ev(0, StreamKind::compute, EventKind::forward, s, s * 1000, s * 1000 + len));
            t.steps.push_back({s, 3.0 - s});
        }
        t.memory = {{1, MemoryCategory::parameters, 400, 0},
                    {1, MemoryCategory::activations, 300, 1},
                    {1, MemoryCategory::activations, 0, 2},
                    {1, MemoryCategory::activations, 200, 3}};
        const RunMetrics m = compute_metrics(t, 4);
        QCOMPARE(m.median_step_time_s, 300e-9);
        QCOMPARE(m.devices[1].peak_bytes[static_cast<int>(MemoryCategory::activations)],
                 std::size_t{300});
        QCOMPARE(m.devices[1].peak_total_bytes, std::size_t{700});
        QCOMPARE(m.devices[0].peak_total_bytes, std::size_t{0});
    }

    void collective_bandwidth() {
        Trace t;
        t.devices = 4;
        for (int d = 0; d < 4; ++d)
            for (int call = 0; call < 2; ++call)
                t.collectives.push_back({d, "all_reduce", "", 1000000, 4, 0, 0, 1000000});  // 1 ms
        const RunMetrics m = compute_metrics(t, 1);
        QCOMPARE(m.collectives.size(), std::size_t{1});
        QCOMPARE(m.collectives[0].count, 2);
        QCOMPARE(m.collectives[0].mean_time_s, 1e-3);
        QCOMPARE(m.collectives[0].algbw_gbps, 1.0);
        QCOMPARE(m.collectives[0].busbw_gbps, 1.5);
    }
};

QTEST_APPLESS_MAIN(TestMetrics)
#include "test_metrics.moc"
