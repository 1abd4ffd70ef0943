// Runs the engine off the GUI thread: one run at a time, progress and the result delivered as
// queued signals, cancel on request, and a stale run cancelled when a new one starts.
#pragma once

#include <QObject>
#include <QString>
#include <atomic>
#include <memory>
#include <mutex>
#include <thread>

#include "pd/run.h"
#include "pd/run_config.h"

namespace pd::app {

class RunController : public QObject {
    Q_OBJECT
  public:
    explicit RunController(QObject* parent = nullptr);
    ~RunController() override;  // cancels the current run and waits for it

    bool isRunning() const { return running_.load(); }
    // Runs started from now on post `partial` with the run so far after their first step,
    // then at most every `intervalMs` (< 0: never). See Run::share_run_so_far.
    void setShareRunSoFar(int intervalMs) { shareIntervalMs_ = intervalMs; }

  public slots:
    // Starts `config`; a run already going is cancelled first and its signals are dropped.
    void start(const pd::RunConfig& config);
    void cancel();

  signals:
    void started(const pd::RunConfig& config);
    void progress(int stepsDone, int stepsTotal, const QString& phase, double loss);
    // The run so far (RunResult::partial), while it goes on; `finished` still follows.
    void partial(const pd::RunConfig& config, std::shared_ptr<const pd::RunResult> soFar);
    // Every run that got going ends here: ok, out of memory (the trace shows where) or failed.
    void finished(const pd::RunConfig& config, std::shared_ptr<const pd::RunResult> result);
    void cancelled();
    // The config was refused before the run began (names the setting and the reason).
    void rejected(const QString& message);

  private:
    void stopCurrent();

    std::thread worker_;
    std::shared_ptr<pd::Run> run_;
    std::atomic<bool> running_{false};
    std::atomic<quint64> generation_{0};
    int shareIntervalMs_ = -1;
};

}  // namespace pd::app

Q_DECLARE_METATYPE(pd::RunConfig)
Q_DECLARE_METATYPE(std::shared_ptr<const pd::RunResult>)
