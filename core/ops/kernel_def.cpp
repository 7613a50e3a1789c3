#include "core/ops/kernel_def.h"

#include <utility>

#include "core/ir/error.h"

namespace plexus::ops {

KernelRegistry& KernelRegistry::instance() {
  static KernelRegistry registry;
  return registry;
}

void KernelRegistry::add(std::string name, KernelDef def) {
  if (!def.kernel) ir::fail(ir::ErrorCode::Internal, "the kernel of op '" + name + "' has no factory");
  const std::string key = name;
  if (!NameRegistry::add(std::move(name), std::move(def))) {
    ir::fail(ir::ErrorCode::Internal, "the kernel of op '" + key + "' is registered twice");
  }
}

const KernelDef& kernel_def(const ir::Op& op) {
  const KernelDef* def = KernelRegistry::instance().find(op.schema->name);
  if (!def) {
    ir::fail(ir::ErrorCode::Unsupported, "op '" + op.name + "': op type '" + op.schema->name +
                                             "' has a schema but no kernel (core/ops/kernel_def.h)");
  }
  return *def;
}

namespace {

/// The value of `rule` (a KernelDef rule) for `op`, seen as its shape inference saw it;
/// `none` without a rule.
template <class T>
T apply_rule(const std::function<T(const ir::InferContext&)>& rule, const ir::Graph& graph, const ir::Op& op, T none) {
  if (!rule) return none;
  std::vector<const ir::TensorInfo*> inputs;
  for (ir::TensorId t : op.inputs) inputs.push_back(&graph.tensor(t));
  const ir::InferContext ctx{op.schema->name, std::move(inputs), op.attrs, graph.replication_factor(), &graph};
  return rule(ctx);
}

}  // namespace

size_t scratch_bytes(const ir::Graph& graph, const ir::Op& op) {
  return apply_rule<size_t>(kernel_def(op).scratch, graph, op, 0);
}

int may_inplace(const ir::Graph& graph, const ir::Op& op) { return apply_rule(kernel_def(op).may_inplace, graph, op, -1); }

}  // namespace plexus::ops
