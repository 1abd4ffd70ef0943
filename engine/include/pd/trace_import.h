// Reading a learner's own runs: Chrome-trace JSON written by PyTorch's profiler (Kineto's
// traces of GPU runs with NCCL, and the older autograd profiler's CPU traces), one file per
// rank, plain or gzipped, and ParallelDeck's own exports. Each file becomes one device row of
// the same Trace the engine produces, so the timeline, the metrics and the exports serve an
// imported run as they serve the engine's. What a trace does not record stays unknown.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <utility>
#include <vector>

#include "pd/error.h"
#include "pd/trace.h"

namespace pd {

enum class ClockAlignment {
    // trace_clock where every file's times are on its host's clock (Kineto), else
    // first_collective (the older profiler counts from each rank's own start).
    automatic,
    // Every rank's times on its trace's own clock (Kineto: baseTimeNanoseconds + ts), shifted
    // together so the earliest event of all starts at 0: right when the ranks' clocks agree.
    trace_clock,
    // Each rank shifted so its first collective ends when rank 0's does (a collective cannot
    // finish on one rank before the others joined it): for ranks on hosts whose clocks drift.
    first_collective,
};

// What one file may hold, by default: its JSON text (a .gz's once inflated) and one string or
// number in it. A trace of a million events is some 150-260 MB of text, and its longest
// strings (kernel names, call stacks) a few kB: the limits leave room for ten times that, and
// stop a small .gz that inflates to gigabytes as soon as it passes them.
inline constexpr std::uint64_t kDefaultMaxTraceFileBytes = std::uint64_t(2) << 30;     // 2 GiB
inline constexpr std::uint64_t kDefaultMaxTraceStringBytes = std::uint64_t(16) << 20;  // 16 MiB
// The most ranks an import reads (a world size, or a rank, past it is refused): some ten
// times the largest jobs trained today.
inline constexpr int kMaxImportWorldSize = 1 << 20;  // 1,048,576

struct TraceImportOptions {
    ClockAlignment alignment = ClockAlignment::automatic;
    // Called now and then with the bytes read so far over all files (compressed bytes for a
    // .gz) and their total; return false to cancel (the import then throws Cancelled).
    std::function<bool(std::uint64_t done, std::uint64_t total)> progress;
    // A file whose JSON text passes max_file_bytes (inflating stops there), or with a string
    // or number longer than max_string_bytes, is refused with ImportLimitExceeded.
    std::uint64_t max_file_bytes = kDefaultMaxTraceFileBytes;
    std::uint64_t max_string_bytes = kDefaultMaxTraceStringBytes;
};

// A file past one of TraceImportOptions' limits: a BadInput naming the file, the limit and its
// figure; limit() says which, so a front end can say how to raise it.
class ImportLimitExceeded : public BadInput {
  public:
    enum class Limit { file_bytes, string_bytes };
    ImportLimitExceeded(std::string path, const std::string& reason, Limit limit, const char* file,
                        int line)
        : BadInput(std::move(path), reason, file, line), limit_(limit) {}
    Limit limit() const { return limit_; }

  private:
    Limit limit_;
};

// Reads `paths` (one per rank) into one Trace with trace.origin.imported set. Ranks come from
// each trace's distributedInfo, else from a "rank<N>" in the file name, else the order given.
// Throws BadInput naming the file (and the byte offset, for malformed JSON) when a file cannot
// be read, is not JSON, is not a Chrome trace, holds an event that ends before it starts,
// claims a rank outside its world size (or past kMaxImportWorldSize), or two files claim the
// same rank; ImportLimitExceeded past the options' limits; Cancelled when the progress
// callback asked for it.
Trace import_traces(const std::vector<std::string>& paths, const TraceImportOptions& options = {});

// The summary of an imported run as JSON: files and ranks, steps, busy and idle per rank,
// exposed and overlapped communication, collectives with bytes and bandwidth, and, as null
// with the reason, every figure the traces do not record.
std::string imported_summary_json(const Trace& trace);

}  // namespace pd
