// The kernel definitions: what running an op type on the CPU takes (its kernel factory, the
// scratch the kernel needs while it runs, the input whose buffer output 0 may take, whether
// it works on a span of its inputs), one ops::KernelDef per op type, registered from the
// op's family file beside its schema (ir::OpSchema, core/ir/op_schema.h) under the same
// type name. Compile and the runtime look kernels up here by op type; the IR never does.
#pragma once

#include <cstddef>
#include <functional>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "core/ir/graph.h"
#include "core/ir/name_registry.h"
#include "core/ir/op_schema.h"
#include "core/ops/kernel_context.h"

namespace plexus::ops {

/// How an op type runs (ONNX Runtime's KernelDef: the kernel and its memory permissions).
/// Plain data; the functions are pure. The rules take the op as shape inference saw it
/// (input types, attributes, the graph), once the schema has accepted it.
struct KernelDef {
  /// Binds the kernel to its buffers at session creation; an empty Kernel does nothing (a
  /// view).
  std::function<Kernel(const KernelContext&)> kernel;
  /// Bytes of scratch the kernel needs while it runs (KernelContext::scratch); the memory
  /// plan reserves the largest of a device's ops. Null: none.
  std::function<size_t(const ir::InferContext&)> scratch;
  /// The input whose buffer output 0 may take (ONNX Runtime's MayInplace), or -1: the
  /// kernel gives the same bits when output 0 is that input's storage, because it reads each
  /// input element before it writes any output element over it. The memory plan then hands
  /// output 0 that input's buffer when this op is the input's last reader and the two have
  /// the same size (core/compile/memory_planner.cpp). Null: -1.
  std::function<int(const ir::InferContext&)> may_inplace;
  /// The memory plan may lay the inputs out one after the other in one buffer, each at an
  /// offset aligned as the arena's, and the outputs likewise (the same buffer when each
  /// output is its input's storage), when each is its storage's whole buffer; the kernel then
  /// gets no scratch (KernelContext::scratch null) and works on the span where it is
  /// (PyTorch DDP's gradient_as_bucket_view; core/compile/memory_planner.cpp).
  bool span_inputs = false;
};

/// The process-wide registry of kernel definitions, by op type. Filled during static
/// initialisation, read-only afterwards, so lookups are thread-safe.
class KernelRegistry : private ir::NameRegistry<KernelDef> {
 public:
  static KernelRegistry& instance();
  /// Adds the kernel of op type `name`; Internal error when def.kernel is empty or the type
  /// has a kernel already (the first stays).
  void add(std::string name, KernelDef def);
  /// find(name): the kernel of op type `name`, nullptr when it has none; names(): every op
  /// type with a kernel, sorted.
  using NameRegistry::find;
  using NameRegistry::names;
};

/// Registers the kernel of op type `name` at static-initialisation time. (An op family
/// registers its schema and kernel together with ops::OpRegistration, core/ops/op_def.h.)
struct KernelRegistration {
  KernelRegistration(std::string name, KernelDef def) { KernelRegistry::instance().add(std::move(name), std::move(def)); }
};

/// The kernel of `op`'s type. Throws Unsupported naming the op and its type when the type
/// has a schema but no kernel (compile refuses such a graph: core/compile/passes.cpp).
const KernelDef& kernel_def(const ir::Op& op);

/// The scratch bytes `op` of `graph` needs while it runs (KernelDef::scratch; 0 without).
size_t scratch_bytes(const ir::Graph& graph, const ir::Op& op);

/// The input whose buffer output 0 of `op` may take, or -1 (KernelDef::may_inplace).
int may_inplace(const ir::Graph& graph, const ir::Op& op);

}  // namespace plexus::ops
