#include "strategies/parameter_server.h"

#include "backend/device_ops.h"

#include <algorithm>

namespace pd {

ParameterServer::ParameterServer(RunEnvironment& env)
    : env_(env), buckets_(make_grad_buckets(env.layout, env.config.bucket_bytes)) {
    std::vector<Device*> members;
    for (auto& d : env.devices) members.push_back(d.get());
    server_ = std::make_unique<Replica>(env, env.device(0));
    for (int d = 1; d < env.config.devices; ++d)
        workers_.push_back(std::make_unique<Replica>(env, env.device(d)));
    comm_ = std::make_unique<Communicator>(env.transport, members, 2);
}

void ParameterServer::enqueue_setup() {
    server_->enqueue_allocate(true, true);
    // Workers start from the same deterministic initialisation and keep no optimizer state.
    for (auto& w : workers_) w->enqueue_allocate(true, false);
}

void ParameterServer::enqueue_step(int step) {
    const int workers = static_cast<int>(workers_.size());
    const int rows = env_.config.batch / workers;
    Device& server_dev = server_->device();

    // Server, comm stream: zero the gradient sum, then take each bucket from each worker in
    // the order backward produces them, adding as it arrives.
    server_dev.comm().enqueue([this] {
        server_->device().ops().fill_zero(server_->grads().data(), server_->grads().size());
    });
    for (const auto& b : buckets_) {
        for (int w = 0; w < workers; ++w) {
            server_dev.comm().enqueue([this, b, w, step, &server_dev] {
                comm_->recv(server_dev.id(), w + 1, server_->grads().data() + b.begin,
                            b.end - b.begin, step, "push gradients", true);
            });
        }
    }
    server_dev.compute().wait(server_dev.comm().record(), step);
    server_->enqueue_optimizer(step);
    server_dev.comm().wait(server_dev.compute().record(), step);
    for (int w = 0; w < workers; ++w) {
        server_dev.comm().enqueue([this, w, step, &server_dev] {
            comm_->send(server_dev.id(), w + 1, server_->params().data(), server_->params().size(),
                        step, "serve parameters");
        });
    }

    for (int w = 0; w < workers; ++w) {
        Replica& worker = *workers_[static_cast<std::size_t>(w)];
        Device& dev = worker.device();
        std::size_t next_bucket = 0;
        worker.enqueue_forward_backward(step, 0, w * rows, rows, true, [&](int unit) {
            while (next_bucket < buckets_.size() &&
                   buckets_[next_bucket].ready_after_unit == unit) {
                const GradBucket b = buckets_[next_bucket++];
                dev.comm().wait(dev.compute().record(), step);
                dev.comm().enqueue([this, &worker, &dev, b, step] {
                    comm_->send(dev.id(), 0, worker.grads().data() + b.begin, b.end - b.begin, step,
                                "push gradients");
                });
            }
        });
        dev.comm().enqueue([this, &worker, &dev, step] {
            comm_->recv(dev.id(), 0, worker.params().data(), worker.params().size(), step,
                        "pull parameters");
        });
        // The next forward must see the pulled parameters.
        dev.compute().wait(dev.comm().record(), step);
    }
}

double ParameterServer::step_loss() const {
    double sum = 0.0;
    for (const auto& w : workers_) sum += w->loss_sum();
    return sum / static_cast<double>(env_.config.batch);
}

std::vector<float> ParameterServer::parameters() const {
    return server_->params().to_host();
}

}  // namespace pd
