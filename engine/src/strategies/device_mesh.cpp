#include "strategies/device_mesh.h"

#include "pd/error.h"

namespace pd {

namespace {
// Group ids below this are used by the single-axis strategies.
constexpr std::uint32_t kFirstMeshGroup = 16;
}  // namespace

DeviceMesh::DeviceMesh(const Mesh& mesh, const std::vector<Device*>& devices, Transport& transport,
                       DType dtype)
    : mesh_(mesh) {
    if (static_cast<int>(devices.size()) != mesh.size())
        throw Error("a " + std::to_string(mesh.dp) + " x " + std::to_string(mesh.pp) + " x " +
                        std::to_string(mesh.tp) + " mesh needs " + std::to_string(mesh.size()) +
                        " devices, got " + std::to_string(devices.size()),
                    __FILE__, __LINE__);
    std::uint32_t next_id = kFirstMeshGroup;
    dp_ = build(Axis::dp, devices, transport, next_id, dtype);
    pp_ = build(Axis::pp, devices, transport, next_id, dtype);
    tp_ = build(Axis::tp, devices, transport, next_id, dtype);
}

DeviceMesh::Coord DeviceMesh::coord(int device) const {
    Coord c;
    c.tp = device % mesh_.tp;
    c.dp = (device / mesh_.tp) % mesh_.dp;
    c.pp = device / (mesh_.tp * mesh_.dp);
    return c;
}

// Groups along one axis are numbered by the other two coordinates.
std::size_t DeviceMesh::group_index(int device, Axis varying) const {
    const Coord c = coord(device);
    switch (varying) {
        case Axis::dp:
            return static_cast<std::size_t>(c.pp * mesh_.tp + c.tp);
        case Axis::pp:
            return static_cast<std::size_t>(c.dp * mesh_.tp + c.tp);
        case Axis::tp:
            return static_cast<std::size_t>(c.pp * mesh_.dp + c.dp);
    }
    return 0;
}

std::vector<std::unique_ptr<Communicator>> DeviceMesh::build(Axis varying,
                                                             const std::vector<Device*>& devices,
                                                             Transport& transport,
                                                             std::uint32_t& next_id, DType dtype) {
    const int size = varying == Axis::dp ? mesh_.dp : varying == Axis::pp ? mesh_.pp : mesh_.tp;
    const int groups = mesh_.size() / size;
    std::vector<std::vector<Device*>> members(static_cast<std::size_t>(groups));
    for (int d = 0; d < mesh_.size(); ++d)  // devices ascend along every axis: rank order
        members[group_index(d, varying)].push_back(devices[static_cast<std::size_t>(d)]);
    std::vector<std::unique_ptr<Communicator>> out;
    for (auto& m : members)
        out.push_back(std::make_unique<Communicator>(transport, m, next_id++, dtype));
    // Every group of the axis runs the same collectives at once: their transfers share the
    // ports and NICs they cross.
    std::vector<std::vector<int>> ids;
    for (const auto& m : members) {
        ids.emplace_back();
        for (const Device* d : m) ids.back().push_back(d->id());
    }
    for (auto& c : out) c->set_concurrent_groups(ids);
    return out;
}

}  // namespace pd
