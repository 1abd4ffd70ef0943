#include "cuda/nccl_group.h"

#include <nccl.h>

#include <algorithm>

#include "cuda/cuda_libraries.h"
#include "pd/error.h"

namespace pd::cuda {

namespace {

void check(ncclResult_t status, const char* call, const char* file, int line) {
    if (status == ncclSuccess || status == ncclInProgress) return;
    throw Error(std::string(call) + " failed: " + nccl().error_string(status), file, line);
}
#define PD_NCCL_CHECK(call) check((call), #call, __FILE__, __LINE__)

// The calls of one rank go to its own stream; each rank is driven by its own thread.
class NcclGroup final : public GroupCollectives {
  public:
    NcclGroup(const std::vector<int>& gpus, bool native, NcclRegistry& registry,
              std::function<cudaStream_t(int)> stream_of)
        : native_(native), registry_(registry), stream_of_(std::move(stream_of)) {
        comms_.resize(gpus.size());
        PD_NCCL_CHECK(nccl().init_all(comms_.data(), static_cast<int>(gpus.size()), gpus.data()));
        for (ncclComm_t c : comms_) registry_.add(c);
    }
    ~NcclGroup() override {
        // An aborted communicator was freed by its abort.
        const bool aborted = registry_.aborted();
        for (ncclComm_t c : comms_) {
            registry_.remove(c);
            if (!aborted) nccl().destroy(c);
        }
    }

    bool native() const override { return native_; }

    void exchange(int rank, const float* send, std::size_t send_count, int to, float* recv,
                  std::size_t recv_count, int from) override {
        cudaStream_t s = stream_of_(rank);
        ncclComm_t c = comm(rank);
        // One group: both directions progress together, as a ring step needs.
        PD_NCCL_CHECK(nccl().group_start());
        ncclResult_t sent = nccl().send(send, send_count, ncclFloat32, to, c, s);
        ncclResult_t received = nccl().recv(recv, recv_count, ncclFloat32, from, c, s);
        PD_NCCL_CHECK(nccl().group_end());
        PD_NCCL_CHECK(sent);
        PD_NCCL_CHECK(received);
    }
    void send(int rank, const float* data, std::size_t count, int to) override {
        PD_NCCL_CHECK(nccl().send(data, count, ncclFloat32, to, comm(rank), stream_of_(rank)));
    }
    void recv(int rank, float* data, std::size_t count, int from) override {
        PD_NCCL_CHECK(nccl().recv(data, count, ncclFloat32, from, comm(rank), stream_of_(rank)));
    }
    void all_reduce(int rank, float* data, std::size_t count) override {
        PD_NCCL_CHECK(nccl().all_reduce(data, data, count, ncclFloat32, ncclSum, comm(rank),
                                        stream_of_(rank)));
    }
    // In place, as NCCL documents it: rank r's result lands at data + r * chunk.
    void reduce_scatter(int rank, float* data, std::size_t count) override {
        const std::size_t chunk = count / comms_.size();
        PD_NCCL_CHECK(nccl().reduce_scatter(data, data + static_cast<std::size_t>(rank) * chunk,
                                            chunk, ncclFloat32, ncclSum, comm(rank),
                                            stream_of_(rank)));
    }
    void all_gather(int rank, float* data, std::size_t count) override {
        const std::size_t chunk = count / comms_.size();
        PD_NCCL_CHECK(nccl().all_gather(data + static_cast<std::size_t>(rank) * chunk, data, chunk,
                                        ncclFloat32, comm(rank), stream_of_(rank)));
    }
    void broadcast(int rank, float* data, std::size_t count, int root) override {
        PD_NCCL_CHECK(
            nccl().broadcast(data, data, count, ncclFloat32, root, comm(rank), stream_of_(rank)));
    }

  private:
    ncclComm_t comm(int rank) const { return comms_[static_cast<std::size_t>(rank)]; }

    bool native_;
    NcclRegistry& registry_;
    std::function<cudaStream_t(int)> stream_of_;
    std::vector<ncclComm_t> comms_;
};

}  // namespace

void NcclRegistry::add(void* comm) {
    std::lock_guard lock(mutex_);
    comms_.push_back(comm);
}

void NcclRegistry::remove(void* comm) {
    std::lock_guard lock(mutex_);
    comms_.erase(std::remove(comms_.begin(), comms_.end(), comm), comms_.end());
}

bool NcclRegistry::aborted() const {
    std::lock_guard lock(mutex_);
    return aborted_;
}

bool NcclRegistry::empty() const {
    std::lock_guard lock(mutex_);
    return comms_.empty();
}

void NcclRegistry::abort_all() noexcept {
    std::lock_guard lock(mutex_);
    const NcclLibrary* lib = load_nccl();
    if (aborted_ || !lib) return;
    aborted_ = true;
    for (void* c : comms_) lib->abort(static_cast<ncclComm_t>(c));
    // Aborted communicators are freed by the abort: the groups must not destroy them again.
    comms_.clear();
}

std::string NcclRegistry::async_error() const {
    std::lock_guard lock(mutex_);
    const NcclLibrary* lib = load_nccl();
    if (!lib) return {};
    for (void* c : comms_) {
        ncclResult_t status = ncclSuccess;
        if (lib->async_error(static_cast<ncclComm_t>(c), &status) == ncclSuccess &&
            status != ncclSuccess && status != ncclInProgress)
            return lib->error_string(status);
    }
    return {};
}

std::string nccl_unavailable_reason() {
    std::string why;
    return load_nccl(&why) ? std::string() : why;
}

std::unique_ptr<GroupCollectives> make_nccl_group(const std::vector<int>& gpus, bool native,
                                                  NcclRegistry& registry,
                                                  std::function<cudaStream_t(int rank)> stream_of) {
    return std::make_unique<NcclGroup>(gpus, native, registry, std::move(stream_of));
}

}  // namespace pd::cuda
