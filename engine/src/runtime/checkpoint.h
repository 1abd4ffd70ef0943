// Sharded checkpoints in the spirit of PyTorch's Distributed Checkpoint (DCP): each device
// writes the part of the model it owns to a file of its own, and one metadata file says which
// slice of the flat parameter vector each file holds. A checkpoint loads under any device count
// and strategy that can checkpoint: the loader assembles the flat vectors and each strategy
// takes its own part (resharding on load).
//
// Layout: ROOT/step-000006/ holds metadata.json and device-<d>.bin. Each .bin file is, for
// each of its slices in order, `count` float32 values (little-endian) of the parameters (the
// fp32 master copy under mixed precision), then `count` of each optimizer moment (AdamW's m
// then v; SGD's momentum). metadata.json:
//   {"format": "paralleldeck-checkpoint", "version": 1, "step": 6,
//    "model": {"model", "layers", "width", "input_dim", "classes", "heads", "seq_len",
//              "experts", "parameters"},
//    "optimizer": {"kind", "moments"},
//    "written_by": {"strategy", "devices", "precision", "seed"},
//    "files": [{"file": "device-0.bin", "bytes", "fnv1a64": "<16 hex digits>",
//               "slices": [{"begin", "count"}, ...]}, ...]}
// The step directory appears whole or not at all: files go to a temporary directory that is
// renamed once the metadata is written.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "pd/run_config.h"

namespace pd {

inline constexpr int kCheckpointFormatVersion = 1;

// Where one device's copy of parameters [begin, begin + count) and their optimizer state lie:
// `params` the fp32 values to save (the master copy under mixed precision), moment j at
// `moments + j * stride`.
struct StateSlice {
    int device = 0;
    std::size_t begin = 0, count = 0;
    float* params = nullptr;
    float* moments = nullptr;
    std::size_t stride = 0;
};

// The slices each device writes: every slice of the model once, a range several devices hold
// (data-parallel replicas) split evenly among them, as DCP spreads replicated tensors.
std::vector<StateSlice> slices_to_write(const std::vector<StateSlice>& held);

struct CheckpointFile {
    std::string file;  // its name inside the step directory
    std::size_t bytes = 0;
    std::uint64_t fnv1a64 = 0;
    std::vector<std::pair<std::size_t, std::size_t>> slices;  // (begin, count)
};

std::string checkpoint_step_dir(const std::string& root, int step);  // ROOT/step-000006
// The temporary directory files of `step` are written to before they appear.
std::string checkpoint_staging_dir(const std::string& root, int step);
// Writes one device's slices to `path`; its bytes and hash.
CheckpointFile write_checkpoint_file(const std::string& path, const std::vector<StateSlice>& slices,
                                     int moments);
// Writes metadata.json into the staging directory and moves it to its step directory.
void commit_checkpoint(const std::string& root, int step, const RunConfig& config,
                       const std::vector<CheckpointFile>& files);

struct LoadedCheckpoint {
    std::string dir;  // the step directory read
    int step = 0;     // steps completed when it was written
    std::string strategy;
    int devices = 0;
    std::vector<float> params;                // fp32, every parameter
    std::vector<std::vector<float>> moments;  // each moment over every parameter
};

// `dir` is a step directory, or a root whose newest step directory is read. Throws BadInput
// naming `what` (e.g. "--resume") and the file for a checkpoint that is missing, truncated,
// corrupted, from another model or optimizer, or written by a newer format.
LoadedCheckpoint read_checkpoint(const std::string& dir, const RunConfig& config,
                                 const std::string& what);

// Throws BadInput naming `what` when a step directory the run would write already exists
// (a checkpoint is never overwritten).
void check_checkpoint_targets(const RunConfig& config, int first_step, const std::string& what);

}  // namespace pd
