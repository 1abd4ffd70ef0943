// A strategy turns one training step into work on each device's streams. The runner
// enqueues a step, synchronizes every stream, then reads the loss.
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "backend/device_backend.h"
#include "model/routing_counters.h"
#include "pd/communicator.h"
#include "pd/device.h"
#include "pd/model.h"
#include "pd/optimizer.h"
#include "pd/run_config.h"
#include "pd/run_context.h"
#include "pd/trace.h"
#include "pd/transport.h"
#include "runtime/checkpoint.h"
#include "strategies/batch_loader.h"

namespace pd {

// The trace event of one unit's forward or backward for one micro-batch ("input", "block" (MLP
// model), "attention" / "MLP" (transformer), "head + loss" / "head"), shared so every strategy
// labels its timeline the same way.
TraceEvent unit_event(EventKind kind, int unit, const ModelShape& shape, int step, int microbatch,
                      int stage = -1);

// The trace event of a device's optimizer step ("AdamW", "SGD momentum", then `suffix`).
TraceEvent optimizer_event(const OptimizerSettings& optimizer, int step,
                           const std::string& suffix = {});

// Everything a strategy builds on, owned by the runner for the length of one run.
struct RunEnvironment {
    RunEnvironment(const RunConfig& cfg, RunContext& context);
    ~RunEnvironment();

    const RunConfig& config;
    RunContext& ctx;
    ModelShape shape;
    ParamLayout layout;
    SyntheticTask task;
    OptimizerSettings optimizer;
    std::vector<float> initial;  // the shared deterministic initial parameters (fp32)
    DType dtype;                 // parameters', gradients' and activations' (tensor_dtype)
    Transport transport;
    std::unique_ptr<RunBackend> backend;  // creates the devices; outlives them
    std::vector<std::unique_ptr<Device>> devices;
    // A mixture of experts' routing counters, one per device (empty for a dense model);
    // after `devices`, so they go before the devices whose memory holds their scalars.
    std::vector<std::unique_ptr<RoutingCounters>> routing;

    Device& device(int i) { return *devices[static_cast<std::size_t>(i)]; }
    RoutingCounters* routing_of(int i) {
        return routing.empty() ? nullptr : routing[static_cast<std::size_t>(i)].get();
    }
    // What a step's loss is the mean over: its samples' tokens (batch x seq_len), and the
    // scale of the loss gradient that follows.
    double loss_count() const {
        return static_cast<double>(config.batch) * static_cast<double>(shape.seq_len);
    }
    float grad_scale() const { return static_cast<float>(1.0 / loss_count()); }
    // Parameters' initial values, from `host` (the fp32 initialisation), into a device's
    // parameter storage: rounded to bf16 under mixed precision. With master weights, the
    // fp32 values also go to the master copy of `state` (`count` parameters' state), if given.
    void upload_parameters(Device& device, float* params, const float* host, std::size_t count,
                           float* state = nullptr) const;
    // The data loader: a slice of a step's batch, prepared by the host before the work that
    // reads it is enqueued, so no device's timeline pays for generating data.
    std::shared_ptr<const HostBatch> load_batch(int step, int first, int rows) {
        return batches.load(step, first, rows);
    }
    // The dataset's plan when the run reads one (before `batches`, which reads from it).
    std::optional<DataPlan> data;
    BatchLoader batches{task, shape};
    void synchronize_all();
};

class Strategy {
  public:
    virtual ~Strategy() = default;
    virtual void enqueue_setup() = 0;
    virtual void enqueue_step(int step) = 0;
    // After synchronize: the global mean loss of the step just run.
    virtual double step_loss() const = 0;
    // After synchronize: the full model's parameters, in the shared layout.
    virtual std::vector<float> parameters() const = 0;
    // After synchronize, with master weights (bf16-mixed): the full fp32 master copy in the
    // shared layout; empty without.
    virtual std::vector<float> master_parameters() const { return {}; }
    // Checkpoints: every device's copy of the parameters and optimizer state it holds, as
    // slices of the flat parameter vector (runtime/checkpoint.h), read and written by the host
    // between steps while every stream is idle; empty where the strategy cannot checkpoint.
    virtual std::vector<StateSlice> state_slices() { return {}; }
    // After synchronize: what the step's update read from its gradients (loss scale, skipped,
    // norm, zeros), filled into `record`; false where the strategy does not check them.
    virtual bool step_numerics(StepRecord& /*record*/) const { return false; }
    // The gradients a parameter server applied, with the versions they were computed on.
    virtual std::vector<GradientUpdate> gradient_updates() const { return {}; }
};

std::unique_ptr<Strategy> make_strategy(RunEnvironment& env);

}  // namespace pd
