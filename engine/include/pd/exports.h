// What leaves a run: Chrome Trace Event JSON (opens in Perfetto), the summary JSON, and .npy
// dumps of the initial weights and batches so another framework can replay the numbers.
#pragma once

#include <cstddef>
#include <ostream>
#include <string>
#include <vector>

#include "pd/metrics.h"
#include "pd/run.h"

namespace pd {

std::string chrome_trace_json(const Trace& trace);
// The same JSON written as it is made, never held whole (a long run's trace is gigabytes).
void write_chrome_trace(std::ostream& out, const Trace& trace);
// Into `path` whole or not at all (atomic_file.h); throws Error naming the path.
void write_chrome_trace_file(const std::string& path, const Trace& trace);
std::string summary_json(const RunConfig& config, const RunResult& result,
                         const RunMetrics& metrics);

// A little-endian float32 (or int32) .npy file. Throws Error naming the path on failure.
void write_npy(const std::string& path, const std::vector<std::size_t>& shape, const float* data);
void write_npy(const std::string& path, const std::vector<std::size_t>& shape, const int* data);
// Initial parameters (one file per tensor) and every step's global batch, plus a manifest.
void dump_run_inputs(const RunConfig& config, const std::string& directory);

// Replaces `path` whole or not at all (atomic_file.h); throws Error naming the path.
void write_text_file(const std::string& path, const std::string& text);

}  // namespace pd
