// Calling a subgraph (PopXL ops.call / ops.call_with_info, user guide "Graphs"): by default
// the call adds the callee's ops to the calling graph, reading the call's arguments where
// the callee reads its inputs, so that a session compiles, plans and fuses a called graph's
// ops as it does the caller's own (main-graph autodiff differentiates through them too);
// a call that reuses code is one op running the callee's kernels, bound once.
#pragma once

#include <vector>

#include "core/ir/graph.h"

namespace plexus::ir {

/// Calls subgraph `callee` from the current graph with `args`, one per callee input, of the
/// input's dtype and shape, and returns the call site's id (Graph::call_site: the parent
/// tensors of the callee's outputs and of every tensor it holds).
///
/// Inputs are passed by value: an input that the callee writes in place (scaled_add_,
/// remote_store's buffer, ...) is copied first unless `modified` (empty, or one flag per
/// input; PopXL CallSiteInfo.set_parent_input_modified) marks it, in which case the writes
/// reach the argument. Outputs are fresh tensors of the caller.
///
/// With `reuse_code` the call is one op instead (`call`, core/ops/graph/call.cpp; PopXL's
/// call as the IPU runs it): the callee's kernels are bound once per device and run at
/// every such call site, its buffers are the op's scratch (planned for the call's
/// lifetime), main-graph autodiff differentiates it by running the callee again and its
/// gradient graph, and the call site maps only the callee's inputs and outputs to parent
/// tensors. Every input is passed by value: `modified` must mark none.
///
/// Throws InvalidArgument, naming the graph and the input, for a wrong number of
/// arguments or of `modified` flags, an argument of another graph, a main-graph callee, a
/// callee that calls the current graph (directly or through other graphs), or a modified
/// input with `reuse_code`; ShapeMismatch / DTypeMismatch for an argument of another type
/// than its input.
int32_t call(Graph& graph, GraphId callee, const std::vector<TensorId>& args, std::vector<bool> modified = {},
             bool reuse_code = false);

}  // namespace plexus::ir
