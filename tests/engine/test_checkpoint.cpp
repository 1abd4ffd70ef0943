// Sharded checkpoints: each device writes what it owns (a file each, plus metadata.json); a
// run resumed from one continues as the uninterrupted run does: bit for bit under the same
// strategy and device count, within rounding under another (the loader reshards). A damaged,
// foreign or newer checkpoint is refused by name, and no checkpoint is overwritten.
#include <QtTest>

#include <unistd.h>
#include <filesystem>
#include <fstream>

#include "engine_test_support.h"
#include "pd/error.h"
#include "pd/run.h"

using namespace pd;
using namespace pd::test;
namespace fs = std::filesystem;

namespace {

RunConfig base(StrategyKind strategy, int devices) {
    RunConfig c = small_config(strategy, devices);
    c.batch = 32;
    c.steps = 6;
    c.optimizer = OptimizerKind::adamw;
    return c;
}

// A fresh directory, removed again however the test ends.
struct TempDir {
    std::string path;
    explicit TempDir(const std::string& name)
        : path((fs::temp_directory_path() /
                ("pd-test-checkpoint-" + std::to_string(::getpid()) + "-" + name))
                   .string()) {
        fs::remove_all(path);
    }
    ~TempDir() {
        std::error_code ec;
        fs::remove_all(path, ec);
    }
    operator const std::string&() const { return path; }
    std::string operator+(const char* sub) const { return path + sub; }
};

RunConfig saving(RunConfig c, const std::string& dir) {
    c.checkpoint_every = 3;
    c.checkpoint_dir = dir;
    return c;
}

RunConfig resuming(RunConfig c, const std::string& dir) {
    c.resume_dir = dir;
    return c;
}

}  // namespace

class TestCheckpoint : public QObject {
    Q_OBJECT

  private slots:
    void resuming_under_the_same_layout_is_bit_identical_data() {
        QTest::addColumn<int>("strategy");
        QTest::addColumn<int>("devices");
        QTest::addColumn<int>("precision");
        QTest::addColumn<int>("offload");
        const struct {
            StrategyKind s;
            int devices;
            Precision p;
            OffloadDevice offload;
        } rows[] = {{StrategyKind::single, 1, Precision::fp32, OffloadDevice::none},
                    {StrategyKind::dp, 2, Precision::fp32, OffloadDevice::none},
                    {StrategyKind::dp, 2, Precision::bf16_mixed, OffloadDevice::none},
                    {StrategyKind::zero1, 4, Precision::fp32, OffloadDevice::none},
                    {StrategyKind::zero2, 4, Precision::bf16_mixed, OffloadDevice::none},
                    {StrategyKind::zero3, 4, Precision::fp32, OffloadDevice::none},
                    {StrategyKind::zero3, 4, Precision::bf16_mixed, OffloadDevice::none},
                    {StrategyKind::zero3, 4, Precision::bf16_mixed, OffloadDevice::nvme}};
        for (const auto& r : rows)
            QTest::addRow("%s x%d %s offload %s", std::string(name_of(r.s)).c_str(), r.devices,
                          std::string(name_of(r.p)).c_str(),
                          std::string(name_of(r.offload)).c_str())
                << static_cast<int>(r.s) << r.devices << static_cast<int>(r.p)
                << static_cast<int>(r.offload);
    }
    void resuming_under_the_same_layout_is_bit_identical() {
        QFETCH(int, strategy);
        QFETCH(int, devices);
        QFETCH(int, precision);
        QFETCH(int, offload);
        RunConfig c = base(static_cast<StrategyKind>(strategy), devices);
        c.precision = static_cast<Precision>(precision);
        c.offload_optimizer = c.offload_param = static_cast<OffloadDevice>(offload);
        const TempDir dir(QTest::currentDataTag());
        const RunResult whole = run_config(c);
        const RunResult saved = run_config(saving(c, dir));
        QCOMPARE(whole.status, RunStatus::ok);
        QVERIFY2(saved.status == RunStatus::ok, saved.error.c_str());
        // Writing checkpoints changes nothing.
        QCOMPARE(saved.final_parameters, whole.final_parameters);
        QVERIFY(fs::exists(fs::path(dir.path) / "step-000003" / "metadata.json"));
        QVERIFY(fs::exists(fs::path(dir.path) / "step-000006" / "metadata.json"));
        // Each device wrote its part, drawn on its host lane with the bytes written.
        std::size_t written = 0;
        for (const TraceEvent& e : saved.trace.events)
            if (e.stream == StreamKind::host && e.step == 2 &&
                QString::fromStdString(e.label).startsWith("checkpoint after step 3"))
                written += e.bytes;
        const std::size_t total = whole.final_parameters.size();
        QCOMPARE(written, total * sizeof(float) * 3);  // parameters, m and v

        const RunResult resumed = run_config(resuming(c, dir + "/step-000003"));
        QVERIFY2(resumed.status == RunStatus::ok, resumed.error.c_str());
        QCOMPARE(resumed.trace.steps.size(), std::size_t{3});
        for (std::size_t k = 0; k < 3; ++k) {
            QCOMPARE(resumed.trace.steps[k].step, whole.trace.steps[k + 3].step);
            QCOMPARE(resumed.trace.steps[k].loss, whole.trace.steps[k + 3].loss);
        }
        QCOMPARE(resumed.final_parameters, whole.final_parameters);
        QCOMPARE(resumed.final_master_parameters, whole.final_master_parameters);
    }

    void the_loader_reshards_to_another_strategy_and_device_count() {
        const RunConfig zero3 = base(StrategyKind::zero3, 4);
        const TempDir dir("reshard");
        const RunResult whole = run_config(saving(zero3, dir));
        QCOMPARE(whole.status, RunStatus::ok);
        for (const auto& [s, devices] :
             {std::pair{StrategyKind::dp, 2}, std::pair{StrategyKind::single, 1},
              std::pair{StrategyKind::zero1, 2}, std::pair{StrategyKind::zero3, 2}}) {
            const RunResult resumed = run_config(resuming(base(s, devices), dir + "/step-000003"));
            QVERIFY2(resumed.status == RunStatus::ok, resumed.error.c_str());
            QCOMPARE(resumed.trace.steps.front().step, 3);
            // The same model and optimizer state carried on: only the order of the sums over
            // the batch differs from the uninterrupted run's.
            for (std::size_t k = 0; k < 3; ++k)
                QVERIFY(std::abs(resumed.trace.steps[k].loss - whole.trace.steps[k + 3].loss) <=
                        1e-5 * std::abs(whole.trace.steps[k + 3].loss));
            QVERIFY2(relative_error(resumed.final_parameters, whole.final_parameters) < 1e-5,
                     std::string(name_of(s)).c_str());
        }
    }

    void a_damaged_foreign_or_newer_checkpoint_is_refused_by_name() {
        const RunConfig c = base(StrategyKind::zero2, 2);
        const TempDir dir("refused");
        QCOMPARE(run_config(saving(c, dir)).status, RunStatus::ok);
        const fs::path step = fs::path(dir.path) / "step-000003";
        const RunConfig resume = resuming(c, step.string());
        QCOMPARE(run_refusal(resume), std::string());

        RunConfig other = resume;
        other.layers = c.layers + 1;
        QVERIFY(run_refusal(other).find("another model") != std::string::npos);
        other = resume;
        other.optimizer = OptimizerKind::sgd;
        QVERIFY(run_refusal(other).find("adamw state") != std::string::npos);

        // Truncated: one byte short.
        const fs::path file = step / "device-1.bin";
        const auto size = fs::file_size(file);
        fs::resize_file(file, size - 1);
        std::string why = run_refusal(resume);
        QVERIFY2(why.find("truncated") != std::string::npos &&
                     why.find("device-1.bin") != std::string::npos,
                 why.c_str());
        fs::remove(file);
        QVERIFY(run_refusal(resume).find("missing") != std::string::npos);

        // Newer format, and no JSON at all.
        const fs::path meta = step / "metadata.json";
        std::ifstream in(meta);
        std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
        in.close();
        const auto at = text.find("\"version\": 1");
        QVERIFY(at != std::string::npos);
        std::ofstream(meta) << std::string(text).replace(at, 12, "\"version\": 9");
        QVERIFY(run_refusal(resume).find("newer format") != std::string::npos);
        std::ofstream(meta) << "not json";
        QVERIFY(run_refusal(resume).find("not valid JSON") != std::string::npos);
        QVERIFY(run_refusal(resuming(c, dir + "/nowhere")).find("not a checkpoint") !=
                std::string::npos);

        // A step directory that exists is not overwritten: the run is refused before it starts
        // and the file stays as it was.
        const RunConfig again = saving(c, dir);
        QVERIFY(run_refusal(again).find("never overwritten") != std::string::npos);
        std::ifstream kept(meta);
        std::string still((std::istreambuf_iterator<char>(kept)), std::istreambuf_iterator<char>());
        QCOMPARE(still, std::string("not json"));
    }

    // A scenario's resume_from: the writer runs first under its own layout.
    void resume_from_runs_the_writer_first() {
        RunConfig c = base(StrategyKind::zero3, 2);
        c.resume_from_step = 3;
        c.resume_from = R"({"devices": 4})";
        const RunResult r = run_config(c);
        QVERIFY2(r.status == RunStatus::ok, r.error.c_str());
        QCOMPARE(r.trace.resumed_from.step, 3);
        QCOMPARE(r.trace.resumed_from.devices, 4);
        QCOMPARE(r.trace.resumed_from.strategy, std::string("zero3"));
        QCOMPARE(r.trace.steps.front().step, 3);
        // Its checkpoint directory went with the run; a writer that fails fails the run.
        c.resume_from = R"({"devices": 4, "capacity": 1024})";
        const RunResult failed = run_config(c);
        QCOMPARE(failed.status, RunStatus::out_of_memory);
        QVERIFY2(failed.error.find("resume_from") != std::string::npos, failed.error.c_str());
    }

    void what_cannot_checkpoint_is_refused_by_name() {
        RunConfig c = base(StrategyKind::tp, 2);
        c.checkpoint_every = 2;
        const TempDir tp("tp");
        c.checkpoint_dir = tp;
        QVERIFY(run_refusal(c).find("single, dp and zero1-3") != std::string::npos);
        c = base(StrategyKind::dp, 2);
        c.checkpoint_every = 2;
        const TempDir fp16("fp16");
        c.checkpoint_dir = fp16;
        c.precision = Precision::fp16_mixed;
        QVERIFY(run_refusal(c).find("GradScaler") != std::string::npos);
    }
};

QTEST_APPLESS_MAIN(TestCheckpoint)
#include "test_checkpoint.moc"
