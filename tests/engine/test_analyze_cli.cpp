// `paralleldeck-run analyze` against files it must refuse (issue 41): the read limits and their
// flags, and events that end before they start, each an exit 2 naming the file.
#include <QFile>
#include <QProcess>
#include <QTemporaryDir>
#include <QtTest>

namespace {

// Two profiler steps, a kernel in each; the kernel's name `name_length` letters long.
QByteArray small_trace(int name_length, int step_duration = 100) {
    const QByteArray name(name_length, 'k');
    return "{\"traceEvents\": ["
           "{\"ph\": \"X\", \"cat\": \"user_annotation\", \"name\": \"ProfilerStep#0\", "
           "\"pid\": 1, \"tid\": 1, \"ts\": 0, \"dur\": " +
           QByteArray::number(step_duration) +
           "},"
           "{\"ph\": \"X\", \"cat\": \"kernel\", \"name\": \"" +
           name +
           "\", \"pid\": 0, \"tid\": 7, \"ts\": 10, \"dur\": 20},"
           "{\"ph\": \"X\", \"cat\": \"user_annotation\", \"name\": \"ProfilerStep#1\", "
           "\"pid\": 1, \"tid\": 1, \"ts\": 100, \"dur\": 100},"
           "{\"ph\": \"X\", \"cat\": \"kernel\", \"name\": \"" +
           name + "\", \"pid\": 0, \"tid\": 7, \"ts\": 110, \"dur\": 20}]}";
}

}  // namespace

class TestAnalyzeCli : public QObject {
    Q_OBJECT

    struct Outcome {
        int code = -1;
        QString out, err;
    };
    Outcome analyze(QStringList args) {
        args.prepend(QStringLiteral("--quiet"));
        args.prepend(QStringLiteral("analyze"));
        QProcess p;
        p.start(QStringLiteral(PD_RUN_EXE), args);
        Outcome o;
        if (!p.waitForFinished(600000)) return o;
        o.code = p.exitStatus() == QProcess::NormalExit ? p.exitCode() : -1;
        o.out = QString::fromUtf8(p.readAllStandardOutput());
        o.err = QString::fromUtf8(p.readAllStandardError());
        return o;
    }
    static QString write(const QTemporaryDir& dir, const QString& name, const QByteArray& text) {
        const QString path = dir.filePath(name);
        QFile f(path);
        if (f.open(QIODevice::WriteOnly)) f.write(text);
        return path;
    }

  private slots:
    void a_file_past_a_limit_exits_2_naming_the_file_the_limit_and_its_flag() {
        QTemporaryDir dir;
        const QString path = write(dir, QStringLiteral("rank0.json"), small_trace(2000));
        Outcome o = analyze({QStringLiteral("--max-string-size"), QStringLiteral("1KiB"), path});
        QCOMPARE(o.code, 2);
        QVERIFY2(
            o.err.contains(path + QStringLiteral(": the JSON string at byte ")) &&
                o.err.contains(QStringLiteral("longer than 1.0 KiB, the limit of one string")) &&
                o.err.contains(QStringLiteral("(raise it with --max-string-size)")),
            qPrintable(o.err));
        o = analyze({QStringLiteral("--max-file-size"), QStringLiteral("1KiB"), path});
        QCOMPARE(o.code, 2);
        QVERIFY2(o.err.contains(path + QStringLiteral(": holds more than 1.0 KiB of JSON text, "
                                                      "the limit of one file")) &&
                     o.err.contains(QStringLiteral("(raise it with --max-file-size)")),
                 qPrintable(o.err));
        // Raised past the file, it reads.
        o = analyze({QStringLiteral("--max-string-size"), QStringLiteral("4KiB"),
                     QStringLiteral("--max-file-size"), QStringLiteral("64KiB"), path});
        QVERIFY2(o.code == 0, qPrintable(o.err));
        QVERIFY2(o.out.contains(QStringLiteral("figures over steps 2-2")), qPrintable(o.out));
        o = analyze({QStringLiteral("--max-file-size"), QStringLiteral("lots"), path});
        QCOMPARE(o.code, 2);
        QVERIFY2(o.err.contains(QStringLiteral("--max-file-size 'lots' is not a size")),
                 qPrintable(o.err));
    }

    // "busy 0.0%" and "figures over steps 1-0" with exit 0, before.
    void a_negative_duration_exits_2_naming_the_event() {
        QTemporaryDir dir;
        const QString path = write(dir, QStringLiteral("rank0.json"), small_trace(1, -50));
        const Outcome o = analyze({path});
        QCOMPARE(o.code, 2);
        QVERIFY2(
            o.err.contains(path) &&
                o.err.contains(QStringLiteral(
                    "traceEvents[0] \"ProfilerStep#0\" has a negative duration (\"dur\": -50)")),
            qPrintable(o.err));
        QVERIFY(o.out.isEmpty());
    }
};

QTEST_GUILESS_MAIN(TestAnalyzeCli)
#include "test_analyze_cli.moc"
