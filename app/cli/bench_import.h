// paralleldeck-bench import: synthetic Kineto traces of N events over R ranks (kernels with
// their runtime launches, NCCL all-reduces with message sizes, profiler steps), written to
// disk and read back by the importer: the load time, events per second and MB per second.
#pragma once

#include <string>

namespace pd::cli {

struct ImportBenchOptions {
    long long events = 1'000'000;  // over all ranks
    int ranks = 4;
    int steps = 20;
    int rounds = 3;  // timed imports; the median is the figure
    bool gzip = false;
    std::string out;  // keep the traces in this folder (else a temporary one, removed)
};

int bench_import(const ImportBenchOptions& options);

}  // namespace pd::cli
