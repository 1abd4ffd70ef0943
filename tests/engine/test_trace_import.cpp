// Importing PyTorch profiler traces and ParallelDeck's own exports: real Kineto traces of GPU
// jobs with NCCL (../shared/traces), real autograd-profiler traces of DDP with gloo
// (tests/fixtures/traces, made by make_ddp_gloo_traces.py), the round trip of an engine run,
// and every kind of bad file. References are computed here from the raw JSON, not by the
// importer's code.
#include <zlib.h>
#include <QtTest>

#include <nlohmann/json.hpp>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <map>

#include "engine_test_support.h"
#include "pd/error.h"
#include "pd/exports.h"
#include "pd/metrics.h"
#include "pd/trace_import.h"

using nlohmann::json;
namespace fs = std::filesystem;

namespace {

const std::string kShared = PD_SHARED_TRACES_DIR;
const std::string kFixtures = PD_TRACE_FIXTURES_DIR;

json read_json(const std::string& path) {
    gzFile f = gzopen(path.c_str(), "rb");
    if (!f) throw std::runtime_error("cannot open " + path);
    std::string text;
    char buf[1 << 16];
    int n;
    while ((n = gzread(f, buf, sizeof buf)) > 0) text.append(buf, static_cast<std::size_t>(n));
    gzclose(f);
    return json::parse(text);
}

bool is_nccl_kernel(const json& e) {
    if (e.value("ph", "") != "X" || e.value("cat", "") != "kernel") return false;
    std::string n = e.value("name", "");
    std::transform(n.begin(), n.end(), n.begin(), ::tolower);
    return n.rfind("nccl", 0) == 0;
}

using Interval = std::pair<double, double>;

std::vector<Interval> merged(std::vector<Interval> v) {
    std::sort(v.begin(), v.end());
    std::vector<Interval> out;
    for (const auto& iv : v) {
        if (iv.second <= iv.first) continue;
        if (!out.empty() && iv.first <= out.back().second)
            out.back().second = std::max(out.back().second, iv.second);
        else
            out.push_back(iv);
    }
    return out;
}

double covered(const std::vector<Interval>& v) {
    double t = 0;
    for (const auto& iv : v) t += iv.second - iv.first;
    return t;
}

// Whether t falls in a step window other than the first (sorted windows).
bool in_steps_but_first(const std::vector<Interval>& steps, double t) {
    for (std::size_t i = 1; i < steps.size(); ++i)
        if (t >= steps[i].first && t <= steps[i].second) return true;
    return false;
}

// Communication time not covered by compute, both given as merged interval lists.
double exposed(const std::vector<Interval>& comm, const std::vector<Interval>& compute) {
    double overlap = 0;
    for (const auto& c : comm)
        for (const auto& k : compute)
            overlap += std::max(0.0, std::min(c.second, k.second) - std::max(c.first, k.first));
    return covered(comm) - overlap;
}

// HTA's exposed communication of one Kineto rank, from the raw events, in microseconds:
// NCCL kernel time not overlapped by any other kernel, over the profiler steps but the
// first, a kernel counted in the step whose window holds the runtime call that launched it.
double reference_exposed_us(const json& trace) {
    std::vector<Interval> steps;
    std::map<long long, double> launch;
    for (const auto& e : trace["traceEvents"]) {
        if (e.value("ph", "") != "X") continue;
        const std::string name = e.value("name", "");
        const std::string cat = e.value("cat", "");
        if (name.rfind("ProfilerStep#", 0) == 0 && cat == "user_annotation")
            steps.push_back(
                {e["ts"].get<double>(), e["ts"].get<double>() + e["dur"].get<double>()});
        if (cat == "cuda_runtime" && e.contains("args") && e["args"].contains("correlation"))
            launch[e["args"]["correlation"].get<long long>()] = e["ts"].get<double>();
    }
    std::sort(steps.begin(), steps.end());
    auto in_figure_steps = [&](double t) { return in_steps_but_first(steps, t); };
    std::vector<Interval> comm, compute;
    for (const auto& e : trace["traceEvents"]) {
        if (e.value("ph", "") != "X" || e.value("cat", "") != "kernel") continue;
        double at = e["ts"].get<double>();
        if (e.contains("args") && e["args"].contains("correlation")) {
            auto it = launch.find(e["args"]["correlation"].get<long long>());
            if (it != launch.end()) at = it->second;
        }
        if (!in_figure_steps(at)) continue;
        const Interval iv{e["ts"].get<double>(), e["ts"].get<double>() + e["dur"].get<double>()};
        (is_nccl_kernel(e) ? comm : compute).push_back(iv);
    }
    return exposed(merged(comm), merged(compute));
}

// The same for one rank of the older profiler's CPU trace: gloo work (on its worker threads)
// not overlapped by the training thread's ops, over the profiler steps but the first, an
// event in the step whose window holds its start.
double reference_exposed_cpu_us(const json& events) {
    std::vector<Interval> steps;
    for (const auto& e : events)
        if (e["name"].get<std::string>().rfind("ProfilerStep#", 0) == 0)
            steps.push_back(
                {e["ts"].get<double>(), e["ts"].get<double>() + e["dur"].get<double>()});
    std::sort(steps.begin(), steps.end());
    auto in_figure_steps = [&](double t) { return in_steps_but_first(steps, t); };
    std::vector<Interval> comm, compute;
    for (const auto& e : events) {
        const std::string name = e["name"];
        const double ts = e["ts"].get<double>();
        if (name.rfind("ProfilerStep#", 0) == 0 || !in_figure_steps(ts)) continue;
        const Interval iv{ts, ts + e["dur"].get<double>()};
        if (name == "gloo:all_reduce")
            comm.push_back(iv);
        else if (e["tid"].get<int>() == 1)
            compute.push_back(iv);
    }
    return exposed(merged(comm), merged(compute));
}

std::string temp_path(const std::string& name) {
    return (fs::temp_directory_path() / ("pd_trace_import_" + name)).string();
}

void write(const std::string& path, const std::string& text) {
    std::ofstream(path, std::ios::binary) << text;
}

// The importer's message for `paths`, or "" when it reads them.
QString import_error(const std::vector<std::string>& paths) {
    try {
        pd::import_traces(paths);
    } catch (const pd::BadInput& e) {
        return QString::fromStdString(e.what());
    }
    return {};
}

// `text` as a gzip file's bytes (one member).
std::string gzip_bytes(const std::string& text) {
    z_stream z{};
    deflateInit2(&z, 6, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY);
    std::string out(deflateBound(&z, static_cast<uLong>(text.size())), '\0');
    z.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(text.data()));
    z.avail_in = static_cast<uInt>(text.size());
    z.next_out = reinterpret_cast<Bytef*>(out.data());
    z.avail_out = static_cast<uInt>(out.size());
    deflate(&z, Z_FINISH);
    out.resize(z.total_out);
    deflateEnd(&z);
    return out;
}

// A gzip file of `head`, `repeat` copies of `chunk`, then `tail`, written as it is deflated.
void write_gzip(const std::string& path, const std::string& head, const std::string& chunk,
                std::size_t repeat, const std::string& tail) {
    gzFile f = gzopen(path.c_str(), "wb6");
    gzwrite(f, head.data(), static_cast<unsigned>(head.size()));
    for (std::size_t i = 0; i < repeat; ++i)
        gzwrite(f, chunk.data(), static_cast<unsigned>(chunk.size()));
    gzwrite(f, tail.data(), static_cast<unsigned>(tail.size()));
    gzclose(f);
}

// A small Kineto-like trace: two profiler steps, a kernel in each.
const std::string kSmallKineto =
    R"({"traceEvents": [)"
    R"({"ph": "X", "cat": "user_annotation", "name": "ProfilerStep#0", "pid": 1, "tid": 1, "ts": 0, "dur": 100},)"
    R"({"ph": "X", "cat": "kernel", "name": "k", "pid": 0, "tid": 7, "ts": 10, "dur": 20},)"
    R"({"ph": "X", "cat": "user_annotation", "name": "ProfilerStep#1", "pid": 1, "tid": 1, "ts": 100, "dur": 100},)"
    R"({"ph": "X", "cat": "kernel", "name": "k", "pid": 0, "tid": 7, "ts": 110, "dur": 20}]})";

// kSmallKineto with a distributedInfo of `info` (a JSON object's members).
std::string kineto_with(const std::string& info) {
    return R"({"distributedInfo": {)" + info + "}, " + kSmallKineto.substr(1);
}

}  // namespace

class TestTraceImport : public QObject {
    Q_OBJECT

  private slots:
    void kinetoRanksOfA128RankJob() {
        const std::string r0 = kShared + "/kineto-128rank-job_rank0.json.gz";
        const std::string r1 = kShared + "/kineto-128rank-job_rank1.json.gz";
        if (!fs::exists(r0)) QSKIP("../shared/traces is not beside this checkout");
        // Given in reverse: distributedInfo's rank orders the rows.
        const pd::Trace t = pd::import_traces({r1, r0});
        QVERIFY(t.origin.imported);
        QCOMPARE(t.devices, 2);
        QCOMPARE(t.origin.ranks, (std::vector<int>{0, 1}));
        QCOMPARE(t.origin.world_size, 128);
        QCOMPARE(t.origin.distributed_backend, std::string("nccl"));
        QCOMPARE(t.origin.files[0], r0);
        for (int d = 0; d < 2; ++d) {
            const json raw = read_json(d == 0 ? r0 : r1);
            int steps = 0, nccl = 0, kernels = 0;
            for (const auto& e : raw["traceEvents"]) {
                if (e.value("cat", "") == "user_annotation" &&
                    e.value("name", "").rfind("ProfilerStep#", 0) == 0)
                    ++steps;
                if (is_nccl_kernel(e)) ++nccl;
                if (e.value("ph", "") == "X" && e.value("cat", "") == "kernel") ++kernels;
            }
            QVERIFY(steps > 0);
            QCOMPARE(static_cast<int>(t.steps.size()), steps);
            int collectives = 0, comm_lane = 0, compute_kernels = 0;
            for (const auto& c : t.collectives) collectives += c.device == d;
            for (const auto& e : t.events) {
                if (e.device != d) continue;
                if (e.stream == pd::StreamKind::comm)
                    ++comm_lane;
                else if (pd::is_compute(e.kind))
                    ++compute_kernels;
            }
            QCOMPARE(collectives, nccl);
            QCOMPARE(comm_lane, nccl);
            QCOMPARE(compute_kernels, kernels - nccl);
            // This job's NCCL kernels carry no message size: unknown, never guessed.
            for (const auto& c : t.collectives) QCOMPARE(c.bytes, std::size_t{0});
        }
        QVERIFY(std::any_of(t.origin.unknown.begin(), t.origin.unknown.end(),
                            [](const std::string& u) { return u.find("collective sizes") == 0; }));
    }

    void kinetoExposedCommunicationMatchesTheRawEvents() {
        const std::string path = kShared + "/kineto-2rank-nccl_rank0.json.gz";
        if (!fs::exists(path)) QSKIP("../shared/traces is not beside this checkout");
        const pd::Trace t = pd::import_traces({path});
        const pd::RunMetrics m = pd::compute_metrics(t, 0);
        const json raw = read_json(path);
        const double reference_s = reference_exposed_us(raw) * 1e-6;
        QVERIFY(reference_s > 0);
        QVERIFY2(std::abs(m.devices[0].exposed_comm_s - reference_s) < 1e-6 + 1e-6 * reference_s,
                 qPrintable(QStringLiteral("exposed %1 s, reference %2 s")
                                .arg(m.devices[0].exposed_comm_s)
                                .arg(reference_s)));
    }

    void kinetoCollectiveSizesFromTheKernelArguments() {
        const std::string path = kShared + "/kineto-2rank-nccl_rank0.json.gz";
        if (!fs::exists(path)) QSKIP("../shared/traces is not beside this checkout");
        const pd::Trace t = pd::import_traces({path});
        QCOMPARE(t.origin.world_size, 2);
        // Per collective name: count and bytes from the raw kernels' own arguments.
        std::map<std::string, std::pair<int, double>> raw_by_name;
        const json raw = read_json(path);
        for (const auto& e : raw["traceEvents"]) {
            if (!is_nccl_kernel(e)) continue;
            const auto& a = e["args"];
            const std::string name = a.value("Collective name", "");
            QVERIFY(!name.empty());
            const std::string dtype = a.value("dtype", "");
            QVERIFY2(dtype == "Float" || dtype == "Long", dtype.c_str());
            auto& r = raw_by_name[name == "allreduce" ? "all_reduce" : name];
            r.first += 1;
            r.second +=
                (dtype == "Float" ? 4.0 : 8.0) *
                std::max(a["In msg nelems"].get<double>(), a["Out msg nelems"].get<double>());
        }
        std::map<std::string, std::pair<int, double>> imported;
        for (const auto& c : t.collectives) {
            QCOMPARE(c.ranks, 2);
            auto& r = imported[c.op];
            r.first += 1;
            r.second += static_cast<double>(c.bytes);
        }
        QVERIFY(!raw_by_name.empty());
        QCOMPARE(imported, raw_by_name);
        const pd::RunMetrics m = pd::compute_metrics(t, 0);
        bool busbw = false;
        for (const auto& c : m.collectives)
            if (c.op == "all_reduce" && c.bytes > 0) {
                QCOMPARE(c.busbw_gbps, c.algbw_gbps * 2.0 * (2 - 1) / 2);
                busbw = true;
            }
        QVERIFY(busbw);
    }

    void firstCollectiveAlignmentLinesUpTheRanks() {
        const std::string r0 = kShared + "/kineto-128rank-job_rank0.json.gz";
        const std::string r1 = kShared + "/kineto-128rank-job_rank1.json.gz";
        if (!fs::exists(r0)) QSKIP("../shared/traces is not beside this checkout");
        pd::TraceImportOptions o;
        o.alignment = pd::ClockAlignment::first_collective;
        const pd::Trace t = pd::import_traces({r0, r1}, o);
        std::int64_t end[2] = {-1, -1}, start[2] = {INT64_MAX, INT64_MAX};
        for (const auto& c : t.collectives)
            if (c.start_ns < start[c.device]) {
                start[c.device] = c.start_ns;
                end[c.device] = c.end_ns;
            }
        QCOMPARE(end[0], end[1]);
        QVERIFY(t.origin.clock_alignment.find("first collective") != std::string::npos);
    }

    void ddpGlooFixtures_data() {
        QTest::addColumn<QString>("run");
        QTest::addColumn<QString>("extension");
        QTest::newRow("2 ranks, .json") << "ddp-gloo-2rank"
                                        << ".json";
        QTest::newRow("4 ranks, .json.gz") << "ddp-gloo-4rank"
                                           << ".json.gz";
    }

    // Real DDP runs with gloo on the older CPU profiler (see tests/fixtures/traces/README.md):
    // ranks from the file names, the profiler's steps, one gloo all-reduce per bucket per step
    // as the script that made them knows, and the sizes (not in these traces) unknown.
    void ddpGlooFixtures() {
        QFETCH(QString, run);
        QFETCH(QString, extension);
        const std::string dir = kFixtures + "/" + run.toStdString();
        const json expected = read_json(dir + "/expected.json");
        const int world = expected["world_size"];
        std::vector<std::string> files;
        for (int r = world - 1; r >= 0; --r)
            files.push_back(dir + "/rank" + std::to_string(r) + extension.toStdString());
        const pd::Trace t = pd::import_traces(files);
        QCOMPARE(t.devices, world);
        std::vector<int> ranks(static_cast<std::size_t>(world));
        for (int r = 0; r < world; ++r) ranks[static_cast<std::size_t>(r)] = r;
        QCOMPARE(t.origin.ranks, ranks);
        QCOMPARE(t.origin.producer, std::string("PyTorch profiler (CPU)"));
        QCOMPARE(t.origin.profiler_steps,
                 expected["profiled_step_numbers"].get<std::vector<int>>());
        QCOMPARE(static_cast<int>(t.steps.size()), expected["profiled_steps"].get<int>());
        // Without a shared clock the ranks are aligned on their first all-reduce.
        QVERIFY(t.origin.clock_alignment.find("first collective") != std::string::npos);
        const int per_step = expected["per_step"]["allreduce_calls"];
        const pd::RunMetrics m = pd::compute_metrics(t, 0);
        for (int d = 0; d < world; ++d) {
            std::map<int, int> calls;
            for (const auto& c : t.collectives)
                if (c.device == d) {
                    QCOMPARE(c.op, std::string("all_reduce"));
                    QCOMPARE(c.bytes, std::size_t{0});  // the trace's args are empty
                    ++calls[c.step];
                }
            QCOMPARE(static_cast<int>(calls.size()), expected["profiled_steps"].get<int>());
            for (const auto& [step, n] : calls) QCOMPARE(n, per_step);
            int forward = 0, optimizer = 0;
            for (const auto& e : t.events) {
                forward += e.device == d && e.kind == pd::EventKind::forward;
                optimizer += e.device == d && e.kind == pd::EventKind::optimizer;
            }
            QCOMPARE(forward, expected["profiled_steps"].get<int>() *
                                  expected["per_step"]["ddp_forward_calls"].get<int>());
            QCOMPARE(optimizer, expected["profiled_steps"].get<int>() *
                                    (expected["per_step"]["optimizer_step_calls"].get<int>() +
                                     expected["per_step"]["zero_grad_calls"].get<int>()));
            const double reference_s = reference_exposed_cpu_us(read_json(
                                           files[static_cast<std::size_t>(world - 1 - d)])) *
                                       1e-6;
            QVERIFY(reference_s > 0);
            // Within the 1 us a child may overhang its parent, a few times a step.
            QVERIFY2(std::abs(m.devices[static_cast<std::size_t>(d)].exposed_comm_s - reference_s) <
                         50e-6,
                     qPrintable(QStringLiteral("rank %1: exposed %2 s, reference %3 s")
                                    .arg(d)
                                    .arg(m.devices[static_cast<std::size_t>(d)].exposed_comm_s)
                                    .arg(reference_s)));
        }
        QCOMPARE(static_cast<int>(m.collectives.size()), 1);
        QCOMPARE(m.collectives[0].count, per_step * expected["profiled_steps"].get<int>());
    }

    // A small Kineto trace as a GPU job writes it: steps, launches and kernels, an NCCL
    // all-reduce with its message size, the caching allocator's [memory] marks.
    void kinetoPhasesStepsAndReservedMemory() {
        // Written by hand (tests/fixtures/traces/crafted): one of each rule, checkable by eye.
        const std::string path = kFixtures + "/crafted/kineto-rank3.json";
        const pd::Trace t = pd::import_traces({path});
        QCOMPARE(t.origin.ranks, std::vector<int>{3});
        QCOMPARE(t.origin.world_size, 4);
        QCOMPARE(t.origin.profiler_steps, std::vector<int>{7});
        QCOMPARE(t.capacity_bytes, std::vector<std::size_t>{1000000});
        QCOMPARE(t.peak_reserved_bytes,
                 std::vector<std::size_t>{8192});  // the GPU's, not the CPU's
        std::map<std::string, pd::EventKind> kinds;
        std::map<std::string, int> steps;
        for (const auto& e : t.events) {
            kinds[e.label] = e.kind;
            steps[e.label] = e.step;
        }
        QCOMPARE(kinds["gemm"], pd::EventKind::forward);       // launched inside Net.forward
        QCOMPARE(kinds["gemm_bwd"], pd::EventKind::backward);  // from autograd's thread
        QCOMPARE(kinds["adam"], pd::EventKind::optimizer);     // inside Optimizer.step
        QCOMPARE(kinds["all_reduce"], pd::EventKind::collective);
        // The optimizer kernel runs after the step's window but was launched in it.
        QCOMPARE(steps["adam"], 0);
        QCOMPARE(t.collectives.size(), std::size_t{1});
        QCOMPARE(t.collectives[0].bytes, std::size_t{512});  // 256 bf16 values
        QCOMPARE(t.collectives[0].ranks, 4);
    }

    void roundTripOfTheEnginesExportKeepsTheMetrics() {
        pd::RunConfig c = pd::test::small_config(pd::StrategyKind::dp, 2);
        const pd::RunResult live = pd::test::run_config(c);
        QCOMPARE(live.status, pd::RunStatus::ok);
        const std::string path = temp_path("roundtrip.json");
        write(path, pd::chrome_trace_json(live.trace));
        const pd::Trace back = pd::import_traces({path});
        QCOMPARE(back.devices, live.trace.devices);
        QCOMPARE(back.events.size(), live.trace.events.size());
        QCOMPARE(back.collectives.size(), live.trace.collectives.size());
        QCOMPARE(back.origin.producer, std::string("ParallelDeck"));
        const pd::RunMetrics a = pd::compute_metrics(live.trace, c.batch);
        const pd::RunMetrics b = pd::compute_metrics(back, c.batch);
        QCOMPARE(b.steps.size(), a.steps.size());
        for (std::size_t i = 0; i < a.steps.size(); ++i) {
            QCOMPARE(b.steps[i].loss, a.steps[i].loss);
            QCOMPARE(b.steps[i].time_s, a.steps[i].time_s);
        }
        QCOMPARE(b.median_step_time_s, a.median_step_time_s);
        QCOMPARE(b.exposed_comm_s, a.exposed_comm_s);
        QCOMPARE(b.overlapped_comm_s, a.overlapped_comm_s);
        for (std::size_t d = 0; d < a.devices.size(); ++d) {
            QCOMPARE(b.devices[d].busy_s, a.devices[d].busy_s);
            QCOMPARE(b.devices[d].comm_s, a.devices[d].comm_s);
            QCOMPARE(b.devices[d].peak_total_bytes, a.devices[d].peak_total_bytes);
            QCOMPARE(b.devices[d].peak_bytes, a.devices[d].peak_bytes);
        }
        QCOMPARE(b.collectives.size(), a.collectives.size());
        for (std::size_t i = 0; i < a.collectives.size(); ++i) {
            QCOMPARE(b.collectives[i].op, a.collectives[i].op);
            QCOMPARE(b.collectives[i].bytes, a.collectives[i].bytes);
            QCOMPARE(b.collectives[i].count, a.collectives[i].count);
            QCOMPARE(b.collectives[i].busbw_gbps, a.collectives[i].busbw_gbps);
        }
        // Flows (send -> recv pairs) survive too.
        auto flows = [](const pd::Trace& t) {
            return std::count_if(t.events.begin(), t.events.end(),
                                 [](const pd::TraceEvent& e) { return e.flow_id != 0; });
        };
        QCOMPARE(flows(back), flows(live.trace));
        fs::remove(path);
    }

    void badFilesGetAClearMessage_data() {
        QTest::addColumn<QByteArray>("content");
        QTest::addColumn<QString>("expected");
        QTest::newRow("not json") << QByteArray("\x01\x02garbage") << "not valid JSON at byte";
        QTest::newRow("truncated")
            << QByteArray(R"({"traceEvents": [{"ph": "X", "ts": 1,)") << "not valid JSON at byte";
        QTest::newRow("foreign json")
            << QByteArray(R"({"name": "a config", "layers": 3})") << "not a Chrome trace";
        QTest::newRow("events not an array")
            << QByteArray(R"({"traceEvents": {"a": 1}})") << "traceEvents is not an array";
        QTest::newRow("event not an object")
            << QByteArray(R"({"traceEvents": [1, 2]})") << "traceEvents[0] is not an object";
        QTest::newRow("event without ph")
            << QByteArray(R"({"traceEvents": [{"name": "x", "ts": 1}]})")
            << "traceEvents[0] has no \"ph\"";
        QTest::newRow("ts not a number")
            << QByteArray(R"({"traceEvents": [{"ph": "X", "ts": "soon"}]})")
            << "has a \"ts\" that is not a number";
        QTest::newRow("nothing to draw")
            << QByteArray(R"({"traceEvents": [{"ph": "M", "name": "process_name"}]})")
            << "holds no event this reader can draw";
        QTest::newRow("scalar") << QByteArray("42") << "not a Chrome trace";
        QTest::newRow("empty") << QByteArray("") << "not valid JSON at byte 0";
    }

    void badFilesGetAClearMessage() {
        QFETCH(QByteArray, content);
        QFETCH(QString, expected);
        const std::string path = temp_path("bad.json");
        write(path, content.toStdString());
        const QString message = import_error({path});
        QVERIFY2(message.startsWith(QString::fromStdString(path)), qPrintable(message));
        QVERIFY2(message.contains(expected), qPrintable(message));
        fs::remove(path);
    }

    void aTruncatedGzipSaysWhere() {
        // A real trace cut in half, as an interrupted copy leaves it.
        pd::RunConfig c = pd::test::small_config(pd::StrategyKind::dp, 2);
        const std::string json_text = pd::chrome_trace_json(pd::test::run_config(c).trace);
        const std::string gz = temp_path("cut.json.gz");
        gzFile f = gzopen(gz.c_str(), "wb");
        gzwrite(f, json_text.data(), static_cast<unsigned>(json_text.size()));
        gzclose(f);
        const auto size = fs::file_size(gz);
        fs::resize_file(gz, size / 2);
        const QString message = import_error({gz});
        QVERIFY2(message.contains(QStringLiteral("truncated")) ||
                     message.contains(QStringLiteral("not valid JSON at byte")),
                 qPrintable(message));
        QVERIFY(message.contains(QStringLiteral("byte")));
        fs::remove(gz);
    }

    void missingFilesAndRepeatedRanksAreRefused() {
        QVERIFY(
            import_error({"/nonexistent/trace.json"}).contains(QStringLiteral("cannot be read")));
        QVERIFY(import_error({}).contains(QStringLiteral("no file")));
        const std::string path = kShared + "/kineto-2rank-nccl_rank0.json.gz";
        if (!fs::exists(path)) QSKIP("../shared/traces is not beside this checkout");
        QVERIFY(import_error({path, path}).contains(QStringLiteral("claims rank 0")));
    }

    void aCancelledImportStops() {
        pd::RunConfig c = pd::test::small_config(pd::StrategyKind::dp, 2);
        const std::string path = temp_path("cancel.json");
        write(path, pd::chrome_trace_json(pd::test::run_config(c).trace));
        pd::TraceImportOptions o;
        int calls = 0;
        o.progress = [&](std::uint64_t, std::uint64_t) { return ++calls < 1; };
        QVERIFY_THROWS_EXCEPTION(pd::Cancelled, pd::import_traces({path}, o));
        QVERIFY(calls >= 1);
        fs::remove(path);
    }

    // Issue 41: a small .gz that inflates to a huge string is refused at the string limit
    // (16 MiB by default), not read whole into memory.
    void aStringPastTheLimitIsRefused() {
        const std::string path = temp_path("long_string.json.gz");
        write_gzip(path,
                   R"({"traceEvents": [{"ph": "X", "cat": "kernel", "pid": 0, "tid": 7, )"
                   R"("ts": 1, "dur": 2, "name": ")",
                   std::string(1 << 20, 'a'), 24, R"("}]})");
        const QString message = import_error({path});
        QVERIFY2(message.startsWith(QString::fromStdString(path)), qPrintable(message));
        QVERIFY2(message.contains(QStringLiteral("the JSON string at byte 93 is longer than "
                                                 "16.0 MiB, the limit of one string")),
                 qPrintable(message));
        fs::remove(path);
    }

    // The limits are the import's options, stated and overridable; past the file limit,
    // inflating stops as soon as the text passes it.
    void theReadLimitsAreOptionsAndStopEarly() {
        const pd::TraceImportOptions defaults;
        QCOMPARE(defaults.max_file_bytes, std::uint64_t{2} << 30);
        QCOMPARE(defaults.max_string_bytes, std::uint64_t{16} << 20);

        // Some 6 MB of events (some 500 kB compressed), read with a 1 MiB limit.
        std::string events = "{\"traceEvents\": [";
        for (int i = 0; events.size() < 6000000; ++i)
            events += std::string(i ? ",\n" : "") +
                      "{\"ph\": \"X\", \"cat\": \"kernel\", \"name\": \"k" +
                      std::to_string(i * 7919 % 100003) +
                      "\", \"pid\": 0, \"tid\": 7, \"ts\": " + std::to_string(i * 13) +
                      ", \"dur\": " + std::to_string(i % 11 + 1) + "}";
        events += "]}";
        const std::string path = temp_path("big.json.gz");
        write(path, gzip_bytes(events));
        const auto compressed = fs::file_size(path);
        QVERIFY(compressed > 300000);
        pd::TraceImportOptions o;
        o.max_file_bytes = 1 << 20;
        std::uint64_t read = 0;
        o.progress = [&](std::uint64_t done, std::uint64_t) {
            read = std::max(read, done);
            return true;
        };
        try {
            pd::import_traces({path}, o);
            QFAIL("read a file past the limit");
        } catch (const pd::ImportLimitExceeded& e) {
            QCOMPARE(e.limit(), pd::ImportLimitExceeded::Limit::file_bytes);
            const QString message = QString::fromStdString(e.what());
            QVERIFY2(message.startsWith(QString::fromStdString(path) +
                                        QStringLiteral(": inflates to more than 1.0 MiB of JSON "
                                                       "text, the limit of one file")),
                     qPrintable(message));
        }
        QVERIFY2(read < compressed, qPrintable(QString::number(read)));
        // The same file as plain text is refused before it is read.
        const std::string plain = temp_path("big.json");
        write(plain, events);
        read = 0;
        QVERIFY_THROWS_EXCEPTION(pd::ImportLimitExceeded, pd::import_traces({plain}, o));
        QCOMPARE(read, std::uint64_t{0});
        // Raised, both read; a number (or string) past the string limit is refused.
        o.max_file_bytes = 8 << 20;
        QCOMPARE(pd::import_traces({path}, o).events.size(),
                 pd::import_traces({plain}, o).events.size());
        o.max_string_bytes = 4;
        try {
            pd::import_traces({plain}, o);
            QFAIL("read a number past the limit");
        } catch (const pd::ImportLimitExceeded& e) {
            QCOMPARE(e.limit(), pd::ImportLimitExceeded::Limit::string_bytes);
            QVERIFY2(QString::fromStdString(e.what()).contains(QStringLiteral("the JSON string")),
                     e.what());
        }
        fs::remove(path);
        fs::remove(plain);
    }

    // Zeros or garbage after a valid prefix are named for what they are.
    void whatFollowsTheTextIsNamed_data() {
        QTest::addColumn<QByteArray>("content");
        QTest::addColumn<QString>("expected");
        const std::string text = kSmallKineto;
        const std::string gz = gzip_bytes(text);
        const auto bytes = [](const std::string& s) {
            return QByteArray(s.data(), static_cast<qsizetype>(s.size()));
        };
        const QString end = QString::number(text.size());
        // After the first event and its comma: the parser's "unexpected end of input" once.
        const std::size_t cut = text.find("},") + 2;
        const QString at = QStringLiteral("a NUL byte at byte ") + QString::number(cut);
        QTest::newRow("zeros after the JSON")
            << bytes(text + std::string(100, '\0')) << "a NUL byte at byte " + end;
        QTest::newRow("zeros inside the JSON")
            << bytes(text.substr(0, cut) + std::string(100, '\0')) << at;
        QTest::newRow("zeros after the gzip stream")
            << bytes(gz + std::string(100, '\0'))
            << "trailing data after the gzip stream at byte " + QString::number(gz.size()) +
                   " of the compressed file (its JSON text ended at byte " + end + ")";
        QTest::newRow("garbage after the gzip stream")
            << bytes(gz + "garbage") << "trailing data after the gzip stream at byte";
        QTest::newRow("zeros inside the gzip stream")
            << bytes(gzip_bytes(text.substr(0, cut) + std::string(100, '\0'))) << at;
    }

    void whatFollowsTheTextIsNamed() {
        QFETCH(QByteArray, content);
        QFETCH(QString, expected);
        const std::string path = temp_path("tail.json");
        write(path, content.toStdString());
        const QString message = import_error({path});
        QVERIFY2(message.startsWith(QString::fromStdString(path)), qPrintable(message));
        QVERIFY2(message.contains(expected), qPrintable(message));
        fs::remove(path);
    }

    // Two gzip members one after the other (gzip -c a b) are one file's text.
    void concatenatedGzipMembersAreRead() {
        const std::string text = kSmallKineto;
        const std::string path = temp_path("two_members.json.gz");
        write(path, gzip_bytes(text.substr(0, 100)) + gzip_bytes(text.substr(100)));
        QCOMPARE(pd::import_traces({path}).events.size(), std::size_t{2});
        fs::remove(path);
    }

    // Issue 41: an event that ends before it starts is refused by its index and name.
    void negativeDurationsAreRefused() {
        std::string text = kSmallKineto;
        text.replace(text.find(R"("ts": 100, "dur": 100)"), 21, R"("ts": 100, "dur": -50)");
        const std::string path = temp_path("negative.json");
        write(path, text);
        const QString message = import_error({path});
        QVERIFY2(message.startsWith(QString::fromStdString(path)), qPrintable(message));
        QVERIFY2(message.contains(QStringLiteral(
                     "traceEvents[2] \"ProfilerStep#1\" has a negative duration (\"dur\": -50)")),
                 qPrintable(message));
        fs::remove(path);

        // ParallelDeck's own export: a collective call that ends before it starts.
        pd::RunConfig c = pd::test::small_config(pd::StrategyKind::dp, 2);
        json exported = json::parse(pd::chrome_trace_json(pd::test::run_config(c).trace));
        json& call = exported["otherData"]["collectives"][1];
        call["end_ns"] = call["start_ns"].get<double>() - 1000;
        write(path, exported.dump());
        const QString own = import_error({path});
        QVERIFY2(own.contains(QStringLiteral("otherData.collectives[1]")) &&
                     own.contains(QStringLiteral("ends before it starts")),
                 qPrintable(own));
        fs::remove(path);
    }

    // Issue 41: a rank is below its job's world size, and both within kMaxImportWorldSize.
    void ranksOutsideTheWorldAreRefused_data() {
        QTest::addColumn<QString>("info");
        QTest::addColumn<QString>("expected");
        QTest::newRow("rank past the world")
            << R"("rank": 2147483647, "world_size": 100000)"
            << "claims rank 2147483647 (distributedInfo.rank) in a job of 100000 ranks: its "
               "ranks are 0 to 99999";
        QTest::newRow("rank equal to the world") << R"("rank": 4, "world_size": 4)"
                                                 << "claims rank 4 (distributedInfo.rank)";
        QTest::newRow("world past the limit")
            << R"("rank": 0, "world_size": 5000000)"
            << "says the job has 5000000 ranks (distributedInfo.world_size), past the 1048576";
        QTest::newRow("rank past the limit, no world")
            << R"("rank": 2000000)"
            << "claims rank 2000000 (distributedInfo.rank), past the 1048576";
        QTest::newRow("negative rank") << R"("rank": -3, "world_size": 4)"
                                       << "distributedInfo.rank is -3: a rank counts from 0";
        QTest::newRow("no ranks") << R"("rank": 0, "world_size": 0)"
                                  << "distributedInfo.world_size is 0: a job has at least one rank";
    }

    void ranksOutsideTheWorldAreRefused() {
        QFETCH(QString, info);
        QFETCH(QString, expected);
        const std::string path = temp_path("rank_of_world.json");
        write(path, kineto_with(info.toStdString()));
        const QString message = import_error({path});
        QVERIFY2(message.startsWith(QString::fromStdString(path)), qPrintable(message));
        QVERIFY2(message.contains(expected), qPrintable(message));
        fs::remove(path);
    }

    // A file's name gives its rank whole, however many digits, and is held to the job's
    // world size as another file states it.
    void aRankInAFileNameIsReadWhole() {
        const std::string dir = temp_path("names");
        fs::create_directories(dir);
        const std::string big = dir + "/trace_rank1000000.json", small = dir + "/rank100000.json";
        write(big, kSmallKineto);
        write(small, kSmallKineto);
        const pd::Trace t = pd::import_traces({big, small});
        QCOMPARE(t.origin.ranks, (std::vector<int>{100000, 1000000}));
        const std::string huge = dir + "/rank12345678901.json";
        write(huge, kSmallKineto);
        QVERIFY2(import_error({huge}).contains(
                     QStringLiteral("the rank 12345678901 in its name is past the 1048576")),
                 qPrintable(import_error({huge})));
        const std::string ranked = dir + "/rank0.json", named = dir + "/rank2.json";
        write(ranked, kineto_with(R"("rank": 0, "world_size": 2)"));
        write(named, kSmallKineto);
        QVERIFY2(import_error({ranked, named})
                     .contains(QStringLiteral("claims rank 2 (from its name) in a job of 2 ranks "
                                              "(another file's world_size)")),
                 qPrintable(import_error({ranked, named})));
        fs::remove_all(dir);
    }

    // A one-rank NCCL job launches no collective kernel: its 25 c10d::allreduce_ calls (with
    // their record_param_comms and nccl:all_reduce annotations) were listed as no collectives
    // at all. They are the calls the CPU issued, sized from record_param_comms; c10d's wait
    // (which records params too) is none.
    void aOneRankNcclJobListsTheCollectivesTheCpuIssued() {
        json events = json::array();
        auto x = [&](const std::string& cat, const std::string& name, int tid, int at, int dur,
                     json args) {
            events.push_back({{"ph", "X"},
                              {"cat", cat},
                              {"name", name},
                              {"pid", 1},
                              {"tid", tid},
                              {"ts", at},
                              {"dur", dur},
                              {"args", std::move(args)}});
        };
        x("user_annotation", "ProfilerStep#0", 1, 0, 100000, json::object());
        x("kernel", "sgemm", 7, 10, 20, json::object());
        std::map<std::size_t, int> expected;  // bytes -> calls
        for (int i = 0; i < 25; ++i) {
            const int ts = 100 + 1000 * i;
            const std::size_t nelems = 1000 + 256 * static_cast<std::size_t>(i % 5);
            expected[4 * nelems] += 1;
            x("cpu_op", "c10d::allreduce_", 2, ts, 300, json::object());
            x("cpu_op", "record_param_comms", 2, ts + 40, 200,
              {{"Collective name", "allreduce"},
               {"dtype", "Float"},
               {"In msg nelems", nelems},
               {"Out msg nelems", nelems},
               {"Group size", 1}});
            x("user_annotation", "nccl:all_reduce", 2, ts + 60, 90, json::object());
            x("cpu_op", "record_param_comms", 2, ts + 500, 5,
              {{"Collective name", "wait"}, {"dtype", "Byte"}, {"Group size", 1}});
        }
        const std::string path = temp_path("one_rank_nccl.json");
        write(path, json{{"distributedInfo", {{"backend", "nccl"}, {"rank", 0}, {"world_size", 1}}},
                         {"traceEvents", events}}
                        .dump());
        const pd::Trace t = pd::import_traces({path});
        fs::remove(path);
        QCOMPARE(t.origin.world_size, 1);
        QCOMPARE(static_cast<int>(t.collectives.size()), 25);
        std::map<std::size_t, int> imported;
        for (const auto& c : t.collectives) {
            QCOMPARE(c.op, std::string("all_reduce"));
            QCOMPARE(c.ranks, 1);
            QCOMPARE(c.step, 0);
            imported[c.bytes] += 1;
        }
        QCOMPARE(imported, expected);
        const json s = json::parse(pd::imported_summary_json(t));
        QCOMPARE(s["collectives"].size(), expected.size());
        int calls = 0;
        for (const auto& c : s["collectives"]) calls += c["count"].get<int>();
        QCOMPARE(calls, 25);
        QVERIFY(std::any_of(t.origin.notes.begin(), t.origin.notes.end(), [](const std::string& n) {
            return n.find("calls the CPU issued") != std::string::npos;
        }));
    }

    // The same from a real trace: the 2-rank NCCL trace with its NCCL kernels taken out lists
    // what the kernels listed, from the CPU side's record_param_comms.
    void withoutItsKernelsARealTraceListsTheCpuSide() {
        const std::string path = kShared + "/kineto-2rank-nccl_rank0.json.gz";
        if (!fs::exists(path)) QSKIP("../shared/traces is not beside this checkout");
        const pd::Trace with = pd::import_traces({path});
        json raw = read_json(path);
        json kept = json::array();
        for (const auto& e : raw["traceEvents"])
            if (!is_nccl_kernel(e)) kept.push_back(e);
        raw["traceEvents"] = kept;
        const std::string stripped = temp_path("2rank_no_nccl_kernels.json");
        write(stripped, raw.dump());
        const pd::Trace without = pd::import_traces({stripped});
        fs::remove(stripped);
        auto by_op = [](const pd::Trace& t) {
            std::map<std::tuple<std::string, std::size_t, int>, int> out;
            for (const auto& c : t.collectives) out[{c.op, c.bytes, c.ranks}] += 1;
            return out;
        };
        QVERIFY(!with.collectives.empty());
        QCOMPARE(by_op(without), by_op(with));
    }

    void theSummarySaysWhatIsUnknown() {
        const std::string path = kShared + "/kineto-128rank-job_rank0.json.gz";
        if (!fs::exists(path)) QSKIP("../shared/traces is not beside this checkout");
        const json s = json::parse(pd::imported_summary_json(pd::import_traces({path})));
        QCOMPARE(s["imported"].get<bool>(), true);
        QCOMPARE(s["world_size"].get<int>(), 128);
        QVERIFY(s["bubble"].is_null());
        QVERIFY(!s["collectives"].empty());
        for (const auto& c : s["collectives"]) {
            QVERIFY(c["bytes"].is_null());
            QVERIFY(c["busbw_gbps"].is_null());
        }
        QVERIFY(s["steps"][0]["loss"].is_null());
        QVERIFY(s["steps"][0]["profiler_step"].is_number_integer());
    }
};

QTEST_GUILESS_MAIN(TestTraceImport)
#include "test_trace_import.moc"
