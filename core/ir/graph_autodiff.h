// Graph autodiff (PopXL transforms.autodiff, user guide "Autodiff"): the gradient of a
// subgraph as another subgraph, with the connections a call of it expects.
#pragma once

#include <optional>
#include <vector>

#include "core/ir/graph.h"

namespace plexus::ir {

/// Makes the gradient graph of subgraph `forward` and returns its id; its GradOf
/// (Graph::subgraph(id).grad_of) lists its expected connections:
/// - inputs: first the gradient of each output in `grads_provided` (FwdGrad, in that
///   order), then every tensor of `forward` its ops read (Fwd: forward inputs, outputs and
///   activations, in the order the gradient rules first read them);
/// - outputs: the gradient of each input in `grads_required` (FwdGrad, in that order).
/// A call of it takes the Fwd tensors' parent tensors at the forward call site
/// (Graph::call_site(...).graph_to_parent) and the provided gradients.
/// `grads_provided` defaults to every float32 output of `forward`, `grads_required` to
/// every float32 input that some provided output depends on. The graph is named "<forward>_grad" (with a number appended when
/// taken). Never inserts a collective. Gradients through calls inside `forward` follow
/// from their ops (a call adds the callee's ops to its caller, core/ir/call.h).
/// Throws InvalidArgument, naming the graph and tensor, for the main graph, a provided
/// tensor that is not an output of `forward` or a required one that is not an input, a
/// non-float32 one, a required input (given explicitly) no provided output depends on, or an op on the path
/// without a gradient rule. On error the IR is unchanged.
GraphId autodiff_graph(Graph& graph, GraphId forward, std::optional<std::vector<TensorId>> grads_provided = {},
                       std::optional<std::vector<TensorId>> grads_required = {});

}  // namespace plexus::ir
