#include "core/ops/common/grad_helpers.h"

#include <cstring>

#include "core/ir/graph.h"

namespace plexus::ops {

ir::TensorId unbroadcast(ir::GradContext& ctx, ir::TensorId grad, const ir::Shape& target) {
  const ir::Shape shape = ctx.shape(grad);
  if (shape == target) return grad;
  std::vector<int64_t> axes;
  const size_t lead = shape.size() - target.size();
  for (size_t d = 0; d < shape.size(); ++d) {
    if (d < lead || (target[d - lead] == 1 && shape[d] != 1)) axes.push_back(static_cast<int64_t>(d));
  }
  ir::TensorId summed = grad;
  if (!axes.empty()) {
    ir::Attributes attrs;
    attrs.set("axes", axes);
    attrs.set("keepdims", int64_t{1});
    summed = ctx.add("reduce_sum", {grad}, attrs);
  }
  return reshape_to(ctx, summed, target);
}

ir::TensorId reshape_to(ir::GradContext& ctx, ir::TensorId t, const ir::Shape& shape) {
  ir::Attributes attrs;
  attrs.set("shape", std::vector<int64_t>(shape.begin(), shape.end()));
  return ctx.add("reshape", {t}, attrs);
}

ir::TensorId scalar_constant(ir::Graph& graph, float value) {
  std::vector<std::byte> bytes(sizeof(float));
  std::memcpy(bytes.data(), &value, sizeof(float));
  return graph.add_constant(ir::DType::Float32, {}, std::move(bytes));
}

namespace {

/// The op producing t, or null for a tensor no op produces (inputs, variables, constants).
const ir::Op* producer(const ir::Graph& graph, ir::TensorId t) {
  const ir::OpId id = graph.tensor(t).producer;
  return id < 0 ? nullptr : &graph.op(id);
}

}  // namespace

bool produced_by_relu(const ir::Graph& graph, ir::TensorId t) {
  const ir::Op* op = producer(graph, t);
  return op != nullptr && op->schema->name == "relu";
}

bool is_relu_folded_pool_grad(const ir::Graph& graph, ir::TensorId grad, ir::TensorId relu_out) {
  const ir::Op* op = producer(graph, grad);
  return op != nullptr && op->schema->name == "max_pool2d_grad" && op->inputs[0] == relu_out &&
         op->attrs.get_int("relu_folded") == 1;
}

bool relu_folds_into_pool_above(const ir::GradContext& ctx, ir::TensorId t) {
  const ir::Op* op = producer(ctx.graph, t);
  if (op == nullptr || op->schema->name != "max_pool2d" || ctx.is_requested(t)) return false;
  const std::vector<ir::OpId> readers = ctx.graph.consumers(t);
  return readers.size() == 1 && ctx.graph.op(readers[0]).schema->name == "relu";
}

}  // namespace plexus::ops
