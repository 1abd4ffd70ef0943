// Point-to-point messages between devices of one process: a FIFO per (source, destination,
// tag) channel. Payload buffers are recycled per channel so steady-state collectives do not
// allocate (a fresh 16 MiB vector per step would be page faults, not bandwidth).
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

struct Message {
    std::vector<float> payload;
    std::int64_t sent_at_ns = 0;  // sender's clock when the data left
    std::uint64_t flow_id = 0;
};

class Transport {
  public:
    explicit Transport(RunContext& ctx) : ctx_(ctx) {}
    RunContext& context() { return ctx_; }

    void send(int src, int dst, std::uint64_t tag, const float* data, std::size_t count,
              std::int64_t sent_at_ns, std::uint64_t flow_id);
    // Blocks until a message arrives; throws Aborted or CollectiveTimeout naming `what`.
    Message recv(int src, int dst, std::uint64_t tag, const std::string& what);
    // Gives a received payload back for reuse by later sends on the same channel.
    void recycle(int src, int dst, std::uint64_t tag, std::vector<float>&& payload);

  private:
    struct Channel {
        std::mutex mutex;
        std::condition_variable cv;
        std::deque<Message> queue;
        std::vector<std::vector<float>> spare;
    };
    Channel& channel(int src, int dst, std::uint64_t tag);

    RunContext& ctx_;
    std::mutex map_mutex_;
    std::map<std::tuple<int, int, std::uint64_t>, std::unique_ptr<Channel>> channels_;
};

}  // namespace pd
