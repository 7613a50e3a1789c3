// The op schemas: what the IR knows of each op type (its inputs, attributes, shape
// inference, gradient rule and in-place meaning), one ir::OpSchema per type, registered
// from its family's file in core/ops (beside its kernel, ops::KernelDef in
// core/ops/kernel_def.h). The IR (graph, autodiff, call, subgraphs) uses only schemas; the
// kernel side is compile's and the runtime's. Adding an op touches no switch statement.
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
#include "core/ir/name_registry.h"
#include "core/ir/tensor.h"

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

/// What shape inference gives: the type of each output. (The scratch a kernel needs and
/// the input whose buffer output 0 may take are the kernel's: ops::KernelDef.)
struct InferResult {
  std::vector<TensorType> outputs;
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

/// An op type as the IR sees it: inputs, attributes, shape inference, gradient rule and
/// what its outputs are (fresh, an input updated in place, a view). Plain data; the
/// functions are pure given the graph (source of the semantics: PopXL's ops, ONNX's
/// schemas).
struct OpSchema {
  std::string name;
  size_t min_inputs = 1;
  size_t max_inputs = 1;
  std::vector<AttrSpec> attrs;
  std::function<InferResult(const InferContext&)> infer;
  /// Optional: fills attributes that depend on the inputs before `infer` (for example a
  /// collective on a replica-sharded tensor takes the tensor's shard domain).
  std::function<void(const InferContext&, Attributes&)> resolve_attrs;
  /// Returns one gradient per input (kNoTensor where none); empty = not differentiable.
  std::function<std::vector<TensorId>(GradContext&)> grad;
  /// In-place op (PopXL's trailing '_'): output k overwrites the storage of input
  /// inplace_inputs[k] (for k < size; -1 = a fresh output). A variadic op may list more
  /// entries than it has outputs: only those of its outputs count.
  std::vector<int> inplace_inputs;
  /// Output 0 is input 0's storage reinterpreted (reshape): the kernel does nothing.
  bool is_view = false;
  /// A collective: the op talks to other replicas (its kernel uses KernelContext::comm), so
  /// a replicated session with such an op loads a collectives plugin.
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

/// The process-wide registry of op schemas, by op type. Filled during static
/// initialisation, read-only afterwards, so lookups are thread-safe.
class OpSchemaRegistry : private NameRegistry<OpSchema> {
 public:
  static OpSchemaRegistry& instance();
  /// Adds `schema`; Internal error when its name is registered already (the first stays).
  void add(OpSchema schema);
  /// find(name): the schema of op type `name`, nullptr when unknown; names(): every
  /// registered op type, sorted.
  using NameRegistry::find;
  using NameRegistry::names;
};

/// Registers a schema at static-initialisation time: `static SchemaRegistration r{OpSchema{...}};`.
/// (An op family registers its schema and kernel together with ops::OpRegistration.)
struct SchemaRegistration {
  explicit SchemaRegistration(OpSchema schema) { OpSchemaRegistry::instance().add(std::move(schema)); }
};

}  // namespace plexus::ir
