// summarize_data: a run's dataset reads (Trace::data) as figures.
#include <algorithm>
#include <map>
#include <numeric>
#include <set>

#include "pd/metrics.h"

namespace pd {

DataSummary summarize_data(const Trace& trace) {
    const auto& data = trace.data;
    DataSummary out;
    if (!data.present) return out;
    out.present = true;
    out.examples = std::accumulate(data.file_examples.begin(), data.file_examples.end(), 0);
    std::vector<int> file_first;
    for (int f = 0, first = 0; f < static_cast<int>(data.file_examples.size());
         first += data.file_examples[static_cast<std::size_t>(f++)])
        file_first.push_back(first);
    auto file_of = [&](int id) {
        return static_cast<int>(std::upper_bound(file_first.begin(), file_first.end(), id) -
                                file_first.begin()) -
               1;
    };
    const int devices = data.pipelines * data.replicas_per_pipeline;
    out.devices.resize(static_cast<std::size_t>(devices));
    for (int d = 0; d < devices; ++d) {
        const auto p = static_cast<std::size_t>(d / data.replicas_per_pipeline);
        auto& dev = out.devices[static_cast<std::size_t>(d)];
        dev.steps_per_epoch = data.steps_per_epoch[p];
        dev.examples_kept = data.shard_examples[p];
        dev.examples_scanned = data.scanned_examples[p];
        dev.files_opened = data.files_opened[p];
    }
    std::set<int> distinct;
    std::vector<std::set<int>> files(static_cast<std::size_t>(devices));
    int duplicates = 0;
    for (std::size_t i = 0; i < data.reads.size();) {
        // One step's slices: count each example's readers.
        const int step = data.reads[i].step;
        std::map<int, int> readers;
        for (; i < data.reads.size() && data.reads[i].step == step; ++i) {
            const auto& slice = data.reads[i];
            auto& dev = out.devices[static_cast<std::size_t>(slice.device)];
            out.epochs = std::max(out.epochs, slice.epoch + 1);
            for (const auto& run : slice.runs)
                for (int k = 0; k < run.count; ++k) {
                    const int id = run.first + k * run.stride;
                    ++readers[id];
                    distinct.insert(id);
                    files[static_cast<std::size_t>(slice.device)].insert(file_of(id));
                    ++dev.reads;
                    ++out.reads;
                }
        }
        for (const auto& [id, n] : readers)
            if (n > 1) duplicates += n;
    }
    for (int d = 0; d < devices; ++d)
        out.devices[static_cast<std::size_t>(d)].files_read =
            static_cast<int>(files[static_cast<std::size_t>(d)].size());
    out.distinct_read = static_cast<int>(distinct.size());
    out.duplicate_fraction = out.reads > 0 ? static_cast<double>(duplicates) / out.reads : 0.0;
    return out;
}

}  // namespace pd
