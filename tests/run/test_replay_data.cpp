// What a learner replays a run from, and what tells them how (issue 42, item 7): the
// --dump-dir manifest says how each step's gradient was taken (synchronous, or an asynchronous
// parameter server's staleness) and how gradients were accumulated, and gives the formula of
// the model it dumped; the README's examples run; paralleldeck-run's --help and man page say
// what the flags do; a mesh that cannot be built is blamed on --dp, not on the batch.
#include <QtTest>

#include <QFile>
#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>
#include <QProcess>
#include <QRegularExpression>
#include <QTemporaryDir>

#include "pd/error.h"
#include "pd/exports.h"
#include "pd/run_config.h"

using namespace pd;

namespace {

QJsonObject manifest_of(const RunConfig& c) {
    QTemporaryDir dir;
    dump_run_inputs(c, dir.path().toStdString());
    QFile f(dir.filePath(QStringLiteral("manifest.json")));
    if (!f.open(QIODevice::ReadOnly)) return {};
    return QJsonDocument::fromJson(f.readAll()).object();
}

RunConfig small(StrategyKind s, int devices) {
    RunConfig c;
    c.strategy = s;
    c.devices = devices;
    c.layers = 1;
    c.width = 8;
    c.batch = 24;
    c.steps = 3;
    return c;
}

QString source_file(const char* relative) {
    QFile f(QStringLiteral(PD_SOURCE_DIR "/") + QLatin1String(relative));
    return f.open(QIODevice::ReadOnly) ? QString::fromUtf8(f.readAll()) : QString();
}

struct Outcome {
    int code = -1;
    QString out, err;
};

Outcome run_cli(const QStringList& args) {
    QProcess p;
    p.start(QStringLiteral(PD_RUN_EXE), args);
    Outcome o;
    if (!p.waitForFinished(300000)) return o;
    o.code = p.exitCode();
    o.out = QString::fromUtf8(p.readAllStandardOutput());
    o.err = QString::fromUtf8(p.readAllStandardError());
    return o;
}

}  // namespace

class TestReplayData : public QObject {
    Q_OBJECT
  private slots:
    // An asynchronous parameter server takes step s's gradient at the weights of s - S updates
    // before: its manifest says so, and not "at the current weights".
    void theManifestRecordsAsynchronousUpdatesAndTheirStaleness() {
        RunConfig c = small(StrategyKind::ps, 3);
        c.async_updates = true;
        c.max_staleness = 2;
        const QJsonObject m = manifest_of(c);
        const QJsonObject updates = m.value(QStringLiteral("updates")).toObject();
        QCOMPARE(updates.value(QStringLiteral("mode")).toString(), QStringLiteral("asynchronous"));
        QCOMPARE(updates.value(QStringLiteral("staleness")).toInt(), 2);
        const QString note = m.value(QStringLiteral("note")).toString();
        QVERIFY2(!note.contains(QStringLiteral("at the current weights")), qPrintable(note));
        QVERIFY2(note.contains(QStringLiteral("max(0, s - S)")), qPrintable(note));

        const QJsonObject sync = manifest_of(small(StrategyKind::ps, 3));
        QCOMPARE(sync.value(QStringLiteral("updates"))
                     .toObject()
                     .value(QStringLiteral("mode"))
                     .toString(),
                 QStringLiteral("synchronous"));
        QVERIFY(sync.value(QStringLiteral("note"))
                    .toString()
                    .contains(QStringLiteral("at the current weights")));
    }

    // bf16 partial sums round where the accumulation adds: the manifest gives the micro-steps,
    // their rows and where the replicas reduce.
    void theManifestRecordsGradientAccumulation() {
        RunConfig c = small(StrategyKind::dp, 2);
        c.accumulate = 3;
        c.reduce_every_microstep = true;
        const QJsonObject acc = manifest_of(c).value(QStringLiteral("accumulate")).toObject();
        QCOMPARE(acc.value(QStringLiteral("micro_steps")).toInt(), 3);
        QCOMPARE(acc.value(QStringLiteral("rows_per_micro_step")).toInt(), 24 / (2 * 3));
        QCOMPARE(acc.value(QStringLiteral("reduce_every_microstep")).toBool(), true);
        QVERIFY(acc.value(QStringLiteral("rule")).toString().contains(QStringLiteral("i * ")));
        const QJsonObject one = manifest_of(small(StrategyKind::single, 1))
                                    .value(QStringLiteral("accumulate"))
                                    .toObject();
        QCOMPARE(one.value(QStringLiteral("micro_steps")).toInt(), 1);
    }

    // The formula at the top of the manifest is the dumped model's: a transformer's manifest
    // gave the MLP block.
    void theManifestGivesTheDumpedModelsFormula() {
        const QString mlp_block = QStringLiteral("h + (gelu_tanh(h @ w1 + b1) @ w2 + b2)");
        RunConfig t = small(StrategyKind::single, 1);
        t.model = ModelKind::transformer;
        t.heads = 2;
        t.seq_len = 4;
        t.batch = 2;
        const QJsonObject tm = manifest_of(t);
        QVERIFY2(!tm.value(QStringLiteral("note")).toString().contains(mlp_block),
                 qPrintable(tm.value(QStringLiteral("note")).toString()));
        QVERIFY(tm.value(QStringLiteral("model"))
                    .toObject()
                    .value(QStringLiteral("note"))
                    .toString()
                    .startsWith(QStringLiteral("Pre-LayerNorm transformer")));
        const QJsonObject mm = manifest_of(small(StrategyKind::single, 1));
        QVERIFY(mm.value(QStringLiteral("model"))
                    .toObject()
                    .value(QStringLiteral("note"))
                    .toString()
                    .contains(mlp_block));
    }

    // `--model transformer --experts 4 --strategy ep --devices 4 --dp 3`: the devices cannot
    // form 3 groups; with a batch that 3 does not divide the batch was blamed.
    void anImpossibleMeshIsBlamedOnDp_data() {
        QTest::addColumn<int>("strategy");
        QTest::addColumn<int>("batch");
        QTest::addRow("ep dp 3, batch 6") << static_cast<int>(StrategyKind::ep) << 6;
        QTest::addRow("ep dp 3, batch 8") << static_cast<int>(StrategyKind::ep) << 8;
        QTest::addRow("cp dp 3, batch 8") << static_cast<int>(StrategyKind::cp) << 8;
    }
    void anImpossibleMeshIsBlamedOnDp() {
        QFETCH(int, strategy);
        QFETCH(int, batch);
        RunConfig c;
        c.model = ModelKind::transformer;
        c.strategy = static_cast<StrategyKind>(strategy);
        c.devices = 4;
        c.mesh.dp = 3;
        c.batch = batch;
        if (c.strategy == StrategyKind::ep) c.experts = 4;
        std::string key;
        try {
            validate(c, {{"dp", "--dp"}, {"batch", "--batch"}});
        } catch (const BadInput& e) {
            key = e.key();
        }
        QCOMPARE(QString::fromStdString(key), QStringLiteral("--dp"));
    }

    // The README's paralleldeck-run examples run (each with one small step added, so they stay
    // quick): the zb-v one exited 2, its 4 stages x 2 chunks needing 8 blocks.
    void theReadmesRunExamplesRun() {
        const QString readme = source_file("README.md");
        QVERIFY(!readme.isEmpty());
        // "  ./build/app/paralleldeck-run ARGS \\\n      ARGS   # comment"
        static const QRegularExpression example(
            QStringLiteral("\\./build/app/paralleldeck-run ([^\\n\\\\#]*)\\\\\\n\\s*([^#\\n]*)#"));
        int ran = 0;
        for (auto it = example.globalMatch(readme); it.hasNext();) {
            const auto m = it.next();
            QStringList args = (m.captured(1) + QLatin1Char(' ') + m.captured(2))
                                   .split(QLatin1Char(' '), Qt::SkipEmptyParts);
            if (!args.contains(QStringLiteral("zb-v"))) continue;
            args << QStringLiteral("--steps") << QStringLiteral("1") << QStringLiteral("--width")
                 << QStringLiteral("16");
            const Outcome o = run_cli(args);
            QVERIFY2(o.code == 0,
                     qPrintable(args.join(QLatin1Char(' ')) + QStringLiteral(": ") + o.err));
            ++ran;
        }
        QCOMPARE(ran, 1);
    }

    // --help: async workers compute on exactly S versions old parameters (after the first S
    // steps), not "up to" S; --microbatches 0 is the default.
    void theHelpSaysWhatTheFlagsDo() {
        const Outcome o = run_cli({QStringLiteral("--help")});
        QCOMPARE(o.code, 0);
        const QString help = o.out.simplified();
        QVERIFY2(!help.contains(QStringLiteral("up to --max-staleness")), qPrintable(help));
        QVERIFY(help.contains(QStringLiteral("exactly S versions old")));
        QVERIFY(help.contains(QStringLiteral("0 or unset: the default")));
    }

    // The man page lists every strategy and both models.
    void theManPageListsEveryStrategyAndModel() {
        const QString man = source_file("packaging/man/paralleldeck-run.1");
        QVERIFY(!man.isEmpty());
        for (const char* s : {"single, dp, ps, pipeline, tp, zero1, zero2, zero3, hybrid, cp",
                              " or ep (", "transformer", "\\-\\-experts", "\\-\\-model"})
            QVERIFY2(man.contains(QLatin1String(s)), s);
        QVERIFY(!man.contains(QStringLiteral("Trains a residual-MLP model")));
    }
};

QTEST_GUILESS_MAIN(TestReplayData)
#include "test_replay_data.moc"
