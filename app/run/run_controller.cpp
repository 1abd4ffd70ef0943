#include "run_controller.h"

#include <QMetaObject>

#include "pd/error.h"

namespace pd::app {

RunController::RunController(QObject* parent) : QObject(parent) {
    qRegisterMetaType<pd::RunConfig>();
    qRegisterMetaType<std::shared_ptr<const pd::RunResult>>();
}

RunController::~RunController() {
    stopCurrent();
}

void RunController::stopCurrent() {
    ++generation_;  // whatever the old run still posts is now stale
    if (run_) run_->cancel();
    if (worker_.joinable()) worker_.join();  // bounded: collectives and waits abort promptly
    run_.reset();
    running_.store(false);
}

void RunController::cancel() {
    if (run_) run_->cancel();
}

void RunController::start(const pd::RunConfig& config) {
    stopCurrent();
    std::shared_ptr<pd::Run> run;
    try {
        run = std::make_shared<pd::Run>(config);
    } catch (const pd::BadInput& e) {
        emit rejected(QString::fromStdString(e.what()));
        return;
    }
    run->share_run_so_far(shareIntervalMs_);
    run_ = run;
    running_.store(true);
    const quint64 generation = generation_.load();
    emit started(config);
    worker_ = std::thread([this, run, config, generation] {
        auto post = [this, generation](auto&& fn) {
            QMetaObject::invokeMethod(
                this,
                [this, generation, fn = std::forward<decltype(fn)>(fn)] {
                    if (generation == generation_.load()) fn();
                },
                Qt::QueuedConnection);
        };
        auto result = std::make_shared<pd::RunResult>(run->execute([&](const RunProgress& p) {
            const QString phase = QString::fromStdString(p.phase);
            post([this, p, phase] { emit progress(p.steps_done, p.steps_total, phase, p.loss); });
            if (p.so_far) post([this, config, soFar = p.so_far] { emit partial(config, soFar); });
        }));
        post([this, config, result] {
            running_.store(false);
            if (result->status == RunStatus::cancelled)
                emit cancelled();
            else
                emit finished(config, result);
        });
    });
}

}  // namespace pd::app
