// libFuzzer target: a trace file (Chrome-trace JSON from PyTorch's profiler or ParallelDeck's
// export) through the streaming reader and the importer, then the imported run's export read
// back (the round trip). Any input must end in a trace or a BadInput, never a crash, a hang,
// a leak or undefined behaviour.
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <string>

#include "pd/error.h"
#include "pd/exports.h"
#include "pd/metrics.h"
#include "pd/trace_import.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    // The reader takes files (plain or gzip): one scratch file per fuzzing process.
    static const std::string path = "/tmp/pd_fuzz_trace_" + std::to_string(getpid()) + ".json";
    if (FILE* f = std::fopen(path.c_str(), "wb")) {
        std::fwrite(data, 1, size, f);
        std::fclose(f);
    }
    try {
        const pd::Trace trace = pd::import_traces({path});
        (void)pd::compute_metrics(trace, 0);
        (void)pd::imported_summary_json(trace);
        // What was read exports, and the export reads back to the same rows and events.
        pd::write_text_file(path, pd::chrome_trace_json(trace));
        const pd::Trace again = pd::import_traces({path});
        if (again.devices != trace.devices || again.events.size() != trace.events.size())
            __builtin_trap();
    } catch (const pd::BadInput&) {
    }
    return 0;
}
