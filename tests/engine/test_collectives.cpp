// Collectives are exact on crafted inputs (small integers, so float sums are exact) for many
// group sizes and element counts, including 1 and counts that do not divide by n; and a
// missing or failing peer makes the others return an error instead of hanging.
#include <QtTest>
#include <functional>
#include <memory>

#include "engine/crafted_collectives.h"
#include "pd/communicator.h"
#include "pd/run_context.h"

using namespace pd;

namespace {

struct Group {
    RunContext ctx;
    std::vector<std::unique_ptr<Device>> devices;
    Transport transport;
    std::unique_ptr<Communicator> comm;

    explicit Group(int n, double timeout_s = 60.0)
        : ctx(ClockMode::device, LinkModel{}, true, timeout_s), transport(ctx) {
        std::vector<Device*> members;
        for (int d = 0; d < n; ++d) {
            devices.push_back(std::make_unique<Device>(d, std::size_t{1} << 30, ctx));
            members.push_back(devices.back().get());
        }
        comm = std::make_unique<Communicator>(transport, members, 1);
    }
    // Runs body(rank) on every member's comm stream and waits for all of them.
    void run(const std::function<void(int)>& body) {
        for (std::size_t d = 0; d < devices.size(); ++d)
            devices[d]->comm().enqueue([body, d] { body(static_cast<int>(d)); });
        for (auto& dev : devices) dev->comm().synchronize();
    }
    std::vector<TraceEvent> events(int device) {
        return devices[static_cast<std::size_t>(device)]->comm().take_events();
    }
};

}  // namespace

class TestCollectives : public QObject {
    Q_OBJECT
  private slots:
    void exact_data() {
        QTest::addColumn<int>("n");
        QTest::addColumn<int>("count");
        for (int n : {1, 2, 3, 4, 5, 8})
            for (int count : {1, 2, 7, 64, 1001})
                QTest::addRow("n%d_count%d", n, count) << n << count;
    }

    void exact() {
        QFETCH(int, n);
        QFETCH(int, count);
        const auto cnt = static_cast<std::size_t>(count);
        Group g(n);
        pd::test::CraftedCollectives c(n, cnt);
        g.run([&](int r) { c.run(*g.comm, r); });
        QVERIFY2(!g.ctx.aborted(), g.ctx.first_error_message().c_str());
        c.verify();
        if (QTest::currentTestFailed()) return;

        for (int r = 0; r < n;
             ++r) {  // Exactly n-1 reduce-scatter and n-1 all-gather steps per all-reduce, then n-1
            // more of each for the standalone collectives.
            int rs_steps = 0, ag_steps = 0;
            for (const auto& e : g.events(r)) {
                if (e.kind == EventKind::reduce_scatter_step) ++rs_steps;
                if (e.kind == EventKind::all_gather_step) ++ag_steps;
            }
            QCOMPARE(rs_steps, 2 * (n - 1));
            QCOMPARE(ag_steps, 2 * (n - 1));
        }
    }

    void chunks_cover_everything_once() {
        for (int n : {1, 3, 8})
            for (std::size_t count : {0u, 1u, 5u, 1001u}) {
                std::size_t covered = 0;
                for (int c = 0; c < n; ++c) {
                    QVERIFY(Communicator::chunk_end(count, n, c) >=
                            Communicator::chunk_begin(count, n, c));
                    covered += Communicator::chunk_end(count, n, c) -
                               Communicator::chunk_begin(count, n, c);
                }
                QCOMPARE(covered, count);
            }
    }

    void send_recv_pairs_with_flows() {
        Group g(3);
        std::vector<float> payload{1, 2, 3, 4, 5}, received(5, 0);
        g.run([&](int r) {
            if (r == 0) g.comm->send(0, 2, payload.data(), payload.size(), 0, "activations");
            if (r == 2) g.comm->recv(2, 0, received.data(), received.size(), 0, "activations");
        });
        QVERIFY2(!g.ctx.aborted(), g.ctx.first_error_message().c_str());
        QCOMPARE(received, payload);
        const auto sent = g.events(0);
        std::vector<TraceEvent> got;
        for (auto& e : g.events(2))  // waiting for the sender shows as a separate idle event
            if (e.kind != EventKind::wait) got.push_back(e);
        QCOMPARE(sent.size(), std::size_t{1});
        QCOMPARE(got.size(), std::size_t{1});
        QCOMPARE(sent[0].kind, EventKind::send);
        QCOMPARE(got[0].kind, EventKind::recv);
        QVERIFY(sent[0].flow_id != 0);
        QCOMPARE(got[0].flow_id, sent[0].flow_id);
        QCOMPARE(got[0].peer, 0);
        QCOMPARE(sent[0].bytes, std::size_t{20});
    }

    // A member that never joins: the others give up with a timeout error, not a hang.
    void missing_peer_times_out() {
        Group g(3, 0.3);
        std::vector<std::vector<float>> data(3, std::vector<float>(10, 1.0f));
        g.run([&](int r) {
            if (r != 1) g.comm->all_reduce(r, data[r].data(), 10, 0);
        });
        QVERIFY(g.ctx.aborted());
        QVERIFY(g.ctx.first_error_message().find("timed out") != std::string::npos);
    }

    // A member that fails: the run is aborted and its peers leave their collective.
    void failing_peer_aborts_the_others() {
        Group g(4, 60.0);
        std::vector<std::vector<float>> data(4, std::vector<float>(100, 1.0f));
        g.run([&](int r) {
            if (r == 2) throw Error("device 2 failed on purpose", __FILE__, __LINE__);
            g.comm->all_reduce(r, data[r].data(), 100, 0);
        });
        QVERIFY(g.ctx.aborted());
        QVERIFY(g.ctx.first_error_message().find("failed on purpose") != std::string::npos);
    }
};

QTEST_APPLESS_MAIN(TestCollectives)
#include "test_collectives.moc"
