// Imported runs: each file read as one rank (or, for ParallelDeck's own export, the run's
// every device), ranks ordered and put on one time axis, into the Trace the engine produces.
#include "pd/trace_import.h"

#include <algorithm>
#include <cctype>
#include <climits>
#include <filesystem>
#include <optional>
#include <set>

#include "import/rank_trace.h"
#include "import/raw_trace.h"
#include "pd/error.h"

namespace pd {

namespace {

// "trace_rank3.json.gz", "worker-rank_12.pt.trace.json" -> "3", "12": the digits (all of
// them) after the first "rank" (any case) followed by digits, an optional '_' or '-' between;
// empty when the name has none.
std::string rank_digits_in_file_name(const std::string& path) {
    const std::string name = std::filesystem::path(path).filename().string();
    const auto lower = [](char c) {
        return static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    };
    const auto digit = [](char c) { return c >= '0' && c <= '9'; };
    for (std::size_t i = 0; i + 4 < name.size(); ++i) {
        if (lower(name[i]) != 'r' || lower(name[i + 1]) != 'a' || lower(name[i + 2]) != 'n' ||
            lower(name[i + 3]) != 'k')
            continue;
        std::size_t j = i + 4;
        if (name[j] == '_' || name[j] == '-') ++j;
        std::size_t end = j;
        while (end < name.size() && digit(name[end])) ++end;
        if (end > j) return name.substr(j, end - j);
    }
    return {};
}

// The rank a file's name gives, or -1; refused past kMaxImportWorldSize (however many digits).
int rank_from_file_name(const std::string& path) {
    std::string digits = rank_digits_in_file_name(path);
    if (digits.empty()) return -1;
    const std::string shown = digits;
    digits.erase(0, std::min(digits.find_first_not_of('0'), digits.size() - 1));
    if (digits.size() > 9 || std::stol(digits) >= kMaxImportWorldSize)
        PD_THROW(BadInput, path,
                 "the rank " + shown + " in its name is past the " +
                     std::to_string(kMaxImportWorldSize) + " ranks an import reads");
    return static_cast<int>(std::stol(digits));
}

void add_once(std::vector<std::string>& list, const std::string& line) {
    if (std::find(list.begin(), list.end(), line) == list.end()) list.push_back(line);
}

struct FileRun {
    std::string path;
    import::RankTrace rank;
    std::size_t raw_events = 0;
    int sort_rank = 0;
};

}  // namespace

Trace import_traces(const std::vector<std::string>& paths, const TraceImportOptions& options) {
    if (paths.empty()) PD_THROW(BadInput, "trace import", "no file was given");
    std::uint64_t total = 0;
    std::vector<std::uint64_t> sizes;
    for (const auto& p : paths) {
        std::error_code ec;
        const auto size = std::filesystem::file_size(p, ec);
        if (ec) PD_THROW(BadInput, p, "cannot be read (" + ec.message() + ")");
        sizes.push_back(size);
        total += size;
    }

    std::vector<FileRun> files;
    std::uint64_t done_before = 0;
    for (std::size_t i = 0; i < paths.size(); ++i) {
        const import::ReadProgress progress = [&](std::uint64_t done) {
            return !options.progress || options.progress(done_before + done, total);
        };
        import::RawTraceFile raw = import::read_raw_trace(
            paths[i], progress, {options.max_file_bytes, options.max_string_bytes});
        done_before += sizes[i];
        FileRun f;
        f.path = paths[i];
        f.raw_events = raw.events.size();
        try {
            f.rank = import::json_string(raw.other_data, "producer") == "ParallelDeck"
                         ? import::read_parallel_deck_trace(raw)
                         : import::read_pytorch_trace(raw);
        } catch (const nlohmann::json::exception& e) {
            PD_THROW(BadInput, paths[i], std::string("unexpected content: ") + e.what());
        }
        if (f.rank.events.empty())
            PD_THROW(BadInput, paths[i],
                     "holds no event this reader can draw (no GPU kernels, CPU ops or "
                     "ParallelDeck events among its " +
                         std::to_string(raw.events.size()) + " events)");
        files.push_back(std::move(f));
    }
    if (options.progress && !options.progress(total, total))
        PD_THROW(Cancelled, "the import was cancelled");

    // A rank is below its job's world size, and both within what an import reads.
    int world = 0;  // the job's, as the files say: the largest
    for (const auto& f : files) {
        if (f.rank.world_size > kMaxImportWorldSize)
            PD_THROW(BadInput, f.path,
                     "says the job has " + std::to_string(f.rank.world_size) +
                         " ranks (distributedInfo.world_size), past the " +
                         std::to_string(kMaxImportWorldSize) + " an import reads");
        world = std::max(world, f.rank.world_size);
    }

    // Rank order: distributedInfo's rank, else the file name's, else the order given.
    std::set<int> seen;
    for (std::size_t i = 0; i < files.size(); ++i) {
        auto& f = files[i];
        int rank = f.rank.devices.size() == 1 ? f.rank.devices[0].rank : -1;
        const bool named = rank < 0;
        if (rank < 0 && f.rank.devices.size() == 1) rank = rank_from_file_name(f.path);
        if (rank >= 0 && f.rank.devices.size() == 1) {
            const std::string from = named ? " (from its name)" : " (distributedInfo.rank)";
            if (world > 0 && rank >= world)
                PD_THROW(
                    BadInput, f.path,
                    "claims rank " + std::to_string(rank) + from + " in a job of " +
                        std::to_string(world) + " ranks" +
                        (f.rank.world_size == world ? std::string()
                                                    : std::string(" (another file's world_size)")) +
                        ": its ranks are 0 to " + std::to_string(world - 1));
            if (rank >= kMaxImportWorldSize)
                PD_THROW(BadInput, f.path,
                         "claims rank " + std::to_string(rank) + from + ", past the " +
                             std::to_string(kMaxImportWorldSize) + " ranks an import reads");
            if (!seen.insert(rank).second)
                PD_THROW(BadInput, f.path,
                         "claims rank " + std::to_string(rank) +
                             ", as another file given does: give each rank once");
            f.rank.devices[0].rank = rank;
        }
        f.sort_rank = rank >= 0 ? rank : (1 << 20) + static_cast<int>(i);
    }
    std::stable_sort(files.begin(), files.end(),
                     [](const FileRun& a, const FileRun& b) { return a.sort_rank < b.sort_rank; });

    Trace t;
    TraceOrigin& o = t.origin;
    o.imported = true;
    bool own_only = true;
    for (const auto& f : files) {
        own_only = own_only && f.rank.own_export;
        if (o.producer.empty())
            o.producer = f.rank.producer;
        else if (o.producer != f.rank.producer)
            o.producer += " + " + f.rank.producer;
        o.world_size = std::max(o.world_size, f.rank.world_size);
        if (o.distributed_backend.empty()) o.distributed_backend = f.rank.distributed_backend;
        o.raw_events += f.raw_events;
        for (const auto& u : f.rank.unknown) add_once(o.unknown, u);
        for (const auto& n : f.rank.notes) add_once(o.notes, n);
    }
    if (files.size() == 1) {
        t.clock = files[0].rank.clock;
        t.link = files[0].rank.link;
    }
    t.backend = files[0].rank.backend;

    // Shifts onto one axis: per file, what is added to its absolute times. Wide integers: a
    // file's times may sit anywhere in +-kMaxAbsTimeNs, so shift and origin may not fit 64 bits.
    __extension__ typedef __int128 Wide;  // GCC and Clang's 128-bit integer
    std::vector<Wide> shift(files.size(), 0);
    o.clock_alignment =
        own_only ? "the run's own clock"
                 : "each trace's own clock (Kineto: baseTimeNanoseconds + ts), all shifted "
                   "together so the first event starts at 0";
    bool shared_clock = true;
    for (const auto& f : files) shared_clock = shared_clock && f.rank.shared_clock;
    ClockAlignment alignment = options.alignment;
    if (alignment == ClockAlignment::automatic)
        alignment = shared_clock ? ClockAlignment::trace_clock : ClockAlignment::first_collective;
    if (!shared_clock && alignment == ClockAlignment::trace_clock)
        o.clock_alignment =
            "each rank's own profiler start at 0 (these traces share no clock: "
            "align on the first collective to compare ranks)";
    if (alignment == ClockAlignment::first_collective && files.size() > 1) {
        auto first_end = [](const FileRun& f) -> std::optional<std::int64_t> {
            const CollectiveRecord* first = nullptr;
            for (const auto& c : f.rank.collectives)
                if (!first || c.start_ns < first->start_ns) first = &c;
            return first ? std::optional<std::int64_t>(first->end_ns) : std::nullopt;
        };
        const auto anchor = first_end(files[0]);
        o.aligned_on_first_collective = anchor.has_value();
        int aligned = 0;
        for (std::size_t i = 1; i < files.size() && anchor; ++i)
            if (auto e = first_end(files[i])) {
                shift[i] = Wide(*anchor) - Wide(*e);
                ++aligned;
            }
        o.clock_alignment =
            anchor ? "each rank shifted so its first collective ends when the first rank's "
                     "does (" +
                         std::to_string(aligned) + " of " + std::to_string(files.size() - 1) +
                         " other ranks had one)"
                   : "each trace's own clock: the first rank has no collective to align on";
    }
    bool any = false;
    Wide origin = 0;
    for (std::size_t i = 0; i < files.size(); ++i)
        for (const auto& e : files[i].rank.events) {
            const Wide start = Wide(e.start_ns) + shift[i];
            origin = any ? std::min(origin, start) : start;
            any = true;
        }
    if (own_only) origin = 0;  // the run's own time axis, as exported

    int next_device = 0;
    std::size_t all_events = 0;
    for (const auto& f : files) all_events += f.rank.events.size();
    t.events.reserve(all_events);
    for (std::size_t i = 0; i < files.size(); ++i) {
        auto& f = files[i];
        const int base = next_device;
        const Wide add = shift[i] - origin;
        // Every time on the shared axis within 4e18 ns of its zero (a century): what the
        // metrics and the timeline compute from them cannot overflow.
        auto place = [&f, add](std::int64_t time) {
            constexpr Wide kLimit = Wide(2) * import::kMaxAbsTimeNs;
            const Wide placed = Wide(time) + add;
            if (placed > kLimit || placed < -kLimit)
                PD_THROW(BadInput, f.path,
                         "its times lie more than a century from the other files' once aligned");
            return static_cast<std::int64_t>(placed);
        };
        for (const auto& d : f.rank.devices) {
            std::string name = d.name;
            if (!f.rank.own_export) {
                name = (d.rank >= 0 ? "rank " + std::to_string(d.rank) : "rank ?") +
                       (name.empty() ? std::string() : " (" + name + ")") + " · " +
                       std::filesystem::path(f.path).filename().string();
            }
            t.device_names.push_back(name);
            t.capacity_bytes.push_back(d.capacity_bytes);
            t.peak_reserved_bytes.push_back(d.peak_reserved_bytes);
            o.files.push_back(f.path);
            o.ranks.push_back(d.rank);
            ++next_device;
        }
        for (auto& e : f.rank.events) {
            e.device += base;
            if (e.peer >= 0 && f.rank.own_export)
                e.peer = e.peer < (1 << 16) ? e.peer + base : -1;  // no such device
            e.start_ns = place(e.start_ns);
            e.end_ns = place(e.end_ns);
            if (e.flow_id) e.flow_id += static_cast<std::uint64_t>(base) << 40;
            t.events.push_back(std::move(e));
        }
        for (auto& c : f.rank.collectives) {
            c.device += base;
            c.start_ns = place(c.start_ns);
            c.end_ns = place(c.end_ns);
            t.collectives.push_back(std::move(c));
        }
        for (auto& m : f.rank.memory) {
            m.device += base;
            m.t_ns = place(m.t_ns);
            t.memory.push_back(m);
        }
        // Steps: the longest list stands for the run (ranks profile the same steps).
        if (f.rank.steps.size() > t.steps.size()) {
            t.steps = f.rank.steps;
            o.profiler_steps = f.rank.profiler_steps;
        }
    }
    t.devices = next_device;
    if (own_only) {
        o.world_size = t.devices;
        o.unknown.clear();
    }
    std::stable_sort(t.events.begin(), t.events.end(),
                     [](const TraceEvent& a, const TraceEvent& b) {
                         if (a.device != b.device) return a.device < b.device;
                         if (a.stream != b.stream) return a.stream < b.stream;
                         return a.start_ns < b.start_ns;
                     });
    std::stable_sort(t.memory.begin(), t.memory.end(),
                     [](const MemorySample& a, const MemorySample& b) { return a.t_ns < b.t_ns; });
    return t;
}

}  // namespace pd
