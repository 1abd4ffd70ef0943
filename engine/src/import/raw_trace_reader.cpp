// Streams a Chrome-trace file through nlohmann's SAX parser: a gzip-aware stream buffer feeds
// it (zlib's gzread reads plain files as they are), and the handler keeps each event's few
// fields as it closes, so a file of a million events never becomes one DOM.
#include <zlib.h>

#include <algorithm>
#include <array>
#include <climits>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <istream>
#include <streambuf>

#include "import/raw_trace.h"
#include "pd/error.h"
#include "pd/memory_category.h"

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

class GzStreamBuf : public std::streambuf {
  public:
    GzStreamBuf(const std::string& path, const ReadProgress& progress)
        : path_(path), progress_(progress) {
        file_ = gzopen(path.c_str(), "rb");
        if (!file_) PD_THROW(BadInput, path, "cannot be opened");
        gzbuffer(file_, 1 << 18);
    }
    ~GzStreamBuf() override {
        if (file_) gzclose(file_);
    }
    // Uncompressed bytes handed to the parser so far.
    std::uint64_t position() const {
        return consumed_ + static_cast<std::uint64_t>(gptr() - eback());
    }

  protected:
    int_type underflow() override {
        if (gptr() < egptr()) return traits_type::to_int_type(*gptr());
        consumed_ += static_cast<std::uint64_t>(egptr() - eback());
        if (progress_ && !progress_(static_cast<std::uint64_t>(gzoffset(file_))))
            PD_THROW(Cancelled, "reading " + path_ + " was cancelled");
        const int n = gzread(file_, buffer_.data(), static_cast<unsigned>(buffer_.size()));
        if (n < 0) {
            int code = 0;
            const char* why = gzerror(file_, &code);
            PD_THROW(BadInput, path_,
                     "the gzip stream is damaged at byte " + std::to_string(consumed_) + " (" +
                         (why ? why : "zlib error") + ")");
        }
        if (n == 0) {
            int code = 0;
            gzerror(file_, &code);
            if (code != Z_OK && code != Z_STREAM_END)
                PD_THROW(BadInput, path_,
                         "the gzip stream is truncated at byte " + std::to_string(consumed_));
            setg(buffer_.data(), buffer_.data(), buffer_.data());
            return traits_type::eof();
        }
        setg(buffer_.data(), buffer_.data(), buffer_.data() + n);
        return traits_type::to_int_type(*gptr());
    }

  private:
    std::string path_;
    const ReadProgress& progress_;
    gzFile file_ = nullptr;
    std::array<char, 1 << 18> buffer_{};
    std::uint64_t consumed_ = 0;
};

using json = nlohmann::json;

class Handler : public nlohmann::json_sax<json> {
  public:
    Handler(RawTraceFile& out, const GzStreamBuf& buf) : out_(out), buf_(buf) {}

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
    const GzStreamBuf& buf_;
    std::vector<Ctx> stack_;
    std::string key_, dom_key_;
    RawEvent event_;
    json* capture_target_ = nullptr;
    std::vector<json*> dom_;
    bool saw_events_ = false;
};

}  // namespace

RawTraceFile read_raw_trace(const std::string& path, const ReadProgress& progress) {
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
        const std::size_t guess = std::min<std::size_t>(size / (gz ? 15 : 150), 50'000'000);
        out.events.reserve(guess);
        out.args.reserve(guess * 2);
    }
    GzStreamBuf buf(path, progress);
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
