// Point-to-point messages between devices of one process: a FIFO per (source, destination,
// tag) channel. A payload is staging memory of the sending device, filled by a copy on the
// sender's stream and read on the receiver's; the device events on it order the two (the
// receiver waits for the copy, a later send into the same payload waits for the reader).
// Payloads are recycled per channel so steady-state collectives do not allocate.
#pragma once

#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <tuple>
#include <vector>

namespace pd {

class RunContext;
class DeviceOps;

struct Payload {
    Payload(DeviceOps& owner, std::size_t count);
    ~Payload();
    Payload(const Payload&) = delete;
    Payload& operator=(const Payload&) = delete;

    DeviceOps& owner;
    float* data = nullptr;
    std::size_t capacity = 0;
    std::size_t count = 0;
    std::shared_ptr<void> ready;     // the copy into `data` finished (sender's queue)
    std::shared_ptr<void> consumed;  // the receiver finished reading (receiver's queue)
};

struct Message {
    std::unique_ptr<Payload> payload;
    std::int64_t sent_at_ns = 0;  // sender's clock when the data left
    std::uint64_t flow_id = 0;
};

class Transport {
  public:
    explicit Transport(RunContext& ctx) : ctx_(ctx) {}
    RunContext& context() { return ctx_; }

    // On the sender's stream: copies `count` floats of the sender's memory into a payload.
    void send(int src, int dst, std::uint64_t tag, DeviceOps& sender, const float* data,
              std::size_t count, std::int64_t sent_at_ns, std::uint64_t flow_id);
    // Blocks until a message arrives; throws Aborted or CollectiveTimeout naming `what`.
    // The receiver reads the payload through `receive_into` below (or waits on `ready`).
    Message recv(int src, int dst, std::uint64_t tag, const std::string& what);
    // On the receiver's stream: copies (or adds) the payload into `dst`, marks it consumed,
    // and gives it back for reuse by later sends on the same channel.
    void receive_into(int src, int dst, std::uint64_t tag, DeviceOps& receiver, Message& message,
                      float* data, bool accumulate);
    // Frees every payload; call once no stream uses the transport (before devices go).
    void clear();

  private:
    struct Channel {
        std::mutex mutex;
        std::condition_variable cv;
        std::deque<Message> queue;
        std::vector<std::unique_ptr<Payload>> spare;
    };
    Channel& channel(int src, int dst, std::uint64_t tag);

    RunContext& ctx_;
    std::mutex map_mutex_;
    std::map<std::tuple<int, int, std::uint64_t>, std::unique_ptr<Channel>> channels_;
};

}  // namespace pd
