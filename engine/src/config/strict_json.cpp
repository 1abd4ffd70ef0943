// Strict JSON: nlohmann's SAX parser building the document as its DOM parser does, and
// stopping at the first key an object already holds.
#include "pd/strict_json.h"

#include <set>
#include <utility>
#include <vector>

namespace pd {

namespace {

using nlohmann::json;

class StrictDomBuilder : public nlohmann::json_sax<json> {
  public:
    explicit StrictDomBuilder(json& root) : root_(root) {}

    const std::string& error() const { return error_; }

    bool null() override { return add(json(nullptr)); }
    bool boolean(bool v) override { return add(json(v)); }
    bool number_integer(number_integer_t v) override { return add(json(v)); }
    bool number_unsigned(number_unsigned_t v) override { return add(json(v)); }
    bool number_float(number_float_t v, const string_t&) override { return add(json(v)); }
    // A NUL (\u0000) is legal JSON but no text a user means: it would cut the string wherever
    // it is handed on as C text, and shows as nothing.
    bool string(string_t& v) override {
        if (v.find('\0') != string_t::npos) {
            error_ = "a NUL character (\\u0000) in the string at " + value_where();
            return false;
        }
        return add(json(std::move(v)));
    }
    bool binary(binary_t& v) override { return add(json::binary(std::move(v))); }

    bool start_object(std::size_t) override { return open(json::object()); }
    bool start_array(std::size_t) override { return open(json::array()); }
    bool end_object() override { return close(); }
    bool end_array() override { return close(); }

    bool key(string_t& k) override {
        Frame& f = frames_.back();
        if (k.find('\0') != string_t::npos) {
            error_ = "a NUL character (\\u0000) in a key of " + where();
            return false;
        }
        if (!f.keys.insert(k).second) {
            error_ = "duplicate key '" + k + "' in " + where();
            return false;
        }
        f.key = std::move(k);
        return true;
    }

    bool parse_error(std::size_t, const std::string&,
                     const nlohmann::detail::exception& ex) override {
        error_ = ex.what();
        return false;
    }

  private:
    struct Frame {
        json* value = nullptr;
        std::set<std::string> keys;  // an object's keys so far
        std::string key;             // an object's key of the value being read
    };

    // The value being read goes where the innermost open container says.
    json* place(json v) {
        if (frames_.empty()) {
            root_ = std::move(v);
            return &root_;
        }
        Frame& f = frames_.back();
        if (f.value->is_array()) return &f.value->emplace_back(std::move(v));
        return &((*f.value)[f.key] = std::move(v));
    }
    bool add(json v) {
        place(std::move(v));
        return true;
    }
    bool open(json empty) {
        json* slot = place(std::move(empty));
        frames_.push_back({slot, {}, {}});
        return true;
    }
    bool close() {
        frames_.pop_back();
        return true;
    }

    // The innermost open object as a path: "the top-level object", "cards[0]", "a.b[2]".
    std::string where() const {
        std::string path;
        for (std::size_t i = 0; i + 1 < frames_.size(); ++i) {
            const Frame& f = frames_[i];
            if (f.value->is_array())
                path += "[" + std::to_string(f.value->size() - 1) + "]";
            else
                path += (path.empty() ? "" : ".") + f.key;
        }
        return path.empty() ? "the top-level object" : path;
    }

    // Where the value being read goes: "cards[0].prompt", "tags[2]", "the top-level value".
    std::string value_where() const {
        if (frames_.empty()) return "the top-level value";
        const Frame& f = frames_.back();
        std::string inner = where();
        if (frames_.size() == 1) inner.clear();
        if (f.value->is_array()) return inner + "[" + std::to_string(f.value->size()) + "]";
        return inner.empty() ? f.key : inner + "." + f.key;
    }

    json& root_;
    std::vector<Frame> frames_;
    std::string error_;
};

}  // namespace

nlohmann::json parse_strict_json(std::string_view text, std::string* error) {
    json root;
    StrictDomBuilder builder(root);
    bool ok = false;
    try {
        ok = json::sax_parse(text.begin(), text.end(), &builder);
    } catch (const json::exception& e) {
        if (error) *error = e.what();
        return json();
    }
    if (!ok) {
        if (error) *error = builder.error();
        return json();
    }
    if (error) error->clear();
    return root;
}

}  // namespace pd
