// How long a large trace takes to open in the app: the import off the GUI thread (the window
// stays responsive, with a progress bar), then what the GUI thread itself spends: the trace
// window built on the imported run (metrics, timeline data) and its first paint. Prints the
// figures; asserts nothing about time. Run with trace files, e.g. those
// `paralleldeck-bench import --out DIR` writes:
//   QT_QPA_PLATFORM=offscreen ./build/tests/run/bench_trace_open DIR/rank*.json
#include <QApplication>
#include <QElapsedTimer>
#include <QSignalSpy>
#include <QtTest>
#include <cstdio>

#include "trace_loader.h"
#include "trace_window.h"
#include "visualizer/timeline_view.h"
#include "visualizer/visualizer_panel.h"

int main(int argc, char** argv) {
    QApplication app(argc, argv);
    QStringList files = app.arguments().mid(1);
    if (files.isEmpty()) {
        std::fprintf(stderr, "usage: bench_trace_open FILE...\n");
        return 2;
    }
    pd::app::TraceLoader loader;
    QSignalSpy loaded(&loader, &pd::app::TraceLoader::loaded);
    QSignalSpy failed(&loader, &pd::app::TraceLoader::failed);
    QSignalSpy progress(&loader, &pd::app::TraceLoader::progress);
    QElapsedTimer load_timer, gui_timer;
    load_timer.start();
    loader.load(files);
    // The GUI thread's longest stretch without handling events while the load runs.
    qint64 longest_gap_ms = 0, last = 0;
    while (loaded.isEmpty() && failed.isEmpty()) {
        QCoreApplication::processEvents(QEventLoop::AllEvents, 20);
        const qint64 now = load_timer.elapsed();
        longest_gap_ms = std::max(longest_gap_ms, now - last);
        last = now;
    }
    if (!failed.isEmpty()) {
        std::fprintf(stderr, "%s\n", qPrintable(failed.front().at(0).toString()));
        return 1;
    }
    const double load_s = static_cast<double>(load_timer.elapsed()) / 1e3;
    const auto result = loaded.front().at(1).value<std::shared_ptr<const pd::RunResult>>();
    pd::ui::TraceWindow window;
    window.resize(1600, 1000);
    gui_timer.start();
    window.showImported(files, result);
    const double build_ms = static_cast<double>(gui_timer.nsecsElapsed()) / 1e6;
    gui_timer.restart();
    window.show();
    (void)QTest::qWaitForWindowExposed(&window);
    (void)window.grab();  // the first paint of everything on screen
    const double paint_ms = static_cast<double>(gui_timer.nsecsElapsed()) / 1e6;
    gui_timer.restart();
    window.visualizer()->fitAll();
    (void)window.grab();
    const double fit_all_ms = static_cast<double>(gui_timer.nsecsElapsed()) / 1e6;
    std::printf("events read %zu, drawn %zu, ranks %d\n", result->trace.origin.raw_events,
                result->trace.events.size(), result->trace.devices);
    std::printf(
        "import (worker thread)      %8.2f s  (%lld progress reports; GUI thread's "
        "longest gap %lld ms)\n",
        load_s, static_cast<long long>(progress.count()), static_cast<long long>(longest_gap_ms));
    std::printf("window on the run (GUI)     %8.1f ms\n", build_ms);
    std::printf("first paint (GUI)           %8.1f ms\n", paint_ms);
    std::printf("zoom to the whole run (GUI) %8.1f ms\n", fit_all_ms);
    std::printf(
        "RESULT trace_open events=%zu load_s=%.2f gui_build_ms=%.1f first_paint_ms=%.1f "
        "fit_all_ms=%.1f longest_gui_gap_ms=%lld\n",
        result->trace.origin.raw_events, load_s, build_ms, paint_ms, fit_all_ms,
        static_cast<long long>(longest_gap_ms));
    return 0;
}
