// paralleldeck-run: one training run from flags or a scenario file; `paralleldeck-run analyze
// FILE...` reads traces of the learner's own runs instead (analyze.h).
// Exit codes: 0 success, 1 the run failed, 2 bad input (flags, scenario, an output path that
// cannot be written), 3 out of memory (a device's, or the host's before or during the run),
// 130 interrupted by SIGINT, 143 by SIGTERM (the trace and summary so far are written).
#include <atomic>
#include <chrono>
#include <csignal>
#include <fstream>
#include <iostream>
#include <new>
#include <optional>
#include <sstream>
#include <string>
#include <thread>

#include "analyze.h"
#include "cli_options.h"
#include "pd/atomic_file.h"
#include "pd/device_group.h"
#include "pd/error.h"
#include "pd/expectations.h"
#include "pd/exports.h"
#include "pd/memory_plan.h"
#include "pd/metrics.h"
#include "pd/run.h"
#include "pd/scenario.h"
#include "report.h"

namespace {
std::atomic<int> g_signal{0};
// The first SIGINT or SIGTERM stops the run and keeps what it recorded; a second one, while
// that is written, ends the process at once.
extern "C" void on_stop_signal(int signo) {
    int none = 0;
    if (!g_signal.compare_exchange_strong(none, signo)) {
        std::signal(signo, SIG_DFL);
        std::raise(signo);
    }
}

int run_main(int argc, char** argv);
}  // namespace

// --check-claims: the scenario's claims, checked as the bundled-scenario test and Show me do.
static int check_claims(const pd::cli::RunRequest& req) {
    using namespace pd;
    Expectations expectations;
    try {
        std::ifstream in(req.scenario_path, std::ios::binary);
        std::ostringstream text;
        text << in.rdbuf();
        RunConfig scratch;
        ConfigSources sources;
        apply_scenario_json(text.str(), req.scenario_path, scratch, sources, &expectations);
    } catch (const BadInput& e) {
        std::cerr << "paralleldeck-run: " << e.what() << "\n";
        return 2;
    }
    if (expectations.empty()) {
        std::cerr << "paralleldeck-run: --check-claims: " << req.scenario_path
                  << " has no expect claims\n";
        return 2;
    }
    // A comparison run's keys are validated as the scenario's are: a bad one is bad input.
    // (Except one a claim expects refused: its refusal is the evidence.)
    try {
        for (std::size_t i = 0; i < expectations.variants.size(); ++i)
            if (!variant_refusal(req.config, expectations, i, req.scenario_path))
                variant_config(req.config, expectations, i, req.scenario_path);
    } catch (const BadInput& e) {
        std::cerr << "paralleldeck-run: " << e.what() << "\n";
        return 2;
    }
    const RunEvidence run = run_for_evidence(req.config);
    std::vector<RunEvidence> variants;
    for (std::size_t i = 0; i < expectations.variants.size(); ++i)
        variants.push_back(variant_evidence(req.config, expectations, i, req.scenario_path));
    if (req.comm_log) cli::print_comm_log(std::cout, run.result.trace);
    bool all = true;
    for (const ClaimOutcome& o : check_expectations(expectations, run, variants)) {
        all = all && o.passed;
        std::cout << (o.passed ? "PASS " : "FAIL ") << (o.timed ? "(timed) " : "") << o.plain
                  << ": measured " << (o.measured_words.empty() ? o.measured : o.measured_words)
                  << (o.spread.empty() ? "" : " [" + o.spread + "]") << "\n";
    }
    return all ? 0 : 4;
}

int main(int argc, char** argv) {
    // No path ends on a bare exception: the host running out of memory is exit 3 like a
    // device's; anything else is named.
    try {
        return run_main(argc, argv);
    } catch (const std::bad_alloc&) {
        std::cerr << "paralleldeck-run: the host ran out of memory\n";
        return 3;
    } catch (const std::exception& e) {
        std::cerr << "paralleldeck-run: internal error: " << e.what() << "\n";
        return 1;
    }
}

namespace {

int run_main(int argc, char** argv) {
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

    // Where the results go is checked before the run, not found unwritable after it.
    try {
        if (!req.trace_path.empty()) check_output_path(req.trace_path, "--trace");
        if (!req.summary_path.empty()) check_output_path(req.summary_path, "--summary");
    } catch (const Error& e) {
        std::cerr << "paralleldeck-run: " << e.what() << "\n";
        return 2;
    }
    if (req.check_claims) return check_claims(req);
    if (const std::string why = host_memory_shortage(req.config); !why.empty()) {
        std::cerr << "paralleldeck-run: " << why << "\n";
        return 3;
    }
    if (!req.dump_dir.empty() &&
        (!req.config.resume_dir.empty() || req.config.resume_from_step > 0)) {
        // The dump holds the seeded initial weights; a resumed run starts from a checkpoint's.
        std::cerr << "paralleldeck-run: --dump-dir: a resumed run (--resume, resume_from) starts "
                     "from a checkpoint, not the initial weights a dump holds: dump the run "
                     "that wrote it instead\n";
        return 2;
    }
    try {
        if (!req.dump_dir.empty()) dump_run_inputs(req.config, req.dump_dir);
    } catch (const Error& e) {
        std::cerr << "paralleldeck-run: --dump-dir: " << e.what() << "\n";
        return 2;
    }

    std::optional<Run> run;
    try {
        run.emplace(req.config);
    } catch (const BadInput& e) {
        std::cerr << "paralleldeck-run: " << e.what() << "\n";
        return 2;
    }
    struct sigaction action {};
    action.sa_handler = on_stop_signal;
    sigemptyset(&action.sa_mask);
    sigaction(SIGINT, &action, nullptr);
    sigaction(SIGTERM, &action, nullptr);
    const bool profile = req.verbose && req.config.backend == BackendKind::cpu;
    if (profile) cpu_profile_products(true);
    std::atomic<bool> finished{false};
    std::thread watcher([&] {
        while (!finished.load()) {
            if (g_signal.load() != 0) {
                if (!req.quiet)
                    std::cerr << "\nparalleldeck-run: stopping; the trace and summary so far are "
                                 "kept (signal again to quit at once)\n";
                run->cancel();
                break;
            }
            std::this_thread::sleep_for(std::chrono::milliseconds(50));
        }
    });
    const RunResult result = run->execute([&](const RunProgress& p) {
        if (req.quiet || p.phase != "training" || p.steps_done == 0) return;
        std::cerr << "\rstep " << p.steps_done << "/" << p.steps_total << "  loss " << p.loss
                  << std::flush;
        if (p.steps_done == p.steps_total) std::cerr << "\n";
    });
    finished.store(true);
    watcher.join();

    const RunMetrics metrics = compute_metrics(result.trace, req.config);
    try {
        if (!req.trace_path.empty()) write_chrome_trace_file(req.trace_path, result.trace);
        if (!req.summary_path.empty())
            write_text_file(req.summary_path, summary_json(req.config, result, metrics));
    } catch (const Error& e) {
        std::cerr << "paralleldeck-run: " << e.what() << "\n";
        return 1;
    }
    if (req.comm_log) cli::print_comm_log(std::cout, result.trace);
    cli::print_report(std::cout, req.config, result, metrics);
    if (profile) {
        cpu_profile_products(false);
        cli::print_products(std::cout, cpu_product_profile(), result.trace.intra_op_threads,
                            req.config.devices);
    }
    switch (result.status) {
        case RunStatus::ok:
            return 0;
        case RunStatus::out_of_memory:
            std::cerr << "paralleldeck-run: " << result.error << "\n";
            return 3;
        case RunStatus::cancelled: {
            const int signo = g_signal.load();
            std::cerr << "paralleldeck-run: interrupted"
                      << (signo == SIGTERM  ? " (SIGTERM)"
                          : signo == SIGINT ? " (SIGINT)"
                                            : "")
                      << "\n";
            return 128 + (signo ? signo : SIGINT);
        }
        case RunStatus::failed:
            std::cerr << "paralleldeck-run: " << result.error << "\n";
            return 1;
    }
    return 1;
}

}  // namespace
