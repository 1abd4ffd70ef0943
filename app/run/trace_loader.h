// Reads a learner's trace files off the GUI thread (pd::import_traces): progress as the bytes
// go by, Cancel honoured within one read buffer, and the imported run delivered as a queued
// signal. A new load cancels the one before and its signals are dropped.
#pragma once

#include <QObject>
#include <QString>
#include <QStringList>
#include <atomic>
#include <memory>
#include <thread>

#include "pd/run.h"
#include "pd/trace_import.h"
#include "run_controller.h"  // the result's metatype

namespace pd::app {

class TraceLoader : public QObject {
    Q_OBJECT
  public:
    explicit TraceLoader(QObject* parent = nullptr);
    ~TraceLoader() override;  // cancels the current load and waits for it

    bool isLoading() const { return loading_.load(); }

  public slots:
    void load(const QStringList& files,
              pd::ClockAlignment alignment = pd::ClockAlignment::automatic);
    void cancel();

  signals:
    void progress(qint64 doneBytes, qint64 totalBytes);
    // The imported run: status ok, its trace with origin.imported set, one step per
    // profiler step.
    void loaded(const QStringList& files, std::shared_ptr<const pd::RunResult> result);
    void failed(const QString& message);  // names the file and, for bad JSON, the byte
    void cancelled();

  private:
    void stopCurrent();

    std::thread worker_;
    std::atomic<bool> loading_{false};
    std::atomic<bool> cancel_{false};
    std::atomic<quint64> generation_{0};
};

// The settings an imported run is shown with: its devices and steps, nothing else.
pd::RunConfig importedRunConfig(const pd::RunResult& result);

}  // namespace pd::app
