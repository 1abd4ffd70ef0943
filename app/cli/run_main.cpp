// paralleldeck-run: one training run from flags or a scenario file; `paralleldeck-run analyze
// FILE...` reads traces of the learner's own runs instead (analyze.h).
// Exit codes: 0 success, 1 failure, 2 bad input, 3 out of memory, 130 interrupted.
#include <atomic>
#include <chrono>
#include <csignal>
#include <iostream>
#include <string>
#include <thread>

#include "analyze.h"
#include "cli_options.h"
#include "pd/error.h"
#include "pd/exports.h"
#include "pd/metrics.h"
#include "pd/run.h"
#include "report.h"

namespace {
std::atomic<bool> g_interrupted{false};
extern "C" void on_sigint(int) {
    g_interrupted.store(true);
}
}  // namespace

int main(int argc, char** argv) {
    using namespace pd;
    if (argc > 1 && std::string(argv[1]) == "analyze") return cli::analyze_main(argc - 1, argv + 1);
    cli::RunRequest req;
    try {
        int exit_code = 0;
        auto parsed = cli::parse_run_args(argc, argv, exit_code);
        if (!parsed) return exit_code;
        req = std::move(*parsed);
    } catch (const BadInput& e) {
        std::cerr << "paralleldeck-run: " << e.what() << "\n";
        return 2;
    }

    try {
        if (!req.dump_dir.empty()) dump_run_inputs(req.config, req.dump_dir);
    } catch (const Error& e) {
        std::cerr << "paralleldeck-run: --dump-dir: " << e.what() << "\n";
        return 2;
    }

    Run run(req.config);
    std::signal(SIGINT, on_sigint);
    std::atomic<bool> finished{false};
    std::thread watcher([&] {
        while (!finished.load()) {
            if (g_interrupted.load()) {
                run.cancel();
                break;
            }
            std::this_thread::sleep_for(std::chrono::milliseconds(50));
        }
    });
    const RunResult result = run.execute([&](const RunProgress& p) {
        if (req.quiet || p.phase != "training" || p.steps_done == 0) return;
        std::cerr << "\rstep " << p.steps_done << "/" << p.steps_total << "  loss " << p.loss
                  << std::flush;
        if (p.steps_done == p.steps_total) std::cerr << "\n";
    });
    finished.store(true);
    watcher.join();

    const RunMetrics metrics = compute_metrics(result.trace, req.config);
    try {
        if (!req.trace_path.empty())
            write_text_file(req.trace_path, chrome_trace_json(result.trace));
        if (!req.summary_path.empty())
            write_text_file(req.summary_path, summary_json(req.config, result, metrics));
    } catch (const Error& e) {
        std::cerr << "paralleldeck-run: " << e.what() << "\n";
        return 1;
    }
    cli::print_report(std::cout, req.config, result, metrics);
    switch (result.status) {
        case RunStatus::ok:
            return 0;
        case RunStatus::out_of_memory:
            std::cerr << "paralleldeck-run: " << result.error << "\n";
            return 3;
        case RunStatus::cancelled:
            std::cerr << "paralleldeck-run: interrupted\n";
            return 130;
        case RunStatus::failed:
            std::cerr << "paralleldeck-run: " << result.error << "\n";
            return 1;
    }
    return 1;
}
