// Running a subgraph as an op, shared by call (core/ops/graph/call.cpp: the graph once) and
// repeat (repeat.cpp: `count` times, carried inputs, sliced inputs, stacked outputs): the
// kernel of the loop, its gradient's kernel (the body run forward again, then its gradient
// graph, last iteration first) and the gradient rule that adds that op.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "core/ir/graph.h"
#include "core/ops/kernel_context.h"

namespace plexus::ops {

/// How a loop's arguments and results meet its body.
struct Loop {
  size_t carried = 0;                 ///< outputs 0..carried-1 are loop-carried
  std::vector<size_t> carried_input;  ///< per carried output: the input it feeds
  std::vector<bool> sliced;           ///< per body input: one slice of the argument per iteration
  int64_t count = 0;

  /// The carried output feeding input i, or `carried` when none does.
  size_t carried_slot(size_t i) const;
};

/// A call's loop: one iteration, nothing carried or sliced, every output "stacked" over
/// one iteration (so of its own shape).
Loop single_run(const ir::Subgraph& body);

/// The graph attribute `name` of an op.
ir::GraphId graph_attr(const ir::Attributes& attrs, const char* name);

/// Scratch of a loop of `body`: the body's plan and the carried values.
size_t loop_scratch(const ir::Graph& graph, const ir::Subgraph& body, const Loop& loop);

/// The loop's kernel: the body bound once (ops/graph/bound_graph.h) at ctx.scratch,
/// arguments copied in (whole ones once, sliced ones per iteration), carried outputs fed
/// back, stacked outputs and the last carried values copied out.
Kernel loop_kernel(const KernelContext& ctx, ir::GraphId body, const Loop& loop);

/// Scratch of the loop's gradient (the body with every buffer kept, the gradient graph,
/// the stash of carried inputs, the carried gradients, the sums).
size_t loop_grad_scratch(const ir::Graph& graph, const ir::Subgraph& body, const ir::Subgraph& grad,
                         const Loop& loop);

/// The gradient's kernel: takes the loop's arguments, then the gradient of each float
/// output of the body, and gives the gradient of each input the gradient graph differentiates.
Kernel loop_grad_kernel(const KernelContext& ctx, ir::GraphId body, ir::GraphId grad, const Loop& loop);

/// The float outputs of the body: the ones whose gradients the gradient op takes.
std::vector<ir::TensorId> float_outputs(const ir::Graph& graph, const ir::Subgraph& body);

/// The gradient rule of a loop op with attribute "graph": differentiates the body
/// (graph autodiff) and adds op `grad_type` with the op's attributes plus "grad_graph",
/// taking the op's arguments and its float outputs' gradients (zeros where none arrives).
std::vector<ir::TensorId> loop_grad_rule(ir::GradContext& ctx, const std::string& grad_type);

/// Checks a loop's gradient op (of a `what`: "repeat", "call"): its grad_graph attribute
/// names the gradient graph of `body`, and it takes the loop's arguments and one gradient
/// per float output of the body. InvalidArgument otherwise.
void check_loop_grad(const ir::InferContext& ctx, const ir::Subgraph& body, const ir::Subgraph& grad,
                     const std::string& what);

/// Position of t in `list` (list.size() when absent).
size_t index_of(const std::vector<ir::TensorId>& list, ir::TensorId t);

}  // namespace plexus::ops
