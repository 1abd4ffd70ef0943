// `paralleldeck --card ID --export-screenshot FILE` as a script would use it: no window, a
// picture of a real run, clear exit codes.
#include <QImageReader>
#include <QProcess>
#include <QTemporaryDir>
#include <QtTest>

class TestHeadlessExport : public QObject {
    Q_OBJECT

    struct Outcome {
        int code = -1;
        QString err;
    };
    static Outcome run(const QStringList& args) {
        QProcess p;
        QProcessEnvironment env = QProcessEnvironment::systemEnvironment();
        env.insert(QStringLiteral("QT_QPA_PLATFORM"), QStringLiteral("offscreen"));
        p.setProcessEnvironment(env);
        p.start(QStringLiteral(PD_APP_EXE), args);
        Outcome o;
        if (!p.waitForFinished(300000)) return o;
        o.code = p.exitStatus() == QProcess::NormalExit ? p.exitCode() : -1;
        o.err = QString::fromUtf8(p.readAllStandardError());
        return o;
    }

  private slots:
    void exports_a_pipeline_card_data() {
        QTest::addColumn<QString>("file");
        QTest::addColumn<QByteArray>("magic");
        QTest::addRow("png") << "gpipe.png" << QByteArray("\x89PNG");
        QTest::addRow("svg") << "gpipe.svg" << QByteArray("<?xml");
        QTest::addRow("pdf") << "gpipe.pdf" << QByteArray("%PDF");
    }

    void exports_a_pipeline_card() {
        QFETCH(QString, file);
        QFETCH(QByteArray, magic);
        QTemporaryDir dir;
        const QString path = dir.filePath(file);
        const Outcome o = run({QStringLiteral("--card"), QStringLiteral("pp-gpipe-bubble"),
                               QStringLiteral("--export-screenshot"), path});
        QVERIFY2(o.code == 0, qPrintable(o.err));
        QFile f(path);
        QVERIFY(f.open(QIODevice::ReadOnly));
        QVERIFY(f.read(magic.size()) == magic);
        if (file.endsWith(QStringLiteral(".png"))) {
            QImageReader reader(path);
            const QSize size = reader.size();
            QCOMPARE(size.width(), 3200);  // 1600 logical pixels at 2x
            QVERIFY(size.height() > 400);
        }
    }

    // `paralleldeck --open FILE... --export-screenshot PICTURE`: the learner's own traces.
    void exports_an_imported_trace() {
        QTemporaryDir dir;
        const QString path = dir.filePath(QStringLiteral("ddp.png"));
        QStringList args{QStringLiteral("--open")};
        for (int r = 0; r < 4; ++r)
            args << QStringLiteral(PD_TRACE_FIXTURES_DIR "/ddp-gloo-4rank/rank%1.json.gz").arg(r);
        args << QStringLiteral("--export-screenshot") << path;
        const Outcome o = run(args);
        QVERIFY2(o.code == 0, qPrintable(o.err));
        QImageReader reader(path);
        QCOMPARE(reader.size().width(), 3200);
    }

    void a_file_that_is_no_trace_exits_2_naming_it() {
        QTemporaryDir dir;
        const QString bad = dir.filePath(QStringLiteral("notes.json"));
        QFile f(bad);
        QVERIFY(f.open(QIODevice::WriteOnly));
        f.write("{\"notes\": [1, 2");
        f.close();
        const Outcome o = run({QStringLiteral("--open"), bad, QStringLiteral("--export-screenshot"),
                               dir.filePath(QStringLiteral("x.png"))});
        QCOMPARE(o.code, 2);
        QVERIFY2(o.err.contains(bad) && o.err.contains(QStringLiteral("byte")), qPrintable(o.err));
        QVERIFY(!QFile::exists(dir.filePath(QStringLiteral("x.png"))));
    }

    void unknown_card_exits_2() {
        QTemporaryDir dir;
        const Outcome o =
            run({QStringLiteral("--card"), QStringLiteral("no-such-card"),
                 QStringLiteral("--export-screenshot"), dir.filePath(QStringLiteral("x.png"))});
        QCOMPARE(o.code, 2);
        QVERIFY2(o.err.contains(QStringLiteral("no-such-card")), qPrintable(o.err));
        QVERIFY(!QFile::exists(dir.filePath(QStringLiteral("x.png"))));
    }

    void card_without_export_path_exits_2() {
        const Outcome o = run({QStringLiteral("--card"), QStringLiteral("pp-gpipe-bubble")});
        QCOMPARE(o.code, 2);
        QVERIFY(o.err.contains(QStringLiteral("--export-screenshot")));
    }
};

QTEST_GUILESS_MAIN(TestHeadlessExport)
#include "test_headless_export.moc"
