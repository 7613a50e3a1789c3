#include "core/runtime/replica_storage.h"

#include <algorithm>
#include <cstring>
#include <string>

#include "core/ir/error.h"
#include "core/replication/shard_layout.h"
#include "core/replication/variable_layout.h"
#include "core/runtime/host_update.h"

namespace plexus::runtime {

ReplicaStorage::ReplicaStorage(const ir::Graph& graph, const compile::Program& program, const HostedReplicas& hosted,
                               const HostUpdate* host_update, bool spin)
    : graph_(graph), program_(program), hosted_(hosted), host_update_(host_update) {
  // The host update keeps its optimizer state once per worker: no per-replica copies.
  const bool host_state_only = host_update_ && std::all_of(program_.offloaded.begin(), program_.offloaded.end(),
                                                           [&](const auto& o) { return host_update_->state(o.first); });
  const int64_t per_replica = program_.placement.num_devices;
  for (int64_t r = 0; r < hosted_.count; ++r) {
    remote_.push_back(std::make_unique<memory::RemoteMemory>(graph_.remote_buffers()));
    offloaded_.emplace_back(host_state_only ? 0 : program_.offloaded_bytes);
    for (int64_t d = 0; d < per_replica; ++d) {
      const compile::DevicePlan& plan = program_.devices[static_cast<size_t>(d)];
      devices_.push_back(std::make_unique<VirtualDevice>(static_cast<int>(r * per_replica + d), plan.arena_bytes, spin));
    }
  }
}

VirtualDevice& ReplicaStorage::device(size_t index) const {
  if (index >= devices_.size()) {
    ir::fail(ir::ErrorCode::NotFound, "device " + std::to_string(index) + " does not exist (the session has " +
                                          std::to_string(devices_.size()) + ")");
  }
  return *devices_[index];
}

std::byte* ReplicaStorage::offloaded(int64_t local) const {
  return const_cast<std::byte*>(offloaded_[static_cast<size_t>(local)].data());
}

std::byte* ReplicaStorage::variable_buffer(ir::TensorId tensor, int64_t replica) const {
  const ir::TensorInfo& t = graph_.tensor(tensor);
  const int64_t local = replica - hosted_.first;
  if (t.kind == ir::TensorKind::RemoteVariable) {
    return remote_[static_cast<size_t>(local)]->slot(static_cast<size_t>(t.remote_buffer), t.remote_entry);
  }
  if (std::byte* host = host_update_ ? host_update_->state(tensor) : nullptr) return host;
  if (auto it = program_.offloaded.find(tensor); it != program_.offloaded.end()) return offloaded(local) + it->second;
  const int64_t device = program_.stages[static_cast<size_t>(program_.home_stage.at(tensor))].device;
  return devices_[static_cast<size_t>(local * program_.placement.num_devices + device)]->arena().data() +
         program_.devices[static_cast<size_t>(device)].persistent_offset.at(tensor);
}

void ReplicaStorage::load_initial_values() {
  for (size_t t = 0; t < graph_.num_tensors(); ++t) {
    const auto id = static_cast<ir::TensorId>(t);
    const ir::TensorInfo& info = graph_.tensor(id);
    if (info.kind == ir::TensorKind::Constant) {  // on every device whose stages use it
      for (size_t d = 0; d < devices_.size(); ++d) {
        const compile::DevicePlan& plan = program_.devices[d % static_cast<size_t>(program_.placement.num_devices)];
        if (auto it = plan.persistent_offset.find(id); it != plan.persistent_offset.end()) {
          std::memcpy(devices_[d]->arena().data() + it->second, info.data.data(), info.bytes());
        }
      }
    } else if (info.kind == ir::TensorKind::Variable || info.kind == ir::TensorKind::RemoteVariable) {
      const replication::VariableLayout layout = replication::variable_layout(info);
      const size_t esize = ir::dtype_size(info.dtype);
      const int64_t row_numel = ir::numel(layout.row_shape);
      for (int64_t r = hosted_.first; r < hosted_.first + hosted_.count; ++r) {
        const auto row = static_cast<size_t>(layout.initial_row[static_cast<size_t>(r)]);
        replication::extract_shard(info.data.data() + row * static_cast<size_t>(row_numel) * esize, variable_buffer(id, r),
                                   row_numel, layout.shard_over, layout.shard_index[static_cast<size_t>(r)], esize);
      }
    }
  }
}

DeviceMemoryStats ReplicaStorage::memory_stats(size_t device) const {
  const memory::Arena& arena = this->device(device).arena();
  const auto per_replica = static_cast<size_t>(program_.placement.num_devices);
  const size_t index = device % per_replica;
  const compile::DevicePlan& plan = program_.devices[index];
  size_t offloaded = 0;
  for (const auto& [root, offset] : program_.offloaded) {
    if (program_.stages[static_cast<size_t>(program_.home_stage.at(root))].device == static_cast<int64_t>(index)) {
      offloaded += graph_.tensor(root).bytes();
    }
  }
  return DeviceMemoryStats{arena.capacity(),
                           plan.persistent_bytes,
                           arena.live_bytes(),
                           arena.peak_bytes(),
                           plan.planned_peak_bytes,
                           index == 0 ? remote_[device / per_replica]->bytes() : 0,
                           offloaded};
}

}  // namespace plexus::runtime
