#include "strategies/replica.h"

#include <cmath>
#include <limits>

namespace pd {

Replica::Replica(RunEnvironment& env, Device& device)
    : env_(env),
      device_(device),
      layout_(env.shape, env.layout, 0, env.layout.units, 0, 1),
      executor_(env.shape, layout_, device.memory(), env.config.recompute, env.dtype, false,
                env.routing_of(device.id())),
      loss_(device.ops()),
      checks_gradients_(env.config.precision != Precision::fp32 || env.config.clip_grad_norm > 0),
      rounds_products_(env.config.backend == BackendKind::cpu &&
                       (env.config.tf32 || env.config.bf16_products)),
      optimizer_(env.optimizer) {
    if (optimizer_.kind == OptimizerKind::adamw8bit) {
        quant_errors_.resize(optimizer_.tensors.size());
        optimizer_.quant_errors = &quant_errors_;
    }
    saved_.resize(static_cast<std::size_t>(env.layout.units));
    if (env.config.precision == Precision::fp16_mixed) scaler_.emplace(env.config.loss_scaling);
    if (env.config.fp8.enabled()) {
        fp8_.emplace(env.config.fp8, env.layout.units);
        executor_.set_fp8(&*fp8_);
    }
}

void Replica::enqueue_allocate(bool initialise, bool with_optimizer_state) {
    TraceEvent ev;
    ev.kind = EventKind::copy;
    ev.label = initialise ? "initialise parameters" : "allocate parameters";
    device_.compute().launch(ev, [this, initialise, with_optimizer_state] {
        MemoryTracker& mem = device_.memory();
        const std::size_t total = env_.layout.total;
        params_ = Buffer(mem, MemoryCategory::parameters, total, Fill::zero, env_.dtype);
        grads_ = Buffer(mem, MemoryCategory::gradients, total, Fill::zero, env_.dtype);
        // fp32 always: the moments, and under mixed precision the master weights.
        if (with_optimizer_state)
            state_ =
                Buffer(mem, MemoryCategory::optimizer_state, env_.optimizer.state_floats(total));
        // The master copy starts from the fp32 initialisation, also on a replica that gets
        // its (bf16) parameters from a broadcast.
        if (initialise)
            env_.upload_parameters(device_, params_.data(), env_.initial.data(), total,
                                   with_optimizer_state ? state_.data() : nullptr);
        else if (float* master =
                     with_optimizer_state ? env_.optimizer.master(state_.data(), total) : nullptr)
            mem.ops().upload(master, env_.initial.data(), total);
    });
}

StateSlice Replica::state_slice() {
    const std::size_t total = env_.layout.total;
    float* master = env_.optimizer.master(state_.data(), total);
    return {device_.id(), 0, total, master ? master : params_.data(), state_.data(), total};
}

void Replica::enqueue_forward_backward(int step, int micro, int first, int rows, bool zero_grads,
                                       const std::function<void(int unit)>& after_backward) {
    Stream& compute = device_.compute();
    const int units = env_.layout.units;
    // Each replica's loss is a sum over its tokens divided by the global batch's, unless it
    // takes its own slice's mean (loss_replica_mean): then the gradients summed over the
    // replicas are `replicas` times as large.
    const float grad_scale =
        env_.grad_scale() *
        (env_.config.loss_replica_mean && env_.config.strategy == StrategyKind::dp
             ? static_cast<float>(env_.config.data_parallel_replicas())
             : 1.0f);
    const std::shared_ptr<const HostBatch> batch = env_.load_batch(step, first, rows);
    for (int unit = 0; unit < units; ++unit) {
        compute.launch(unit_event(EventKind::forward, unit, env_.shape, step, micro),
                       [this, unit, batch, grad_scale, micro] {
                           // fp16: the loss is multiplied by the scale this step uses (set by
                           // the update before, earlier on this stream), so every gradient is.
                           const float loss_scale = scaler_ ? scaler_->scale() : 1.0f;
                           if (unit == 0) {
                               // Strategies that free gradients between steps (ZeRO-2) get them
                               // back here, written or zeroed unit by unit in backward.
                               if (grads_.empty())
                                   grads_ = Buffer(device_.memory(), MemoryCategory::gradients,
                                                   env_.layout.total, Fill::none, env_.dtype);
                               if (micro == 0) loss_.zero();
                               activation_ = executor_.upload_input(batch->x);
                           }
                           const float* p = params_.data() + env_.layout.unit_begin(unit);
                           activation_ = executor_.forward(
                               unit, p, std::move(activation_), batch->rows,
                               saved_[static_cast<std::size_t>(unit)], batch->labels.data(),
                               grad_scale * loss_scale, loss_.get());
                           // TE updates the forward tensors' scales as fp8_autocast exits.
                           if (fp8_ && unit == env_.layout.units - 1) fp8_->update(true);
                       });
    }
    for (int unit = units - 1; unit >= 0; --unit) {
        if (executor_.needs_recompute(unit))
            compute.launch(
                unit_event(EventKind::recompute, unit, env_.shape, step, micro), [this, unit] {
                    executor_.recompute(unit, params_.data() + env_.layout.unit_begin(unit),
                                        saved_[static_cast<std::size_t>(unit)]);
                });
        compute.launch(unit_event(EventKind::backward, unit, env_.shape, step, micro),
                       [this, unit, zero_grads] {
                           const std::size_t begin = env_.layout.unit_begin(unit);
                           float* grads = grads_.data() + begin;
                           // A step's first contribution is written over the unit's gradients where
                           // the unit writes each of them, with no zero-fill first (the whole
                           // buffer's took 1.2 ms of a 114 ms step at 8 x 512); otherwise they
                           // are zeroed here, unit by unit.
                           GradWrite write = GradWrite::add;
                           if (zero_grads && executor_.overwrites_gradients(unit))
                               write = GradWrite::overwrite;
                           else if (zero_grads)
                               device_.ops().fill_zero(grads, env_.layout.unit_end(unit) - begin);
                           activation_ = executor_.backward(
                               unit, params_.data() + begin, grads, std::move(activation_),
                               saved_[static_cast<std::size_t>(unit)], write);
                           // TF32 or bf16 product inputs: this step's rounding, measured.
                           if (unit == 0 && rounds_products_) {
                               const double e = device_.ops().take_product_input_error();
                               if (zero_grads || e >= 0) product_input_error_ = e;
                           }
                           if (fp8_ && unit == 0) {  // the backward tensors', after backward
                               fp8_->update(false);
                               if (zero_grads) fp8_step_ = {};  // a step's first micro-step
                               add_to(fp8_step_, fp8_->take_step_stats());
                           }
                       });
        if (after_backward) after_backward(unit);
    }
}

void Replica::enqueue_optimizer(int step) {
    if (!checks_gradients_) {
        device_.compute().launch(optimizer_event(env_.optimizer, step), [this, step] {
            device_.ops().optimizer_update(optimizer_, step + 1, params_.data(), grads_.data(),
                                           state_.data(), params_.size());
        });
        return;
    }
    // Two traced ops on the compute stream: the check (unscale_, inf/NaN, norm, clipping),
    // then the update, named as skipped on the timeline when GradScaler skips it.
    device_.compute().enqueue([this, step] {
        Stream& stream = *Stream::current();
        DeviceOps& ops = device_.ops();
        float* grads = grads_.data();
        const std::size_t n = params_.size();
        StepRecord record;
        bool found_inf = false;
        TraceEvent check_event = optimizer_event(env_.optimizer, step);
        check_event.label = scaler_ ? "GradScaler: unscale_, inf/NaN check" : "gradient check";
        if (env_.config.clip_grad_norm > 0) check_event.label += ", clip_grad_norm_";
        check_event.device = device_.id();
        check_event.stream = StreamKind::compute;
        stream.timed(std::move(check_event), [&] {
            // GradScaler.unscale_: the (fp16, scaled) gradients become fp32 ones, multiplied
            // by 1 / scale, before anything reads their values (clipping included).
            if (scaler_) {
                record.loss_scale = scaler_->scale();
                ops.scale(grads, n, scaler_->inverse_scale());
            }
            const GradientCheck check = ops.check_gradients(grads, n);
            found_inf = check.nonfinite > 0;
            record.grad_zero_fraction =
                n ? static_cast<double>(check.zeros) / static_cast<double>(n) : 0.0;
            record.grad_norm =
                found_inf ? std::numeric_limits<double>::quiet_NaN() : std::sqrt(check.sum_squares);
            // torch.nn.utils.clip_grad_norm_: the factor max / (norm + 1e-6), at most 1.
            const double clip = env_.config.clip_grad_norm;
            if (clip > 0 && !found_inf) {
                const float factor = static_cast<float>(clip / (record.grad_norm + 1e-6));
                if (factor < 1.0f) ops.scale(grads, n, factor);
            }
        });
        // Without a scaler nothing skips a step (as a plain PyTorch loop: inf reaches the
        // weights); with one, the step is skipped on inf or NaN and the scale updated.
        const bool apply = scaler_ ? scaler_->update(found_inf) : true;
        record.skipped = !apply;
        const int t = scaler_ ? scaler_->applied_steps() : step + 1;
        TraceEvent update = optimizer_event(env_.optimizer, step,
                                            apply ? std::string() : " skipped (inf/NaN gradients)");
        update.device = device_.id();
        update.stream = StreamKind::compute;
        stream.timed(std::move(update), [&] {
            if (apply) ops.optimizer_update(optimizer_, t, params_.data(), grads, state_.data(), n);
        });
        numerics_ = record;
    });
}

bool Replica::numerics(StepRecord& record) const {
    if (!quant_errors_.empty()) {
        StateQuantError sum;
        for (const StateQuantError& e : quant_errors_) {
            sum.m_error += e.m_error;
            sum.m_norm += e.m_norm;
            sum.v_error += e.v_error;
            sum.v_norm += e.v_norm;
        }
        if (sum.m_norm > 0) record.state_error_m = std::sqrt(sum.m_error / sum.m_norm);
        if (sum.v_norm > 0) record.state_error_v = std::sqrt(sum.v_error / sum.v_norm);
    }
    if (fp8_) {
        auto summary = [](const Fp8CastStats& c) {
            Fp8CastSummary out;
            out.nonzero = static_cast<long long>(c.nonzero);
            out.flushed = static_cast<long long>(c.flushed);
            out.saturated = static_cast<long long>(c.saturated);
            if (c.value_squares > 0)
                out.relative_error = std::sqrt(c.error_squares / c.value_squares);
            return out;
        };
        record.fp8_forward = summary(fp8_step_.forward);
        record.fp8_gradients = summary(fp8_step_.gradients);
        record.fp8_min_scale = fp8_step_.min_scale;
        record.fp8_max_scale = fp8_step_.max_scale;
    }
    record.product_input_error = product_input_error_;
    if (!checks_gradients_) return !quant_errors_.empty() || fp8_.has_value() || rounds_products_;
    record.loss_scale = numerics_.loss_scale;
    record.skipped = numerics_.skipped;
    record.grad_norm = numerics_.grad_norm;
    record.grad_zero_fraction = numerics_.grad_zero_fraction;
    return true;
}

std::vector<float> Replica::master() const {
    if (!env_.optimizer.master_weights || state_.empty()) return {};
    const std::vector<float> state = state_.to_host();
    const std::size_t n = env_.layout.total;
    const auto begin = state.begin() + static_cast<std::ptrdiff_t>(
                                           static_cast<std::size_t>(env_.optimizer.moments()) * n);
    return {begin, begin + static_cast<std::ptrdiff_t>(n)};
}

std::vector<GradBucket> make_grad_buckets(const ParamLayout& layout, std::size_t bucket_bytes,
                                          DType dtype) {
    std::vector<GradBucket> buckets;
    GradBucket current;
    bool open = false;
    for (auto it = layout.tensors.rbegin(); it != layout.tensors.rend(); ++it) {
        if (!open) {
            current = GradBucket{it->offset, it->offset + it->count, it->unit};
            open = true;
        } else {
            current.begin = it->offset;
            current.ready_after_unit = it->unit;
        }
        if ((current.end - current.begin) * bytes_of(dtype) >= bucket_bytes) {
            buckets.push_back(current);
            open = false;
        }
    }
    if (open) buckets.push_back(current);
    return buckets;
}

}  // namespace pd
