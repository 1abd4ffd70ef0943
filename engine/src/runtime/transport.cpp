#include "pd/transport.h"

#include <algorithm>

#include "pd/run_context.h"

namespace pd {

Transport::Channel& Transport::channel(int src, int dst, std::uint64_t tag) {
    std::lock_guard lock(map_mutex_);
    auto& slot = channels_[{src, dst, tag}];
    if (!slot) slot = std::make_unique<Channel>();
    return *slot;
}

void Transport::send(int src, int dst, std::uint64_t tag, const float* data, std::size_t count,
                     std::int64_t sent_at_ns, std::uint64_t flow_id) {
    Channel& ch = channel(src, dst, tag);
    std::vector<float> payload;
    {
        std::lock_guard lock(ch.mutex);
        if (!ch.spare.empty()) {
            payload = std::move(ch.spare.back());
            ch.spare.pop_back();
        }
    }
    payload.resize(count);
    std::copy_n(data, count, payload.data());
    {
        std::lock_guard lock(ch.mutex);
        ch.queue.push_back({std::move(payload), sent_at_ns, flow_id});
    }
    ch.cv.notify_all();
}

Message Transport::recv(int src, int dst, std::uint64_t tag, const std::string& what) {
    Channel& ch = channel(src, dst, tag);
    std::unique_lock lock(ch.mutex);
    ctx_.wait(
        lock, ch.cv, [&] { return !ch.queue.empty(); }, what);
    Message message = std::move(ch.queue.front());
    ch.queue.pop_front();
    return message;
}

void Transport::recycle(int src, int dst, std::uint64_t tag, std::vector<float>&& payload) {
    Channel& ch = channel(src, dst, tag);
    std::lock_guard lock(ch.mutex);
    if (ch.spare.size() < 4) ch.spare.push_back(std::move(payload));
}

}  // namespace pd
