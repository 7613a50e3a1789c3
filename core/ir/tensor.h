// Tensors of an IR: what kind of value each holds, its type, and which storage it shares.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "core/ir/dtype.h"
#include "core/ir/replica_grouping.h"
#include "core/ir/shape.h"

namespace plexus::ir {

using TensorId = int32_t;
using OpId = int32_t;
using StreamId = int32_t;
using RemoteBufferId = int32_t;
/// A graph of an IR (PopXL popxl.Graph): 0 is the main graph, 1.. the subgraphs in
/// creation order (core/ir/subgraph.h).
using GraphId = int32_t;
inline constexpr TensorId kNoTensor = -1;
inline constexpr GraphId kMainGraph = 0;

enum class TensorKind {
  Variable,        ///< persistent on the device across runs, initialised from host data
  Constant,        ///< persistent, read-only
  StreamInput,     ///< filled from a host-to-device stream at the start of each step
  OpOutput,        ///< produced by an op
  RemoteVariable,  ///< lives in a remote buffer slot (host memory); ops reach it by remote_load
  GraphInput,      ///< an input of a subgraph, given a value by each call (core/ir/call.h)
};

/// Replicated tensor sharding (docs/design.md, "Semantics"): the tensor is this replica's shard of a
/// tensor of `full_shape`, flattened, zero-padded to a multiple of `shard_over` and split
/// contiguously; the shard domain is the grouping (R, shard_over, stride), and the member at
/// position m of a domain holds shard m.
struct Sharding {
  Shape full_shape;
  int64_t shard_over = 1;
  int64_t stride = 1;

  int64_t shard_elements() const { return (numel(full_shape) + shard_over - 1) / shard_over; }
  /// The shard domain as a grouping over `replication_factor` replicas.
  ReplicaGrouping domain(int64_t replication_factor) const { return {replication_factor, shard_over, stride}; }
  bool operator==(const Sharding&) const = default;
};

/// Which replicas' values reading a variable returns (seed 001, 13.4). Values equal the C
/// API's PLX_RETRIEVAL_* constants.
enum class RetrievalMode : int32_t {
  OnePerGroup = 0,  ///< [num_groups] + shape, from each group's lowest replica (squeezed for one group)
  AllReplicas = 1,  ///< [R] + shape, row r from replica r
};

/// One tensor of an IR. `alias_of` is set when the tensor shares another tensor's storage
/// (the output of an in-place op or of a view such as reshape); the memory plan gives
/// both one buffer.
struct TensorInfo {
  std::string name;
  DType dtype = DType::Float32;
  Shape shape;
  TensorKind kind = TensorKind::OpOutput;
  OpId producer = -1;
  TensorId alias_of = kNoTensor;
  std::vector<std::byte> data;  ///< initial value: a constant's, or a variable's per group ([num_groups] + shape)
  std::optional<ReplicaGrouping> grouping;  ///< variables: which replicas share a value
  RetrievalMode retrieval = RetrievalMode::OnePerGroup;
  std::optional<Sharding> sharding;         ///< set when the tensor is a replica's shard (RTS)
  RemoteBufferId remote_buffer = -1;        ///< remote variables: their buffer
  int64_t remote_entry = 0;                 ///< remote variables: their slot in it
  GraphId graph = kMainGraph;               ///< the one graph the tensor belongs to

  size_t bytes() const { return static_cast<size_t>(numel(shape)) * dtype_size(dtype); }
  /// "float32[8,784]"
  std::string type_string() const;
};

enum class StreamDirection { HostToDevice, DeviceToHost };

/// A remote buffer (seed 001 13.3, seed 000 17.2): `entries` slots of `shape` and `dtype`
/// in host memory, one set per replica. A buffer holding a replica-sharded variable knows
/// the sharding of its slots, which remote_load passes on to the loaded tensor.
struct RemoteBuffer {
  Shape shape;
  DType dtype = DType::Float32;
  int64_t entries = 1;
  std::optional<Sharding> sharding;

  size_t slot_bytes() const { return static_cast<size_t>(numel(shape)) * dtype_size(dtype); }
};

/// A host/device stream: host-to-device streams fill `tensor` at the start of each step;
/// a device-to-host stream copies `tensor` back at the point of the program where it was
/// added, after the first `after_ops` ops (PopXL's host_store is an op in sequence).
struct Stream {
  std::string name;
  StreamDirection direction;
  TensorId tensor;
  size_t after_ops = 0;
};

}  // namespace plexus::ir
