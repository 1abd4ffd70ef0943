#include "pd/scenario.h"

#include <climits>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <sstream>

#include "pd/error.h"
#include "pd/expectations.h"
#include "pd/strict_json.h"
#include "pd/units.h"

namespace pd {

using nlohmann::json;

namespace {

std::string canonical_key(std::string key) {
    for (char& ch : key)
        if (ch == '-') ch = '_';
    return key;
}

struct KeyReader {
    const json& value;
    std::string spelled;  // "scenario key 'devices' in file.json"

    [[noreturn]] void fail(const std::string& reason) const {
        throw BadInput(spelled, reason, __FILE__, __LINE__);
    }
    // A whole number that fits an int; its range is validate()'s to judge, so each key has
    // one rule and one message whether it came from a flag or a scenario file.
    int integer() const {
        if (!value.is_number_integer()) fail("must be an integer, got " + value.dump());
        const bool fits =
            value.is_number_unsigned()
                ? value.get<unsigned long long>() <= static_cast<unsigned long long>(INT_MAX)
                : value.get<long long>() >= INT_MIN && value.get<long long>() <= INT_MAX;
        if (!fits) fail("is out of range (got " + value.dump() + ")");
        return value.get<int>();
    }
    double number() const {
        if (!value.is_number()) fail("must be a number, got " + value.dump());
        return value.get<double>();
    }
    bool boolean() const {
        if (!value.is_boolean()) fail("must be true or false, got " + value.dump());
        return value.get<bool>();
    }
    std::string text() const {
        if (!value.is_string()) fail("must be a string, got " + value.dump());
        return value.get<std::string>();
    }
    // A number is Gb/s; a string may carry its unit ("100Gb/s", "12.5GB/s").
    double link_speed_gbit() const {
        if (value.is_number()) return value.get<double>();
        if (value.is_string()) {
            if (auto gbit = parse_link_speed_gbit(value.get<std::string>())) return *gbit;
        }
        fail(std::string("must be ") + kLinkSpeedForms + ", got " + value.dump());
    }
    std::size_t bytes() const {
        if (value.is_number_integer() && value.get<long long>() >= 0)
            return static_cast<std::size_t>(value.get<long long>());
        if (value.is_string()) {
            if (auto b = parse_byte_size(value.get<std::string>())) return *b;
        }
        fail("must be a size such as 65536, \"64KiB\" or \"1GiB\", got " + value.dump());
    }
};

// dataset: {"files": [n, ...] | N with "examples": E, "batch": B, "shard": policy,
// "api": input API, "repeat": bool}, or "none" (a comparison without one).
void parse_dataset(const KeyReader& r, DatasetConfig& d) {
    if (r.value == "none") {
        d = DatasetConfig{};
        return;
    }
    if (!r.value.is_object() || !r.value.contains("files") || !r.value.contains("batch"))
        r.fail(
            "must be an object {\"files\": [examples per file, ...] or a count with "
            "\"examples\": N, \"batch\": B, \"shard\": auto|file|data|off, \"api\": "
            "distribute_dataset|from_function, \"repeat\": true|false}, got " +
            r.value.dump());
    DatasetConfig out;
    for (const auto& [k, v] : r.value.items()) {
        const KeyReader f{v, r.spelled + " (" + k + ")"};
        if (k == "files" && v.is_array()) {
            for (const auto& n : v) out.file_examples.push_back(KeyReader{n, f.spelled}.integer());
            if (out.file_examples.empty()) f.fail("must name at least one file");
        } else if (k == "files") {
            const int files = f.integer();
            if (!r.value.contains("examples"))
                f.fail("as a count needs \"examples\", the total split evenly over the files");
            const int total = KeyReader{r.value["examples"], r.spelled + " (examples)"}.integer();
            if (files < 1 || files > 4096) f.fail("must be between 1 and 4096 files");
            if (total < files) f.fail("holds fewer examples than files");
            for (int i = 0; i < files; ++i)
                out.file_examples.push_back(total / files + (i < total % files ? 1 : 0));
        } else if (k == "examples") {
            if (!r.value["files"].is_number_integer())
                f.fail("goes with a file count; with a list of files, each entry is its size");
        } else if (k == "batch") {
            out.batch = f.integer();
        } else if (k == "shard") {
            const auto p = shard_policy_from_name(f.text());
            if (!p)
                f.fail("unknown shard policy '" + f.text() + "' (available: " + kShardPolicyNames +
                       ")");
            out.shard = *p;
        } else if (k == "api") {
            const auto a = input_api_from_name(f.text());
            if (!a)
                f.fail("unknown input API '" + f.text() + "' (available: " + kInputApiNames + ")");
            out.api = *a;
        } else if (k == "repeat") {
            out.repeat = f.boolean();
        } else {
            f.fail("is not a dataset setting (known: files, examples, batch, shard, api, repeat)");
        }
    }
    constexpr long long kMaxExamples = 1 << 24;
    long long total = 0;
    for (int n : out.file_examples) total += n;
    if (total > kMaxExamples)
        r.fail("holds " + std::to_string(total) + " examples, more than the " +
               std::to_string(kMaxExamples) + " a run reads");
    d = std::move(out);
}

}  // namespace

void apply_scenario_json(std::string_view json_text, std::string_view origin, RunConfig& c,
                         ConfigSources& sources, Expectations* expectations) {
    // The deck loader's rule too (pd/strict_json.h): a key given twice is refused, not read as
    // its last value. A syntax error, or a number past double (1e999), is refused as well.
    std::string error;
    const json root = parse_strict_json(json_text, &error);
    if (!error.empty())
        throw BadInput(std::string(origin), "is not valid JSON: " + error, __FILE__, __LINE__);
    if (!root.is_object())
        throw BadInput(std::string(origin), "must hold a JSON object of settings", __FILE__,
                       __LINE__);
    // "seq-len" and "seq_len" are one key: given both, the file holds it twice too.
    std::map<std::string, std::string> spelled_as;
    for (const auto& [raw_key, value] : root.items()) {
        const auto [it, fresh] = spelled_as.try_emplace(canonical_key(raw_key), raw_key);
        if (!fresh)
            throw BadInput(std::string(origin),
                           "is not valid JSON: duplicate key '" + raw_key +
                               "' in the top-level object (also given as '" + it->second + "')",
                           __FILE__, __LINE__);
    }
    // A named machine first, whatever the keys' order: the scenario's own keys override it.
    for (const auto& [raw_key, value] : root.items()) {
        if (canonical_key(raw_key) != "cluster") continue;
        const KeyReader r{value, "scenario key '" + raw_key + "' in " + std::string(origin)};
        sources["cluster"] = r.spelled;
        const std::string name = r.text();
        if (!apply_cluster_preset(name, c.cluster, c.link))
            r.fail("unknown cluster '" + name + "' (available: " + kClusterPresetNames + ")");
        // What the preset set is named as its doing, unless a key of the file sets it again.
        for (const char* set : {"devices_per_node", "intra_link", "link_gbps", "link_latency_us",
                                "inter_transport", "inter_gbps", "inter_latency_us", "socket_gbps",
                                "socket_latency_us", "devices_per_nic", "nvls"})
            sources[set] = r.spelled + " (the preset's " + set + ")";
    }
    for (const auto& [raw_key, value] : root.items()) {
        const std::string key = canonical_key(raw_key);
        const KeyReader r{value, "scenario key '" + raw_key + "' in " + std::string(origin)};
        if (key == "cluster") continue;
        sources[key] = r.spelled;
        if (key == "strategy") {
            const std::string name = r.text();
            const auto kind = strategy_from_name(name);
            if (!kind)
                r.fail("unknown strategy '" + name + "' (available: " + kStrategyNames + ")");
            c.strategy = *kind;
        } else if (key == "devices")
            c.devices = r.integer();
        else if (key == "layers")
            c.layers = r.integer();
        else if (key == "width")
            c.width = r.integer();
        else if (key == "model") {
            const std::string name = r.text();
            const auto kind = model_from_name(name);
            if (!kind) r.fail("unknown model '" + name + "' (available: " + kModelNames + ")");
            c.model = *kind;
        } else if (key == "heads")
            c.heads = r.integer();
        else if (key == "seq_len")
            c.seq_len = r.integer();
        else if (key == "sequence_parallel")
            c.sequence_parallel = r.boolean();
        else if (key == "cp_load_balance")
            c.cp_load_balance = r.boolean();
        else if (key == "cp_algorithm") {
            const std::string name = r.text();
            if (name != "ring" && name != "ulysses")
                r.fail("unknown context-parallel algorithm '" + name +
                       "' (available: ring, ulysses)");
            c.cp_ulysses = name == "ulysses";
        } else if (key == "experts")
            c.experts = r.integer();
        else if (key == "top_k")
            c.top_k = r.integer();
        else if (key == "capacity_factor")
            c.capacity_factor = r.number();
        else if (key == "aux_loss_weight")
            c.aux_loss_weight = r.number();
        else if (key == "batch")
            c.batch = r.integer();
        else if (key == "steps")
            c.steps = r.integer();
        else if (key == "seed") {
            if (!value.is_number_unsigned()) r.fail("must be a non-negative integer");
            c.seed = value.get<std::uint64_t>();
        } else if (key == "optimizer") {
            const std::string s = r.text();
            const auto kind = optimizer_from_name(s);
            if (!kind) r.fail("unknown optimizer '" + s + "' (available: " + kOptimizerNames + ")");
            c.optimizer = *kind;
        } else if (key == "optimizer_blocksize")
            c.optimizer_blocksize = r.integer();
        else if (key == "min_8bit_size")
            c.min_8bit_size = r.integer();
        else if (key == "lr")
            c.lr = r.number();
        else if (key == "bucket_bytes")
            c.bucket_bytes = r.bytes();
        else if (key == "no_overlap")
            c.overlap = !r.boolean();
        else if (key == "overlap")
            c.overlap = r.boolean();
        else if (key == "capacity")
            c.capacity_bytes = r.bytes();
        else if (key == "clock") {
            const std::string s = r.text();
            if (s == "wall")
                c.clock = ClockMode::wall;
            else if (s == "device")
                c.clock = ClockMode::device;
            else if (s == "auto")
                c.clock = ClockMode::automatic;
            else
                r.fail("unknown clock '" + s + "' (available: wall, device, auto)");
        } else if (key == "nodes")
            c.cluster.nodes = r.integer();
        else if (key == "devices_per_node")
            c.cluster.devices_per_node = r.integer();
        else if (key == "intra_link") {
            const std::string name = r.text();
            if (name == "nvswitch")
                c.cluster.intra = IntraNodeLink::nvswitch;
            else if (name == "pcie")
                c.cluster.intra = IntraNodeLink::pcie;
            else
                r.fail("unknown intra-node link '" + name + "' (available: nvswitch, pcie)");
        } else if (key == "inter_transport") {
            const std::string name = r.text();
            if (name == "ib")
                c.cluster.transport = InterNodeTransport::ib;
            else if (name == "sockets")
                c.cluster.transport = InterNodeTransport::sockets;
            else if (name == "dcn")
                c.cluster.transport = InterNodeTransport::dcn;
            else
                r.fail("unknown inter-node transport '" + name + "' (available: ib, sockets, dcn)");
        } else if (key == "inter_gbps")
            c.cluster.inter.set_gbit_per_s(r.link_speed_gbit());
        else if (key == "inter_latency_us")
            c.cluster.inter.latency_us = r.number();
        else if (key == "socket_gbps")
            c.cluster.socket.set_gbit_per_s(r.link_speed_gbit());
        else if (key == "socket_latency_us")
            c.cluster.socket.latency_us = r.number();
        else if (key == "reducers")
            c.cluster.reducers = r.integer();
        else if (key == "reducer_gbps")
            c.cluster.reducer.set_gbit_per_s(r.link_speed_gbit());
        else if (key == "hybrid_shard")
            c.hybrid_shard = r.boolean();
        else if (key == "reshard_after_forward") {
            // true, false, or the group size to reshard to (FSDP2's int)
            if (value.is_number_integer()) {
                c.reshard_to = r.integer();
                c.reshard_after_forward = true;
            } else {
                c.reshard_after_forward = r.boolean();
                c.reshard_to = 0;
            }
        } else if (key == "quantized_weights") {
            c.quantized_weights = r.boolean();
        } else if (key == "quantized_gradients") {
            c.quantized_gradients = r.boolean();
        } else if (key == "reduce_dtype") {
            const std::string name = r.text();
            if (name != "fp32" && name != "bf16")
                r.fail("unknown reduce dtype '" + name + "' (available: bf16, fp32)");
            c.fp32_reduce = name == "fp32";
        } else if (key == "devices_per_nic")
            c.cluster.devices_per_nic = r.integer();
        else if (key == "nvls")
            c.cluster.nvls = r.boolean();
        else if (key == "sharp")
            c.cluster.sharp = r.boolean();
        else if (key == "allreduce_algorithm") {
            const std::string name = r.text();
            const auto a = collective_algorithm_from_name(name);
            if (!a)
                r.fail("unknown all-reduce algorithm '" + name +
                       "' (available: " + kCollectiveAlgorithmNames + ")");
            c.allreduce_algorithm = *a;
        } else if (key == "straggler") {
            if (!value.is_object() || !value.contains("device") || !value.contains("slowdown") ||
                value.size() != 2)
                r.fail("must be an object {\"device\": N, \"slowdown\": X}, got " + value.dump());
            const KeyReader d{value["device"], r.spelled + " (device)"};
            const KeyReader x{value["slowdown"], r.spelled + " (slowdown)"};
            c.straggler.device = d.integer();
            if (c.straggler.device < 0) d.fail("must be 0 or more");
            c.straggler.slowdown = x.number();
        } else if (key == "link_latency_us")
            c.link.latency_us = r.number();
        else if (key == "link_gbps")
            c.link.set_gbit_per_s(r.link_speed_gbit());
        else if (key == "offload_optimizer" || key == "offload_param") {
            const std::string name = r.text();
            const auto device = offload_device_from_name(name);
            if (!device)
                r.fail("unknown offload device '" + name + "' (available: none, cpu, nvme)");
            (key == "offload_param" ? c.offload_param : c.offload_optimizer) = *device;
        } else if (key == "checkpoint_every") {
            c.checkpoint_every = r.integer();
        } else if (key == "checkpoint_dir") {
            c.checkpoint_dir = r.text();
        } else if (key == "resume") {
            c.resume_dir = r.text();
        } else if (key == "resume_from" && value == "none") {
            c.resume_from_step = 0;  // a comparison that starts from scratch
            c.resume_from.clear();
        } else if (key == "resume_from") {
            if (!value.is_object() || !value.contains("after_step"))
                r.fail(
                    "must be an object {\"after_step\": N, <scenario keys of the run that "
                    "writes the checkpoint>}, got " +
                    value.dump());
            json keys = value;
            c.resume_from_step =
                KeyReader{value["after_step"], r.spelled + " (after_step)"}.integer();
            if (c.resume_from_step < 1) r.fail("after_step must be 1 or more");
            keys.erase("after_step");
            for (const char* own :
                 {"expect", "steps", "resume", "resume_from", "checkpoint_every", "checkpoint_dir"})
                if (keys.contains(own))
                    r.fail(std::string("cannot set '") + own +
                           "' of the run that writes the checkpoint");
            c.resume_from = keys.dump();
        } else if (key == "fail" && value == "none") {
            c.failure = {};
        } else if (key == "fail") {
            // {"device": D | "node": N, "step": S, "replaced": true}
            if (!value.is_object() || !value.contains("step"))
                r.fail(
                    "must be an object {\"device\": D or \"node\": N, \"step\": S, "
                    "\"replaced\": true|false}, got " +
                    value.dump());
            FailurePlan f;
            for (const auto& [k, v] : value.items()) {
                const KeyReader fr{v, r.spelled + " (" + k + ")"};
                if (k == "device")
                    f.device = fr.integer();
                else if (k == "node")
                    f.node = fr.integer();
                else if (k == "step")
                    f.step = fr.integer();
                else if (k == "replaced")
                    f.replaced = fr.boolean();
                else if (k == "restart") {
                    const std::string name = fr.text();
                    if (name != "job" && name != "worker")
                        fr.fail("unknown restart '" + name + "' (available: job, worker)");
                    f.worker_only = name == "worker";
                } else
                    fr.fail(
                        "is not a failure setting (known: device, node, step, replaced, "
                        "restart)");
            }
            if (f.step < 0 || (value.contains("device") && f.device < 0) ||
                (value.contains("node") && f.node < 0))
                r.fail("step, device and node count from 0");
            c.failure = f;
        } else if (key == "max_restarts") {
            c.max_restarts = r.integer();
        } else if (key == "min_nodes") {
            c.min_nodes = r.integer();
        } else if (key == "checkpoint_storage") {
            const std::string name = r.text();
            if (name != "local" && name != "persistent")
                r.fail("unknown checkpoint storage '" + name + "' (available: local, persistent)");
            c.checkpoint_local = name == "local";
        } else if (key == "dataset") {
            parse_dataset(r, c.dataset);
        } else if (key == "host_capacity")
            c.host_capacity_bytes = r.bytes();
        else if (key == "nvme_capacity")
            c.nvme_capacity_bytes = r.bytes();
        else if (key == "pcie_gbps")
            c.pcie.set_gbit_per_s(r.link_speed_gbit());
        else if (key == "nvme_read_gbps")
            c.nvme_read.set_gbit_per_s(r.link_speed_gbit());
        else if (key == "nvme_write_gbps")
            c.nvme_write.set_gbit_per_s(r.link_speed_gbit());
        else if (key == "schedule") {
            const std::string name = r.text();
            const auto kind = schedule_from_name(name);
            if (!kind)
                r.fail("unknown schedule '" + name + "' (available: " + kScheduleNames + ")");
            c.schedule = *kind;
        } else if (key == "microbatches")
            c.microbatches = r.integer();
        else if (key == "chunks")
            c.chunks = r.integer();
        else if (key == "dp")
            c.mesh.dp = r.integer();
        else if (key == "pp")
            c.mesh.pp = r.integer();
        else if (key == "tp")
            c.mesh.tp = r.integer();
        else if (key == "timeout_s")
            c.collective_timeout_s = r.number();
        else if (key == "threads")
            c.threads = r.integer();
        else if (key == "recompute") {
            const std::string name = r.text();
            const auto mode = recompute_from_name(name);
            if (!mode)
                r.fail("unknown recompute mode '" + name + "' (available: " + kRecomputeNames +
                       ")");
            c.recompute = *mode;
        } else if (key == "precision") {
            const std::string name = r.text();
            const auto precision = precision_from_name(name);
            if (!precision)
                r.fail("unknown precision '" + name + "' (available: " + kPrecisionNames + ")");
            c.precision = *precision;
        } else if (key == "loss_scale") {
            // "dynamic" (GradScaler), or a number: a static scale (1: no scaling).
            if (value.is_string()) {
                const std::string name = r.text();
                if (name != "dynamic")
                    r.fail("must be \"dynamic\" or a number (a static scale; 1: none), not '" +
                           name + "'");
                c.loss_scaling.dynamic = true;
            } else {
                c.loss_scaling.dynamic = false;
                c.loss_scaling.init = r.number();
            }
        } else if (key == "loss_scale_init")
            c.loss_scaling.init = r.number();
        else if (key == "loss_scale_growth_interval")
            c.loss_scaling.growth_interval = r.integer();
        else if (key == "clip_grad_norm")
            c.clip_grad_norm = r.number();
        else if (key == "loss_reduction") {
            const std::string name = r.text();
            if (name != "global_batch" && name != "replica_mean")
                r.fail("unknown loss reduction '" + name +
                       "' (available: global_batch, replica_mean)");
            c.loss_replica_mean = name == "replica_mean";
        } else if (key == "master_weights")
            c.master_weights = r.boolean();
        else if (key == "powersgd_rank")
            c.powersgd.rank = r.integer();
        else if (key == "powersgd_start_iter")
            c.powersgd.start_iter = r.integer();
        else if (key == "powersgd_error_feedback")
            c.powersgd.error_feedback = r.boolean();
        else if (key == "powersgd_warm_start")
            c.powersgd.warm_start = r.boolean();
        else if (key == "powersgd_min_compression_rate")
            c.powersgd.min_compression_rate = r.number();
        else if (key == "comm_hook") {
            const std::string name = r.text();
            if (name == "fp16")
                c.comm_hook = DType::fp16;
            else if (name == "bf16")
                c.comm_hook = DType::bf16;
            else if (name == "none")
                c.comm_hook = DType::fp32;
            else
                r.fail("unknown communication hook '" + name + "' (available: none, fp16, bf16)");
        } else if (key == "input_scale")
            c.input_scale = r.number();
        else if (key == "accumulate")
            c.accumulate = r.integer();
        else if (key == "reduce_every_microstep")
            c.reduce_every_microstep = r.boolean();
        else if (key == "async")
            c.async_updates = r.boolean();
        else if (key == "max_staleness")
            c.max_staleness = r.integer();
        else if (key == "repeats")
            c.repeats = r.integer();
        else if (key == "backend") {
            const std::string name = r.text();
            const auto kind = backend_from_name(name);
            if (!kind) r.fail("unknown backend '" + name + "' (available: cpu, cuda)");
            c.backend = *kind;
        } else if (key == "tf32")
            c.tf32 = r.boolean();
        else if (key == "float32_matmul_precision") {
            const std::string name = r.text();
            if (name != "highest" && name != "high" && name != "medium")
                r.fail("unknown float32 matmul precision '" + name +
                       "' (available: highest, high, medium)");
            c.tf32 = name == "high";  // as allow_tf32 = True
            c.bf16_products = name == "medium";
        } else if (key == "fp8") {
            const std::string name = r.text();
            if (name != "off" && name != "hybrid" && name != "e4m3")
                r.fail("unknown FP8 format '" + name + "' (available: off, hybrid, e4m3)");
            c.fp8.format = name == "hybrid" ? Fp8Format::hybrid
                           : name == "e4m3" ? Fp8Format::e4m3
                                            : Fp8Format::off;
        } else if (key == "fp8_amax_history_len")
            c.fp8.amax_history_len = r.integer();
        else if (key == "fp8_amax_compute_algo") {
            const std::string name = r.text();
            if (name != "max" && name != "most_recent")
                r.fail("unknown amax_compute_algo '" + name + "' (available: max, most_recent)");
            c.fp8.amax_compute_algo = name == "max" ? AmaxAlgo::max : AmaxAlgo::most_recent;
        } else if (key == "fp8_margin")
            c.fp8.margin = r.integer();
        else if (key == "native_collectives")
            c.native_collectives = r.boolean();
        else if (key == "expect") {
            Expectations parsed = parse_expectations(value.dump(), origin);
            if (expectations) *expectations = std::move(parsed);
        } else
            r.fail(
                "is not a known setting (known: strategy, devices, model, layers, width, heads, "
                "seq_len, sequence_parallel, cp_load_balance, cp_algorithm, experts, top_k, "
                "capacity_factor, "
                "aux_loss_weight, batch, "
                "steps, seed, optimizer, optimizer_blocksize, min_8bit_size, lr, bucket_bytes, "
                "no_overlap, capacity, clock, "
                "link_latency_us, link_gbps, cluster, nodes, devices_per_node, intra_link, "
                "inter_transport, inter_gbps, inter_latency_us, socket_gbps, socket_latency_us, "
                "devices_per_nic, nvls, sharp, allreduce_algorithm, straggler, hybrid_shard, "
                "reshard_after_forward, reduce_dtype, quantized_weights, quantized_gradients, "
                "offload_optimizer, offload_param, host_capacity, nvme_capacity, pcie_gbps, "
                "nvme_read_gbps, nvme_write_gbps, checkpoint_every, checkpoint_dir, resume, "
                "resume_from, dataset, fail, max_restarts, min_nodes, checkpoint_storage, "
                "timeout_s, threads, "
                "recompute, precision, loss_scale, loss_scale_init, loss_scale_growth_interval, "
                "clip_grad_norm, loss_reduction, master_weights, input_scale, comm_hook, "
                "powersgd_rank, "
                "powersgd_start_iter, powersgd_error_feedback, powersgd_warm_start, "
                "powersgd_min_compression_rate, accumulate, "
                "reduce_every_microstep, async, max_staleness, schedule, microbatches, chunks, dp, "
                "pp, tp, backend, tf32, float32_matmul_precision, fp8, fp8_amax_history_len, "
                "fp8_amax_compute_algo, "
                "fp8_margin, native_collectives, repeats, expect)");
    }
    // A dataset's batch sets the run's global batch, unless this object says batch itself
    // (then validate() holds the two to each other).
    bool says_batch = false;
    for (const auto& [raw_key, value] : root.items())
        says_batch |= canonical_key(raw_key) == "batch";
    if (c.dataset.enabled() && !says_batch && c.data_parallel_replicas() > 0)
        c.batch = dataset_global_batch(c.dataset, c.data_parallel_replicas());
}

void apply_scenario_file(const std::string& path, RunConfig& config, ConfigSources& sources) {
    std::ifstream in(path, std::ios::binary);
    if (!in) throw BadInput("--scenario", "cannot read '" + path + "'", __FILE__, __LINE__);
    std::ostringstream text;
    text << in.rdbuf();
    apply_scenario_json(text.str(), path, config, sources);
}

std::string scenario_json(const RunConfig& c) {
    json j;
    j["strategy"] = std::string(name_of(c.strategy));
    j["devices"] = c.devices;
    j["layers"] = c.layers;
    j["width"] = c.width;
    if (c.model == ModelKind::transformer) {
        j["model"] = std::string(name_of(c.model));
        j["heads"] = c.heads;
        j["seq_len"] = c.seq_len;
        if (c.sequence_parallel) j["sequence_parallel"] = true;
        if (c.strategy == StrategyKind::cp && c.cp_load_balance) j["cp_load_balance"] = true;
        if (c.strategy == StrategyKind::cp && c.cp_ulysses) j["cp_algorithm"] = "ulysses";
        if (c.experts > 0) {
            j["experts"] = c.experts;
            j["top_k"] = c.top_k;
            j["capacity_factor"] = c.capacity_factor;
            j["aux_loss_weight"] = c.aux_loss_weight;
        }
    }
    j["batch"] = c.batch;
    j["steps"] = c.steps;
    j["seed"] = c.seed;
    j["optimizer"] = std::string(name_of(c.optimizer));
    if (c.optimizer == OptimizerKind::adamw8bit) {
        j["optimizer_blocksize"] = c.optimizer_blocksize;
        j["min_8bit_size"] = c.min_8bit_size;
    }
    j["lr"] = c.effective_lr();
    j["capacity"] = c.capacity_bytes;
    j["clock"] = std::string(name_of(c.clock));
    j["link_latency_us"] = c.link.latency_us;
    j["link_gbps"] = c.link.gbit_per_s();
    if (c.cluster.node_count(c.devices) > 1 || !c.cluster.preset.empty()) {
        if (!c.cluster.preset.empty()) j["cluster"] = c.cluster.preset;
        j["nodes"] = c.cluster.node_count(c.devices);
        j["intra_link"] = std::string(name_of(c.cluster.intra));
        j["inter_transport"] = std::string(name_of(c.cluster.transport));
        j["inter_gbps"] = c.cluster.inter.gbit_per_s();
        j["inter_latency_us"] = c.cluster.inter.latency_us;
        j["socket_gbps"] = c.cluster.socket.gbit_per_s();
        j["socket_latency_us"] = c.cluster.socket.latency_us;
        j["devices_per_nic"] = c.cluster.devices_per_nic;
        j["nvls"] = c.cluster.nvls;
        j["sharp"] = c.cluster.sharp;
    }
    if (c.cluster.reducers > 0) {
        j["reducers"] = c.cluster.reducers;
        j["reducer_gbps"] = c.cluster.reducer.gbit_per_s();
    }
    if (c.hybrid_shard) j["hybrid_shard"] = true;
    if (!c.reshard_after_forward) j["reshard_after_forward"] = false;
    if (c.reshard_to > 0) j["reshard_after_forward"] = c.reshard_to;
    if (c.fp32_reduce) j["reduce_dtype"] = "fp32";
    if (c.quantized_weights) j["quantized_weights"] = true;
    if (c.quantized_gradients) j["quantized_gradients"] = true;
    if (c.offloads()) {
        j["offload_optimizer"] = std::string(name_of(c.offload_optimizer));
        j["host_capacity"] = c.host_capacity_bytes;
        j["pcie_gbps"] = c.pcie.gbit_per_s();
    }
    if (c.checkpoint_every > 0) j["checkpoint_every"] = c.checkpoint_every;
    if (!c.checkpoint_dir.empty()) j["checkpoint_dir"] = c.checkpoint_dir;
    if (!c.resume_dir.empty()) j["resume"] = c.resume_dir;
    if (c.resume_from_step > 0) {
        j["resume_from"] = json::parse(c.resume_from);
        j["resume_from"]["after_step"] = c.resume_from_step;
    }
    if (c.offload_param != OffloadDevice::none)
        j["offload_param"] = std::string(name_of(c.offload_param));
    if (c.uses_nvme()) {
        j["nvme_capacity"] = c.nvme_capacity_bytes;
        j["nvme_read_gbps"] = c.nvme_read.gbit_per_s();
        j["nvme_write_gbps"] = c.nvme_write.gbit_per_s();
    }
    if (c.allreduce_algorithm != CollectiveAlgorithm::ring)
        j["allreduce_algorithm"] = std::string(name_of(c.allreduce_algorithm));
    if (c.straggler.active())
        j["straggler"] = {{"device", c.straggler.device}, {"slowdown", c.straggler.slowdown}};
    j["backend"] = std::string(name_of(c.backend));
    if (c.tf32) j["tf32"] = true;
    if (c.bf16_products) j["float32_matmul_precision"] = "medium";
    if (c.fp8.enabled()) {
        j["fp8"] = std::string(name_of(c.fp8.format));
        j["fp8_amax_history_len"] = c.fp8.amax_history_len;
        j["fp8_amax_compute_algo"] = std::string(name_of(c.fp8.amax_compute_algo));
        j["fp8_margin"] = c.fp8.margin;
    }
    if (c.native_collectives) j["native_collectives"] = true;
    if (c.threads > 0) j["threads"] = c.threads;
    if (c.recompute != RecomputeMode::none) j["recompute"] = std::string(name_of(c.recompute));
    if (c.precision != Precision::fp32) j["precision"] = std::string(name_of(c.precision));
    if (c.precision == Precision::fp16_mixed) {
        if (c.loss_scaling.dynamic) {
            j["loss_scale"] = "dynamic";
            j["loss_scale_init"] = c.loss_scaling.init;
            j["loss_scale_growth_interval"] = c.loss_scaling.growth_interval;
        } else {
            j["loss_scale"] = c.loss_scaling.init;
        }
    }
    if (c.clip_grad_norm > 0) j["clip_grad_norm"] = c.clip_grad_norm;
    if (c.strategy == StrategyKind::dp && c.loss_replica_mean) j["loss_reduction"] = "replica_mean";
    if (c.precision != Precision::fp32 && !c.master_weights) j["master_weights"] = false;
    if (c.comm_hook != DType::fp32) j["comm_hook"] = std::string(name_of(c.comm_hook));
    if (c.powersgd.rank > 0) {
        j["powersgd_rank"] = c.powersgd.rank;
        j["powersgd_start_iter"] = c.powersgd.start_iter;
        j["powersgd_error_feedback"] = c.powersgd.error_feedback;
        j["powersgd_warm_start"] = c.powersgd.warm_start;
        j["powersgd_min_compression_rate"] = c.powersgd.min_compression_rate;
    }
    if (c.input_scale != 1.0) j["input_scale"] = c.input_scale;
    if (c.failure.enabled()) {
        json f = {{"step", c.failure.step},
                  {"replaced", c.failure.replaced},
                  {"restart", c.failure.worker_only ? "worker" : "job"}};
        if (c.failure.node >= 0)
            f["node"] = c.failure.node;
        else
            f["device"] = c.failure.device;
        j["fail"] = f;
        j["max_restarts"] = c.max_restarts;
        if (c.min_nodes > 0) j["min_nodes"] = c.min_nodes;
    }
    if (c.checkpoint_local) j["checkpoint_storage"] = "local";
    if (c.dataset.enabled())
        j["dataset"] = {{"files", c.dataset.file_examples},
                        {"batch", c.dataset.batch},
                        {"shard", std::string(name_of(c.dataset.shard))},
                        {"api", std::string(name_of(c.dataset.api))},
                        {"repeat", c.dataset.repeat}};
    if (c.accumulate > 1) j["accumulate"] = c.accumulate;
    if (c.reduce_every_microstep) j["reduce_every_microstep"] = true;
    if (c.repeats > 1) j["repeats"] = c.repeats;
    if (c.strategy == StrategyKind::ps && c.async_updates) {
        j["async"] = true;
        j["max_staleness"] = c.max_staleness;
    }
    // Only the keys this strategy reads (the others are errors in a scenario).
    if (c.strategy == StrategyKind::dp) {
        j["bucket_bytes"] = c.bucket_bytes;
        j["no_overlap"] = !c.overlap;
    }
    if (c.strategy == StrategyKind::pipeline ||
        (c.strategy == StrategyKind::hybrid && c.mesh.pp > 1)) {
        j["schedule"] = std::string(name_of(c.schedule));
        j["microbatches"] = c.effective_microbatches();
        if (c.schedule == PipelineSchedule::interleaved) j["chunks"] = c.chunks;
    }
    if ((c.strategy == StrategyKind::cp || c.strategy == StrategyKind::ep) && c.mesh.dp > 1)
        j["dp"] = c.mesh.dp;
    if (c.strategy == StrategyKind::hybrid) {
        j["dp"] = c.mesh.dp;
        j["pp"] = c.mesh.pp;
        j["tp"] = c.mesh.tp;
    }
    return j.dump(2);
}

}  // namespace pd
