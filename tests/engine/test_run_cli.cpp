// paralleldeck-run as a user meets it: exit codes, messages, and the files it writes.
#include <QDir>
#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>
#include <QProcess>
#include <QRegularExpression>
#include <QTemporaryDir>
#include <QtTest>

#include <signal.h>

#include <algorithm>

#include "pd/run.h"

class TestRunCli : public QObject {
    Q_OBJECT

    struct Outcome {
        int code = -1;
        QString out, err;
    };
    Outcome run(const QStringList& args) {
        QProcess p;
        p.start(QStringLiteral(PD_RUN_EXE), args);
        const bool finished = p.waitForFinished(600000);
        Outcome o;
        if (!finished) return o;
        o.code = p.exitStatus() == QProcess::NormalExit ? p.exitCode() : -1;
        o.out = QString::fromUtf8(p.readAllStandardOutput());
        o.err = QString::fromUtf8(p.readAllStandardError());
        return o;
    }
    static QJsonObject read_json(const QString& path) {
        QFile f(path);
        if (!f.open(QIODevice::ReadOnly)) return {};
        QJsonParseError error{};
        const auto doc = QJsonDocument::fromJson(f.readAll(), &error);
        return error.error == QJsonParseError::NoError ? doc.object() : QJsonObject{};
    }

  private slots:
    // `paralleldeck-run analyze`: a learner's DDP traces (one per rank), summary and exit codes.
    void analyze_prints_and_writes_the_imported_summary() {
        QTemporaryDir dir;
        const QString summary = dir.filePath(QStringLiteral("s.json"));
        QStringList args{QStringLiteral("analyze"), QStringLiteral("--quiet")};
        for (int r = 0; r < 2; ++r)
            args << QStringLiteral(PD_TRACE_FIXTURES_DIR "/ddp-gloo-2rank/rank%1.json").arg(r);
        args << QStringLiteral("--summary") << summary;
        const Outcome o = run(args);
        QVERIFY2(o.code == 0, qPrintable(o.err));
        QVERIFY2(o.out.contains(QStringLiteral("all_reduce x9")), qPrintable(o.out));
        QVERIFY(o.out.contains(QStringLiteral("unknown: collective sizes")));
        const QJsonObject s = read_json(summary);
        QCOMPARE(s.value(QStringLiteral("imported")).toBool(), true);
        QCOMPARE(s.value(QStringLiteral("ranks")).toArray().size(), 2);
        QCOMPARE(s.value(QStringLiteral("steps")).toArray().size(), 3);
        const QJsonObject c = s.value(QStringLiteral("collectives")).toArray().at(0).toObject();
        QCOMPARE(c.value(QStringLiteral("count")).toInt(), 9);
        QVERIFY(c.value(QStringLiteral("bytes")).isNull());  // not in these traces
        QVERIFY(s.value(QStringLiteral("bubble")).isNull());
    }

    void analyze_of_a_file_that_is_no_trace_exits_2() {
        QTemporaryDir dir;
        const QString bad = dir.filePath(QStringLiteral("x.json"));
        QFile f(bad);
        QVERIFY(f.open(QIODevice::WriteOnly));
        f.write("[1, 2,");
        f.close();
        const Outcome o = run({QStringLiteral("analyze"), QStringLiteral("--quiet"), bad});
        QCOMPARE(o.code, 2);
        QVERIFY2(o.err.contains(bad) && o.err.contains(QStringLiteral("byte")), qPrintable(o.err));
    }

    void success_writes_trace_and_summary() {
        QTemporaryDir dir;
        const QString trace = dir.filePath(QStringLiteral("t.json")),
                      summary = dir.filePath(QStringLiteral("s.json"));
        const Outcome o =
            run({QStringLiteral("--strategy"), QStringLiteral("dp"), QStringLiteral("--devices"),
                 QStringLiteral("2"), QStringLiteral("--layers"), QStringLiteral("2"),
                 QStringLiteral("--width"), QStringLiteral("32"), QStringLiteral("--steps"),
                 QStringLiteral("3"), QStringLiteral("--trace"), trace, QStringLiteral("--summary"),
                 summary});
        QVERIFY2(o.code == 0, qPrintable(o.err));
        QVERIFY(o.out.contains(QStringLiteral("all_reduce")));

        const QJsonObject t = read_json(trace);
        const QJsonArray events = t.value(QStringLiteral("traceEvents")).toArray();
        QVERIFY(!events.isEmpty());
        QSet<QString> phases;
        for (const auto& e : events)
            phases.insert(e.toObject().value(QStringLiteral("ph")).toString());
        for (const char* ph : {"X", "C", "M", "s", "f"})
            QVERIFY2(phases.contains(QString::fromLatin1(ph)), ph);

        const QJsonObject s = read_json(summary);
        QCOMPARE(s.value(QStringLiteral("status")).toString(), QStringLiteral("ok"));
        QCOMPARE(s.value(QStringLiteral("strategy")).toString(), QStringLiteral("dp"));
        QCOMPARE(s.value(QStringLiteral("devices")).toInt(), 2);
        QCOMPARE(s.value(QStringLiteral("steps")).toArray().size(), 3);
        QVERIFY(s.value(QStringLiteral("oom")).isNull());
        // The headline figures are derived from the per-step records, not typed in.
        const QJsonArray steps = s.value(QStringLiteral("steps")).toArray();
        QList<double> times;
        for (const auto& step : steps) {
            const double time = step.toObject().value(QStringLiteral("time_s")).toDouble();
            QVERIFY(time > 0);
            times.append(time);
        }
        std::sort(times.begin(), times.end());
        QCOMPARE(s.value(QStringLiteral("final_loss")).toDouble(),
                 steps.last().toObject().value(QStringLiteral("loss")).toDouble());
        const double median = s.value(QStringLiteral("step_time_s"))
                                  .toObject()
                                  .value(QStringLiteral("median"))
                                  .toDouble();
        QCOMPARE(median, times[1]);  // three steps: the middle one
        QCOMPARE(s.value(QStringLiteral("samples_per_s")).toDouble(),
                 s.value(QStringLiteral("batch")).toDouble() / median);
        QCOMPARE(s.value(QStringLiteral("per_device")).toArray().size(), 2);
        const QJsonArray cols = s.value(QStringLiteral("collectives")).toArray();
        QVERIFY(!cols.isEmpty());
        QVERIFY(cols.first().toObject().contains(QStringLiteral("busbw_gbps")));
        QVERIFY(s.value(QStringLiteral("communication"))
                    .toObject()
                    .contains(QStringLiteral("exposed_s")));
        // The engine's default link, in both units: 25 GB/s = 200 Gb/s.
        const QJsonObject link = s.value(QStringLiteral("link")).toObject();
        QCOMPARE(link.value(QStringLiteral("gbit_per_s")).toDouble(), 200.0);
        QCOMPARE(link.value(QStringLiteral("gbyte_per_s")).toDouble(), 25.0);
        QVERIFY2(o.out.contains(QStringLiteral("200 Gb/s (25 GB/s)")), qPrintable(o.out));
        // dp on 2 devices takes the device clock on a small machine, which runs 1 intra-op
        // thread per device; the summary says which it used, and each device's reserved bytes.
        QVERIFY(s.value(QStringLiteral("intra_op_threads")).toInt() >= 1);
        for (const auto& d : s.value(QStringLiteral("per_device")).toArray()) {
            const QJsonObject device = d.toObject();
            QVERIFY(device.contains(QStringLiteral("peak_reserved_bytes")));
            const double live = device.value(QStringLiteral("peak_total_bytes")).toDouble();
            QVERIFY(live > 0);
            QVERIFY(device.value(QStringLiteral("peak_reserved_bytes")).toDouble() >= live);
        }
        QVERIFY2(o.out.contains(QStringLiteral("intra-op thread")), qPrintable(o.out));
        const QJsonObject other = t.value(QStringLiteral("otherData")).toObject();
        QCOMPARE(other.value(QStringLiteral("link_gbit_per_s")).toDouble(), 200.0);
    }

    void out_of_memory_exits_3_with_partial_trace() {
        QTemporaryDir dir;
        const QString trace = dir.filePath(QStringLiteral("t.json")),
                      summary = dir.filePath(QStringLiteral("s.json"));
        const Outcome o =
            run({QStringLiteral("--strategy"), QStringLiteral("dp"), QStringLiteral("--devices"),
                 QStringLiteral("2"), QStringLiteral("--capacity"), QStringLiteral("64KiB"),
                 QStringLiteral("--trace"), trace, QStringLiteral("--summary"), summary});
        QCOMPARE(o.code, 3);
        QVERIFY2(o.err.contains(QStringLiteral("out of memory")), qPrintable(o.err));
        QVERIFY(o.err.contains(QStringLiteral("parameters")));
        const QJsonObject s = read_json(summary);
        QCOMPARE(s.value(QStringLiteral("status")).toString(), QStringLiteral("out_of_memory"));
        const QJsonObject oom = s.value(QStringLiteral("oom")).toObject();
        QCOMPARE(oom.value(QStringLiteral("category")).toString(), QStringLiteral("parameters"));
        QCOMPARE(oom.value(QStringLiteral("capacity_bytes")).toInt(), 65536);
        QVERIFY(oom.value(QStringLiteral("requested_bytes")).toInt() > 0);
        QVERIFY(!read_json(trace).value(QStringLiteral("traceEvents")).toArray().isEmpty());
    }

    void bad_input_exits_2_data() {
        QTest::addColumn<QStringList>("args");
        QTest::addColumn<QString>("expected");
        QTest::addRow("zero devices")
            << QStringList{QStringLiteral("--strategy"), QStringLiteral("dp"),
                           QStringLiteral("--devices"), QStringLiteral("0")}
            << "--devices";
        QTest::addRow("unknown flag")
            << QStringList{QStringLiteral("--devicez"), QStringLiteral("2")} << "devicez";
        QTest::addRow("bad strategy")
            << QStringList{QStringLiteral("--strategy"), QStringLiteral("magic")} << "--strategy";
        QTest::addRow("not a number")
            << QStringList{QStringLiteral("--steps"), QStringLiteral("many")} << "--steps";
        QTest::addRow("batch not divisible")
            << QStringList{QStringLiteral("--strategy"), QStringLiteral("dp"),
                           QStringLiteral("--devices"),  QStringLiteral("3"),
                           QStringLiteral("--batch"),    QStringLiteral("32")}
            << "--batch";
        QTest::addRow("bad capacity")
            << QStringList{QStringLiteral("--capacity"), QStringLiteral("plenty")} << "--capacity";
        QTest::addRow("interleaved micro-batches")
            << QStringList{QStringLiteral("--strategy"),     QStringLiteral("pipeline"),
                           QStringLiteral("--devices"),      QStringLiteral("4"),
                           QStringLiteral("--schedule"),     QStringLiteral("interleaved"),
                           QStringLiteral("--chunks"),       QStringLiteral("2"),
                           QStringLiteral("--layers"),       QStringLiteral("8"),
                           QStringLiteral("--microbatches"), QStringLiteral("6"),
                           QStringLiteral("--batch"),        QStringLiteral("24")}
            << "--microbatches: the interleaved schedule needs the micro-batch count (6) to be a "
               "multiple of the 4 pipeline stages";
        QTest::addRow("mesh product")
            << QStringList{QStringLiteral("--strategy"), QStringLiteral("hybrid"),
                           QStringLiteral("--devices"),  QStringLiteral("4"),
                           QStringLiteral("--dp"),       QStringLiteral("2"),
                           QStringLiteral("--pp"),       QStringLiteral("3")}
            << "the mesh dp x pp x tp = 2 x 3 x 1 = 6 does not match the device count 4";
        QTest::addRow("bad schedule")
            << QStringList{QStringLiteral("--strategy"), QStringLiteral("pipeline"),
                           QStringLiteral("--devices"),  QStringLiteral("2"),
                           QStringLiteral("--schedule"), QStringLiteral("zigzag")}
            << "--schedule";
        QTest::addRow("unknown backend")
            << QStringList{QStringLiteral("--backend"), QStringLiteral("tpu")}
            << "--backend: unknown value 'tpu' (available: cpu, cuda)";
        QTest::addRow("tf32 with bf16-mixed")
            << QStringList{QStringLiteral("--tf32"), QStringLiteral("--precision"),
                           QStringLiteral("bf16-mixed")}
            << "--tf32: rounds float32 products; under 'bf16-mixed'";
        QTest::addRow("device clock on cuda")
            << QStringList{QStringLiteral("--backend"), QStringLiteral("cuda"),
                           QStringLiteral("--clock"), QStringLiteral("device")}
            << "--clock: 'device' times CPU threads";
        QTest::addRow("link speed not a speed")
            << QStringList{QStringLiteral("--link-gbps"), QStringLiteral("fast")}
            << "--link-gbps: 'fast' is not a link speed; use a number of Gb/s";
        QTest::addRow("link speed lower-case prefix")
            << QStringList{QStringLiteral("--link-gbps"), QStringLiteral("100gb/s")}
            << "--link-gbps: '100gb/s' is not a link speed";
        QTest::addRow("link speed zero")
            << QStringList{QStringLiteral("--link-gbps"), QStringLiteral("0")}
            << "--link-gbps: must be more than 0 Gb/s";
        QTest::addRow("negative threads")
            << QStringList{QStringLiteral("--threads"), QStringLiteral("-1")}
            << "--threads: must be between 1 and 256 (or 0 for hardware threads / devices";
        QTest::addRow("unknown precision")
            << QStringList{QStringLiteral("--precision"), QStringLiteral("fp16")}
            << "--precision: unknown value 'fp16' (available: fp32, bf16-mixed, fp16-mixed)";
        QTest::addRow("bf16-mixed on cuda")
            << QStringList{QStringLiteral("--backend"),   QStringLiteral("cuda"),
                           QStringLiteral("--clock"),     QStringLiteral("wall"),
                           QStringLiteral("--precision"), QStringLiteral("bf16-mixed")}
            << "--precision: 'bf16-mixed' runs on the CPU backend only";
        QTest::addRow("missing scenario")
            << QStringList{QStringLiteral("--scenario"), QStringLiteral("/nonexistent/s.json")}
            << "cannot read";
    }

    void bad_input_exits_2() {
        QFETCH(QStringList, args);
        QFETCH(QString, expected);
        const Outcome o = run(args);
        QCOMPARE(o.code, 2);
        QVERIFY2(o.err.contains(expected), qPrintable(o.err));
    }

    // Where no GPU can be used, asking for one is bad input naming why, not a failed run.
    void cuda_without_a_gpu_exits_2_saying_why() {
        if (pd::backend_unavailable_reason(pd::BackendKind::cuda).empty())
            QSKIP("a CUDA GPU is present: the tests labelled gpu cover this backend");
        const Outcome o = run({QStringLiteral("--backend"), QStringLiteral("cuda"),
                               QStringLiteral("--steps"), QStringLiteral("1")});
        QCOMPARE(o.code, 2);
        QVERIFY2(o.err.contains(QStringLiteral("--backend: 'cuda' cannot run here: ")),
                 qPrintable(o.err));
    }

    // --link-gbps takes Gb/s, or a unit; the report and the summary say both units.
    void link_speed_flag_units_data() {
        QTest::addColumn<QString>("value");
        QTest::addColumn<double>("gbit");
        QTest::addColumn<QString>("report");
        QTest::addRow("number is Gb/s") << "100" << 100.0 << "100 Gb/s (12.5 GB/s)";
        QTest::addRow("Gb/s") << "100Gb/s" << 100.0 << "100 Gb/s (12.5 GB/s)";
        QTest::addRow("GB/s") << "12.5GB/s" << 100.0 << "100 Gb/s (12.5 GB/s)";
        QTest::addRow("Gbit/s") << "400 Gbit/s" << 400.0 << "400 Gb/s (50 GB/s)";
        QTest::addRow("GB/s spaced") << "50 GB/s" << 400.0 << "400 Gb/s (50 GB/s)";
    }

    void link_speed_flag_units() {
        QFETCH(QString, value);
        QFETCH(double, gbit);
        QFETCH(QString, report);
        QTemporaryDir dir;
        const QString summary = dir.filePath(QStringLiteral("s.json"));
        const Outcome o =
            run({QStringLiteral("--layers"), QStringLiteral("1"), QStringLiteral("--width"),
                 QStringLiteral("16"), QStringLiteral("--steps"), QStringLiteral("1"),
                 QStringLiteral("--link-gbps"), value, QStringLiteral("--summary"), summary});
        QVERIFY2(o.code == 0, qPrintable(o.err));
        QVERIFY2(o.out.contains(report), qPrintable(o.out));
        const QJsonObject link = read_json(summary).value(QStringLiteral("link")).toObject();
        QCOMPARE(link.value(QStringLiteral("gbit_per_s")).toDouble(), gbit);
        QCOMPARE(link.value(QStringLiteral("gbyte_per_s")).toDouble(), gbit / 8);
    }

    void scenario_link_speed_with_unit() {
        QTemporaryDir dir;
        const QString path = dir.filePath(QStringLiteral("s.json")),
                      summary = dir.filePath(QStringLiteral("out.json"));
        QFile f(path);
        QVERIFY(f.open(QIODevice::WriteOnly));
        f.write(R"({"layers": 1, "width": 16, "steps": 1, "link_gbps": "12.5GB/s"})");
        f.close();
        const Outcome o =
            run({QStringLiteral("--scenario"), path, QStringLiteral("--summary"), summary});
        QVERIFY2(o.code == 0, qPrintable(o.err));
        const QJsonObject link = read_json(summary).value(QStringLiteral("link")).toObject();
        QCOMPARE(link.value(QStringLiteral("gbit_per_s")).toDouble(), 100.0);

        QFile bad(path);
        QVERIFY(bad.open(QIODevice::WriteOnly));
        bad.write(R"({"link_gbps": "12.5 GiB/s"})");
        bad.close();
        const Outcome e = run({QStringLiteral("--scenario"), path});
        QCOMPARE(e.code, 2);
        QVERIFY2(e.err.contains(QStringLiteral("scenario key 'link_gbps'")), qPrintable(e.err));
        QVERIFY2(e.err.contains(QStringLiteral("\"12.5GB/s\"")), qPrintable(e.err));
    }

    void malformed_scenario_exits_2_naming_the_file() {
        QTemporaryDir dir;
        const QString path = dir.filePath(QStringLiteral("broken.json"));
        QFile f(path);
        QVERIFY(f.open(QIODevice::WriteOnly));
        f.write("{\"strategy\": \"dp\", \"devices\": ");
        f.close();
        const Outcome o = run({QStringLiteral("--scenario"), path});
        QCOMPARE(o.code, 2);
        QVERIFY(o.err.contains(QStringLiteral("broken.json")));
        QVERIFY(o.err.contains(QStringLiteral("not valid JSON")));
    }

    void scenario_keys_and_flag_override() {
        QTemporaryDir dir;
        const QString path = dir.filePath(QStringLiteral("s.json")),
                      summary = dir.filePath(QStringLiteral("out.json"));
        QFile f(path);
        QVERIFY(f.open(QIODevice::WriteOnly));
        f.write(R"({"strategy": "ps", "devices": 3, "batch": 8, "steps": 4, "layers": 1,
                    "width": 16, "clock": "device"})");
        f.close();
        const Outcome o = run({QStringLiteral("--scenario"), path, QStringLiteral("--steps"),
                               QStringLiteral("2"), QStringLiteral("--summary"), summary});
        QVERIFY2(o.code == 0, qPrintable(o.err));
        const QJsonObject s = read_json(summary);
        QCOMPARE(s.value(QStringLiteral("strategy")).toString(), QStringLiteral("ps"));
        QCOMPARE(s.value(QStringLiteral("clock")).toString(), QStringLiteral("device"));
        QCOMPARE(s.value(QStringLiteral("steps")).toArray().size(), 2);
    }

    void pipeline_summary_reports_bubble_and_stages() {
        QTemporaryDir dir;
        const QString summary = dir.filePath(QStringLiteral("s.json"));
        const Outcome o = run(
            {QStringLiteral("--strategy"), QStringLiteral("pipeline"), QStringLiteral("--devices"),
             QStringLiteral("2"), QStringLiteral("--microbatches"), QStringLiteral("4"),
             QStringLiteral("--schedule"), QStringLiteral("1f1b"), QStringLiteral("--layers"),
             QStringLiteral("2"), QStringLiteral("--width"), QStringLiteral("32"),
             QStringLiteral("--steps"), QStringLiteral("2"), QStringLiteral("--summary"), summary});
        QVERIFY2(o.code == 0, qPrintable(o.err));
        QVERIFY(o.out.contains(QStringLiteral("bubble measured")));
        const QJsonObject s = read_json(summary);
        const QJsonObject bubble = s.value(QStringLiteral("bubble_fraction")).toObject();
        QCOMPARE(bubble.value(QStringLiteral("theoretical")).toDouble(), 1.0 / 5.0);
        QVERIFY(bubble.value(QStringLiteral("measured")).toDouble() > 0);
        QCOMPARE(s.value(QStringLiteral("stage_boundaries")).toArray().size(), 2);
        QCOMPARE(s.value(QStringLiteral("activations_per_stage")).toArray().size(), 2);
        QCOMPARE(s.value(QStringLiteral("model_state_bytes")).toArray().size(), 2);
        QVERIFY(s.value(QStringLiteral("comm_bytes_per_step_per_device"))
                    .toObject()
                    .contains(QStringLiteral("send_recv")));
    }

    // `paralleldeck-bench step` without PyTorch still prints the engine's figures, and says
    // plainly why there is no PyTorch column (no test may need torch).
    void bench_step_without_torch_prints_engine_figures() {
        QProcess p;
        p.start(QStringLiteral(PD_BENCH_EXE),
                {QStringLiteral("step"), QStringLiteral("--sizes"), QStringLiteral("2x32x8"),
                 QStringLiteral("--strategies"), QStringLiteral("single,dp"),
                 QStringLiteral("--rounds"), QStringLiteral("1"), QStringLiteral("--steps"),
                 QStringLiteral("2"), QStringLiteral("--python"),
                 QStringLiteral("/nonexistent/python3")});
        QVERIFY(p.waitForFinished(600000));
        const QString out = QString::fromUtf8(p.readAllStandardOutput());
        QCOMPARE(p.exitCode(), 0);
        QVERIFY2(
            out.contains(QStringLiteral("RESULT step layers=2 width=32 batch=8 strategy=single "
                                        "devices=1 threads_per_device=1")),
            qPrintable(out));
        QVERIFY2(out.contains(QStringLiteral("strategy=dp devices=2")), qPrintable(out));
        QVERIFY(out.contains(QStringLiteral("ratio_to_torch=n/a")));
        // Issue 50: the step against the CPU's FMA peak too.
        QVERIFY2(QRegularExpression(QStringLiteral("fma_peak_gflops=[0-9.]+ fraction_of_peak=0[.]"))
                     .match(out)
                     .hasMatch(),
                 qPrintable(out));
        QVERIFY2(out.contains(QStringLiteral("# PyTorch was not run: /nonexistent/python3")),
                 qPrintable(out));
        // A size it cannot read is named.
        QProcess bad;
        bad.start(QStringLiteral(PD_BENCH_EXE),
                  {QStringLiteral("step"), QStringLiteral("--sizes"), QStringLiteral("huge")});
        QVERIFY(bad.waitForFinished(60000));
        QCOMPARE(bad.exitCode(), 2);
        QVERIFY(QString::fromUtf8(bad.readAllStandardError()).contains(QStringLiteral("'huge'")));
    }

    // `paralleldeck-bench attention` prints a row per sequence length at the fixed token
    // count (figures only: nothing here is held to a time), and --help lists it.
    void bench_attention_prints_a_row_per_seq_len() {
        QProcess p;
        p.start(QStringLiteral(PD_BENCH_EXE),
                {QStringLiteral("attention"), QStringLiteral("--seq-lens"), QStringLiteral("4,8"),
                 QStringLiteral("--tokens"), QStringLiteral("32"), QStringLiteral("--layers"),
                 QStringLiteral("1"), QStringLiteral("--width"), QStringLiteral("16"),
                 QStringLiteral("--heads"), QStringLiteral("2"), QStringLiteral("--steps"),
                 QStringLiteral("1"), QStringLiteral("--threads"), QStringLiteral("1")});
        QVERIFY(p.waitForFinished(600000));
        const QString out = QString::fromUtf8(p.readAllStandardOutput());
        QCOMPARE(p.exitCode(), 0);
        // probs per layer: batch x heads x s^2 x 4 B = 8 x 2 x 16 x 4 and 4 x 2 x 64 x 4.
        QVERIFY2(out.contains(QStringLiteral("RESULT attention seq_len=4 batch=8 tokens=32")),
                 qPrintable(out));
        QVERIFY2(out.contains(QStringLiteral("probs_bytes_per_layer=1024 ")), qPrintable(out));
        QVERIFY2(out.contains(QStringLiteral("RESULT attention seq_len=8 batch=4 tokens=32")),
                 qPrintable(out));
        QVERIFY2(out.contains(QStringLiteral("probs_bytes_per_layer=2048 ")), qPrintable(out));
        // Issue 50: each row also against the CPU's FMA peak, measured in the same run.
        const QRegularExpression peak(
            QStringLiteral("fma_peak_gflops=([0-9.]+) fraction_of_peak=([0-9.]+)\\n"));
        const auto m = peak.match(out);
        QVERIFY2(m.hasMatch(), qPrintable(out));
        QVERIFY(m.captured(2).toDouble() > 0 || m.captured(1).toDouble() == 0);
        // A length that does not divide the tokens is named.
        QProcess bad;
        bad.start(QStringLiteral(PD_BENCH_EXE),
                  {QStringLiteral("attention"), QStringLiteral("--seq-lens"), QStringLiteral("5"),
                   QStringLiteral("--tokens"), QStringLiteral("32")});
        QVERIFY(bad.waitForFinished(60000));
        QCOMPARE(bad.exitCode(), 2);
        QVERIFY(
            QString::fromUtf8(bad.readAllStandardError()).contains(QStringLiteral("--seq-lens")));
        QProcess help;
        help.start(QStringLiteral(PD_BENCH_EXE), {QStringLiteral("--help")});
        QVERIFY(help.waitForFinished(60000));
        QVERIFY(
            QString::fromUtf8(help.readAllStandardOutput()).contains(QStringLiteral("attention")));
    }

    void dump_dir_writes_npy_files() {
        QTemporaryDir dir;
        const QString out = dir.filePath(QStringLiteral("dump"));
        const Outcome o = run(
            {QStringLiteral("--layers"), QStringLiteral("1"), QStringLiteral("--width"),
             QStringLiteral("16"), QStringLiteral("--batch"), QStringLiteral("4"),
             QStringLiteral("--steps"), QStringLiteral("2"), QStringLiteral("--dump-dir"), out});
        QVERIFY2(o.code == 0, qPrintable(o.err));
        QFile w(out + QStringLiteral("/init_block0.w1.npy"));
        QVERIFY(w.open(QIODevice::ReadOnly));
        const QByteArray bytes = w.readAll();
        QVERIFY(bytes.startsWith("\x93NUMPY"));
        const int header_len =
            static_cast<unsigned char>(bytes[8]) | (static_cast<unsigned char>(bytes[9]) << 8);
        QCOMPARE((10 + header_len) % 64, 0);
        const QByteArray header = bytes.mid(10, header_len);
        QVERIFY(header.contains("'descr': '<f4'"));
        QVERIFY(header.contains("'shape': (16, 64)"));
        QCOMPARE(bytes.size(), 10 + header_len + 16 * 64 * 4);
        QVERIFY(QFile::exists(out + QStringLiteral("/step0001_y.npy")));
        const QJsonObject manifest = read_json(out + QStringLiteral("/manifest.json"));
        QCOMPARE(manifest.value(QStringLiteral("batches")).toArray().size(), 2);
        QCOMPARE(manifest.value(QStringLiteral("precision"))
                     .toObject()
                     .value(QStringLiteral("name"))
                     .toString(),
                 QStringLiteral("fp32"));
        // What another framework needs to replay the updates: AdamW's hyper-parameters, the
        // default lr for width 16 (0.128 / 16) and the schedule.
        const QJsonObject opt = manifest.value(QStringLiteral("optimizer")).toObject();
        QCOMPARE(opt.value(QStringLiteral("name")).toString(), QStringLiteral("adamw"));
        QCOMPARE(opt.value(QStringLiteral("lr")).toDouble(), double(0.008f));
        QCOMPARE(opt.value(QStringLiteral("betas")).toArray().size(), 2);
        QCOMPARE(opt.value(QStringLiteral("betas")).toArray().at(1).toDouble(), double(0.999f));
        QCOMPARE(opt.value(QStringLiteral("eps")).toDouble(), double(1e-8f));
        QCOMPARE(opt.value(QStringLiteral("weight_decay")).toDouble(), double(0.01f));
        const QJsonObject schedule = opt.value(QStringLiteral("lr_schedule")).toObject();
        QCOMPARE(schedule.value(QStringLiteral("kind")).toString(), QStringLiteral("constant"));
        QCOMPARE(schedule.value(QStringLiteral("warmup_steps")).toInt(), 0);
        QCOMPARE(manifest.value(QStringLiteral("model"))
                     .toObject()
                     .value(QStringLiteral("width"))
                     .toInt(),
                 16);
        // The head starts at zero, so step 0's loss is ln(classes).
        QFile head(out + QStringLiteral("/init_head.w.npy"));
        QVERIFY(head.open(QIODevice::ReadOnly));
        const QByteArray head_bytes = head.readAll();
        const QByteArray head_values = head_bytes.mid(head_bytes.size() - 16 * 10 * 4);
        QCOMPARE(head_values, QByteArray(16 * 10 * 4, '\0'));
    }
    // Issue 41 item 2: a run the host cannot hold is refused before it allocates, exit 3 with
    // the figures (it printed "std::bad_alloc" and exited 1). `ulimit -v` sets the limit; a
    // sanitizer reserves terabytes of address space, so there it cannot be set.
    void a_run_beyond_the_hosts_memory_exits_3_naming_the_figures() {
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
        QSKIP("a sanitizer's shadow memory cannot live under ulimit -v");
#endif
        QProcess p;
        p.start(QStringLiteral("bash"),
                {QStringLiteral("-c"),
                 QStringLiteral("ulimit -v 3000000; exec \"$0\" --strategy single --width 8192 "
                                "--layers 8 --steps 1"),
                 QStringLiteral(PD_RUN_EXE)});
        QVERIFY(p.waitForFinished(600000));
        const QString err = QString::fromUtf8(p.readAllStandardError());
        QCOMPARE(p.exitCode(), 3);
        QVERIFY2(err.contains(QStringLiteral("of host memory")), qPrintable(err));
        QVERIFY2(err.contains(QStringLiteral("16.0 GiB of initial parameters")), qPrintable(err));
        QVERIFY2(err.contains(QStringLiteral("is available (ulimit -v)")), qPrintable(err));
    }

    // Issue 41 item 7: an output path that cannot be written is found before the run (exit 2,
    // named), not after it (exit 1, results lost).
    void an_unwritable_output_path_is_refused_before_the_run() {
        QTemporaryDir dir;
        const QString missing = dir.filePath(QStringLiteral("no/such/folder/t.json"));
        Outcome o =
            run({QStringLiteral("--strategy"), QStringLiteral("dp"), QStringLiteral("--devices"),
                 QStringLiteral("2"), QStringLiteral("--trace"), missing});
        QCOMPARE(o.code, 2);
        QVERIFY2(o.err.contains(QStringLiteral("--trace: cannot write '%1'").arg(missing)),
                 qPrintable(o.err));
        QVERIFY2(!o.out.contains(QStringLiteral("status")), qPrintable(o.out));  // never ran
        o = run({QStringLiteral("--summary"), dir.path()});
        QCOMPARE(o.code, 2);
        QVERIFY2(o.err.contains(QStringLiteral("--summary: '%1' is a folder").arg(dir.path())),
                 qPrintable(o.err));
    }

    // Issue 41 item 7: SIGTERM stops a run as SIGINT does, keeping its trace and summary (it
    // killed the run with nothing written). The files replace older ones whole: whenever the
    // process dies, the trace is the old file or a complete new one.
    void sigterm_keeps_the_trace_and_summary_so_far() {
        QTemporaryDir dir;
        const QString trace = dir.filePath(QStringLiteral("t.json")),
                      summary = dir.filePath(QStringLiteral("s.json"));
        {
            QFile old(trace);
            QVERIFY(old.open(QIODevice::WriteOnly));
            old.write("old");
        }
        QProcess p;
        p.start(QStringLiteral(PD_RUN_EXE),
                {QStringLiteral("--strategy"), QStringLiteral("dp"), QStringLiteral("--devices"),
                 QStringLiteral("2"), QStringLiteral("--steps"), QStringLiteral("100000"),
                 QStringLiteral("--trace"), trace, QStringLiteral("--summary"), summary});
        QVERIFY(p.waitForStarted());
        // The first steps have run once progress shows step 3.
        QByteArray err;
        while (!err.contains("step 3/") && p.state() == QProcess::Running) {
            p.waitForReadyRead(1000);
            err += p.readAllStandardError();
        }
        QVERIFY2(err.contains("step 3/"), err.constData());
        QCOMPARE(QFile(trace).size(), qint64(3));  // nothing is written while it runs
        ::kill(static_cast<pid_t>(p.processId()), SIGTERM);
        QVERIFY(p.waitForFinished(600000));
        err += p.readAllStandardError();
        QCOMPARE(p.exitStatus(), QProcess::NormalExit);
        QCOMPARE(p.exitCode(), 143);
        QVERIFY2(err.contains("interrupted (SIGTERM)"), err.constData());
        const QJsonObject s = read_json(summary);
        QCOMPARE(s.value(QStringLiteral("status")).toString(), QStringLiteral("cancelled"));
        QVERIFY(!read_json(trace).value(QStringLiteral("traceEvents")).toArray().isEmpty());
        QCOMPARE(QDir(dir.path()).entryList(QDir::Files | QDir::Hidden).size(), 2);  // no temp
    }
    // Issue 50: --verbose says which kernel ran each product and how near the FMA peak.
    void verbose_lists_each_product_its_kernel_and_fraction_of_peak() {
        const Outcome o =
            run({QStringLiteral("--strategy"), QStringLiteral("single"), QStringLiteral("--width"),
                 QStringLiteral("512"), QStringLiteral("--layers"), QStringLiteral("1"),
                 QStringLiteral("--batch"), QStringLiteral("256"), QStringLiteral("--steps"),
                 QStringLiteral("1"), QStringLiteral("--quiet"), QStringLiteral("--verbose")});
        QCOMPARE(o.code, 0);
        QVERIFY2(o.out.contains(QStringLiteral("products by shape")), qPrintable(o.out));
        QVERIFY2(o.out.contains(QStringLiteral("FMA peak")), qPrintable(o.out));
        // The block's forward product: 256 rows x 4h (2048) x h (512), once.
        const QRegularExpression forward(
            QStringLiteral("\\n  NN +256 +2048 +512 +1  (own AVX2|own AVX-512|OpenBLAS)[^\\n]* "
                           "+([0-9.]+) +([0-9.]+)\\n"));
        const auto match = forward.match(o.out);
        QVERIFY2(match.hasMatch(), qPrintable(o.out));
        QVERIFY(match.captured(2).toDouble() > 0);  // GFLOP/s
        QVERIFY(match.captured(3).toDouble() > 0);  // fraction of the peak
        // Without --verbose there is no such table.
        const Outcome plain =
            run({QStringLiteral("--steps"), QStringLiteral("1"), QStringLiteral("--quiet")});
        QVERIFY(!plain.out.contains(QStringLiteral("products by shape")));
    }
};

QTEST_GUILESS_MAIN(TestRunCli)
#include "test_run_cli.moc"
