// paralleldeck-bench import: synthetic Kineto traces of N events over R ranks (kernels with
// their runtime launches, NCCL all-reduces with message sizes, profiler steps), written to
// disk and read back by the importer: the load time, events per second and MB per second; then
// rows of 1k, 10k and 100k small rank files, the import's and the metrics' time for each.
#pragma once

#include <string>
#include <vector>

namespace pd::cli {

struct ImportBenchOptions {
    long long events = 1'000'000;  // over all ranks
    int ranks = 4;
    int steps = 20;
    int rounds = 3;  // timed imports; the median is the figure
    bool gzip = false;
    std::string out;  // keep the traces in this folder (else a temporary one, removed)
    // Then one row per count of ranks: that many small traces (one a rank, events_per_rank
    // events over 3 steps each), imported and their metrics computed once: what the count of
    // files and devices costs, apart from the events.
    std::vector<int> many_ranks = {1000, 10000, 100000};
    long long events_per_rank = 30;
};

int bench_import(const ImportBenchOptions& options);

}  // namespace pd::cli
