// The grid object: places dp x pp x tp ranks on devices and builds every communicator group,
// as picotron's ProcessGroupManager does. Tensor-parallel ranks are neighbours (the fastest
// links), then data-parallel replicas, then pipeline stages:
// device = (pp * dp_size + dp) * tp_size + tp.
#pragma once

#include <memory>
#include <vector>

#include "pd/communicator.h"
#include "pd/run_config.h"

namespace pd {

class DeviceMesh {
  public:
    struct Coord {
        int dp = 0;
        int pp = 0;
        int tp = 0;
    };

    // Every group moves elements of `dtype` (see Communicator).
    DeviceMesh(const Mesh& mesh, const std::vector<Device*>& devices, Transport& transport,
               DType dtype = DType::fp32);

    const Mesh& mesh() const { return mesh_; }
    Coord coord(int device) const;
    int device(const Coord& c) const { return (c.pp * mesh_.dp + c.dp) * mesh_.tp + c.tp; }

    // The groups a device belongs to (members in rank order along the varying axis).
    Communicator& tp_group(int device) { return *tp_[group_index(device, Axis::tp)]; }
    Communicator& dp_group(int device) { return *dp_[group_index(device, Axis::dp)]; }
    Communicator& pp_group(int device) { return *pp_[group_index(device, Axis::pp)]; }

  private:
    enum class Axis { dp, pp, tp };
    std::size_t group_index(int device, Axis varying) const;
    std::vector<std::unique_ptr<Communicator>> build(Axis varying,
                                                     const std::vector<Device*>& devices,
                                                     Transport& transport, std::uint32_t& next_id,
                                                     DType dtype);

    Mesh mesh_;
    std::vector<std::unique_ptr<Communicator>> dp_, pp_, tp_;
};

}  // namespace pd
