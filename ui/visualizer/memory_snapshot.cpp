#include "visualizer/memory_snapshot.h"

#include <algorithm>

namespace pd::vis {

double MemorySnapshot::total(int device) const {
    double sum = 0;
    for (double b : bytes[static_cast<std::size_t>(device)]) sum += b;
    return sum;
}

int MemorySnapshot::row_of(const pd::OomInfo& o) const {
    switch (o.where) {
        case pd::OffloadDevice::cpu:
            return devices() + o.device;
        case pd::OffloadDevice::nvme:
            return devices() + host_rows + o.device;
        case pd::OffloadDevice::none:
            break;
    }
    return o.device;
}

const pd::OomInfo* MemorySnapshot::oom_on(int row) const {
    for (const auto& o : ooms)
        if (row_of(o) == row) return &o;
    return nullptr;
}

namespace {

// Every device that ran out: the run's list, or its one error where a result has no list.
std::vector<pd::OomInfo> ooms_of(const pd::RunResult& result, int devices) {
    std::vector<pd::OomInfo> out;
    for (const auto& o : result.ooms)
        if (o.device >= 0 && o.device < devices) out.push_back(o);
    if (out.empty() && result.oom && result.oom->device >= 0 && result.oom->device < devices)
        out.push_back(*result.oom);
    return out;
}

}  // namespace

bool MemorySnapshot::over_capacity(int device) const {
    double t = total(device);
    if (const pd::OomInfo* o = oom_on(device)) t += static_cast<double>(o->requested_bytes);
    const auto d = static_cast<std::size_t>(device);
    return d < capacity.size() && t > capacity[d];
}

MemorySnapshot peak_memory(const pd::RunResult& result, const pd::RunMetrics& metrics) {
    MemorySnapshot s;
    const int n = std::max<int>(result.trace.devices, static_cast<int>(metrics.devices.size()));
    s.bytes.resize(static_cast<std::size_t>(n));
    for (const auto& d : metrics.devices) {
        if (d.device < 0 || d.device >= n) continue;
        for (std::size_t c = 0; c < pd::kMemoryCategoryCount; ++c)
            s.bytes[static_cast<std::size_t>(d.device)][c] = static_cast<double>(d.peak_bytes[c]);
    }
    for (int d = 0; d < n; ++d)
        s.capacity.push_back(
            d < static_cast<int>(result.trace.capacity_bytes.size())
                ? static_cast<double>(result.trace.capacity_bytes[static_cast<std::size_t>(d)])
                : 0.0);
    // Host memory (ZeRO-Offload), then NVMe (ZeRO-Infinity): each device's share, each
    // category's own peak, in rows after the devices'.
    const auto offload_rows = [&s](const std::vector<pd::MemorySample>& samples,
                                   const std::vector<std::size_t>& capacities) {
        if (samples.empty()) return 0;
        const int first = static_cast<int>(s.bytes.size());
        const int rows = static_cast<int>(capacities.size());
        s.bytes.resize(static_cast<std::size_t>(first + rows));
        for (const auto& m : samples)
            if (m.device >= 0 && m.device < rows) {
                double& v = s.bytes[static_cast<std::size_t>(first + m.device)]
                                   [static_cast<std::size_t>(m.category)];
                v = std::max(v, static_cast<double>(m.bytes));
            }
        for (std::size_t c : capacities) s.capacity.push_back(static_cast<double>(c));
        return rows;
    };
    s.host_rows = offload_rows(result.trace.host_memory, result.trace.host_capacity_bytes);
    s.nvme_rows = offload_rows(result.trace.nvme_memory, result.trace.nvme_capacity_bytes);
    s.ooms = ooms_of(result, n);
    for (const auto& o : s.ooms) {
        // The peak of a run that died is what was live when the request failed.
        const int r = s.row_of(o);
        if (r < static_cast<int>(s.bytes.size()) &&
            s.total(r) < static_cast<double>(o.live_bytes)) {
            auto& row = s.bytes[static_cast<std::size_t>(r)];
            row[static_cast<std::size_t>(pd::MemoryCategory::workspace)] +=
                static_cast<double>(o.live_bytes) - s.total(r);
        }
    }
    return s;
}

MemoryTimeline::MemoryTimeline(const pd::RunResult& result) {
    const auto& t = result.trace;
    int n = t.devices;
    for (const auto& m : t.memory) n = std::max(n, m.device + 1);
    series_.resize(static_cast<std::size_t>(n));
    for (const auto& m : t.memory) {
        if (m.device < 0) continue;
        series_[static_cast<std::size_t>(m.device)][static_cast<std::size_t>(m.category)].push_back(
            {m.t_ns, static_cast<double>(m.bytes)});
        end_ns_ = std::max(end_ns_, m.t_ns);
    }
    for (auto& dev : series_)
        for (auto& cat : dev)
            std::stable_sort(cat.begin(), cat.end(),
                             [](const Sample& a, const Sample& b) { return a.t_ns < b.t_ns; });
    for (int d = 0; d < n; ++d)
        capacity_.push_back(d < static_cast<int>(t.capacity_bytes.size())
                                ? static_cast<double>(t.capacity_bytes[static_cast<std::size_t>(d)])
                                : 0.0);
    // Host memory (ZeRO-Offload), then NVMe (ZeRO-Infinity): rows after the devices'.
    const auto offload_rows = [this](const std::vector<pd::MemorySample>& samples,
                                     const std::vector<std::size_t>& capacities) {
        if (samples.empty()) return 0;
        const int first = static_cast<int>(series_.size());
        const int rows = static_cast<int>(capacities.size());
        series_.resize(static_cast<std::size_t>(first + rows));
        for (const auto& m : samples) {
            if (m.device < 0 || m.device >= rows) continue;
            series_[static_cast<std::size_t>(first + m.device)]
                   [static_cast<std::size_t>(m.category)]
                       .push_back({m.t_ns, static_cast<double>(m.bytes)});
            end_ns_ = std::max(end_ns_, m.t_ns);
        }
        for (std::size_t c : capacities) capacity_.push_back(static_cast<double>(c));
        return rows;
    };
    host_rows_ = offload_rows(t.host_memory, t.host_capacity_bytes);
    nvme_rows_ = offload_rows(t.nvme_memory, t.nvme_capacity_bytes);
    for (const auto& e : t.events)
        if (e.kind == pd::EventKind::oom) end_ns_ = std::max(end_ns_, e.start_ns);
    ooms_ = ooms_of(result, n);
}

MemorySnapshot MemoryTimeline::at(std::int64_t t_ns) const {
    MemorySnapshot s;
    s.capacity = capacity_;
    s.host_rows = host_rows_;
    s.nvme_rows = nvme_rows_;
    s.bytes.resize(series_.size());
    for (std::size_t d = 0; d < series_.size(); ++d)
        for (std::size_t c = 0; c < pd::kMemoryCategoryCount; ++c) {
            const auto& v = series_[d][c];
            // The last sample at or before t holds the live bytes.
            const auto it =
                std::upper_bound(v.begin(), v.end(), t_ns,
                                 [](std::int64_t t, const Sample& x) { return t < x.t_ns; });
            s.bytes[d][c] = it == v.begin() ? 0.0 : std::prev(it)->bytes;
        }
    // The failed requests show once the cursor has reached the end of the run.
    if (t_ns >= end_ns_) s.ooms = ooms_;
    return s;
}

}  // namespace pd::vis
