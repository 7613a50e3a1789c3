// The backward pass shared by main-graph autodiff (core/ir/autodiff.h) and graph autodiff
// (core/ir/graph_autodiff.h): gradient contributions flow from seeded tensors back through
// the ops of one graph, each op's registered gradient rule adding the ops of its part.
#pragma once

#include <map>
#include <span>
#include <string>
#include <vector>

#include "core/ir/graph.h"

namespace plexus::ir {

/// Reverse-mode differentiation over `ops` (one graph's ops in run order) with respect to
/// `wrt`. Gradient ops are added to the graph's current graph. Not thread-safe.
class Backward {
 public:
  Backward(Graph& graph, std::vector<OpId> ops, std::span<const TensorId> wrt);

  /// Gives tensor t the gradient contribution g (the loss's seed, a provided gradient).
  /// Call before run(); t must be an output of `ops` or a wrt tensor.
  void seed(TensorId t, TensorId g);
  /// Runs the gradient rule of every op between the seeds and `wrt`, last op first.
  /// Throws InvalidArgument naming an op on the path without a gradient rule.
  void run();
  /// The gradient of t (its contributions summed once), or kNoTensor when no seed reaches it.
  TensorId gradient(TensorId t);

 private:
  /// Runs the gradient rule of op `o` when some input needs a gradient and some output has one.
  void differentiate(OpId o);
  /// The rule's gradients must be one per input, shaped as the input.
  void check_rule_result(const Op& op, const std::vector<bool>& needs, const std::vector<TensorId>& in_grads) const;

  Graph& graph_;
  std::vector<OpId> ops_;
  std::span<const TensorId> wrt_;
  std::vector<bool> from_wrt_;  ///< tensors that depend on some wrt tensor
  std::vector<bool> to_seed_;   ///< tensors some seeded tensor depends on
  std::map<TensorId, std::vector<TensorId>> contributions_;
};

}  // namespace plexus::ir
