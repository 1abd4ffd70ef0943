#include "trace_loader.h"

#include <QMetaObject>

#include "pd/error.h"

namespace pd::app {

TraceLoader::TraceLoader(QObject* parent) : QObject(parent) {
    qRegisterMetaType<std::shared_ptr<const pd::RunResult>>();
}

TraceLoader::~TraceLoader() {
    stopCurrent();
}

void TraceLoader::stopCurrent() {
    ++generation_;  // whatever the old load still posts is dropped
    cancel_.store(true);
    if (worker_.joinable()) worker_.join();
    loading_.store(false);
}

void TraceLoader::cancel() {
    if (loading_.load()) cancel_.store(true);
}

void TraceLoader::load(const QStringList& files, pd::ClockAlignment alignment) {
    stopCurrent();
    cancel_.store(false);
    loading_.store(true);
    const quint64 generation = generation_.load();
    std::vector<std::string> paths;
    for (const QString& f : files) paths.push_back(f.toStdString());
    worker_ = std::thread([this, files, paths, alignment, generation] {
        // Posts `f` to the GUI thread unless a newer load has begun since.
        auto post = [this, generation](auto f) {
            QMetaObject::invokeMethod(
                this,
                [this, generation, f] {
                    if (generation_.load() != generation) return;
                    f();
                },
                Qt::QueuedConnection);
        };
        pd::TraceImportOptions options;
        options.alignment = alignment;
        int last_permille = -1;
        options.progress = [&](std::uint64_t done, std::uint64_t total) {
            const int permille = total ? static_cast<int>(1000 * done / total) : 1000;
            if (permille != last_permille) {
                last_permille = permille;
                post([this, done, total] {
                    emit progress(static_cast<qint64>(done), static_cast<qint64>(total));
                });
            }
            return !cancel_.load();
        };
        try {
            auto result = std::make_shared<pd::RunResult>();
            result->trace = pd::import_traces(paths, options);
            result->steps_completed = static_cast<int>(result->trace.steps.size());
            std::shared_ptr<const pd::RunResult> shared = std::move(result);
            post([this, files, shared] {
                loading_.store(false);
                emit loaded(files, shared);
            });
        } catch (const pd::Cancelled&) {
            post([this] {
                loading_.store(false);
                emit cancelled();
            });
        } catch (const std::exception& e) {
            const QString message = QString::fromStdString(e.what());
            post([this, message] {
                loading_.store(false);
                emit failed(message);
            });
        }
    });
}

pd::RunConfig importedRunConfig(const pd::RunResult& result) {
    pd::RunConfig c;
    c.devices = std::max(1, result.trace.devices);
    c.steps = std::max(1, static_cast<int>(result.trace.steps.size()));
    c.backend = result.trace.backend;
    return c;
}

}  // namespace pd::app
