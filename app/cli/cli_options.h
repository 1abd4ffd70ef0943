// The flags of `paralleldeck-run`, and how they combine with a scenario file: the scenario
// is read first, flags given on the command line override its keys.
#pragma once

#include <optional>
#include <string>

#include "pd/run_config.h"

namespace pd::cli {

struct RunRequest {
    RunConfig config;
    ConfigSources sources;
    std::string trace_path;
    std::string summary_path;
    std::string dump_dir;
    bool quiet = false;
    bool verbose = false;  // products by shape: kernel, GFLOP/s, fraction of the FMA peak
    bool comm_log = false;
    // --check-claims: run the scenario's `expect` claims as a card's Show me does and print each
    // outcome (exit 4 when one fails).
    bool check_claims = false;
    std::string scenario_path;  // each all-reduce's algorithm and why, as NCCL_DEBUG=INFO prints
};

// Returns the request, or nullopt with `exit_code` set when parsing ended the program (help:
// 0; a bad flag: 2, message already printed). Throws BadInput for bad values.
std::optional<RunRequest> parse_run_args(int argc, char** argv, int& exit_code);

}  // namespace pd::cli
