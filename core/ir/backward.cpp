#include "core/ir/backward.h"

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

}  // namespace

Backward::Backward(Graph& graph, std::vector<OpId> ops, std::span<const TensorId> wrt)
    : graph_(graph), ops_(std::move(ops)), wrt_(wrt), from_wrt_(graph.num_tensors(), false) {
  for (TensorId t : wrt) {
    const TensorInfo& info = graph.tensor(t);
    if (info.dtype != DType::Float32) {
      fail(ErrorCode::InvalidArgument, "autodiff: cannot differentiate with respect to '" + info.name + "' (" +
                                           info.type_string() + "): only float32 tensors have gradients");
    }
    from_wrt_[static_cast<size_t>(t)] = true;
  }
  for (OpId o : ops_) {
    const Op& op = graph.op(o);
    bool any = false;
    for (TensorId in : op.inputs) any = any || from_wrt_[static_cast<size_t>(in)];
    if (any) {
      for (TensorId out : op.outputs) from_wrt_[static_cast<size_t>(out)] = true;
    }
  }
}

void Backward::seed(TensorId t, TensorId g) { contributions_[t].push_back(g); }

void Backward::run() {
  to_seed_.assign(from_wrt_.size(), false);
  for (const auto& [t, parts] : contributions_) to_seed_[static_cast<size_t>(t)] = true;
  for (size_t i = ops_.size(); i-- > 0;) {
    const Op& op = graph_.op(ops_[i]);
    bool any = false;
    for (TensorId out : op.outputs) any = any || to_seed_[static_cast<size_t>(out)];
    if (any) {
      for (TensorId in : op.inputs) to_seed_[static_cast<size_t>(in)] = true;
    }
  }
  for (size_t i = ops_.size(); i-- > 0;) differentiate(ops_[i]);
}

TensorId Backward::gradient(TensorId t) {
  auto it = contributions_.find(t);
  return it == contributions_.end() ? kNoTensor : sum_contributions(graph_, it->second);
}

void Backward::differentiate(OpId o) {
  const Op op = graph_.op(o);  // copy: add_op below may reallocate the op list
  std::vector<bool> needs(op.inputs.size(), false);
  bool any_needed = false;
  for (size_t i = 0; i < op.inputs.size(); ++i) {
    const auto in = static_cast<size_t>(op.inputs[i]);
    needs[i] = from_wrt_[in] && to_seed_[in] && graph_.tensor(op.inputs[i]).dtype == DType::Float32;
    any_needed = any_needed || needs[i];
  }
  if (!any_needed) return;
  std::vector<TensorId> out_grads;
  bool any_grad = false;
  // The sums of an output's contributions join the op's block too: by the default rule
  // (the first input's block) a sum whose first part came from a later stage would be
  // placed there and read the other parts against the direction of the backward pass.
  const int32_t outer = graph_.set_implicit_block(op.block);
  for (TensorId out : op.outputs) {
    out_grads.push_back(gradient(out));
    any_grad = any_grad || out_grads.back() != kNoTensor;
  }
  graph_.set_implicit_block(outer);
  if (!any_grad) return;
  if (!op.schema->grad) {
    fail(ErrorCode::InvalidArgument, "autodiff: op '" + op.name + "' lies between the loss and a requested tensor "
                                     "but has no gradient");
  }
  GradContext ctx{graph_, op, out_grads, needs, wrt_};
  graph_.set_implicit_block(op.block);  // gradient ops join the block of the op they differentiate
  const std::vector<TensorId> in_grads = op.schema->grad(ctx);
  graph_.set_implicit_block(outer);
  check_rule_result(op, needs, in_grads);
  for (size_t i = 0; i < op.inputs.size(); ++i) {
    if (needs[i] && in_grads[i] != kNoTensor) contributions_[op.inputs[i]].push_back(in_grads[i]);
  }
}

void Backward::check_rule_result(const Op& op, const std::vector<bool>& needs,
                                 const std::vector<TensorId>& in_grads) const {
  if (in_grads.size() != op.inputs.size()) {
    fail(ErrorCode::Internal, "gradient rule of '" + op.schema->name + "' returned " + std::to_string(in_grads.size()) +
                                  " gradients for " + std::to_string(op.inputs.size()) + " inputs");
  }
  for (size_t i = 0; i < op.inputs.size(); ++i) {
    if (!needs[i] || in_grads[i] == kNoTensor) continue;
    if (graph_.tensor(in_grads[i]).shape != graph_.tensor(op.inputs[i]).shape) {
      fail(ErrorCode::Internal, "gradient rule of '" + op.schema->name + "' returned " +
                                    graph_.tensor(in_grads[i]).type_string() + " for input " +
                                    graph_.tensor(op.inputs[i]).type_string());
    }
  }
}

}  // namespace plexus::ir
