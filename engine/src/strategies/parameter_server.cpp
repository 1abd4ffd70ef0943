#include "strategies/parameter_server.h"

#include "backend/device_ops.h"

#include <algorithm>

namespace pd {

ParameterServer::ParameterServer(RunEnvironment& env)
    : env_(env), buckets_(make_grad_buckets(env.layout, env.config.bucket_bytes, env.dtype)) {
    std::vector<Device*> members;
    for (auto& d : env.devices) members.push_back(d.get());
    server_ = std::make_unique<Replica>(env, env.device(0));
    for (int d = 1; d < env.config.devices; ++d)
        workers_.push_back(std::make_unique<Replica>(env, env.device(d)));
    comm_ = std::make_unique<Communicator>(env.transport, members, 2, env.dtype);
}

void ParameterServer::enqueue_setup() {
    server_->enqueue_allocate(true, true);
    // Workers start from the same deterministic initialisation and keep no optimizer state.
    for (auto& w : workers_) w->enqueue_allocate(true, false);
}

void ParameterServer::enqueue_step(int step) {
    const int workers = static_cast<int>(workers_.size());
    const int rows = env_.config.batch / workers;
    const int staleness = env_.config.async_updates ? env_.config.max_staleness : 0;
    // This step's gradients are computed on version `computed_on`; its update makes version
    // step + 1, which the workers compute step + 1 + staleness on.
    const int computed_on = std::max(0, step - staleness);
    const int made = step + 1;
    const bool made_is_read = made + staleness < env_.config.steps;
    const std::string on_version = " (on v" + std::to_string(computed_on) + ")";
    Device& server_dev = server_->device();

    // Server, comm stream: zero the gradient sum, then take each bucket from each worker in
    // the order backward produces them, adding as it arrives.
    server_dev.comm().enqueue([this] {
        server_->device().ops().fill_zero(server_->grads().data(), server_->grads().size());
    });
    for (const auto& b : buckets_) {
        for (int w = 0; w < workers; ++w) {
            server_dev.comm().enqueue([this, b, w, step, on_version, &server_dev] {
                comm_->recv(server_dev.id(), w + 1, server_->grads().data() + b.begin,
                            b.end - b.begin, step, "push gradients" + on_version, true);
            });
        }
    }
    for (int w = 0; w < workers; ++w) updates_.push_back({step, w + 1, computed_on, step});
    server_dev.compute().wait(server_dev.comm().record(), step);
    server_->enqueue_optimizer(step);
    if (made_is_read) {
        server_dev.comm().wait(server_dev.compute().record(), step);
        for (int w = 0; w < workers; ++w) {
            server_dev.comm().enqueue([this, w, step, made, &server_dev] {
                comm_->send(server_dev.id(), w + 1, server_->params().data(),
                            server_->params().size(), step,
                            "serve parameters v" + std::to_string(made));
            });
        }
    }

    for (int w = 0; w < workers; ++w) {
        Replica& worker = *workers_[static_cast<std::size_t>(w)];
        Device& dev = worker.device();
        if (computed_on > 0) {  // version 0 is the shared initialisation every worker has
            dev.comm().enqueue([this, &worker, &dev, step, computed_on] {
                comm_->recv(dev.id(), 0, worker.params().data(), worker.params().size(), step,
                            "pull parameters v" + std::to_string(computed_on));
            });
            // This step's forward must see the pulled parameters.
            dev.compute().wait(dev.comm().record(), step);
        }
        std::size_t next_bucket = 0;
        worker.enqueue_forward_backward(step, 0, w * rows, rows, true, [&](int unit) {
            while (next_bucket < buckets_.size() &&
                   buckets_[next_bucket].ready_after_unit == unit) {
                const GradBucket b = buckets_[next_bucket++];
                dev.comm().wait(dev.compute().record(), step);
                dev.comm().enqueue([this, &worker, &dev, b, step, on_version] {
                    comm_->send(dev.id(), 0, worker.grads().data() + b.begin, b.end - b.begin, step,
                                "push gradients" + on_version);
                });
            }
        });
    }
}

double ParameterServer::step_loss() const {
    double sum = 0.0;
    for (const auto& w : workers_) sum += w->loss_sum();
    return sum / env_.loss_count();
}

std::vector<float> ParameterServer::parameters() const {
    return server_->params().to_host();
}

std::vector<float> ParameterServer::master_parameters() const {
    return server_->master();
}

}  // namespace pd
