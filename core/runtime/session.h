// A session: an IR compiled for a set of virtual devices, one per replica, with its
// variables resident on the devices between runs (PopXL's Session). Runs consume
// `device_iterations` steps of host data per call; the replicas run concurrently and meet
// in collectives through the session's collectives plugin.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <span>
#include <string>
#include <vector>

#include "core/ir/graph.h"
#include "core/memory/remote_memory.h"
#include "core/replication/variable_layout.h"
#include "core/runtime/collectives.h"
#include "core/runtime/program.h"
#include "core/runtime/virtual_device.h"

namespace plexus::runtime {

struct SessionOptions {
  int64_t device_iterations = 1;   ///< steps per run, >= 1
  size_t device_memory_bytes = 0;  ///< arena capacity per device; 0 = no limit
  int threads_per_device = 0;      ///< BLIS threads a device may use; 0 = cores / devices
  std::string collectives_plugin;  ///< "" = $PLEXUS_COLLECTIVES, else "local"; loaded when needed
  int64_t collective_timeout_ms = 60000;  ///< how long a collective waits for a missing replica
};

/// Memory of one device, in bytes.
struct DeviceMemoryStats {
  size_t arena_bytes = 0;     ///< size of the device arena (the plan's need)
  size_t variable_bytes = 0;  ///< variables and constants (always resident)
  size_t current_bytes = 0;   ///< exact bytes live now
  size_t peak_bytes = 0;      ///< most bytes live at once so far
  size_t planned_peak_bytes = 0;  ///< most bytes live at once in one step, from the plan
  size_t remote_buffer_bytes = 0;  ///< this replica's remote buffers (host memory, not the arena)
};

/// Where one replica keeps a variable, in bytes per replica.
struct VariableStorage {
  size_t device_bytes = 0;  ///< in the device arena (a replica-sharded variable: its shard)
  size_t remote_bytes = 0;  ///< in a remote buffer slot
  int64_t shard_over = 1;   ///< replicas sharing the value in shards (1: not sharded)
};

/// A caller's host array for one stream: `data` holds numel(shape) elements of `dtype`.
struct HostArray {
  ir::StreamId stream;
  void* data;
  ir::DType dtype;
  ir::Shape shape;
};

/// Thread-safety: all methods may be called from any thread; they serialise on an
/// internal mutex (one run at a time).
class Session {
 public:
  /// Copies `graph`, compiles it, allocates one device per replica, loads the variables
  /// and, for R > 1 and a graph with collective ops, the collectives plugin. Throws InvalidArgument (options),
  /// OutOfDeviceMemory (naming the device and bytes), Unsupported (a bad BLIS_ARCH_TYPE),
  /// Plugin (collectives plugin missing or broken).
  Session(const ir::Graph& graph, const SessionOptions& options);
  ~Session();

  /// Runs device_iterations steps on every replica. Every host-to-device stream needs
  /// exactly one input array of shape host_shape(stream); device-to-host arrays are
  /// optional. When a replica fails, the others are woken from their collectives, the
  /// run throws the failing replica's error (naming it), and the session stays usable.
  void run(std::span<const HostArray> inputs, std::span<const HostArray> outputs);

  /// Shape of the host array for `stream`: [device_iterations, R] + stream shape, each
  /// leading dim left out when it is 1 (seed 000, "Data input shape").
  ir::Shape host_shape(ir::StreamId stream) const;
  /// Shape of the host data of variable `tensor` (device, remote or replica-sharded) when
  /// read or written: see replication/variable_layout.h (retrieval modes, full tensors for
  /// sharded variables).
  ir::Shape variable_shape(ir::TensorId tensor) const;
  void read_variable(ir::TensorId tensor, std::span<std::byte> out) const;
  void write_variable(ir::TensorId tensor, std::span<const std::byte> data);
  VariableStorage variable_storage(ir::TensorId tensor) const;

  size_t num_devices() const { return devices_.size(); }
  int64_t replication_factor() const { return graph_.replication_factor(); }
  /// The collectives plugin in use; null when the session needs none.
  const Collectives* collectives() const { return collectives_.get(); }
  DeviceMemoryStats memory_stats(size_t device) const;
  const SessionOptions& options() const { return options_; }
  const ir::Graph& graph() const { return graph_; }
  /// Decisions made while compiling (GEMM kernel sets, ...), one line each.
  const std::vector<std::string>& notes() const { return notes_; }

 private:
  struct Item {
    ir::Kernel fn;
    size_t live_bytes;
  };
  struct DeviceState;

  const ir::TensorInfo& variable(ir::TensorId tensor) const;
  void build_device(DeviceState& state, int64_t replica);
  void check_arrays(std::span<const HostArray> arrays, ir::StreamDirection direction, bool required) const;
  void load_variables();
  void run_steps(DeviceState& state, std::span<const HostArray> inputs, std::span<const HostArray> outputs);
  std::byte* variable_buffer(ir::TensorId tensor, int64_t replica) const;
  /// Copies between host rows ([rows] + full shape) and the replicas' storage, through the
  /// variable's layout; `to_host` picks the direction.
  void transfer_variable(const ir::TensorInfo& t, ir::TensorId tensor, std::byte* host, bool to_host) const;
  void check_variable_bytes(const ir::TensorInfo& t, size_t bytes) const;

  ir::Graph graph_;
  SessionOptions options_;
  Program program_;
  std::unique_ptr<Collectives> collectives_;
  std::vector<std::unique_ptr<VirtualDevice>> devices_;
  std::vector<std::unique_ptr<memory::RemoteMemory>> remote_;  ///< per replica
  std::vector<std::unique_ptr<DeviceState>> states_;
  std::vector<std::string> notes_;
  mutable std::mutex mutex_;
};

}  // namespace plexus::runtime
