#include "pd/transport.h"

#include "backend/device_ops.h"
#include "pd/run_context.h"

namespace pd {

Payload::Payload(DeviceOps& o, std::size_t n) : owner(o), data(o.allocate(n)), capacity(n) {}

Payload::~Payload() {
    owner.release(data);
}

Transport::Channel& Transport::channel(int src, int dst, std::uint64_t tag) {
    std::lock_guard lock(map_mutex_);
    auto& slot = channels_[{src, dst, tag}];
    if (!slot) slot = std::make_unique<Channel>();
    return *slot;
}

void Transport::send(int src, int dst, std::uint64_t tag, DeviceOps& sender, const float* data,
                     std::size_t count, std::int64_t sent_at_ns, std::uint64_t flow_id) {
    Channel& ch = channel(src, dst, tag);
    std::unique_ptr<Payload> payload;
    {
        std::lock_guard lock(ch.mutex);
        if (!ch.spare.empty()) {
            payload = std::move(ch.spare.back());
            ch.spare.pop_back();
        }
    }
    // A recycled payload may still be read by its last receiver: wait for that first.
    if (payload && payload->consumed) sender.wait_event(payload->consumed);
    if (!payload || payload->capacity < count || &payload->owner != &sender)
        payload = std::make_unique<Payload>(sender, count);
    payload->count = count;
    if (count) sender.copy(payload->data, data, count);
    payload->ready = sender.record_event();
    payload->consumed = nullptr;
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

void Transport::receive_into(int src, int dst, std::uint64_t tag, DeviceOps& receiver,
                             Message& message, float* data, bool accumulate) {
    Payload& p = *message.payload;
    receiver.wait_event(p.ready);
    if (p.count) {
        if (accumulate)
            receiver.add(data, p.data, p.count);
        else
            receiver.copy(data, p.data, p.count);
    }
    p.consumed = receiver.record_event();
    // Kept however many: a channel holds at most as many payloads as it had messages in
    // flight, and freeing one here would be on the receiver's queue, not its owner's.
    Channel& ch = channel(src, dst, tag);
    std::lock_guard lock(ch.mutex);
    ch.spare.push_back(std::move(message.payload));
}

void Transport::clear() {
    std::lock_guard lock(map_mutex_);
    channels_.clear();
}

}  // namespace pd
