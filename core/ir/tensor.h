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
inline constexpr TensorId kNoTensor = -1;

enum class TensorKind {
  Variable,     ///< persistent across runs, initialised from host data
  Constant,     ///< persistent, read-only
  StreamInput,  ///< filled from a host-to-device stream at the start of each step
  OpOutput,     ///< produced by an op
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

  size_t bytes() const { return static_cast<size_t>(numel(shape)) * dtype_size(dtype); }
  /// "float32[8,784]"
  std::string type_string() const;
};

enum class StreamDirection { HostToDevice, DeviceToHost };

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
