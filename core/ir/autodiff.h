// Reverse-mode automatic differentiation over the IR (PopXL's autodiff: gradient ops are
// appended to the same graph). Autodiff never inserts a collective by itself
// (docs/design.md, "Semantics"): data-parallel programs reduce their gradients explicitly.
#pragma once

#include <span>
#include <vector>

#include "core/ir/graph.h"

namespace plexus::ir {

/// Appends the ops computing d(sum of loss)/d(t) for every t in `wrt` and returns those
/// gradient tensors, in the order of `wrt`, each of the same shape as its tensor.
/// The loss is seeded with ones (for a scalar loss, d loss / d t).
/// Throws InvalidArgument when `loss` or a `wrt` tensor is not float32, when the loss does
/// not depend on a `wrt` tensor, or when an op on the path has no gradient rule
/// (the message names the op).
std::vector<TensorId> autodiff(Graph& graph, TensorId loss, std::span<const TensorId> wrt);

}  // namespace plexus::ir
