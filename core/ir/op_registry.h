// The op registry: every op is one OpDef (shape inference, CPU kernel factory, gradient
// rule) registered from its family's file in core/ops by a static OpRegistration. Adding
// an op touches no switch statement anywhere else.
#pragma once

#include <cstddef>
#include <functional>
#include <map>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "core/ir/attributes.h"
#include "core/ir/error.h"
#include "core/ir/tensor.h"

namespace plexus::replication {
class Communicator;
}

namespace plexus::ir {

class Graph;
struct Op;

/// Type of one op output; `sharding` when it is a replica's shard (RTS).
struct TensorType {
  DType dtype;
  Shape shape;
  std::optional<Sharding> sharding = std::nullopt;
};

/// What shape inference sees. fail() builds the message every op error carries: the op,
/// its input types and the rule that was broken.
struct InferContext {
  const std::string& op_name;
  std::vector<const TensorInfo*> inputs;
  const Attributes& attrs;
  int64_t replication_factor = 1;
  const Graph* graph = nullptr;  ///< the IR the op is added to (remote buffers, ...)

  const Shape& shape(size_t i) const { return inputs[i]->shape; }
  DType dtype(size_t i) const { return inputs[i]->dtype; }
  size_t rank(size_t i) const { return inputs[i]->shape.size(); }
  [[noreturn]] void fail(ErrorCode code, const std::string& rule) const;
  /// Fails with DTypeMismatch unless input i has dtype `t`.
  void expect_dtype(size_t i, DType t) const;
  /// Fails with DTypeMismatch unless input i is a number: any dtype but bool.
  void expect_numeric(size_t i) const;
  /// Fails with DTypeMismatch unless input i is float32 or float16.
  void expect_float(size_t i) const;
};

/// Output types plus per-op scratch space the memory plan reserves while the op runs.
struct InferResult {
  std::vector<TensorType> outputs;
  size_t scratch_bytes = 0;
  /// The input whose buffer output 0 may take (ONNX Runtime's MayInplace), or -1: the
  /// kernel gives the same bits when output 0 is that input's storage, because it reads each
  /// input element before it writes any output element over it. The memory plan then hands
  /// output 0 that input's buffer when this op is the input's last reader and the two have
  /// the same size (core/compile/program.cpp, plan_stage).
  int may_inplace = -1;
};

/// A kernel bound to its buffers; runs on the device thread. It may throw ir::Error
/// (for example an out-of-range label), which ends the run with that error.
using Kernel = std::function<void()>;

/// What a kernel factory sees at session creation: the op, the types, the planned buffer
/// of every input and output, scratch space, and how many threads the device may use.
struct KernelContext {
  const Graph& graph;
  const Op& op;
  std::vector<const TensorInfo*> inputs = {};
  std::vector<const TensorInfo*> outputs = {};
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
  std::vector<std::byte*> remote;
  /// Decisions worth reporting (for example the GEMM kernel set chosen); may be null.
  std::vector<std::string>* notes = nullptr;

  template <class T>
  const T* input(size_t i) const { return reinterpret_cast<const T*>(in[i]); }
  template <class T>
  T* output(size_t i) const { return reinterpret_cast<T*>(out[i]); }
};

/// What a gradient rule sees: the forward op, the gradient of each output (kNoTensor when
/// an output has none) and which inputs need a gradient. add() appends ops to the graph.
struct GradContext {
  Graph& graph;
  const Op& op;
  std::vector<TensorId> output_grads;
  std::vector<bool> needs_grad;
  /// The tensors whose gradients autodiff returns (its `wrt`). A rule may fold the rule of
  /// the op producing its input into its own (max_pool2d after relu) only when that input
  /// is not one of them: the folded gradient is not the input's own.
  std::span<const TensorId> requested = {};

  /// Whether t is in `requested`.
  bool is_requested(TensorId t) const;

  /// Adds op `type` and returns its first output.
  TensorId add(std::string_view type, std::vector<TensorId> inputs, Attributes attrs = {});
  /// Shape and dtype of a tensor, by value: add() grows the graph, so references into it
  /// would dangle.
  Shape shape(TensorId t) const;
  DType dtype(TensorId t) const;
};

struct OpDef {
  std::string name;
  size_t min_inputs = 1;
  size_t max_inputs = 1;
  std::vector<AttrSpec> attrs;
  std::function<InferResult(const InferContext&)> infer;
  /// Optional: fills attributes that depend on the inputs before `infer` (for example a
  /// collective on a replica-sharded tensor takes the tensor's shard domain).
  std::function<void(const InferContext&, Attributes&)> resolve_attrs;
  std::function<Kernel(const KernelContext&)> kernel;
  /// Returns one gradient per input (kNoTensor where none); empty = not differentiable.
  std::function<std::vector<TensorId>(GradContext&)> grad;
  /// In-place op (PopXL's trailing '_'): output k overwrites the storage of input
  /// inplace_inputs[k] (for k < size; -1 = a fresh output). A variadic op may list more
  /// entries than it has outputs: only those of its outputs count.
  std::vector<int> inplace_inputs;
  /// The memory plan may lay the inputs out one after the other in one buffer, each at an
  /// offset aligned as the arena's, and the outputs likewise (the same buffer when each
  /// output is its input's storage), when each is its storage's whole buffer; the kernel then
  /// gets no scratch (KernelContext::scratch null) and works on the span where it is
  /// (PyTorch DDP's gradient_as_bucket_view; core/compile/program.cpp).
  bool span_inputs = false;
  /// Output 0 is input 0's storage reinterpreted (reshape): the kernel does nothing.
  bool is_view = false;
  /// The kernel talks to other replicas (KernelContext::comm): a replicated session with
  /// such an op loads a collectives plugin.
  bool communicates = false;
  /// Inputs that hold optimizer state (e.g. AdamW's moments): with the session option
  /// offload_optimizer_state they live in host memory and are loaded only around the op
  /// (seed 003, setOptimizerLocation(useOnChipStorage(False))).
  std::vector<int> optimizer_state_inputs;
  /// A weight update (an optimizer step: scaled_add_ as SGD, adamw_): input 0 is the weight,
  /// updated in place, and this input its gradient. With the session option
  /// weight_update_on_host such an op in the update phase runs on the host (seed 002,
  /// host_call with variables_on_host). -1: not a weight update.
  int gradient_input = -1;
};

/// Process-wide registry. Filled during static initialisation, read-only afterwards, so
/// lookups are thread-safe.
class OpRegistry {
 public:
  static OpRegistry& instance();
  void add(OpDef def);
  /// nullptr when unknown.
  const OpDef* find(std::string_view name) const;
  std::vector<std::string> names() const;

 private:
  std::map<std::string, OpDef, std::less<>> defs_;
};

/// Registers an op at static-initialisation time: `static OpRegistration r{OpDef{...}};`.
struct OpRegistration {
  explicit OpRegistration(OpDef def) { OpRegistry::instance().add(std::move(def)); }
};

}  // namespace plexus::ir
