// Metrics are computed from the trace: hand-made traces with known answers.
#include <QtTest>

#include <QJsonDocument>
#include <QJsonObject>
#include <algorithm>
#include <cmath>
#include <map>
#include <tuple>

#include "engine_test_support.h"
#include "pd/exports.h"
#include "pd/metrics.h"

using namespace pd;

Q_DECLARE_METATYPE(pd::PipelineSchedule)
Q_DECLARE_METATYPE(pd::RecomputeMode)

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

// The engine records every idle stretch of a stream as a wait: fill each stream's gaps
// within a step with one, so the trace has no untraced stream time.
void fill_waits(Trace& t) {
    std::map<std::tuple<int, int, int>, std::vector<TraceEvent>> streams;
    for (const TraceEvent& e : t.events)
        streams[{e.device, static_cast<int>(e.stream), e.step}].push_back(e);
    for (auto& [key, list] : streams) {
        std::stable_sort(list.begin(), list.end(),
                         [](const auto& l, const auto& r) { return l.start_ns < r.start_ns; });
        for (std::size_t i = 1; i < list.size(); ++i)
            if (list[i].start_ns > list[i - 1].end_ns)
                t.events.push_back(ev(list[i].device, list[i].stream, EventKind::wait, list[i].step,
                                      list[i - 1].end_ns, list[i].start_ns));
    }
    std::stable_sort(t.events.begin(), t.events.end(), [](const auto& l, const auto& r) {
        return std::tie(l.device, l.stream, l.start_ns) < std::tie(r.device, r.stream, r.start_ns);
    });
}

// A GPipe pipeline whose durations are chosen by the test: forward f[s] and backward b[s] on
// stage s (plus `cold` on micro-batch 0), transfers of `x` ns (the device clock's link model:
// latency only), the optimizer `o`. Laid out by GPipe's own recurrence: a forward starts when
// the stage is free and the activation has arrived, a backward when the stage is free, its
// gradient has arrived and (last stage) every forward is done.
struct CraftedGpipe {
    std::vector<std::int64_t> f, b;
    int m = 4;
    std::int64_t x = 0, o = 0, cold = 0;
    std::int64_t lead_in = 0;  // untraced stream time before every forward and backward
    int steps = 1;
    std::int64_t first_step_scale = 1;  // step 0 runs this many times slower (cold start)

    int p() const { return static_cast<int>(f.size()); }
    RunConfig config() const {
        RunConfig c;
        c.strategy = StrategyKind::pipeline;
        c.devices = p();
        c.layers = 2 * p();
        c.schedule = PipelineSchedule::gpipe;
        c.microbatches = m;
        c.batch = 4 * m;
        return c;
    }
    // The step time the recurrence gives for steady steps.
    std::int64_t step_ns = 0;
    Trace trace() {
        const RunConfig c = config();
        const std::vector<StageBoundary> bounds = stage_boundaries(c);
        Trace t;
        t.devices = p();
        t.clock = ClockMode::device;
        t.link.latency_us = static_cast<double>(x) / 1000.0;
        std::uint64_t flow = 1;
        std::int64_t offset = 0;
        for (int step = 0; step < steps; ++step) {
            const std::int64_t k = step == 0 ? first_step_scale : 1;
            auto dur = [&](const std::vector<std::int64_t>& d, int s, int mb) {
                // A stream's first event of a step has no lead-in the trace could attribute.
                const bool first = &d == &f && mb == 0;
                return k * (d[static_cast<std::size_t>(s)] + (mb == 0 ? cold : 0)) +
                       (first ? 0 : lead_in);
            };
            auto add = [&](int device, StreamKind stream, EventKind kind, int mb,
                           std::int64_t start, std::int64_t end) {
                TraceEvent e = ev(device, stream, kind, step, offset + start, offset + end);
                e.microbatch = mb;
                e.stage = device;
                e.layer = bounds[static_cast<std::size_t>(device)].first_unit;
                t.events.push_back(e);
                return t.events.size() - 1;
            };
            // A receive is queued behind the device's earlier transfers (one comm stream) and
            // ends when the data has landed.
            std::vector<std::int64_t> comm_free(static_cast<std::size_t>(p()), 0);
            auto transfer = [&](int from, int to, int mb, std::int64_t sent) {
                TraceEvent& s =
                    t.events[add(from, StreamKind::comm, EventKind::send, mb, sent, sent)];
                s.flow_id = flow;
                s.flow_source = true;
                comm_free[static_cast<std::size_t>(from)] = sent;
                auto& free = comm_free[static_cast<std::size_t>(to)];
                const std::int64_t start = std::max(sent, free);
                free = std::max(start, sent + x);
                TraceEvent& r =
                    t.events[add(to, StreamKind::comm, EventKind::recv, mb, start, free)];
                r.flow_id = flow++;
            };
            const int P = p();
            std::vector<std::vector<std::int64_t>> fe(P, std::vector<std::int64_t>(m)),
                be(P, std::vector<std::int64_t>(m));
            for (int i = 0; i < m; ++i)
                for (int s = 0; s < P; ++s) {
                    std::int64_t start = i > 0 ? fe[s][i - 1] : 0;
                    if (s > 0) start = std::max(start, fe[s - 1][i] + x);
                    fe[s][i] = start + dur(f, s, i);
                    add(s, StreamKind::compute, EventKind::forward, i, start, fe[s][i]);
                    if (s > 0) transfer(s - 1, s, i, fe[s - 1][i]);
                }
            for (int i = 0; i < m; ++i)
                for (int s = P - 1; s >= 0; --s) {
                    std::int64_t start = i > 0 ? be[s][i - 1] : fe[s][m - 1];
                    if (s < P - 1) start = std::max(start, be[s + 1][i] + x);
                    be[s][i] = start + dur(b, s, i);
                    add(s, StreamKind::compute, EventKind::backward, i, start, be[s][i]);
                    if (s < P - 1) transfer(s + 1, s, i, be[s + 1][i]);
                }
            std::int64_t end = 0;
            for (int s = 0; s < P; ++s) {
                add(s, StreamKind::compute, EventKind::optimizer, -1, be[s][m - 1],
                    be[s][m - 1] + k * o);
                end = std::max(end, be[s][m - 1] + k * o);
            }
            if (step == steps - 1) step_ns = end;
            t.steps.push_back({step, 2.0});
            offset += end + 1000;
        }
        fill_waits(t);
        for (TraceEvent& e : t.events)
            if ((e.kind == EventKind::forward && e.microbatch > 0) || e.kind == EventKind::backward)
                e.start_ns += lead_in;
        return t;
    }
    // 1 - busy / (p x T) of a steady step.
    double expected_bubble() const {
        double busy = 0;
        for (int s = 0; s < p(); ++s)
            busy += m * (f[static_cast<std::size_t>(s)] + b[static_cast<std::size_t>(s)]) +
                    2 * cold + o;
        return 1.0 - busy / (p() * static_cast<double>(step_ns));
    }
};

bool near(double a, double b, double tol = 1e-9) {
    return std::abs(a - b) <= tol;
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

    // With every stage equally fast and nothing else on the critical path, this run's
    // replayed schedule is the textbook's: predicted == measured == (p-1)/(m+p-1).
    void bubble_equal_stages_is_textbook_data() {
        QTest::addColumn<int>("stages");
        QTest::addColumn<int>("microbatches");
        QTest::addRow("p2 m4") << 2 << 4;
        QTest::addRow("p4 m8") << 4 << 8;
        QTest::addRow("p4 m1 (no micro-batches)") << 4 << 1;
        QTest::addRow("p3 m6") << 3 << 6;
    }
    void bubble_equal_stages_is_textbook() {
        QFETCH(int, stages);
        QFETCH(int, microbatches);
        CraftedGpipe g;
        g.f.assign(static_cast<std::size_t>(stages), 1000);
        g.b.assign(static_cast<std::size_t>(stages), 2000);
        g.m = microbatches;
        const Trace t = g.trace();
        const RunMetrics m = compute_metrics(t, g.config());
        QVERIFY(m.bubble);
        const double textbook = (stages - 1.0) / (microbatches + stages - 1.0);
        QVERIFY(near(m.bubble->theoretical, textbook));
        QVERIFY(near(m.bubble->measured, textbook));
        QVERIFY(m.bubble->predicted);
        QVERIFY2(near(m.bubble->predicted->fraction, textbook),
                 qPrintable(QString::number(m.bubble->predicted->fraction)));
        QVERIFY(near(m.bubble->predicted->step_time_s, g.step_ns * 1e-9));
        QVERIFY(near(m.bubble->predicted->causes.sum(), 0.0));
    }

    // One slow stage: GPipe's step is sum(f) + (m-1) max(f) + sum(b) + (m-1) max(b), and the
    // whole difference from the formula is stage imbalance.
    void bubble_slow_stage_is_imbalance() {
        CraftedGpipe g;
        g.f = {1000, 1000, 3000, 1000};
        g.b = {2000, 2000, 6000, 2000};
        g.m = 8;
        const Trace t = g.trace();
        QCOMPARE(g.step_ns, std::int64_t{6000 + 7 * 3000 + 12000 + 7 * 6000});
        const RunMetrics m = compute_metrics(t, g.config());
        QVERIFY(m.bubble && m.bubble->predicted);
        const BubblePrediction& pr = *m.bubble->predicted;
        QVERIFY(near(pr.fraction, g.expected_bubble()));
        QVERIFY(near(m.bubble->measured, pr.fraction));
        const double textbook = 3.0 / 11.0;
        QVERIFY(pr.causes.stage_imbalance > 0.1);
        QVERIFY(near(pr.causes.stage_imbalance, pr.fraction - textbook));
        QVERIFY(near(pr.causes.schedule, 0.0));
        QVERIFY(near(pr.causes.transfers, 0.0));
        QVERIFY(near(pr.causes.optimizer_tail, 0.0));
        QVERIFY(near(pr.causes.cold_first_microbatch, 0.0));
    }

    // Transfers of x ns put 2(p-1) of them on GPipe's critical path; the optimizer adds its
    // tail after the last backward; a slow micro-batch 0 is the cold-start cause.
    void bubble_transfers_optimizer_and_cold_start() {
        CraftedGpipe g;
        g.f = {1000, 1000, 1000, 1000};
        g.b = {2000, 2000, 2000, 2000};
        g.m = 8;
        g.x = 500;
        const Trace t = g.trace();
        QCOMPARE(g.step_ns, std::int64_t{11 * 3000 + 2 * 3 * 500});
        const RunMetrics m = compute_metrics(t, g.config());
        QVERIFY(m.bubble && m.bubble->predicted);
        const BubblePrediction& pr = *m.bubble->predicted;
        QVERIFY(near(pr.fraction, g.expected_bubble()));
        QVERIFY(near(m.bubble->measured, pr.fraction));
        QVERIFY(near(pr.causes.transfers, pr.fraction - 3.0 / 11.0));
        QVERIFY(pr.causes.transfers > 0.02);
        QVERIFY(near(pr.causes.stage_imbalance, 0.0));

        CraftedGpipe with_tail = g;
        with_tail.o = 4000;
        const RunMetrics mt = compute_metrics(with_tail.trace(), with_tail.config());
        QVERIFY(mt.bubble && mt.bubble->predicted);
        const BubblePrediction& pt = *mt.bubble->predicted;
        QVERIFY(near(pt.fraction, with_tail.expected_bubble()));
        QVERIFY(near(pt.causes.transfers, pr.causes.transfers));
        QVERIFY(near(pt.causes.optimizer_tail, pt.fraction - pr.fraction));

        CraftedGpipe cold = g;
        cold.cold = 1500;
        const Trace ct = cold.trace();
        const RunMetrics mc = compute_metrics(ct, cold.config());
        QVERIFY(mc.bubble && mc.bubble->predicted);
        const BubblePrediction& pc = *mc.bubble->predicted;
        QVERIFY(near(pc.fraction, cold.expected_bubble()));
        QVERIFY(near(mc.bubble->measured, pc.fraction));
        QVERIFY(pc.causes.cold_first_microbatch > 0.0);
        QVERIFY(near(pc.causes.stage_imbalance, 0.0));
        QVERIFY(near(pc.causes.microbatch_variation, 0.0));
        QVERIFY(near(pc.causes.sum(), pc.fraction - 3.0 / 11.0));
    }

    // Untraced stream time before every forward and backward (launch overhead) lengthens
    // every hop of the critical path: the whole difference is that cause.
    void bubble_untraced_gaps() {
        CraftedGpipe g;
        g.f = {1000, 1000, 1000, 1000};
        g.b = {2000, 2000, 2000, 2000};
        g.m = 8;
        g.lead_in = 100;
        const Trace t = g.trace();
        // Forwards: the first 1000 (no lead-in), then m-1+p-1 hops of 1100; backwards m+p-1
        // hops of 2100.
        QCOMPARE(g.step_ns, std::int64_t{1000 + 10 * 1100 + 11 * 2100});
        const RunMetrics m = compute_metrics(t, g.config());
        QVERIFY(m.bubble && m.bubble->predicted);
        const BubblePrediction& pr = *m.bubble->predicted;
        QVERIFY(near(pr.fraction, g.expected_bubble()));
        QVERIFY(near(m.bubble->measured, pr.fraction));
        QVERIFY(pr.causes.untraced_gaps > 0.01);
        QVERIFY(near(pr.causes.untraced_gaps, pr.fraction - 3.0 / 11.0));
    }

    // On the device clock each stream keeps its own time across steps: stage 1's long
    // optimizer in step 0 (4 us) still runs when step 1's first forward is done, so step 1's
    // forward on stage 1 starts 1 us late. The replay starts each stream when the previous
    // step left it, and counts the delay with the optimizer tail.
    void bubble_previous_optimizer_delays_the_next_step() {
        RunConfig c;
        c.strategy = StrategyKind::pipeline;
        c.devices = 2;
        c.layers = 4;
        c.schedule = PipelineSchedule::gpipe;
        c.microbatches = 1;
        c.batch = 4;
        const std::vector<StageBoundary> bounds = stage_boundaries(c);
        Trace t;
        t.devices = 2;
        t.clock = ClockMode::device;
        t.link.latency_us = 0;
        std::uint64_t flow = 1;
        auto work = [&](int device, EventKind kind, int step, std::int64_t start) {
            TraceEvent e =
                ev(device, StreamKind::compute, kind, step, start,
                   start + (kind == EventKind::optimizer ? (device == 1 ? 4000 : 1000) : 1000));
            e.microbatch = kind == EventKind::optimizer ? -1 : 0;
            e.layer = bounds[static_cast<std::size_t>(device)].first_unit;
            t.events.push_back(e);
        };
        auto transfer = [&](int from, int to, int step, std::int64_t at) {
            TraceEvent s = ev(from, StreamKind::comm, EventKind::send, step, at, at);
            s.flow_id = flow;
            s.flow_source = true;
            TraceEvent r = ev(to, StreamKind::comm, EventKind::recv, step, at, at);
            r.flow_id = flow++;
            t.events.push_back(s);
            t.events.push_back(r);
        };
        // Step 0 from 0: F0, F1, B1, B0 back to back; optimizers 1 (3000-7000) and 0.
        // Step 1 from 5000, when stage 0 is free; stage 1 is free only at 7000.
        for (auto [step, at, late] : {std::tuple{0, std::int64_t{0}, std::int64_t{0}},
                                      std::tuple{1, std::int64_t{5000}, std::int64_t{1000}}}) {
            work(0, EventKind::forward, step, at);
            transfer(0, 1, step, at + 1000);
            work(1, EventKind::forward, step, at + 1000 + late);
            work(1, EventKind::backward, step, at + 2000 + late);
            transfer(1, 0, step, at + 3000 + late);
            work(0, EventKind::backward, step, at + 3000 + late);
            work(1, EventKind::optimizer, step, at + 3000 + late);
            work(0, EventKind::optimizer, step, at + 4000 + late);
            t.steps.push_back({step, 1.0});
        }
        fill_waits(t);
        const RunMetrics m = compute_metrics(t, c);
        QCOMPARE(m.figure_steps.first, 1);
        QVERIFY(m.bubble && m.bubble->predicted);
        const double measured = 1.0 - 9000.0 / (2 * 8000.0);  // step 1: 5000..13000
        QVERIFY(near(m.bubble->measured, measured));
        QVERIFY2(near(m.bubble->predicted->fraction, measured),
                 qPrintable(QString::number(m.bubble->predicted->fraction)));
        // Without the optimizers the two-stage, one-micro-batch pipeline is the formula's 50%.
        QVERIFY(near(m.bubble->predicted->causes.optimizer_tail, measured - 0.5));
    }

    // 1F1B (PipeDream-Flush): stage s warms up with p-s-1 forwards, then alternates one
    // forward and one backward, then drains. Every forward 1 us, every backward 2 us,
    // transfers instant: the replay's bubble is the formula's (p-1)/(m+p-1).
    void bubble_one_f_one_b_equal_stages() {
        const int P = 4, M = 8;
        RunConfig c;
        c.strategy = StrategyKind::pipeline;
        c.devices = P;
        c.layers = 2 * P;
        c.schedule = PipelineSchedule::one_f_one_b;
        c.microbatches = M;
        c.batch = 4 * M;
        const std::vector<StageBoundary> bounds = stage_boundaries(c);
        // Each stage's ops back to back on its compute stream: only durations and the order
        // of each comm stream matter to the replay.
        Trace t;
        t.devices = P;
        t.clock = ClockMode::device;
        t.link.latency_us = 0;
        auto flow = [](bool activation, int to, int mb) {
            return static_cast<std::uint64_t>(1 + (activation ? 0 : 1000) + to * 100 + mb);
        };
        for (int s = 0; s < P; ++s) {
            std::vector<std::pair<bool, int>> ops;  // (forward, micro-batch)
            int f = 0, b = 0;
            for (; f < P - s - 1; ++f) ops.push_back({true, f});
            while (f < M) {
                ops.push_back({true, f++});
                ops.push_back({false, b++});
            }
            while (b < M) ops.push_back({false, b++});
            std::int64_t now = 0;
            for (auto [forward, mb] : ops) {
                auto comm = [&](EventKind kind, std::uint64_t id) {
                    TraceEvent e = ev(s, StreamKind::comm, kind, 0, now, now);
                    e.flow_id = id;
                    e.flow_source = kind == EventKind::send;
                    t.events.push_back(e);
                };
                if (forward ? s > 0 : s < P - 1) comm(EventKind::recv, flow(forward, s, mb));
                TraceEvent e =
                    ev(s, StreamKind::compute, forward ? EventKind::forward : EventKind::backward,
                       0, now, now + (forward ? 1000 : 2000));
                e.microbatch = mb;
                e.layer = bounds[static_cast<std::size_t>(s)].first_unit;
                t.events.push_back(e);
                now = e.end_ns;
                if (forward ? s < P - 1 : s > 0)
                    comm(EventKind::send, flow(forward, forward ? s + 1 : s - 1, mb));
            }
        }
        t.steps.push_back({0, 1.0});
        fill_waits(t);
        const RunMetrics m = compute_metrics(t, c);
        QVERIFY(m.bubble && m.bubble->predicted);
        const double textbook = (P - 1.0) / (M + P - 1.0);
        QVERIFY(near(m.bubble->theoretical, textbook));
        QVERIFY2(near(m.bubble->predicted->fraction, textbook),
                 qPrintable(QString::number(m.bubble->predicted->fraction)));
        QVERIFY(near(m.bubble->predicted->step_time_s, (M + P - 1) * 3000e-9));
    }

    // Headline figures leave out the cold first step: two steps, the first three times slower.
    void figures_cover_the_steady_steps() {
        CraftedGpipe g;
        g.f = {1000, 1000, 3000, 1000};
        g.b = {2000, 2000, 6000, 2000};
        g.m = 4;
        g.o = 500;
        g.steps = 3;
        g.first_step_scale = 3;
        const Trace t = g.trace();
        const RunMetrics m = compute_metrics(t, g.config());
        QCOMPARE(m.figure_steps.first, 1);
        QCOMPARE(m.figure_steps.last, 2);
        QCOMPARE(m.figure_steps.count(), 2);
        QVERIFY(m.bubble && m.bubble->predicted);
        QVERIFY(near(m.bubble->measured, g.expected_bubble()));
        QVERIFY(near(m.bubble->predicted->fraction, g.expected_bubble()));
        // Stage 2's busy time over steps 1 and 2 only.
        QVERIFY(near(m.devices[2].busy_s, 2 * (4 * (3000 + 6000) + 500) * 1e-9, 1e-15));

        Trace one;
        one.devices = 1;
        one.events.push_back(ev(0, StreamKind::compute, EventKind::forward, 0, 0, 100));
        QCOMPARE(figure_steps(one).first, 0);
        QCOMPARE(figure_steps(one).last, 0);
        QVERIFY(figure_steps(Trace{}).empty());
    }

    // Split backwards (ZB-H1, ZB-V: B and W) and recomputed ones (the forward re-run before
    // each backward) are predicted from a real run's own stage times like GPipe's and 1F1B's:
    // on the device clock the replay of the run's durations lands on its measured bubble (a
    // stated 3 points, both figures from the same run), and the causes add up to the
    // difference from the textbook figure.
    void bubble_predicted_for_split_and_recomputed_backwards_data() {
        QTest::addColumn<PipelineSchedule>("schedule");
        QTest::addColumn<RecomputeMode>("recompute");
        QTest::addRow("zb-h1") << PipelineSchedule::zb_h1 << RecomputeMode::none;
        QTest::addRow("zb-v") << PipelineSchedule::zb_v << RecomputeMode::none;
        QTest::addRow("1f1b recompute full")
            << PipelineSchedule::one_f_one_b << RecomputeMode::full;
        QTest::addRow("zb-h1 recompute full") << PipelineSchedule::zb_h1 << RecomputeMode::full;
    }
    void bubble_predicted_for_split_and_recomputed_backwards() {
        QFETCH(PipelineSchedule, schedule);
        QFETCH(RecomputeMode, recompute);
        RunConfig c = test::small_config(StrategyKind::pipeline, 4);
        c.layers = 8;
        c.width = 64;
        c.batch = 64;
        c.microbatches = 8;
        c.steps = 3;
        c.schedule = schedule;
        c.recompute = recompute;
        // Both figures are timed: a run on a machine busy with other work (CI runs tests side
        // by side) can wait where the replay does not. The closest of up to three runs must
        // land within the 3 points; a wrong replay misses in all of them.
        QStringList misses;
        for (int attempt = 0; attempt < 3; ++attempt) {
            const RunResult r = test::run_config(c);
            QCOMPARE(r.status, RunStatus::ok);
            const RunMetrics m = compute_metrics(r.trace, c);
            QVERIFY(m.bubble);
            QVERIFY2(m.bubble->predicted, "no bubble predicted from the run's stage times");
            const BubblePrediction& pr = *m.bubble->predicted;
            QVERIFY(near(pr.causes.sum(), pr.fraction - m.bubble->theoretical, 1e-9));
            if (std::abs(pr.fraction - m.bubble->measured) <= 0.03) return;
            misses << QStringLiteral("predicted %1, measured %2")
                          .arg(pr.fraction)
                          .arg(m.bubble->measured);
        }
        QFAIL(qPrintable(misses.join(QStringLiteral("; "))));
    }

    // A trace without the schedule's tasks (tracing off) has no prediction, not a made-up one.
    void bubble_prediction_needs_every_task() {
        CraftedGpipe g;
        g.f = {1000, 1000};
        g.b = {2000, 2000};
        Trace t = g.trace();
        t.events.erase(std::remove_if(t.events.begin(), t.events.end(),
                                      [](const TraceEvent& e) {
                                          return e.kind == EventKind::backward && e.device == 1 &&
                                                 e.microbatch == 2;
                                      }),
                       t.events.end());
        const RunMetrics m = compute_metrics(t, g.config());
        QVERIFY(m.bubble);
        QVERIFY(!m.bubble->predicted);
    }

    void summary_carries_prediction_and_causes() {
        CraftedGpipe g;
        g.f = {1000, 1000, 3000, 1000};
        g.b = {2000, 2000, 6000, 2000};
        g.m = 8;
        g.x = 500;
        g.steps = 2;
        RunResult result;
        result.trace = g.trace();
        result.steps_completed = 2;
        const RunConfig c = g.config();
        const RunMetrics m = compute_metrics(result.trace, c);
        const QJsonObject j =
            QJsonDocument::fromJson(QByteArray::fromStdString(summary_json(c, result, m))).object();
        const QJsonObject bubble = j.value(QStringLiteral("bubble_fraction")).toObject();
        QVERIFY(near(bubble.value(QStringLiteral("predicted_from_stage_times")).toDouble(),
                     m.bubble->predicted->fraction));
        const QJsonObject causes = bubble.value(QStringLiteral("causes")).toObject();
        double sum = 0;
        for (const QString& k :
             {QStringLiteral("schedule"), QStringLiteral("stage_imbalance"),
              QStringLiteral("transfers"), QStringLiteral("untraced_gaps"),
              QStringLiteral("optimizer_tail"), QStringLiteral("cold_first_microbatch"),
              QStringLiteral("microbatch_variation")}) {
            QVERIFY2(causes.contains(k), qPrintable(k));
            sum += causes.value(k).toDouble();
        }
        QVERIFY(near(sum, m.bubble->predicted->fraction - m.bubble->theoretical, 1e-12));
        QVERIFY(causes.value(QStringLiteral("stage_imbalance")).toDouble() > 0.1);
        const QJsonObject steps = j.value(QStringLiteral("figure_steps")).toObject();
        QCOMPARE(steps.value(QStringLiteral("first")).toInt(), 1);
        QCOMPARE(steps.value(QStringLiteral("last")).toInt(), 1);
        QCOMPARE(steps.value(QStringLiteral("excludes_first_step")).toBool(), true);
    }

    void collective_bandwidth() {
        Trace t;
        t.devices = 4;
        for (int d = 0; d < 4; ++d)
            for (int call = 0; call < 2; ++call)
                t.collectives.push_back(
                    {d, "all_reduce", "", 1000000, 4, 0, 0, 1000000, "ring", ""});  // 1 ms
        const RunMetrics m = compute_metrics(t, 1);
        QCOMPARE(m.collectives.size(), std::size_t{1});
        QCOMPARE(m.collectives[0].count, 2);
        QCOMPARE(m.collectives[0].mean_time_s, 1e-3);
        QCOMPARE(m.collectives[0].algbw_gbps, 1.0);
        QCOMPARE(m.collectives[0].busbw_gbps, 1.5);
    }

    // Issue 41: the figures of many devices, each its own (the metrics group the events by
    // device once instead of scanning every event for each device; the time is
    // paralleldeck-bench import's). Events and samples come step by step, devices interleaved.
    void many_devices_keep_their_own_figures() {
        constexpr int kDevices = 2000, kSteps = 3;
        Trace t;
        t.devices = kDevices;
        const auto compute_len = [](int d) { return std::int64_t{100 + d % 13}; };
        const auto compute_at = [](int d) { return std::int64_t{d % 7}; };
        const auto comm_at = [](int d) { return std::int64_t{50 + d % 5}; };
        for (int s = 0; s < kSteps; ++s) {
            const std::int64_t base = s * 10000;
            for (int d = 0; d < kDevices; ++d) {
                t.events.push_back(ev(d, StreamKind::compute, EventKind::forward, s,
                                      base + compute_at(d), base + compute_at(d) + compute_len(d)));
                t.events.push_back(ev(d, StreamKind::comm, EventKind::collective, s,
                                      base + comm_at(d), base + comm_at(d) + 80));
                t.memory.push_back(
                    {d, MemoryCategory::activations, static_cast<std::size_t>(d + 1 + s), base});
            }
            for (int d = 0; d < kDevices; ++d)
                t.memory.push_back({d, MemoryCategory::activations, 0, base + 5000});
            t.steps.push_back({s, 1.0});
        }
        const RunMetrics m = compute_metrics(t, 8);
        QCOMPARE(m.figure_steps.first, 1);
        QCOMPARE(m.figure_steps.last, 2);
        QCOMPARE(static_cast<int>(m.devices.size()), kDevices);
        // Each step spans from its earliest start (device 0's compute) to its latest end.
        std::int64_t step_len = 0;
        for (int d = 0; d < kDevices; ++d)
            step_len = std::max({step_len, compute_at(d) + compute_len(d), comm_at(d) + 80});
        QCOMPARE(m.figure_step_samples.size(), std::size_t{2});
        for (int d = 0; d < kDevices; ++d) {
            const DeviceMetrics& dm = m.devices[static_cast<std::size_t>(d)];
            const std::int64_t overlap =
                std::min(compute_at(d) + compute_len(d), comm_at(d) + 80) - comm_at(d);
            QCOMPARE(dm.device, d);
            QCOMPARE(dm.busy_s, 2 * compute_len(d) * 1e-9);
            QCOMPARE(dm.comm_s, 160e-9);
            QCOMPARE(dm.overlapped_comm_s, 2 * overlap * 1e-9);
            QCOMPARE(dm.peak_bytes[static_cast<int>(MemoryCategory::activations)],
                     static_cast<std::size_t>(d + kSteps));
            for (const StepFigures& f : m.figure_step_samples) {
                QCOMPARE(f.time_s, step_len * 1e-9);
                QCOMPARE(f.busy_fraction[static_cast<std::size_t>(d)],
                         static_cast<double>(compute_len(d)) / static_cast<double>(step_len));
                QCOMPARE(f.comm_device_s[static_cast<std::size_t>(d)], 80e-9);
                QCOMPARE(f.exposed_comm_device_s[static_cast<std::size_t>(d)],
                         (80 - overlap) * 1e-9);
            }
        }
    }
};

QTEST_APPLESS_MAIN(TestMetrics)
#include "test_metrics.moc"
