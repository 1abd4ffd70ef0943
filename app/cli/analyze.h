// `paralleldeck-run analyze FILE...`: reads PyTorch profiler traces (one per rank) or a
// ParallelDeck export, prints the imported run's figures and writes its summary JSON.
#pragma once

namespace pd::cli {

// argv[0] is "analyze". Exit codes: 0 success, 2 bad input (a file that cannot be read or
// is not a trace), 1 a summary that cannot be written.
int analyze_main(int argc, char** argv);

}  // namespace pd::cli
