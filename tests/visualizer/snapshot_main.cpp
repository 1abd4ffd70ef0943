// Writes pictures of real runs (light and dark) for a person to look at: the exported
// picture and the whole panel as the widgets draw it. Not a test; see README-visualizer.
#include <QApplication>
#include <QDir>
#include <QPalette>
#include <QTabWidget>
#include <cstdio>

#include "pd/run.h"
#include "visualizer/picture_export.h"
#include "visualizer/playback.h"
#include "visualizer/visualizer_panel.h"

namespace {

QPalette dark_palette() {
    QPalette p;
    const QColor window(0x1d, 0x20, 0x25), base(0x25, 0x29, 0x30), text(0xe6, 0xe8, 0xeb);
    p.setColor(QPalette::Window, window);
    p.setColor(QPalette::WindowText, text);
    p.setColor(QPalette::Base, base);
    p.setColor(QPalette::AlternateBase, QColor(0x2b, 0x30, 0x38));
    p.setColor(QPalette::Text, text);
    p.setColor(QPalette::Button, QColor(0x2d, 0x32, 0x3a));
    p.setColor(QPalette::ButtonText, text);
    p.setColor(QPalette::PlaceholderText, QColor(0x8b, 0x93, 0x9c));
    return p;
}

struct Case {
    const char* name;
    pd::RunConfig config;
};

pd::RunConfig base(pd::StrategyKind s, int devices) {
    pd::RunConfig c;
    c.strategy = s;
    c.devices = devices;
    c.clock = pd::ClockMode::device;
    c.steps = 3;
    return c;
}

}  // namespace

int main(int argc, char** argv) {
    QApplication app(argc, argv);
    const QString out = argc > 1 ? QString::fromLocal8Bit(argv[1]) : QStringLiteral("snapshots");
    // The panel's size, "1280x720" (default 1400x900): layouts are checked at common sizes.
    QSize panel_size(1400, 900);
    if (argc > 2) {
        const QStringList wh = QString::fromLocal8Bit(argv[2]).split(QLatin1Char('x'));
        if (wh.size() == 2 && wh[0].toInt() > 0 && wh[1].toInt() > 0)
            panel_size = QSize(wh[0].toInt(), wh[1].toInt());
        else
            std::fprintf(stderr, "panel size %s: expected WIDTHxHEIGHT, e.g. 1280x720\n", argv[2]);
    }
    QDir().mkpath(out);
    std::vector<Case> cases;
    {
        auto c = base(pd::StrategyKind::pipeline, 4);
        c.microbatches = 8;
        c.schedule = pd::PipelineSchedule::gpipe;
        cases.push_back({"pipeline-gpipe", c});
        c.schedule = pd::PipelineSchedule::one_f_one_b;
        cases.push_back({"pipeline-1f1b", c});
    }
    {
        auto c = base(pd::StrategyKind::pipeline, 4);
        c.microbatches = 8;
        c.schedule = pd::PipelineSchedule::interleaved;
        c.chunks = 2;
        c.layers = 8;
        cases.push_back({"pipeline-interleaved", c});
        auto h = base(pd::StrategyKind::hybrid, 8);
        h.mesh = {2, 2, 2};
        cases.push_back({"hybrid-2x2x2", h});
        auto t = base(pd::StrategyKind::tp, 2);
        t.clock = pd::ClockMode::wall;
        cases.push_back({"tp-wall", t});
    }
    cases.push_back({"dp-overlap", base(pd::StrategyKind::dp, 4)});
    {
        auto c = base(pd::StrategyKind::dp, 4);
        c.overlap = false;
        cases.push_back({"dp-no-overlap", c});
    }
    cases.push_back({"zero3", base(pd::StrategyKind::zero3, 4)});
    {
        auto c = base(pd::StrategyKind::dp, 4);
        c.capacity_bytes = 256 * 1024;
        cases.push_back({"oom-256k", c});
        c.capacity_bytes = std::size_t{9} << 20;
        cases.push_back({"oom-9m", c});
    }
    std::vector<std::shared_ptr<const pd::RunResult>> results;
    for (const auto& c : cases) {
        pd::Run run(c.config);
        results.push_back(std::make_shared<const pd::RunResult>(run.execute()));
    }
    const QPalette light = QApplication::palette();
    for (bool dark : {false, true}) {
        QApplication::setPalette(dark ? dark_palette() : light);
        const QString theme = dark ? QStringLiteral("dark") : QStringLiteral("light");
        {
            // GPipe against 1F1B on one axis, through the same export as the app's.
            pd::vis::PictureOptions o;
            o.theme = dark ? pd::vis::ThemeChoice::dark : pd::vis::ThemeChoice::light;
            o.note = QStringLiteral(
                "Same model, same micro-batches: 1F1B starts backward passes early.");
            const std::vector<pd::vis::PictureRun> runs{{cases[0].config, results[0]},
                                                        {cases[1].config, results[1]}};
            QString error;
            for (const char* ext : {"png", "svg", "pdf"})
                if (!pd::vis::export_picture(QStringLiteral("%1/compare-gpipe-1f1b-%2.%3")
                                                 .arg(out, theme, QLatin1String(ext)),
                                             runs, o, &error))
                    std::fprintf(stderr, "%s\n", qPrintable(error));
        }
        for (std::size_t i = 0; i < cases.size(); ++i) {
            const QString name = QString::fromLatin1(cases[i].name);
            pd::vis::PictureOptions o;
            o.theme = dark ? pd::vis::ThemeChoice::dark : pd::vis::ThemeChoice::light;
            QString error;
            if (!pd::vis::export_picture(QStringLiteral("%1/%2-%3.png").arg(out, name, theme),
                                         cases[i].config, results[i], &error, o))
                std::fprintf(stderr, "%s\n", qPrintable(error));
            pd::vis::VisualizerPanel panel;
            panel.resize(panel_size);
            if (name.startsWith(QStringLiteral("pipeline")))
                panel.setNote(QStringLiteral(
                    "Look at the grey: every device waits while the pipeline fills and drains."));
            panel.setRun(cases[i].config, results[i]);
            if (name == QStringLiteral("pipeline-gpipe"))
                panel.setComparison(cases[1].config, results[1]);
            panel.show();
            QApplication::processEvents();
            panel.fitStep();
            QApplication::processEvents();
            panel.grab().save(QStringLiteral("%1/panel-%2-%3.png").arg(out, name, theme));
            if (name == QStringLiteral("dp-overlap") || name == QStringLiteral("pipeline-gpipe")) {
                // The loss chart's tab, and the note as it reads after a what-if change.
                if (auto* tabs = panel.findChild<QTabWidget*>()) tabs->setCurrentIndex(1);
                panel.setNoteDescribesRun(false);
                QApplication::processEvents();
                panel.grab().save(QStringLiteral("%1/panel-%2-loss-%3.png").arg(out, name, theme));
                if (auto* tabs = panel.findChild<QTabWidget*>()) tabs->setCurrentIndex(0);
                panel.setNoteDescribesRun(true);
            }
            if (name == QStringLiteral("dp-overlap")) {
                // Mid-playback: cursor inside step 1's all-reduce.
                panel.playback()->setCursor(panel.playback()->begin() +
                                            (panel.playback()->end() - panel.playback()->begin()) *
                                                6 / 10);
                QApplication::processEvents();
                panel.grab().save(
                    QStringLiteral("%1/panel-%2-playback-%3.png").arg(out, name, theme));
            }
        }
    }
    return 0;
}
