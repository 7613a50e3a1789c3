// The kernel side of an op as it runs: a kernel bound to its buffers, and what its factory
// sees when a session is created (the op, the planned buffers, scratch, the replica).
// Moved out of core/ir: the IR knows op schemas (core/ir/op_schema.h), not kernels.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "core/ir/graph.h"

namespace plexus::replication {
class Communicator;
}

namespace plexus::ops {

class GraphBindings;

/// A kernel bound to its buffers; runs on the device thread. It may throw ir::Error
/// (for example an out-of-range label), which ends the run with that error.
using Kernel = std::function<void()>;

/// What a kernel factory sees at session creation: the op, the types, the planned buffer
/// of every input and output, scratch space, and how many threads the device may use.
struct KernelContext {
  const ir::Graph& graph;
  const ir::Op& op;
  std::vector<const ir::TensorInfo*> inputs = {};
  std::vector<const ir::TensorInfo*> outputs = {};
  std::vector<std::byte*> in = {};
  std::vector<std::byte*> out = {};
  std::byte* scratch = nullptr;
  int max_threads = 1;
  int64_t replica = 0;              ///< global index of the replica this kernel runs for
  int64_t replication_factor = 1;   ///< R
  /// Micro-batches this replica ran before the one the kernel runs for, over the session's
  /// life: (session steps before this iteration) * micro-batches per step + the micro-batch's
  /// index in the step (the update step counts as micro-batch 0). Checkpoints restore it
  /// with the step count. The device updates it before each step, so a kernel reads
  /// *micro_batch_counter when it runs (random masks keyed by it are reproducible and a
  /// micro-batch's forward and backward steps see the same value). Null for kernels run
  /// outside the device steps (the host weight update).
  const int64_t* micro_batch_counter = nullptr;
  /// This replica's collectives; null when the session has one replica (groups of one
  /// need no communication).
  replication::Communicator* comm = nullptr;
  /// This replica's remote buffers: slot e of buffer b starts at
  /// remote[b] + e * graph.remote_buffer(b).slot_bytes().
  std::vector<std::byte*> remote = {};
  /// Decisions worth reporting (for example the GEMM kernel set chosen); may be null.
  std::vector<std::string>* notes = nullptr;
  /// The subgraphs bound on this device (core/ops/graph/bound_graph.h): a call or repeat
  /// binds its graph there once for all its call sites. Null: each op binds its own.
  GraphBindings* graph_bindings = nullptr;

  template <class T>
  const T* input(size_t i) const { return reinterpret_cast<const T*>(in[i]); }
  template <class T>
  T* output(size_t i) const { return reinterpret_cast<T*>(out[i]); }
};

}  // namespace plexus::ops
