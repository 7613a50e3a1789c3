#include "core/ir/autodiff.h"

#include <cstring>
#include <map>

#include "core/ir/error.h"

namespace plexus::ir {

namespace {

// Sums gradient contributions into one tensor with a chain of adds, and keeps only the
// sum so a tensor's gradient is built once however often it is asked for.
TensorId sum_contributions(Graph& graph, std::vector<TensorId>& parts) {
  TensorId total = parts.front();
  for (size_t i = 1; i < parts.size(); ++i) total = graph.add_op("add", {total, parts[i]}, {}).front();
  parts.assign(1, total);
  return total;
}

// The gradient of the sum of the loss: ones of its shape, as a scalar constant expanded
// (in the loss's block) when the loss is not a scalar. A constant of the loss's shape would
// hold its bytes in the IR now, whatever its size: a loss of 2^40 elements (valid in an IR;
// a session would refuse its memory) made autodiff allocate 4 TiB.
TensorId seed_gradient(Graph& graph, const TensorInfo& loss) {
  const float one = 1.0f;
  std::vector<std::byte> bytes(sizeof one);
  std::memcpy(bytes.data(), &one, sizeof one);
  const TensorId scalar = graph.add_constant(DType::Float32, {}, std::move(bytes));
  if (loss.shape.empty()) return scalar;
  Attributes attrs;
  attrs.set("shape", std::vector<int64_t>(loss.shape.begin(), loss.shape.end()));
  graph.set_implicit_block(loss.producer >= 0 ? graph.op(loss.producer).block : -1);
  const TensorId ones = graph.add_op("expand", {scalar}, std::move(attrs)).front();
  graph.set_implicit_block(-1);
  return ones;
}


/// Tensors that depend on some tensor of `wrt` (float32 only: others have no gradient).
std::vector<bool> depends_on_wrt(const Graph& graph, std::span<const TensorId> wrt, OpId forward_ops) {
  std::vector<bool> from_wrt(graph.num_tensors(), false);
  for (TensorId t : wrt) {
    const TensorInfo& info = graph.tensor(t);
    if (info.dtype != DType::Float32) {
      fail(ErrorCode::InvalidArgument, "autodiff: cannot differentiate with respect to '" + info.name + "' (" +
                                           info.type_string() + "): only float32 tensors have gradients");
    }
    from_wrt[t] = true;
  }
  for (OpId o = 0; o < forward_ops; ++o) {
    const Op& op = graph.op(o);
    bool any = false;
    for (TensorId in : op.inputs) any = any || from_wrt[in];
    if (any) {
      for (TensorId out : op.outputs) from_wrt[out] = true;
    }
  }
  return from_wrt;
}

/// Tensors the loss depends on.
std::vector<bool> loss_depends_on(const Graph& graph, TensorId loss, OpId forward_ops) {
  std::vector<bool> to_loss(graph.num_tensors(), false);
  to_loss[loss] = true;
  for (OpId o = forward_ops; o-- > 0;) {
    const Op& op = graph.op(o);
    bool any = false;
    for (TensorId out : op.outputs) any = any || to_loss[out];
    if (any) {
      for (TensorId in : op.inputs) to_loss[in] = true;
    }
  }
  return to_loss;
}

/// Backward state: which tensors lie between wrt and the loss, and the gradient
/// contributions collected so far for each tensor (summed when first read).
struct Backward {
  Graph& graph;
  std::span<const TensorId> wrt;
  std::vector<bool> from_wrt;
  std::vector<bool> to_loss;
  std::map<TensorId, std::vector<TensorId>> contributions;

  /// Runs the gradient rule of forward op `o` when some input needs a gradient and some
  /// output has one; records the input gradients as contributions.
  void differentiate(OpId o);
  /// The rule's gradients must be one per input, shaped as the input.
  void check_rule_result(const Op& op, const std::vector<bool>& needs, const std::vector<TensorId>& in_grads) const;
};

void Backward::differentiate(OpId o) {
  const Op op = graph.op(o);  // copy: add_op below may reallocate the op list
  std::vector<bool> needs(op.inputs.size(), false);
  bool any_needed = false;
  for (size_t i = 0; i < op.inputs.size(); ++i) {
    const TensorInfo& in = graph.tensor(op.inputs[i]);
    needs[i] = from_wrt[op.inputs[i]] && to_loss[op.inputs[i]] && in.dtype == DType::Float32;
    any_needed = any_needed || needs[i];
  }
  if (!any_needed) return;
  std::vector<TensorId> out_grads;
  bool any_grad = false;
  // The sums of an output's contributions join the op's block too: by the default rule
  // (the first input's block) a sum whose first part came from a later stage would be
  // placed there and read the other parts against the direction of the backward pass.
  graph.set_implicit_block(op.block);
  for (TensorId out : op.outputs) {
    auto it = contributions.find(out);
    out_grads.push_back(it == contributions.end() ? kNoTensor : sum_contributions(graph, it->second));
    any_grad = any_grad || out_grads.back() != kNoTensor;
  }
  graph.set_implicit_block(-1);
  if (!any_grad) return;
  if (!op.def->grad) {
    fail(ErrorCode::InvalidArgument, "autodiff: op '" + op.name + "' lies between the loss and a requested tensor "
                                     "but has no gradient");
  }
  GradContext ctx{graph, op, out_grads, needs, wrt};
  graph.set_implicit_block(op.block);  // gradient ops join the block of the op they differentiate
  const std::vector<TensorId> in_grads = op.def->grad(ctx);
  graph.set_implicit_block(-1);
  check_rule_result(op, needs, in_grads);
  for (size_t i = 0; i < op.inputs.size(); ++i) {
    if (needs[i] && in_grads[i] != kNoTensor) contributions[op.inputs[i]].push_back(in_grads[i]);
  }
}

void Backward::check_rule_result(const Op& op, const std::vector<bool>& needs,
                                 const std::vector<TensorId>& in_grads) const {
  if (in_grads.size() != op.inputs.size()) {
    fail(ErrorCode::Internal, "gradient rule of '" + op.def->name + "' returned " + std::to_string(in_grads.size()) +
                                  " gradients for " + std::to_string(op.inputs.size()) + " inputs");
  }
  for (size_t i = 0; i < op.inputs.size(); ++i) {
    if (!needs[i] || in_grads[i] == kNoTensor) continue;
    if (graph.tensor(in_grads[i]).shape != graph.tensor(op.inputs[i]).shape) {
      fail(ErrorCode::Internal, "gradient rule of '" + op.def->name + "' returned " +
                                    graph.tensor(in_grads[i]).type_string() + " for input " +
                                    graph.tensor(op.inputs[i]).type_string());
    }
  }
}

}  // namespace

std::vector<TensorId> autodiff(Graph& graph, TensorId loss, std::span<const TensorId> wrt) {
  const TensorInfo loss_info = graph.tensor(loss);  // a copy: the ops added below reallocate the tensor list
  if (loss_info.dtype != DType::Float32) {
    fail(ErrorCode::InvalidArgument, "autodiff: loss '" + loss_info.name + "' is " + loss_info.type_string() +
                                         ", must be float32");
  }
  const auto forward_ops = static_cast<OpId>(graph.num_ops());
  Backward backward{graph, wrt, depends_on_wrt(graph, wrt, forward_ops), loss_depends_on(graph, loss, forward_ops), {}};
  graph.set_phase(Phase::Backward);
  backward.contributions[loss].push_back(seed_gradient(graph, loss_info));
  for (OpId o = forward_ops; o-- > 0;) backward.differentiate(o);

  std::vector<TensorId> result;
  for (TensorId t : wrt) {
    auto it = backward.contributions.find(t);
    if (it == backward.contributions.end()) {
      fail(ErrorCode::InvalidArgument, "autodiff: the loss '" + loss_info.name + "' does not depend on '" +
                                           graph.tensor(t).name + "'");
    }
    result.push_back(sum_contributions(graph, it->second));
  }
  graph.set_phase(Phase::Update);  // ops added after autodiff update the weights
  return result;
}

}  // namespace plexus::ir
