#include "strategies/strategy.h"

#include "backend/device_ops.h"

namespace pd {

TraceEvent unit_event(EventKind kind, int unit, const ModelShape& shape, int step, int microbatch,
                      int stage) {
    TraceEvent ev;
    ev.kind = kind;
    ev.step = step;
    ev.microbatch = microbatch;
    ev.stage = stage;
    ev.layer = unit;
    const bool forward = kind == EventKind::forward;
    const UnitKind what = shape.unit_kind(unit);
    ev.label = what == UnitKind::head && forward ? "head + loss" : shape.unit_name(unit);
    return ev;
}

TraceEvent optimizer_event(const OptimizerSettings& optimizer, int step,
                           const std::string& suffix) {
    TraceEvent ev;
    ev.kind = EventKind::optimizer;
    ev.step = step;
    const char* name = "AdamW";
    switch (optimizer.kind) {
        case OptimizerKind::sgd:
            name = "SGD momentum";
            break;
        case OptimizerKind::adamw:
            break;
        case OptimizerKind::lamb:
            name = "LAMB";
            break;
        case OptimizerKind::adamw8bit:
            name = "AdamW 8-bit";
            break;
    }
    ev.label = name + suffix;
    return ev;
}

RunEnvironment::RunEnvironment(const RunConfig& cfg, RunContext& context)
    : config(cfg),
      ctx(context),
      shape(model_shape(cfg)),
      layout(ParamLayout::build(shape)),
      task(shape, cfg.seed, static_cast<float>(cfg.input_scale)),
      optimizer(OptimizerSettings::from(cfg)),
      initial(initial_parameters(shape, cfg.seed)),
      dtype(cfg.tensor_dtype()),
      transport(context),
      backend(make_run_backend(cfg, context)) {
    optimizer.set_tensors(layout);
    for (int d = 0; d < cfg.devices; ++d)
        devices.push_back(std::make_unique<Device>(d, cfg.capacity_bytes, context,
                                                   backend->make_device(d),
                                                   cfg.offloads() ? cfg.host_capacity_bytes : 0,
                                                   cfg.uses_nvme() ? cfg.nvme_capacity_bytes : 0));
    if (shape.moe())
        for (auto& d : devices)
            routing.push_back(std::make_unique<RoutingCounters>(d->ops(), shape.experts));
    if (cfg.dataset.enabled()) {
        data = plan_data(cfg.dataset, cfg.data_parallel_replicas(),
                         cfg.cluster.node_count(cfg.devices), "scenario key 'dataset'");
        batches.read_from(&*data);
    }
}

void RunEnvironment::upload_parameters(Device& device, float* params, const float* host,
                                       std::size_t count, float* state) const {
    DeviceOps& ops = device.ops();
    ops.upload(params, host, count);
    ops.round_to(dtype, params, count);
    if (float* master = state ? optimizer.master(state, count) : nullptr)
        ops.upload(master, host, count);
}

RunEnvironment::~RunEnvironment() {
    synchronize_all();
    transport.clear();  // its payloads live in the devices' memory
}

void RunEnvironment::synchronize_all() {
    for (auto& d : devices) d->synchronize();
}

}  // namespace pd
