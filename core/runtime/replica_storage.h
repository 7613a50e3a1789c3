// Where a session keeps every tensor of the replicas it hosts (docs/design.md "Runtime"): the
// virtual devices (each a thread and its arena: variables, constants, gradient
// accumulators, activation slots, op scratch), each replica's remote buffers (host memory,
// seed 003's remote variables) and each replica's offloaded optimizer state (host memory,
// seed 003's offload_optimizer_state).
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <vector>

#include "core/compile/program.h"
#include "core/ir/graph.h"
#include "core/memory/remote_memory.h"
#include "core/runtime/virtual_device.h"

namespace plexus::runtime {

class HostUpdate;

/// The global replicas one session (worker) hosts: [first, first + count) (seed 002).
struct HostedReplicas {
  int64_t first = 0;
  int64_t count = 1;
  bool hosts(int64_t replica) const { return replica >= first && replica < first + count; }
};

/// Memory of one device, in bytes.
struct DeviceMemoryStats {
  size_t arena_bytes = 0;     ///< size of the device arena (the plan's need)
  size_t variable_bytes = 0;  ///< variables, constants and gradient accumulators (always resident)
  size_t current_bytes = 0;   ///< exact bytes live now
  size_t peak_bytes = 0;      ///< most bytes live at once so far
  size_t planned_peak_bytes = 0;  ///< most bytes live at once, from the plan
  size_t remote_buffer_bytes = 0;  ///< this replica's remote buffers (host memory, not the arena)
  size_t offloaded_bytes = 0;      ///< optimizer state of this device's stages kept in host memory
};

/// Thread-safety: the constructor and load_initial_values() from one thread; the rest is
/// read-only bookkeeping whose buffers the caller synchronises (runs against variable
/// accesses: VariableAccess::hold()).
class ReplicaStorage {
 public:
  /// Allocates hosted.count x D devices (D = program.placement.num_devices; device index =
  /// local replica * D + device within the replica), each with the arena its DevicePlan
  /// needs, and each hosted replica's remote buffers and offloaded optimizer state.
  /// `host_update` (null unless the weight update runs on the host) keeps host-updated
  /// optimizer state once per worker; when it keeps all of it no replica gets a copy. The
  /// graph, program and host update must outlive this object. `spin`: see VirtualDevice.
  ReplicaStorage(const ir::Graph& graph, const compile::Program& program, const HostedReplicas& hosted,
                 const HostUpdate* host_update, bool spin);
  ReplicaStorage(const ReplicaStorage&) = delete;
  ReplicaStorage& operator=(const ReplicaStorage&) = delete;

  size_t num_devices() const { return devices_.size(); }
  /// Device `index` (local replica * D + device); throws NotFound past num_devices().
  VirtualDevice& device(size_t index) const;
  /// Hosted replica `local`'s (index among the hosted) remote buffers.
  memory::RemoteMemory& remote(int64_t local) const { return *remote_[static_cast<size_t>(local)]; }
  /// Hosted replica `local`'s offloaded optimizer state (Program::offloaded offsets).
  std::byte* offloaded(int64_t local) const;
  /// Storage of variable `tensor` (a storage root) on hosted (global) replica `replica`: its
  /// remote slot, the host update's state, the offloaded copy, or its device arena.
  std::byte* variable_buffer(ir::TensorId tensor, int64_t replica) const;
  /// Copies every constant to each device whose stages use it, and each variable's initial
  /// value (its row and shard for this replica, replication/variable_layout.h) to every
  /// hosted replica.
  void load_initial_values();
  /// Memory of device `device` (index as device()); throws NotFound naming it.
  DeviceMemoryStats memory_stats(size_t device) const;

 private:
  const ir::Graph& graph_;
  const compile::Program& program_;
  HostedReplicas hosted_;
  const HostUpdate* host_update_;
  std::vector<std::unique_ptr<VirtualDevice>> devices_;
  // Per hosted replica (index = global replica - hosted_.first):
  std::vector<std::unique_ptr<memory::RemoteMemory>> remote_;
  std::vector<std::vector<std::byte>> offloaded_;
};

}  // namespace plexus::runtime
