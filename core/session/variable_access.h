// A session's variables and remote buffer slots from the host (PopXL's
// session.get_tensor_data / write_variable_data; seed 003's remote buffers): reads and
// writes through each variable's replica layout (replication/variable_layout.h: retrieval
// modes, groups, replica-sharded variables), the layout-independent one-row-per-group
// access that checkpoints use, and, with several workers (seed 002), reads that gather the
// replicas of every worker over host-buffer collectives.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <mutex>
#include <span>
#include <vector>

#include "core/compile/program.h"
#include "core/ir/graph.h"
#include "core/plugin_host/collectives.h"
#include "core/replication/variable_layout.h"
#include "core/runtime/host_update.h"
#include "core/runtime/replica_storage.h"

namespace plexus::session {

/// Where one replica keeps a variable, in bytes per replica.
struct VariableStorage {
  size_t device_bytes = 0;  ///< in the device arena (a replica-sharded variable: its shard)
  size_t remote_bytes = 0;  ///< in a remote buffer slot, or offloaded to host memory
  int64_t shard_over = 1;   ///< replicas sharing the value in shards (1: not sharded)
};

/// Thread-safety: every method from any thread; each access holds the variables lock
/// (hold()), which runs hold too, so an access never sees a run half done. Errors:
/// InvalidArgument naming the variable (not a variable, wrong byte count) or the remote
/// buffer (slot out of range, wrong byte count).
class VariableAccess {
 public:
  /// Host-buffer collectives over the R replicas, opened on first use (a collective step of
  /// every worker).
  using HostCollectives = std::function<plugin_host::Collectives&()>;

  /// Everything is borrowed and must outlive this object; `host_update` is null unless
  /// the weight update runs on the host (its host copy of a weight is refreshed after a
  /// write). `num_workers`: processes sharing the R replicas, `hosted.count` each.
  VariableAccess(const ir::Graph& graph, const compile::Program& program, const runtime::HostedReplicas& hosted, int64_t num_workers,
                 const runtime::ReplicaStorage& storage, runtime::HostUpdate* host_update, HostCollectives host_collectives);

  /// Keeps runs and other accesses out while held (recursive: accesses on this thread
  /// still work). Session::hold_runs.
  std::unique_lock<std::recursive_mutex> hold() const { return std::unique_lock(mutex_); }

  /// Session::variable_shape, read_variable, write_variable, variable_storage,
  /// variable_groups, read_variable_groups, write_variable_groups, read_remote_slot,
  /// write_remote_slot: see session.h.
  ir::Shape variable_shape(ir::TensorId tensor) const;
  void read_variable(ir::TensorId tensor, std::span<std::byte> out) const;
  void write_variable(ir::TensorId tensor, std::span<const std::byte> data);
  VariableStorage variable_storage(ir::TensorId tensor) const;
  int64_t variable_groups(ir::TensorId tensor) const;
  void read_variable_groups(ir::TensorId tensor, std::span<std::byte> out) const;
  void write_variable_groups(ir::TensorId tensor, std::span<const std::byte> data);
  void read_remote_slot(ir::RemoteBufferId buffer, int64_t entry, std::span<std::byte> out) const;
  void write_remote_slot(ir::RemoteBufferId buffer, int64_t entry, std::span<const std::byte> data);
  /// The host update's copy of host-updated weight `tensor` (every one for kNoTensor) <- the
  /// devices', after the session wrote variables.
  void refresh_host_weights(ir::TensorId tensor = ir::kNoTensor);

 private:
  const ir::TensorInfo& variable(ir::TensorId tensor) const;
  void check_bytes(const ir::TensorInfo& t, const replication::VariableLayout& layout, size_t bytes) const;
  /// True when some worker hosts no replica holding some (row, shard) of `layout`: a read
  /// then all-gathers every replica's storage from all workers (every worker must read).
  bool read_needs_every_worker(const replication::VariableLayout& layout) const;
  /// Every replica's storage of `tensor`, [R] x its bytes, all-gathered over the workers.
  std::vector<std::byte> gather_replicas(const ir::TensorInfo& t, ir::TensorId tensor) const;
  /// Copies between host rows ([rows] + full shape) and the replicas' storage, through
  /// `layout`; `to_host` picks the direction.
  void transfer_variable(const replication::VariableLayout& layout, const ir::TensorInfo& t, ir::TensorId tensor,
                         std::byte* host, bool to_host) const;
  void transfer_remote_slot(ir::RemoteBufferId buffer, int64_t entry, std::byte* host, size_t bytes, bool to_host) const;

  const ir::Graph& graph_;
  const compile::Program& program_;
  runtime::HostedReplicas hosted_;
  int64_t num_workers_;
  const runtime::ReplicaStorage& storage_;
  runtime::HostUpdate* host_update_;
  HostCollectives host_collectives_;
  mutable std::recursive_mutex mutex_;
};

}  // namespace plexus::session
