#include "strategies/data_parallel.h"

namespace pd {

DataParallel::DataParallel(RunEnvironment& env)
    : env_(env), buckets_(make_grad_buckets(env.layout, env.config.bucket_bytes, env.dtype)) {
    std::vector<Device*> members;
    for (auto& d : env.devices) {
        replicas_.push_back(std::make_unique<Replica>(env, *d));
        members.push_back(d.get());
    }
    // A compression hook all-reduces in its 16-bit type; the buckets stay the fp32 gradient's
    // (DDP forms them before any hook runs).
    comm_ = std::make_unique<Communicator>(
        env.transport, members, 1,
        env.config.comm_hook != DType::fp32 ? env.config.comm_hook : env.dtype);
    if (env.config.powersgd.rank > 0) {
        powersgd_buckets_ = powersgd_buckets(env.layout, buckets_, env.config.powersgd);
        for (auto& d : env.devices)
            powersgd_.push_back(
                std::make_unique<PowerSgdReplica>(env.config, powersgd_buckets_, *d));
    }
}

void DataParallel::enqueue_setup() {
    // As DDP does at construction: rank 0 initialises, then broadcasts so replicas agree.
    for (std::size_t r = 0; r < replicas_.size(); ++r) {
        Replica& replica = *replicas_[r];
        replica.enqueue_allocate(r == 0, true);
        Device& dev = replica.device();
        dev.comm().wait(dev.compute().record(), -1);
        dev.comm().enqueue([this, &replica, &dev] {
            comm_->broadcast(dev.id(), replica.params().data(), replica.params().size(), 0, -1);
        });
        dev.compute().wait(dev.comm().record(), -1);
    }
}

void DataParallel::enqueue_step(int step) {
    const int n = static_cast<int>(replicas_.size());
    const int k = env_.config.accumulate;
    const int rows = env_.config.batch / (n * k);
    for (int r = 0; r < n; ++r) {
        Replica& replica = *replicas_[static_cast<std::size_t>(r)];
        Device& dev = replica.device();
        auto all_reduce_bucket = [this, &replica, &dev, step, r](const GradBucket& b) {
            const int index = static_cast<int>(&b - buckets_.data());
            dev.comm().enqueue([this, &replica, &dev, b, step, r, index] {
                if (!powersgd_.empty()) {  // powerSGD_hook in place of the plain all-reduce
                    powersgd_[static_cast<std::size_t>(r)]->reduce(*comm_, index,
                                                                   replica.grads().data(), step);
                    return;
                }
                float* grads = replica.grads().data() + b.begin;
                // fp16_compress_hook / bf16_compress_hook: the bucket cast to 16 bits first
                // (the gradients already carry the 1 / world-size share).
                dev.ops().round_to(env_.config.comm_hook, grads, b.end - b.begin);
                comm_->all_reduce(dev.id(), grads, b.end - b.begin, step);
            });
        };
        for (int micro = 0; micro < k; ++micro) {
            // DDP's no_sync: gradients of the earlier micro-steps stay local and only the last
            // backward reduces their sum. Reducing every micro-step instead, each replica's
            // gradients already hold the reduced sum of the earlier ones, the same everywhere:
            // replica 0 keeps it and the others start again from zero, so the all-reduce adds
            // it once.
            const bool reduce = micro == k - 1 || env_.config.reduce_every_microstep;
            const bool zero_grads = micro == 0 || (env_.config.reduce_every_microstep && r > 0);
            if (micro > 0 && env_.config.reduce_every_microstep)
                dev.compute().wait(dev.comm().record(), step);  // the reduced sum is in place
            std::size_t next_bucket = 0;
            replica.enqueue_forward_backward(
                step, micro, (micro * n + r) * rows, rows, zero_grads, [&](int unit) {
                    if (!reduce || !env_.config.overlap) return;
                    // The comm stream waits for exactly the backward that filled this bucket,
                    // then reduces it while the compute stream goes on with earlier layers.
                    while (next_bucket < buckets_.size() &&
                           buckets_[next_bucket].ready_after_unit == unit) {
                        dev.comm().wait(dev.compute().record(), step);
                        all_reduce_bucket(buckets_[next_bucket++]);
                    }
                });
            if (reduce && !env_.config.overlap) {
                dev.comm().wait(dev.compute().record(), step);
                for (const auto& b : buckets_) all_reduce_bucket(b);
            }
        }
        // The update needs every reduced bucket.
        dev.compute().wait(dev.comm().record(), step);
        replica.enqueue_optimizer(step);
    }
}

std::vector<StateSlice> DataParallel::state_slices() {
    std::vector<StateSlice> out;
    for (auto& r : replicas_) out.push_back(r->state_slice());
    return out;
}

double DataParallel::step_loss() const {
    double sum = 0.0;
    for (const auto& r : replicas_) sum += r->loss_sum();
    return sum / env_.loss_count();
}

// Every replica's update read the same reduced gradients: replica 0 speaks for all.
bool DataParallel::step_numerics(StepRecord& record) const {
    return replicas_.front()->numerics(record);
}

std::vector<float> DataParallel::parameters() const {
    return replicas_.front()->params().to_host();
}

std::vector<float> DataParallel::master_parameters() const {
    return replicas_.front()->master();
}

}  // namespace pd
