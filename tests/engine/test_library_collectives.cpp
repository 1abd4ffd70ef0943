// The communicator's library path (NCCL when each device is its own GPU), checked on the CPU
// with an in-memory stand-in for the library: ring steps through `exchange`, whole native
// collectives, broadcast and send/recv give the same exact results as the transport path,
// with every ring phase traced and each send paired with its receive by a flow id.
#include <QtTest>

#include <barrier>
#include <condition_variable>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <stdexcept>
#include <string>

#include "backend/device_backend.h"
#include "engine/crafted_collectives.h"
#include "pd/communicator.h"
#include "pd/run_context.h"

using namespace pd;

namespace {

// Blocking point-to-point mailboxes and a barrier for the whole-collective calls: what NCCL
// does between GPUs, done between threads on host memory.
class FakeLibrary final : public GroupCollectives {
  public:
    FakeLibrary(int n, bool native) : n_(n), native_(native), barrier_(n), posted_(n) {}

    bool native() const override { return native_; }
    void exchange(int rank, const float* send_data, std::size_t send_count, int to,
                  float* recv_data, std::size_t recv_count, int from) override {
        send(rank, send_data, send_count, to);
        recv(rank, recv_data, recv_count, from);
    }
    void send(int rank, const float* data, std::size_t count, int to) override {
        std::lock_guard lock(mutex_);
        boxes_[{rank, to}].emplace_back(data, data + count);
        cv_.notify_all();
    }
    void recv(int rank, float* data, std::size_t count, int from) override {
        std::unique_lock lock(mutex_);
        auto& box = boxes_[{from, rank}];
        cv_.wait(lock, [&] { return !box.empty(); });
        if (box.front().size() != count)  // the communicator's counts must pair up
            throw std::runtime_error("a receive of " + std::to_string(count) +
                                     " floats met a send of " + std::to_string(box.front().size()));
        std::copy(box.front().begin(), box.front().end(), data);
        box.pop_front();
    }
    void all_reduce(int rank, float* data, std::size_t count) override {
        whole(
            rank, data,
            [&](std::vector<float>& mine) {
                for (std::size_t i = 0; i < count; ++i) {
                    mine[i] = 0;
                    for (int r = 0; r < n_; ++r) mine[i] += posted_[r][i];
                }
            },
            count);
    }
    void reduce_scatter(int rank, float* data, std::size_t count) override {
        const std::size_t chunk = count / n_, first = chunk * rank;
        whole(
            rank, data,
            [&](std::vector<float>& mine) {
                for (std::size_t i = first; i < first + chunk; ++i) {
                    mine[i] = 0;
                    for (int r = 0; r < n_; ++r) mine[i] += posted_[r][i];
                }
            },
            count);
    }
    void all_gather(int rank, float* data, std::size_t count) override {
        const std::size_t chunk = count / n_;
        whole(
            rank, data,
            [&](std::vector<float>& mine) {
                for (int r = 0; r < n_; ++r)
                    for (std::size_t i = chunk * r; i < chunk * (r + 1); ++i)
                        mine[i] = posted_[r][i];
            },
            count);
    }
    void broadcast(int rank, float* data, std::size_t count, int root) override {
        whole(
            rank, data, [&](std::vector<float>& mine) { mine = posted_[root]; }, count);
    }
    int whole_calls() const { return whole_calls_; }

  private:
    // Everyone posts a copy, computes its own result from all copies, then writes it back.
    void whole(int rank, float* data, const std::function<void(std::vector<float>&)>& compute,
               std::size_t count) {
        posted_[rank].assign(data, data + count);
        barrier_.arrive_and_wait();
        std::vector<float> mine(posted_[rank]);
        compute(mine);
        barrier_.arrive_and_wait();
        std::copy(mine.begin(), mine.end(), data);
        if (rank == 0) ++whole_calls_;
    }

    int n_;
    bool native_;
    std::barrier<> barrier_;
    std::vector<std::vector<float>> posted_;
    std::mutex mutex_;
    std::condition_variable cv_;
    std::map<std::pair<int, int>, std::deque<std::vector<float>>> boxes_;
    int whole_calls_ = 0;
};

// A CPU device whose backend offers the fake library for groups.
class LibraryBackend final : public DeviceBackend {
  public:
    explicit LibraryBackend(std::shared_ptr<FakeLibrary> library)
        : cpu_(make_cpu_device_backend()), library_(std::move(library)) {}
    std::string name() const override { return "cpu with a fake collective library"; }
    DeviceOps& ops() override { return cpu_->ops(); }
    std::unique_ptr<StreamBackend> make_stream() override { return nullptr; }
    std::unique_ptr<GroupCollectives> make_group_collectives(
        const std::vector<DeviceBackend*>&) override {
        return std::make_unique<Forward>(library_);
    }

  private:
    // The communicator owns its group; all of them share one fake library.
    struct Forward final : GroupCollectives {
        explicit Forward(std::shared_ptr<FakeLibrary> l) : lib(std::move(l)) {}
        bool native() const override { return lib->native(); }
        void exchange(int r, const float* s, std::size_t sc, int t, float* d, std::size_t dc,
                      int f) override {
            lib->exchange(r, s, sc, t, d, dc, f);
        }
        void send(int r, const float* d, std::size_t c, int t) override { lib->send(r, d, c, t); }
        void recv(int r, float* d, std::size_t c, int f) override { lib->recv(r, d, c, f); }
        void all_reduce(int r, float* d, std::size_t c) override { lib->all_reduce(r, d, c); }
        void reduce_scatter(int r, float* d, std::size_t c) override {
            lib->reduce_scatter(r, d, c);
        }
        void all_gather(int r, float* d, std::size_t c) override { lib->all_gather(r, d, c); }
        void broadcast(int r, float* d, std::size_t c, int root) override {
            lib->broadcast(r, d, c, root);
        }
        std::shared_ptr<FakeLibrary> lib;
    };
    std::unique_ptr<DeviceBackend> cpu_;
    std::shared_ptr<FakeLibrary> library_;
};

struct Group {
    RunContext ctx;
    std::shared_ptr<FakeLibrary> library;
    Transport transport;
    std::vector<std::unique_ptr<Device>> devices;
    std::unique_ptr<Communicator> comm;

    Group(int n, bool native)
        : ctx(ClockMode::device, LinkModel{}, true, 60.0),
          library(std::make_shared<FakeLibrary>(n, native)),
          transport(ctx) {
        std::vector<Device*> members;
        for (int d = 0; d < n; ++d) {
            devices.push_back(std::make_unique<Device>(d, std::size_t{1} << 30, ctx,
                                                       std::make_unique<LibraryBackend>(library)));
            members.push_back(devices.back().get());
        }
        comm = std::make_unique<Communicator>(transport, members, 1);
    }
    void run(const std::function<void(int)>& body) {
        for (std::size_t d = 0; d < devices.size(); ++d)
            devices[d]->comm().enqueue([body, d] { body(static_cast<int>(d)); });
        for (auto& dev : devices) dev->comm().synchronize();
    }
};

}  // namespace

class TestLibraryCollectives : public QObject {
    Q_OBJECT
  private slots:
    void exact_data() {
        QTest::addColumn<int>("n");
        QTest::addColumn<int>("count");
        QTest::addColumn<bool>("native");
        for (bool native : {false, true})
            for (int n : {2, 3, 4})
                for (int count : {1, 7, 12, 1001})
                    QTest::addRow("%s_n%d_count%d", native ? "native" : "ring", n, count)
                        << n << count << native;
    }

    void exact() {
        QFETCH(int, n);
        QFETCH(int, count);
        QFETCH(bool, native);
        const auto cnt = static_cast<std::size_t>(count);
        Group g(n, native);
        QVERIFY(g.comm->uses_library());
        pd::test::CraftedCollectives c(n, cnt);
        g.run([&](int r) { c.run(*g.comm, r); });
        QVERIFY2(!g.ctx.aborted(), g.ctx.first_error_message().c_str());
        c.verify();
        if (QTest::currentTestFailed()) return;
        // The ring path traces each phase's steps; the native path one event per call
        // (reduce-scatter and all-gather fall back to ring steps when chunks are uneven).
        const auto events = g.devices[0]->comm().take_events();
        int steps = 0, whole = 0;
        for (const TraceEvent& e : events) {
            steps +=
                e.kind == EventKind::reduce_scatter_step || e.kind == EventKind::all_gather_step;
            whole += e.kind == EventKind::collective;
        }
        if (!native) {
            QCOMPARE(steps, 4 * (n - 1));  // all-reduce 2(n-1), reduce-scatter and all-gather n-1
            QCOMPARE(whole, 0);
        } else {
            const bool even = cnt % static_cast<std::size_t>(n) == 0;
            QCOMPARE(whole, even ? 3 : 1);
            QCOMPARE(steps, even ? 0 : 2 * (n - 1));
        }
    }

    void send_recv_pairs_flows_and_accumulates() {
        Group g(2, false);
        std::vector<float> a{1, 2, 3}, b{10, 20, 30};
        g.run([&](int r) {
            if (r == 0) {
                g.comm->send(0, 1, a.data(), 3, 0, "activations");
                g.comm->send(0, 1, a.data(), 3, 0, "activations");
            } else {
                g.comm->recv(1, 0, b.data(), 3, 0, "activations", true);
                g.comm->recv(1, 0, b.data(), 3, 0, "activations", true);
            }
        });
        QVERIFY2(!g.ctx.aborted(), g.ctx.first_error_message().c_str());
        QCOMPARE(b, (std::vector<float>{12, 24, 36}));
        const auto sends = g.devices[0]->comm().take_events();
        const auto recvs = g.devices[1]->comm().take_events();
        QCOMPARE(sends.size(), std::size_t{2});
        QCOMPARE(recvs.size(), std::size_t{2});
        for (int i = 0; i < 2; ++i) {
            QVERIFY(sends[i].flow_id != 0);
            QCOMPARE(recvs[i].flow_id, sends[i].flow_id);
        }
        QVERIFY(sends[0].flow_id != sends[1].flow_id);
    }
};

QTEST_GUILESS_MAIN(TestLibraryCollectives)
#include "test_library_collectives.moc"
