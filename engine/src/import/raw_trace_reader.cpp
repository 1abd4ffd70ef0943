// Streams a Chrome-trace file through nlohmann's SAX parser: a gzip-aware stream buffer feeds
// it (inflating a .gz as it goes, within the read limits), and the handler keeps each event's few
// fields as it closes, so a file of a million events never becomes one DOM.
#include <zlib.h>

#include <algorithm>
#include <array>
#include <climits>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <istream>
#include <memory>
#include <streambuf>

#include "import/raw_trace.h"
#include "pd/error.h"
#include "pd/memory_category.h"
#include "pd/trace_import.h"
#include "pd/units.h"

namespace pd::import {

int StringTable::intern(std::string_view s) {
    auto it = ids_.find(std::string(s));
    if (it != ids_.end()) return it->second;
    const int id = static_cast<int>(strings_.size());
    strings_.emplace_back(s);
    ids_.emplace(strings_.back(), id);
    return id;
}

int StringTable::find(std::string_view s) const {
    auto it = ids_.find(std::string(s));
    return it == ids_.end() ? -1 : it->second;
}

const RawArg* RawTraceFile::arg(const RawEvent& e, int key) const {
    if (key < 0) return nullptr;
    for (std::uint32_t i = 0; i < e.arg_count; ++i) {
        const RawArg& a = args[e.first_arg + i];
        if (a.key == key) return &a;
    }
    return nullptr;
}

std::optional<double> RawTraceFile::number(const RawEvent& e, int key) const {
    const RawArg* a = arg(e, key);
    if (!a || a->text >= 0) return std::nullopt;
    return a->number;
}

std::string RawTraceFile::text(const RawEvent& e, int key) const {
    const RawArg* a = arg(e, key);
    if (!a) return {};
    if (a->text >= 0) return strings.at(a->text);
    const double v = a->number;
    if (v == static_cast<double>(static_cast<long long>(v)))
        return std::to_string(static_cast<long long>(v));
    return std::to_string(v);
}

const std::string& RawTraceFile::str(int id) const {
    static const std::string empty;
    return id < 0 ? empty : strings.at(id);
}

std::int64_t to_int64(double v) {
    if (std::isnan(v)) return 0;
    if (v >= 9.2e18) return INT64_MAX;
    if (v <= -9.2e18) return INT64_MIN;
    return static_cast<std::int64_t>(v);
}

int to_int(double v) {
    if (std::isnan(v)) return 0;
    return static_cast<int>(std::clamp(v, -2147483648.0, 2147483647.0));
}

std::size_t to_size(double v) {
    if (std::isnan(v) || v <= 0) return 0;
    if (v >= 1.8e19) return SIZE_MAX;
    return static_cast<std::size_t>(v);
}

std::int64_t clamp_time_ns(double ns) {
    if (std::isnan(ns)) return 0;
    const double limit = static_cast<double>(kMaxAbsTimeNs);
    return static_cast<std::int64_t>(std::round(std::clamp(ns, -limit, limit)));
}

std::int64_t duration_ns_of_us(double us) {
    return std::clamp<std::int64_t>(clamp_time_ns(us * 1000.0), 0, 1'000'000'000'000'000);
}

std::int64_t ns_of_us(double us) {
    return clamp_time_ns(us * 1000.0);
}

double json_number(const nlohmann::json& object, const char* key, double fallback) {
    if (!object.is_object()) return fallback;
    auto it = object.find(key);
    return it != object.end() && it->is_number() ? it->get<double>() : fallback;
}

std::string json_string(const nlohmann::json& object, const char* key) {
    if (!object.is_object()) return {};
    auto it = object.find(key);
    return it != object.end() && it->is_string() ? it->get<std::string>() : std::string();
}

namespace {

// The argument keys some reader looks at; every other argument is dropped as it is read.
bool kept_arg(std::string_view key) {
    static const std::array<std::string_view, 32> keys = {
        "External id",     "correlation",    "stream",     "device",      "Collective name",
        "In msg nelems",   "Out msg nelems", "Group size", "dtype",       "name",
        "labels",          "sort_index",     "Device Id",  "Device Type", "Bytes",
        "Total Allocated", "Total Reserved", "step",       "microbatch",  "stage",
        "layer",           "phase",          "step_index", "chunk",       "peer",
        "bytes",           "message",        "op",         "ranks",       "label",
        "flow_id",         "flow_source"};
    if (std::find(keys.begin(), keys.end(), key) != keys.end()) return true;
    return memory_category_from_name(key).has_value();
}

// A file whose text passes the limit: for a gzip file, said where the inflating stopped.
[[noreturn]] void refuse_file_size(const std::string& path, bool gzip, std::uint64_t limit,
                                   std::uint64_t compressed_at) {
    throw ImportLimitExceeded(
        path,
        std::string(gzip ? "inflates to" : "holds") + " more than " +
            format_bytes(static_cast<double>(limit)) + " of JSON text, the limit of one file" +
            (gzip ? " (inflating stopped there, at byte " + std::to_string(compressed_at) +
                        " of the compressed file)"
                  : std::string()),
        ImportLimitExceeded::Limit::file_bytes, __FILE__, __LINE__);
}

// What the parser is handed, checked byte by byte as it is handed: a NUL (never in JSON text;
// nlohmann's lexer would read it as the end of the input), and a string or number longer than
// the limit (the lexer holds a whole token in memory before the handler sees it).
class TokenGuard {
  public:
    TokenGuard(const std::string& path, std::uint64_t max_token_bytes)
        : path_(path), limit_(max_token_bytes) {}

    // `p[0..n)` are the file's text from byte `at` on.
    void scan(const char* p, std::size_t n, std::uint64_t at) {
        if (const void* nul = std::memchr(p, '\0', n))
            PD_THROW(BadInput, path_,
                     "a NUL byte at byte " +
                         std::to_string(
                             at + static_cast<std::uint64_t>(static_cast<const char*>(nul) - p)) +
                         ": JSON text holds none (was the file cut off and padded with zeros?)");
        std::size_t i = 0;
        while (i < n) {
            if (in_string_) {
                if (escape_) {
                    escape_ = false;
                    ++i;
                    if (++run_ > limit_) too_long("string", at + i - 1);
                    continue;
                }
                // The run of plain characters up to the next quote or backslash.
                const std::size_t from = i;
                while (i < n && p[i] != '"' && p[i] != '\\') ++i;
                run_ += i - from;
                if (run_ > limit_) too_long("string", at + i - (run_ - limit_));
                if (i == n) break;
                if (p[i] == '"') {
                    in_string_ = false;
                    run_ = 0;
                } else {
                    escape_ = true;
                    if (++run_ > limit_) too_long("string", at + i);
                }
                ++i;
                continue;
            }
            const char c = p[i];
            if (c == '"') {
                in_string_ = true;
                run_ = 0;
                start_ = at + i;
            } else if ((c >= '0' && c <= '9') || c == '-' || c == '+' || c == '.' || c == 'e' ||
                       c == 'E') {
                if (run_++ == 0) start_ = at + i;
                if (run_ > limit_) too_long("number", at + i);
            } else {
                run_ = 0;
            }
            ++i;
        }
    }

  private:
    [[noreturn]] void too_long(const char* what, std::uint64_t at) const {
        throw ImportLimitExceeded(
            path_,
            std::string("the JSON ") + what + " at byte " + std::to_string(start_) +
                " is longer than " + format_bytes(static_cast<double>(limit_)) +
                ", the limit of one string (stopped at byte " + std::to_string(at) + ")",
            ImportLimitExceeded::Limit::string_bytes, __FILE__, __LINE__);
    }

    const std::string& path_;
    std::uint64_t limit_;
    bool in_string_ = false, escape_ = false;
    std::uint64_t run_ = 0;    // bytes of the string or number being read
    std::uint64_t start_ = 0;  // where it began
};

// The file's text for the parser: a plain file as it is, a gzip file inflated a buffer at a
// time (with zlib's inflate, not gzread, which silently ignores what follows the last gzip
// member), so the limit on the text's size stops a small file that inflates to gigabytes as
// soon as it passes the limit, and nothing past it is inflated.
class TraceStreamBuf : public std::streambuf {
  public:
    // `size`: the file's size on disk (0 if unknown), to size the buffers of small files.
    TraceStreamBuf(const std::string& path, std::uint64_t size, const ReadProgress& progress,
                   const ReadLimits& limits)
        : path_(path),
          progress_(progress),
          limits_(limits),
          guard_(path_, limits.max_string_bytes) {
        file_ = std::fopen(path.c_str(), "rb");
        if (!file_) PD_THROW(BadInput, path, "cannot be opened");
        constexpr std::size_t kBuffer = 1 << 18;
        in_size_ = size > 0 && size < kBuffer ? static_cast<std::size_t>(size) + 1 : kBuffer;
        in_.reset(new char[in_size_]);
        fill_input();
        // Gzip's magic: 1f 8b.
        gzip_ = avail_ >= 2 && static_cast<unsigned char>(in_[0]) == 0x1f &&
                static_cast<unsigned char>(in_[1]) == 0x8b;
        if (gzip_) {
            out_size_ = kBuffer;
            out_.reset(new char[out_size_]);
            if (inflateInit2(&z_, 15 + 16) != Z_OK) PD_THROW(BadInput, path, "zlib cannot start");
            z_ready_ = true;
        }
    }
    ~TraceStreamBuf() override {
        if (z_ready_) inflateEnd(&z_);
        if (file_) std::fclose(file_);
    }
    TraceStreamBuf(const TraceStreamBuf&) = delete;
    TraceStreamBuf& operator=(const TraceStreamBuf&) = delete;

    // Uncompressed bytes handed to the parser so far.
    std::uint64_t position() const {
        return consumed_ + static_cast<std::uint64_t>(gptr() - eback());
    }

  protected:
    int_type underflow() override {
        if (gptr() < egptr()) return traits_type::to_int_type(*gptr());
        consumed_ += static_cast<std::uint64_t>(egptr() - eback());
        if (progress_ && !progress_(read_))
            PD_THROW(Cancelled, "reading " + path_ + " was cancelled");
        char* text = nullptr;
        const std::size_t n = gzip_ ? inflate_some(text) : read_some(text);
        if (n == 0) {
            setg(nullptr, nullptr, nullptr);
            return traits_type::eof();
        }
        if (consumed_ + n > limits_.max_file_bytes)
            refuse_file_size(path_, gzip_, limits_.max_file_bytes, read_);
        guard_.scan(text, n, consumed_);
        setg(text, text, text + n);
        return traits_type::to_int_type(*gptr());
    }

  private:
    // Tops up the input buffer (keeping what is unread); false at the end of the file.
    bool fill_input() {
        if (eof_) return false;
        if (next_ > 0 && avail_ > 0) std::memmove(in_.get(), in_.get() + next_, avail_);
        next_ = 0;
        if (avail_ == in_size_) return true;
        const std::size_t n = std::fread(in_.get() + avail_, 1, in_size_ - avail_, file_);
        if (n == 0) {
            if (std::ferror(file_))
                PD_THROW(BadInput, path_, "cannot be read at byte " + std::to_string(read_));
            eof_ = true;
            return false;
        }
        avail_ += n;
        read_ += n;
        return true;
    }
    // Byte offset in the file of the first unread input byte.
    std::uint64_t input_offset() const { return read_ - avail_; }

    // A plain file: the parser reads the input buffer itself.
    std::size_t read_some(char*& text) {
        if (avail_ == 0 && !fill_input()) return 0;
        text = in_.get() + next_;
        const std::size_t n = avail_;
        next_ += n;
        avail_ = 0;
        return n;
    }

    std::size_t inflate_some(char*& text) {
        text = out_.get();
        for (;;) {
            if (member_ended_) {
                // What follows a gzip member: nothing, or another member (gzip -c a b > c).
                if (avail_ < 2) fill_input();
                if (avail_ == 0) return 0;
                if (avail_ < 2 || static_cast<unsigned char>(in_[next_]) != 0x1f ||
                    static_cast<unsigned char>(in_[next_ + 1]) != 0x8b)
                    PD_THROW(BadInput, path_,
                             "trailing data after the gzip stream at byte " +
                                 std::to_string(input_offset()) +
                                 " of the compressed file (its JSON text ended at byte " +
                                 std::to_string(consumed_) + ")");
                inflateReset(&z_);
                member_ended_ = false;
            }
            if (avail_ == 0) fill_input();
            z_.next_in = reinterpret_cast<Bytef*>(in_.get() + next_);
            z_.avail_in = static_cast<uInt>(avail_);
            z_.next_out = reinterpret_cast<Bytef*>(out_.get());
            z_.avail_out = static_cast<uInt>(out_size_);
            const int rc = inflate(&z_, Z_NO_FLUSH);
            const std::size_t used = avail_ - z_.avail_in;
            next_ += used;
            avail_ -= used;
            const std::size_t produced = out_size_ - z_.avail_out;
            if (rc == Z_STREAM_END) {
                member_ended_ = true;
            } else if (rc != Z_OK && rc != Z_BUF_ERROR) {
                PD_THROW(BadInput, path_,
                         "the gzip stream is damaged at byte " + std::to_string(input_offset()) +
                             " of the compressed file (" + (z_.msg ? z_.msg : "zlib error") + ")");
            }
            if (produced > 0) return produced;
            if (!member_ended_ && avail_ == 0 && eof_)
                PD_THROW(BadInput, path_,
                         "the gzip stream is truncated at byte " + std::to_string(consumed_) +
                             " of its text (the compressed file ends at byte " +
                             std::to_string(read_) + ")");
        }
    }

    std::string path_;
    const ReadProgress& progress_;
    ReadLimits limits_;
    TokenGuard guard_;
    std::FILE* file_ = nullptr;
    bool gzip_ = false, z_ready_ = false, member_ended_ = false, eof_ = false;
    z_stream z_{};
    std::unique_ptr<char[]> in_, out_;  // left uninitialised: every byte is read before use
    std::size_t in_size_ = 0, out_size_ = 0;
    std::size_t next_ = 0, avail_ = 0;  // unread input: in_[next_, next_ + avail_)
    std::uint64_t read_ = 0;            // bytes read from the file
    std::uint64_t consumed_ = 0;        // text bytes handed out before the current buffer
};

using json = nlohmann::json;

class Handler : public nlohmann::json_sax<json> {
  public:
    Handler(RawTraceFile& out, const TraceStreamBuf& buf) : out_(out), buf_(buf) {}

    bool saw_events() const { return saw_events_; }

    bool null() override { return scalar(json(nullptr)); }
    bool boolean(bool v) override { return scalar(json(v)); }
    bool number_integer(number_integer_t v) override { return scalar(json(v)); }
    bool number_unsigned(number_unsigned_t v) override { return scalar(json(v)); }
    bool number_float(number_float_t v, const string_t&) override { return scalar(json(v)); }
    bool string(string_t& v) override { return scalar(json(std::move(v))); }
    bool binary(binary_t&) override { return scalar(json(nullptr)); }

    bool key(string_t& k) override {
        key_ = std::move(k);
        if (!stack_.empty() && stack_.back() == Ctx::capture) dom_key_ = key_;
        return true;
    }

    bool start_object(std::size_t) override { return open(false); }
    bool start_array(std::size_t) override { return open(true); }
    bool end_object() override { return close(); }
    bool end_array() override { return close(); }

    bool parse_error(std::size_t position, const std::string&,
                     const nlohmann::detail::exception& ex) override {
        std::string what = ex.what();
        // "[json.exception.parse_error.101] parse error at line 1, column 9: syntax error ..."
        if (auto colon = what.find(": "); colon != std::string::npos) what = what.substr(colon + 2);
        PD_THROW(BadInput, out_.path,
                 "not valid JSON at byte " + std::to_string(position > 0 ? position - 1 : 0) +
                     ": " + what);
    }

  private:
    enum class Ctx { root, events, event, args, capture, skip };

    [[noreturn]] void fail(const std::string& why) const {
        PD_THROW(BadInput, out_.path,
                 "byte " + std::to_string(buf_.position()) + ": traceEvents[" +
                     std::to_string(out_.events.size()) + "] " + why);
    }

    bool open(bool array) {
        // Each level costs the parser and this handler memory: a file of a billion '['s
        // must not take gigabytes. A Chrome trace nests some five levels.
        if (stack_.size() >= kMaxJsonDepth)
            PD_THROW(BadInput, out_.path,
                     "nests deeper than " + std::to_string(kMaxJsonDepth) +
                         " levels of arrays and objects at byte " +
                         std::to_string(buf_.position()));
        if (stack_.empty()) {
            // The JSON Array Format: the file is the event list itself.
            stack_.push_back(array ? Ctx::events : Ctx::root);
            if (array) saw_events_ = true;
            return true;
        }
        switch (stack_.back()) {
            case Ctx::root:
                if (key_ == "traceEvents") {
                    if (!array) PD_THROW(BadInput, out_.path, "traceEvents is not an array");
                    saw_events_ = true;
                    stack_.push_back(Ctx::events);
                } else if (key_ == "distributedInfo" || key_ == "otherData" ||
                           key_ == "deviceProperties") {
                    capture_target_ = key_ == "distributedInfo" ? &out_.distributed_info
                                      : key_ == "otherData"     ? &out_.other_data
                                                                : &out_.device_properties;
                    *capture_target_ = array ? json::array() : json::object();
                    dom_.assign(1, capture_target_);
                    stack_.push_back(Ctx::capture);
                } else {
                    stack_.push_back(Ctx::skip);
                }
                return true;
            case Ctx::events:
                if (array) fail("is not an object");
                event_ = RawEvent{};
                event_.first_arg = static_cast<std::uint32_t>(out_.args.size());
                stack_.push_back(Ctx::event);
                return true;
            case Ctx::event:
                stack_.push_back(key_ == "args" && !array ? Ctx::args : Ctx::skip);
                return true;
            case Ctx::capture: {
                json& parent = *dom_.back();
                json child = array ? json::array() : json::object();
                json* slot = parent.is_array() ? &parent.emplace_back(std::move(child))
                                               : &(parent[dom_key_] = std::move(child));
                dom_.push_back(slot);
                stack_.push_back(Ctx::capture);
                return true;
            }
            case Ctx::args:
            case Ctx::skip:
                stack_.push_back(Ctx::skip);
                return true;
        }
        return true;
    }

    bool close() {
        const Ctx ctx = stack_.back();
        stack_.pop_back();
        if (ctx == Ctx::event) {
            event_.arg_count = static_cast<std::uint32_t>(out_.args.size()) - event_.first_arg;
            event_.offset = buf_.position();
            if (event_.ph == 0) fail("has no \"ph\" (event type)");
            // A slice that ends before it starts: no reading of it is right (its step would
            // hold none of its work, its device would be busy for less than nothing).
            if (event_.has_dur && event_.dur < 0) {
                char dur[32];
                std::snprintf(dur, sizeof dur, "%g", event_.dur);
                fail((event_.name >= 0 ? "\"" + out_.strings.at(event_.name) + "\" " : "") +
                     "has a negative duration (\"dur\": " + dur + ")");
            }
            out_.events.push_back(event_);
        } else if (ctx == Ctx::capture) {
            dom_.pop_back();
        }
        return true;
    }

    int intern_value(const json& v) {
        if (v.is_string()) return out_.strings.intern(v.get_ref<const std::string&>());
        if (v.is_number_integer()) return out_.strings.intern(std::to_string(v.get<long long>()));
        if (v.is_number()) return out_.strings.intern(v.dump());
        return -1;
    }

    bool scalar(json v) {
        if (stack_.empty())
            PD_THROW(
                BadInput, out_.path,
                "not a Chrome trace: the file is one JSON value, not an object or array of events");
        switch (stack_.back()) {
            case Ctx::root:
                if (key_ == "baseTimeNanoseconds" && v.is_number())
                    out_.base_time_ns = v.get<double>();
                return true;
            case Ctx::events:
                fail("is not an object");
            case Ctx::event:
                event_field(std::move(v));
                return true;
            case Ctx::args:
                if (kept_arg(key_)) {
                    RawArg a;
                    a.key = out_.strings.intern(key_);
                    if (v.is_number())
                        a.number = v.get<double>();
                    else if (v.is_boolean())
                        a.number = v.get<bool>() ? 1 : 0;
                    else if (v.is_string())
                        a.text = out_.strings.intern(v.get_ref<const std::string&>());
                    else
                        return true;
                    out_.args.push_back(a);
                }
                return true;
            case Ctx::capture: {
                json& parent = *dom_.back();
                if (parent.is_array())
                    parent.push_back(std::move(v));
                else
                    parent[dom_key_] = std::move(v);
                return true;
            }
            case Ctx::skip:
                return true;
        }
        return true;
    }

    void event_field(json v) {
        const std::string& k = key_;
        if (k == "ph") {
            if (!v.is_string() || v.get_ref<const std::string&>().size() != 1)
                fail("has a \"ph\" that is not one letter");
            event_.ph = v.get_ref<const std::string&>()[0];
        } else if (k == "ts" || k == "dur") {
            if (!v.is_number()) fail("has a \"" + k + "\" that is not a number");
            (k == "ts" ? event_.ts : event_.dur) = v.get<double>();
            (k == "ts" ? event_.has_ts : event_.has_dur) = true;
        } else if (k == "name") {
            event_.name = intern_value(v);
        } else if (k == "cat") {
            event_.cat = intern_value(v);
        } else if (k == "pid") {
            event_.pid = intern_value(v);
        } else if (k == "tid") {
            event_.tid = intern_value(v);
        } else if (k == "id") {
            event_.id = intern_value(v);
        }
    }

    RawTraceFile& out_;
    const TraceStreamBuf& buf_;
    std::vector<Ctx> stack_;
    std::string key_, dom_key_;
    RawEvent event_;
    json* capture_target_ = nullptr;
    std::vector<json*> dom_;
    bool saw_events_ = false;
};

}  // namespace

RawTraceFile read_raw_trace(const std::string& path, const ReadProgress& progress,
                            const ReadLimits& limits) {
    std::error_code ec;
    if (!std::filesystem::is_regular_file(path, ec))
        PD_THROW(BadInput, path, "is not a readable file");
    RawTraceFile out;
    out.path = path;
    // Kineto writes some 150 bytes an event (a gzipped file some 15): room for them up front,
    // so a million events are not copied over and over as the list grows.
    const auto size = std::filesystem::file_size(path, ec);
    if (!ec) {
        std::uint8_t magic[2] = {0, 0};
        if (FILE* f = std::fopen(path.c_str(), "rb")) {
            if (std::fread(magic, 1, 2, f) != 2) magic[0] = 0;
            std::fclose(f);
        }
        const bool gz = magic[0] == 0x1f && magic[1] == 0x8b;
        if (!gz && size > limits.max_file_bytes)
            refuse_file_size(path, false, limits.max_file_bytes, 0);
        const std::size_t guess = std::min<std::size_t>(size / (gz ? 15 : 150), 50'000'000);
        out.events.reserve(guess);
        out.args.reserve(guess * 2);
    }
    TraceStreamBuf buf(path, ec ? 0 : size, progress, limits);
    std::istream in(&buf);
    Handler handler(out, buf);
    nlohmann::json::sax_parse(in, &handler, nlohmann::json::input_format_t::json, true);
    out.bytes = buf.position();
    if (!handler.saw_events())
        PD_THROW(BadInput, path,
                 "not a Chrome trace: the top level has no traceEvents array (is this a "
                 "PyTorch profiler or ParallelDeck trace?)");
    return out;
}

}  // namespace pd::import
