// A Chrome-trace file as the importer reads it, before it means anything: its events in a
// compact form (names and keys interned, only the argument keys some reader looks at), and
// the few small top-level objects (distributedInfo, otherData, deviceProperties) as JSON.
// Read by streaming the file through a SAX parser, never as one DOM of the whole file.
#pragma once

#include <nlohmann/json.hpp>

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "pd/trace_import.h"

namespace pd::import {

// Strings seen many times (event names, categories, thread ids) are stored once.
class StringTable {
  public:
    int intern(std::string_view s);
    const std::string& at(int id) const { return strings_[static_cast<std::size_t>(id)]; }
    // The id of `s` if it was ever interned, else -1.
    int find(std::string_view s) const;

  private:
    std::vector<std::string> strings_;
    std::unordered_map<std::string, int> ids_;
};

struct RawArg {
    int key = -1;   // interned
    int text = -1;  // interned, for a string value; -1 for a number
    double number = 0;
};

struct RawEvent {
    char ph = 0;  // 'X', 'B', 'E', 'i', 'I', 'C', 'M', 's', 'f', ...
    int name = -1, cat = -1, pid = -1, tid = -1, id = -1;  // interned; -1 when absent
    double ts = 0, dur = 0;
    bool has_ts = false, has_dur = false;
    std::uint32_t first_arg = 0, arg_count = 0;  // into RawTraceFile::args
    std::uint64_t offset = 0;                    // byte of the file where the event ends
};

struct RawTraceFile {
    std::string path;
    StringTable strings;
    std::vector<RawEvent> events;
    std::vector<RawArg> args;
    nlohmann::json distributed_info;     // null when absent
    nlohmann::json other_data;           // null when absent
    nlohmann::json device_properties;    // null when absent
    std::optional<double> base_time_ns;  // Kineto's baseTimeNanoseconds
    std::uint64_t bytes = 0;             // uncompressed bytes read

    const RawArg* arg(const RawEvent& e, int key) const;
    std::optional<double> number(const RawEvent& e, int key) const;
    // The argument as text (a number is printed); empty when absent.
    std::string text(const RawEvent& e, int key) const;
    const std::string& str(int id) const;  // "" for -1
};

// Numbers from a file, clamped into range (a 1e300 in a file must not be undefined behaviour
// when it becomes an integer); NaN reads as 0.
std::int64_t to_int64(double v);
int to_int(double v);
std::size_t to_size(double v);  // negative reads as 0
// Times are held within +-2e18 ns (63 years either side of the clock's zero: Kineto's epoch
// times fit), so a start plus a duration, or two such times' difference, cannot overflow.
inline constexpr std::int64_t kMaxAbsTimeNs = 2'000'000'000'000'000'000;
std::int64_t ns_of_us(double us);       // clamped into +-kMaxAbsTimeNs
std::int64_t clamp_time_ns(double ns);  // the same for a time already in ns
// A duration in ns, held within [0, 1e15] (11.5 days): sums of many stay far from overflow.
std::int64_t duration_ns_of_us(double us);
// A member of a JSON object, or the fallback when absent or of another type.
double json_number(const nlohmann::json& object, const char* key, double fallback);
std::string json_string(const nlohmann::json& object, const char* key);

// Progress over the compressed (or plain) bytes of the file; returns false to cancel.
using ReadProgress = std::function<bool(std::uint64_t done_bytes)>;

// What one file may hold (TraceImportOptions' limits).
struct ReadLimits {
    std::uint64_t max_file_bytes = kDefaultMaxTraceFileBytes;
    std::uint64_t max_string_bytes = kDefaultMaxTraceStringBytes;
};
// Arrays and objects nested deeper than this are refused (a Chrome trace nests some five).
inline constexpr std::size_t kMaxJsonDepth = 1000;

// Streams `path` (plain or gzip) into a RawTraceFile. Throws BadInput naming the file and the
// byte offset on unreadable, malformed, truncated or foreign JSON, a NUL byte, data after the
// gzip stream, an event that ends before it starts, or nesting past kMaxJsonDepth;
// ImportLimitExceeded past `limits`; Cancelled on request.
RawTraceFile read_raw_trace(const std::string& path, const ReadProgress& progress = {},
                            const ReadLimits& limits = {});

}  // namespace pd::import
