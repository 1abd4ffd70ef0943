#include "analyze.h"

#include <CLI/CLI.hpp>
#include <cmath>
#include <cstdio>
#include <iostream>
#include <string>
#include <tuple>
#include <vector>

#include "pd/error.h"
#include "pd/exports.h"
#include "pd/metrics.h"
#include "pd/trace_import.h"
#include "pd/units.h"

namespace pd::cli {

namespace {

std::string ms(double s) {
    char buf[32];
    std::snprintf(buf, sizeof buf, "%.3f ms", s * 1e3);
    return buf;
}

std::string fixed(double v, int digits) {
    char buf[32];
    std::snprintf(buf, sizeof buf, "%.*f", digits, v);
    return buf;
}

void print_summary(std::ostream& os, const Trace& t, const RunMetrics& m) {
    const TraceOrigin& o = t.origin;
    os << "Imported " << o.files.size() << " device" << (o.files.size() == 1 ? "" : "s") << " from "
       << o.producer << " (" << o.raw_events << " events read)\n";
    os << "  job: "
       << (o.world_size > 0 ? std::to_string(o.world_size) + " ranks" : "world size not recorded")
       << (o.distributed_backend.empty() ? "" : ", backend " + o.distributed_backend) << "\n";
    os << "  clock: " << o.clock_alignment << "\n";
    for (int d = 0; d < t.devices; ++d)
        os << "  device " << d << ": " << t.device_names[static_cast<std::size_t>(d)] << "\n";
    if (m.steps.empty()) {
        os << "steps: none marked (no ProfilerStep#)\n";
    } else {
        os << "steps: " << m.steps.size() << " (profiler steps";
        for (int s : o.profiler_steps) os << " " << s;
        os << "), median " << ms(m.median_step_time_s);
        if (m.figure_steps.empty())
            os << "; no step holds drawn work, so no figures over steps\n";
        else
            os << "; figures over steps " << m.figure_steps.first + 1 << "-"
               << m.figure_steps.last + 1 << "\n";
    }
    os << "per device: busy  idle  comm  exposed  overlapped\n";
    for (const auto& d : m.devices)
        os << "  " << d.device << ": " << fixed(100 * d.busy_fraction, 1) << "%  " << ms(d.idle_s)
           << "  " << ms(d.comm_s) << "  " << ms(d.exposed_comm_s) << "  "
           << ms(d.overlapped_comm_s) << "\n";
    os << "communication: exposed " << ms(m.exposed_comm_s) << ", overlapped "
       << ms(m.overlapped_comm_s) << " (summed over devices, HTA's definition)\n";
    if (!m.collectives.empty()) os << "collectives (per device):\n";
    for (const auto& c : m.collectives) {
        os << "  " << c.op << " x" << c.count << "  "
           << (c.bytes ? format_bytes(static_cast<double>(c.bytes))
                       : std::string("size not recorded"))
           << "  "
           << (c.ranks > 0 ? std::to_string(c.ranks) + " ranks"
                           : std::string("group size not recorded"))
           << "  mean " << ms(c.mean_time_s);
        if (c.bytes) os << "  algbw " << fixed(c.algbw_gbps, 2) << " GB/s";
        if (c.bytes && c.ranks > 0) os << "  busbw " << fixed(c.busbw_gbps, 2) << " GB/s";
        os << "\n";
    }
    for (const auto& u : o.unknown) os << "unknown: " << u << "\n";
    for (const auto& n : o.notes) os << "note: " << n << "\n";
}

// A default limit as the flag takes it: "2GiB", "16MiB".
std::string format_limit(std::uint64_t bytes) {
    if (bytes % (1u << 30) == 0) return std::to_string(bytes >> 30) + "GiB";
    if (bytes % (1u << 20) == 0) return std::to_string(bytes >> 20) + "MiB";
    return std::to_string(bytes);
}

}  // namespace

int analyze_main(int argc, char** argv) {
    CLI::App app{
        "paralleldeck-run analyze: read PyTorch profiler traces (Chrome-trace JSON, one file "
        "per rank, .json or .json.gz) or a ParallelDeck trace export, and print the same "
        "figures as for the engine's runs."};
    std::vector<std::string> files;
    std::string summary_path, align = "auto";
    bool quiet = false;
    app.add_option("files", files, "Trace files, one per rank")->required();
    app.add_option("--summary", summary_path, "Write the summary JSON here");
    app.add_option("--align", align,
                   "auto (default): the traces' clock where they share one (Kineto), else "
                   "first-collective | trace: the traces' own clocks | first-collective: each "
                   "rank shifted so its first collective ends when the first rank's does")
        ->check(CLI::IsMember({"auto", "trace", "first-collective"}));
    std::string max_file_size = format_limit(kDefaultMaxTraceFileBytes),
                max_string_size = format_limit(kDefaultMaxTraceStringBytes);
    app.add_option("--max-file-size", max_file_size,
                   "The most JSON text one file may hold, a .gz's once inflated (inflating "
                   "stops there and the file is refused), as 2GiB, 500MB or bytes")
        ->capture_default_str();
    app.add_option("--max-string-size", max_string_size,
                   "The longest string (or number) one file may hold, as 16MiB or bytes")
        ->capture_default_str();
    app.add_flag("--quiet", quiet, "No progress on stderr");
    try {
        app.parse(argc, argv);
    } catch (const CLI::ParseError& e) {
        return app.exit(e) == 0 ? 0 : 2;
    }
    TraceImportOptions options;
    for (const auto& [flag, text, limit] :
         {std::tuple{"--max-file-size", &max_file_size, &options.max_file_bytes},
          std::tuple{"--max-string-size", &max_string_size, &options.max_string_bytes}}) {
        const auto bytes = parse_byte_size(*text);
        if (!bytes || *bytes == 0) {
            std::cerr << "paralleldeck-run analyze: " << flag << " '" << *text
                      << "' is not a size such as 2GiB, 500MB or 1048576\n";
            return 2;
        }
        *limit = *bytes;
    }
    options.alignment = align == "first-collective" ? ClockAlignment::first_collective
                        : align == "trace"          ? ClockAlignment::trace_clock
                                                    : ClockAlignment::automatic;
    int last_percent = -1;
    if (!quiet)
        options.progress = [&](std::uint64_t done, std::uint64_t total) {
            const int percent = total ? static_cast<int>(100 * done / total) : 100;
            if (percent / 10 != last_percent / 10)
                std::cerr << "\rreading " << percent << "%" << std::flush;
            last_percent = percent;
            return true;
        };
    Trace trace;
    try {
        trace = import_traces(files, options);
    } catch (const ImportLimitExceeded& e) {
        if (!quiet) std::cerr << "\n";
        std::cerr << "paralleldeck-run analyze: " << e.what() << " (raise it with "
                  << (e.limit() == ImportLimitExceeded::Limit::file_bytes ? "--max-file-size"
                                                                          : "--max-string-size")
                  << ")\n";
        return 2;
    } catch (const Error& e) {
        if (!quiet) std::cerr << "\n";
        std::cerr << "paralleldeck-run analyze: " << e.what() << "\n";
        return 2;
    }
    if (!quiet) std::cerr << "\r            \r";
    print_summary(std::cout, trace, compute_metrics(trace, 0));
    try {
        if (!summary_path.empty()) write_text_file(summary_path, imported_summary_json(trace));
    } catch (const Error& e) {
        std::cerr << "paralleldeck-run analyze: " << e.what() << "\n";
        return 1;
    }
    return 0;
}

}  // namespace pd::cli
