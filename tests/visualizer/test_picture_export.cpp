// Exports of a real run: PNG at twice the logical size, SVG and PDF files that are what
// they claim to be, a comparison of two runs, and errors that say what went wrong.
#include <QFile>
#include <QImageReader>
#include <QTemporaryDir>
#include <QtTest>

#include "pd/metrics.h"
#include "visualizer/metrics_text.h"
#include "visualizer/picture_export.h"
#include "visualizer_test_support.h"

using namespace pd::vis;

class TestPictureExport : public QObject {
    Q_OBJECT

    pd::RunConfig config_ = test::small_pipeline();
    std::shared_ptr<const pd::RunResult> result_;
    QTemporaryDir dir_;

    QByteArray head(const QString& path, int n) {
        QFile f(path);
        if (!f.open(QIODevice::ReadOnly)) return {};
        return f.read(n);
    }

  private slots:
    void initTestCase() {
        QVERIFY(dir_.isValid());
        result_ = test::run_engine(config_);
        QCOMPARE(result_->status, pd::RunStatus::ok);
    }

    void pngIsTwiceTheLogicalSize() {
        const QString path = dir_.filePath(QStringLiteral("timeline.png"));
        QString error;
        PictureOptions o;
        o.width = 1000;
        QVERIFY2(export_picture(path, config_, result_, &error, o), qPrintable(error));
        QImageReader reader(path);
        QCOMPARE(reader.format(), QByteArray("png"));
        const QSizeF logical = picture_size({{config_, result_}}, o);
        QCOMPARE(logical.width(), 1000.0);
        QCOMPARE(reader.size(), (logical * 2).toSize());
        const QImage image = reader.read();
        QVERIFY(!image.isNull());
        // Not a blank page: the forward teal is somewhere in it.
        const QColor teal = TimelinePalette::light_theme().forward;
        bool found = false;
        for (int y = 0; y < image.height() && !found; y += 2)
            for (int x = 0; x < image.width() && !found; x += 2)
                found = image.pixelColor(x, y) == teal;
        QVERIFY(found);
    }

    void svgAndPdf_data() {
        QTest::addColumn<QString>("name");
        QTest::addColumn<QByteArray>("magic");
        QTest::newRow("svg") << QStringLiteral("timeline.svg") << QByteArray("<?xml");
        QTest::newRow("pdf") << QStringLiteral("timeline.pdf") << QByteArray("%PDF");
        QTest::newRow("upper-case extension")
            << QStringLiteral("TIMELINE.PDF") << QByteArray("%PDF");
    }
    void svgAndPdf() {
        QFETCH(QString, name);
        QFETCH(QByteArray, magic);
        const QString path = dir_.filePath(name);
        QString error;
        QVERIFY2(export_picture(path, config_, result_, &error), qPrintable(error));
        QVERIFY(head(path, 5).startsWith(magic));
        if (magic == "<?xml") {
            QFile f(path);
            QVERIFY(f.open(QIODevice::ReadOnly));
            const QByteArray all = f.readAll();
            QVERIFY(all.contains("<svg"));
            QVERIFY(all.contains("forward"));  // the legend is text, not pixels
        }
        QVERIFY(QFileInfo(path).size() > 1000);
    }

    void dark_and_comparison() {
        auto one_f_one_b = test::small_pipeline(pd::PipelineSchedule::one_f_one_b);
        auto second = test::run_engine(one_f_one_b);
        PictureOptions o;
        o.theme = ThemeChoice::dark;
        o.note = QStringLiteral("GPipe against 1F1B");
        const std::vector<PictureRun> runs{{config_, result_}, {one_f_one_b, second}};
        const QSizeF both = picture_size(runs, o);
        const QSizeF one = picture_size({runs.front()}, o);
        QVERIFY(both.height() > one.height() * 1.5);
        const QImage image = render_picture(runs, o, 2.0);
        QCOMPARE(image.size(), (both * 2).toSize());
        QVERIFY(image.pixelColor(4, 4).lightness() < 80);  // dark background
        QString error;
        QVERIFY2(export_picture(dir_.filePath(QStringLiteral("compare.png")), runs, o, &error),
                 qPrintable(error));
    }

    void outOfMemoryRunExports() {
        pd::RunConfig c = test::small_dp();
        c.capacity_bytes = 64 * 1024;
        auto r = test::run_engine(c);
        QCOMPARE(r->status, pd::RunStatus::out_of_memory);
        QString error;
        QVERIFY2(export_picture(dir_.filePath(QStringLiteral("oom.png")), c, r, &error),
                 qPrintable(error));
    }

    // Every label of an exported picture is whole: the memory chart's legend names each
    // category in full (Qt Charts' own legend cut them to "para…"), the metrics lines wrap
    // instead of ending in "…", in either theme, at the width the panel exports (1000 px, the
    // memory chart a 420 px column). SVG keeps its text as text, so the file says what shows.
    void everyLabelIsWhole_data() {
        QTest::addColumn<ThemeChoice>("theme");
        QTest::addColumn<double>("width");
        QTest::newRow("light, 1000 px") << ThemeChoice::light << 1000.0;
        QTest::newRow("dark, 1000 px") << ThemeChoice::dark << 1000.0;
        QTest::newRow("dark, 1600 px") << ThemeChoice::dark << 1600.0;
    }
    void everyLabelIsWhole() {
        QFETCH(ThemeChoice, theme);
        QFETCH(double, width);
        // A run that ran out of memory holds every legend entry: categories, the failed
        // request and the capacity line; the pipeline's bubble causes make long lines.
        pd::RunConfig oom = test::small_dp();
        oom.capacity_bytes = 64 * 1024;
        const auto oom_run = test::run_engine(oom);
        PictureOptions o;
        o.theme = theme;
        o.width = width;
        for (const auto& [config, result] :
             std::vector<std::pair<pd::RunConfig, std::shared_ptr<const pd::RunResult>>>{
                 {config_, result_}, {oom, oom_run}}) {
            const QString path = dir_.filePath(QStringLiteral("whole.svg"));
            QString error;
            QVERIFY2(export_picture(path, config, result, &error, o), qPrintable(error));
            QFile f(path);
            QVERIFY(f.open(QIODevice::ReadOnly));
            const QString svg = QString::fromUtf8(f.readAll())
                                    .replace(QStringLiteral("&amp;"), QStringLiteral("&"))
                                    .replace(QStringLiteral("&lt;"), QStringLiteral("<"))
                                    .replace(QStringLiteral("&gt;"), QStringLiteral(">"))
                                    .replace(QStringLiteral("&quot;"), QStringLiteral("\""))
                                    .replace(QStringLiteral("&#39;"), QStringLiteral("'"));
            QVERIFY2(!svg.contains(QChar(0x2026)), "an exported label ends in an ellipsis");
            for (const char* name : {"parameters", "gradients", "optimizer state"})
                if (result->status == pd::RunStatus::ok)
                    QVERIFY2(svg.contains(QStringLiteral(">%1<").arg(QLatin1String(name))), name);
            if (result->status != pd::RunStatus::ok) {
                QVERIFY(svg.contains(QStringLiteral(">failed request (over capacity)<")));
                QVERIFY(svg.contains(QStringLiteral(">capacity<")));
            }
            const auto metrics = pd::compute_metrics(result->trace, config);
            // Whole, not elided: a word may wrap after one of its hyphens ("micro-" then
            // "batch,"), which keeps every letter of it.
            auto whole = [&svg](const QString& word) {
                if (svg.contains(word)) return true;
                const QStringList parts = word.split(QLatin1Char('-'));
                if (parts.size() < 2) return false;
                for (int i = 0; i < parts.size(); ++i)
                    if (!svg.contains(i + 1 < parts.size() ? parts[i] + QLatin1Char('-')
                                                           : parts[i]))
                        return false;
                return true;
            };
            for (const MetricLine& line : summary_lines(config, *result, metrics))
                for (const QString& word : line.value.split(QLatin1Char(' ')))
                    QVERIFY2(whole(word), qPrintable(line.label + QStringLiteral(": ") + word));
        }
    }

    void errorsSayWhy() {
        QString error;
        QVERIFY(!export_picture(dir_.filePath(QStringLiteral("timeline.bmp")), config_, result_,
                                &error));
        QVERIFY(error.contains(QStringLiteral(".png")));
        error.clear();
        const QString missing = dir_.filePath(QStringLiteral("no/such/dir/t.png"));
        QVERIFY(!export_picture(missing, config_, result_, &error));
        QVERIFY(error.contains(missing));
        error.clear();
        QVERIFY(!export_picture(dir_.filePath(QStringLiteral("no/such/dir/t.svg")), config_,
                                result_, &error));
        QVERIFY(!error.isEmpty());
        error.clear();
        QVERIFY(!export_picture(dir_.filePath(QStringLiteral("t.png")), config_, nullptr, &error));
        QVERIFY(!error.isEmpty());
    }
};

QTEST_MAIN(TestPictureExport)
#include "test_picture_export.moc"
