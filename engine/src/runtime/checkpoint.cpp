#include "runtime/checkpoint.h"

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>

#include "pd/atomic_file.h"
#include "pd/error.h"
#include "pd/model.h"
#include "pd/optimizer.h"

namespace pd {

namespace fs = std::filesystem;
using nlohmann::json;

namespace {

constexpr const char* kFormat = "paralleldeck-checkpoint";

std::uint64_t fnv1a64(const char* data, std::size_t n, std::uint64_t h = 1469598103934665603ull) {
    for (std::size_t i = 0; i < n; ++i) {
        h ^= static_cast<unsigned char>(data[i]);
        h *= 1099511628211ull;
    }
    return h;
}

std::string hex(std::uint64_t v) {
    char buf[17];
    std::snprintf(buf, sizeof buf, "%016llx", static_cast<unsigned long long>(v));
    return buf;
}

json model_json(const RunConfig& config) {
    const ModelShape s = model_shape(config);
    return {{"model", std::string(name_of(config.model))},
            {"layers", s.layers},
            {"width", s.width},
            {"input_dim", s.input_dim},
            {"classes", s.classes},
            {"heads", s.heads},
            {"seq_len", s.seq_len},
            {"experts", s.experts},
            {"parameters", ParamLayout::build(s).total}};
}

int moments_of(const RunConfig& config) {
    return OptimizerSettings::from(config).moments();
}

}  // namespace

std::vector<StateSlice> slices_to_write(const std::vector<StateSlice>& held) {
    // Group the copies of each range; split a range held n times into n pieces, piece i
    // written from its i-th holder (lowest device first).
    std::map<std::pair<std::size_t, std::size_t>, std::vector<StateSlice>> copies;
    for (const StateSlice& s : held) copies[{s.begin, s.count}].push_back(s);
    std::vector<StateSlice> out;
    for (auto& [range, holders] : copies) {
        std::sort(holders.begin(), holders.end(),
                  [](const StateSlice& a, const StateSlice& b) { return a.device < b.device; });
        const std::size_t n = holders.size(), count = range.second;
        for (std::size_t i = 0; i < n; ++i) {
            const std::size_t lo = count * i / n, hi = count * (i + 1) / n;
            if (hi == lo) continue;
            StateSlice piece = holders[i];
            piece.begin += lo;
            piece.count = hi - lo;
            piece.params += lo;
            piece.moments += lo;
            out.push_back(piece);
        }
    }
    std::sort(out.begin(), out.end(), [](const StateSlice& a, const StateSlice& b) {
        return a.device < b.device || (a.device == b.device && a.begin < b.begin);
    });
    return out;
}

std::string checkpoint_step_dir(const std::string& root, int step) {
    char name[32];
    std::snprintf(name, sizeof name, "step-%06d", step);
    return (fs::path(root) / name).string();
}

std::string checkpoint_staging_dir(const std::string& root, int step) {
    return checkpoint_step_dir(root, step) + ".partial";
}

CheckpointFile write_checkpoint_file(const std::string& path, const std::vector<StateSlice>& slices,
                                     int moments) {
    CheckpointFile f;
    f.file = fs::path(path).filename().string();
    std::ofstream out(path, std::ios::binary | std::ios::trunc);
    if (!out) throw Error("cannot write checkpoint file '" + path + "'", __FILE__, __LINE__);
    std::uint64_t h = 1469598103934665603ull;
    const auto put = [&](const float* data, std::size_t count) {
        const auto* bytes = reinterpret_cast<const char*>(data);
        out.write(bytes, static_cast<std::streamsize>(count * sizeof(float)));
        h = fnv1a64(bytes, count * sizeof(float), h);
        f.bytes += count * sizeof(float);
    };
    for (const StateSlice& s : slices) {
        put(s.params, s.count);
        for (int j = 0; j < moments; ++j)
            put(s.moments + static_cast<std::size_t>(j) * s.stride, s.count);
        f.slices.emplace_back(s.begin, s.count);
    }
    out.flush();
    if (!out) throw Error("writing checkpoint file '" + path + "' failed", __FILE__, __LINE__);
    f.fnv1a64 = h;
    return f;
}

void commit_checkpoint(const std::string& root, int step, const RunConfig& config,
                       const std::vector<CheckpointFile>& files) {
    json meta = {
        {"format", kFormat},
        {"version", kCheckpointFormatVersion},
        {"step", step},
        {"model", model_json(config)},
        {"optimizer",
         {{"kind", std::string(name_of(config.optimizer))}, {"moments", moments_of(config)}}},
        {"written_by",
         {{"strategy", std::string(name_of(config.strategy))},
          {"devices", config.devices},
          {"precision", std::string(name_of(config.precision))},
          {"seed", config.seed}}}};
    json list = json::array();
    for (const CheckpointFile& f : files) {
        json slices = json::array();
        for (const auto& [begin, count] : f.slices)
            slices.push_back({{"begin", begin}, {"count", count}});
        list.push_back({{"file", f.file},
                        {"bytes", f.bytes},
                        {"fnv1a64", hex(f.fnv1a64)},
                        {"slices", slices}});
    }
    meta["files"] = list;
    const std::string staging = checkpoint_staging_dir(root, step);
    {
        AtomicFile out((fs::path(staging) / "metadata.json").string());
        out.stream() << meta.dump(1) << "\n";
        out.commit();
    }
    std::error_code ec;
    fs::rename(staging, checkpoint_step_dir(root, step), ec);
    if (ec)
        throw Error("cannot move checkpoint '" + staging + "' into place: " + ec.message(),
                    __FILE__, __LINE__);
}

void check_checkpoint_targets(const RunConfig& config, int first_step, const std::string& what) {
    if (config.checkpoint_every <= 0) return;
    for (int s = first_step + 1; s <= config.steps; ++s) {
        if (s % config.checkpoint_every != 0) continue;
        const std::string dir = checkpoint_step_dir(config.checkpoint_dir, s);
        std::error_code ec;
        if (fs::exists(dir, ec))
            throw BadInput(what,
                           "'" + dir +
                               "' already holds a checkpoint, and checkpoints are never "
                               "overwritten: choose another --checkpoint-dir or remove it",
                           __FILE__, __LINE__);
    }
}

LoadedCheckpoint read_checkpoint(const std::string& where, const RunConfig& config,
                                 const std::string& what) {
    const auto fail = [&](const std::string& file, const std::string& why) -> void {
        throw BadInput(what, "'" + file + "': " + why, __FILE__, __LINE__);
    };
    std::error_code ec;
    fs::path dir(where);
    if (!fs::is_directory(dir, ec)) fail(where, "is not a checkpoint directory");
    if (!fs::exists(dir / "metadata.json", ec)) {
        // A root: its newest complete step directory.
        std::string newest;
        for (const auto& entry : fs::directory_iterator(dir, ec)) {
            const std::string name = entry.path().filename().string();
            if (name.rfind("step-", 0) == 0 && name.find('.') == std::string::npos &&
                fs::exists(entry.path() / "metadata.json", ec))
                newest = std::max(newest, name);
        }
        if (newest.empty()) fail(where, "holds no checkpoint (no step-N/metadata.json)");
        dir /= newest;
    }
    const std::string meta_path = (dir / "metadata.json").string();
    json meta;
    {
        std::ifstream in(meta_path);
        try {
            meta = json::parse(in);
        } catch (const json::exception& e) {
            fail(meta_path, std::string("is not valid JSON (") + e.what() + ")");
        }
    }
    try {
        if (meta.value("format", std::string()) != kFormat)
            fail(meta_path,
                 "is not a ParallelDeck checkpoint (format is not '" + std::string(kFormat) + "')");
        const int version = meta.at("version").get<int>();
        if (version > kCheckpointFormatVersion)
            fail(meta_path, "was written by a newer format (version " + std::to_string(version) +
                                "; this build reads up to " +
                                std::to_string(kCheckpointFormatVersion) + ")");
        const json want = model_json(config);
        for (const auto& [key, value] : want.items())
            if (meta.at("model").at(key) != value)
                fail(meta_path, "is from another model: its " + key + " is " +
                                    meta.at("model").at(key).dump() + ", this run's " +
                                    value.dump());
        const std::string kind = meta.at("optimizer").at("kind").get<std::string>();
        if (kind != name_of(config.optimizer))
            fail(meta_path, "holds " + kind + " state; this run's optimizer is " +
                                std::string(name_of(config.optimizer)));
        LoadedCheckpoint c;
        c.dir = dir.string();
        c.step = meta.at("step").get<int>();
        c.strategy = meta.at("written_by").at("strategy").get<std::string>();
        c.devices = meta.at("written_by").at("devices").get<int>();
        const std::size_t total = want.at("parameters").get<std::size_t>();
        const int moments = meta.at("optimizer").at("moments").get<int>();
        c.params.assign(total, 0.0f);
        c.moments.assign(static_cast<std::size_t>(moments), std::vector<float>(total, 0.0f));
        std::vector<char> covered(total, 0);
        for (const json& f : meta.at("files")) {
            const std::string name = f.at("file").get<std::string>();
            if (name.find('/') != std::string::npos || name.empty() || name[0] == '.')
                fail(meta_path, "names a file outside its directory ('" + name + "')");
            const std::string path = (dir / name).string();
            std::ifstream in(path, std::ios::binary);
            if (!in) fail(path, "is missing");
            std::vector<char> bytes((std::istreambuf_iterator<char>(in)),
                                    std::istreambuf_iterator<char>());
            const std::size_t expected = f.at("bytes").get<std::size_t>();
            if (bytes.size() != expected)
                fail(path, "is truncated or altered: " + std::to_string(bytes.size()) + " of " +
                               std::to_string(expected) + " bytes");
            if (hex(fnv1a64(bytes.data(), bytes.size())) != f.at("fnv1a64").get<std::string>())
                fail(path, "is corrupted: its contents do not match the checksum in metadata.json");
            std::size_t at = 0;
            for (const json& s : f.at("slices")) {
                const std::size_t begin = s.at("begin").get<std::size_t>();
                const std::size_t count = s.at("count").get<std::size_t>();
                if (begin + count > total || begin + count < begin)
                    fail(path, "holds parameters past the model's " + std::to_string(total));
                const std::size_t need =
                    count * sizeof(float) * (1 + static_cast<std::size_t>(moments));
                if (at + need > bytes.size()) fail(path, "is shorter than its slices say");
                std::memcpy(c.params.data() + begin, bytes.data() + at, count * sizeof(float));
                at += count * sizeof(float);
                for (int j = 0; j < moments; ++j) {
                    std::memcpy(c.moments[static_cast<std::size_t>(j)].data() + begin,
                                bytes.data() + at, count * sizeof(float));
                    at += count * sizeof(float);
                }
                for (std::size_t i = begin; i < begin + count; ++i) {
                    if (covered[i]) fail(path, "holds parameter " + std::to_string(i) + " twice");
                    covered[i] = 1;
                }
            }
        }
        const auto gap = std::find(covered.begin(), covered.end(), 0);
        if (gap != covered.end())
            fail(meta_path, "leaves parameter " + std::to_string(gap - covered.begin()) +
                                " unsaved (a device's file is missing from it)");
        return c;
    } catch (const json::exception& e) {
        fail(meta_path, std::string("is malformed (") + e.what() + ")");
    }
    return {};
}

}  // namespace pd
