// call(args...; graph) (PopXL ops.call, user guide "Graphs"): runs subgraph `graph` once on
// the arguments, one per graph input of its type, and gives the graph's outputs. The op is
// a call site that reuses code (ir::call with reuse_code): the graph's kernels are bound
// once per device (core/ops/graph/bound_graph.h) at the device's scratch area and run at
// every call site, whose arguments are copied in and outputs copied out; the graph's
// buffers are the op's scratch, planned for the call's lifetime. Inputs are passed by
// value.
//
// Its gradient, call_grad(args..., dys...; graph, grad_graph), runs the graph forward again
// from the arguments (its activations), then its gradient graph (graph autodiff,
// core/ir/graph_autodiff.h): a loop of one iteration (core/ops/graph/loop.cpp), with the
// same bits as the gradient of the graph's ops written out.
#include "core/ir/graph.h"
#include "core/ops/graph/loop.h"
#include "core/ops/op_def.h"

namespace plexus::ops {

namespace {

/// Checks the arguments against the graph's inputs (count, dtype, shape), naming the graph
/// and the input.
void check_call_args(const ir::InferContext& ctx, const ir::Subgraph& body) {
  if (ctx.inputs.size() < body.inputs.size()) {
    ctx.fail(ir::ErrorCode::InvalidArgument, "graph '" + body.name + "' has " + std::to_string(body.inputs.size()) +
                                                 " inputs, the op " + std::to_string(ctx.inputs.size()) + " arguments");
  }
  for (size_t i = 0; i < body.inputs.size(); ++i) {
    const ir::TensorInfo& in = ctx.graph->tensor(body.inputs[i]);
    if (in.dtype != ctx.dtype(i) || in.shape != ctx.shape(i)) {
      ctx.fail(ir::ErrorCode::ShapeMismatch, "argument " + std::to_string(i) + " for input '" + in.name +
                                                 "' of graph '" + body.name + "', which is " + in.type_string());
    }
  }
}

ir::InferResult infer_call(const ir::InferContext& ctx) {
  const ir::Graph& graph = *ctx.graph;
  const ir::GraphId id = graph_attr(ctx.attrs, "graph");
  const ir::Subgraph& body = graph.subgraph(id);
  const ir::GraphId caller = graph.current_graph();
  if (id == caller || graph.calls(id, caller)) {
    ctx.fail(ir::ErrorCode::InvalidArgument, "graph '" + graph.graph_name(caller) + "' cannot call graph '" + body.name +
                                                 "': it would run itself (graphs cannot recurse)");
  }
  if (ctx.inputs.size() != body.inputs.size()) {
    ctx.fail(ir::ErrorCode::InvalidArgument, "graph '" + body.name + "' has " + std::to_string(body.inputs.size()) +
                                                 " inputs, the op " + std::to_string(ctx.inputs.size()) + " arguments");
  }
  check_call_args(ctx, body);
  ir::InferResult result;
  for (ir::TensorId out : body.outputs) result.outputs.push_back({graph.tensor(out).dtype, graph.tensor(out).shape});
  return result;
}

size_t call_scratch(const ir::InferContext& ctx) {
  const ir::Subgraph& body = ctx.graph->subgraph(graph_attr(ctx.attrs, "graph"));
  return loop_scratch(*ctx.graph, body, single_run(body));
}

Kernel call_kernel(const KernelContext& ctx) {
  const ir::GraphId body = graph_attr(ctx.op.attrs, "graph");
  return loop_kernel(ctx, body, single_run(ctx.graph.subgraph(body)));
}

std::vector<ir::TensorId> call_grad_rule(ir::GradContext& ctx) { return loop_grad_rule(ctx, "call_grad"); }

OpDef call_def() {
  OpDef d;
  d.name = "call";
  d.min_inputs = 0;
  d.max_inputs = 1u << 16;
  d.attrs = {{"graph", ir::AttrKind::Int, std::nullopt}};
  d.infer = infer_call;
  d.kernel = call_kernel;
  d.scratch = call_scratch;
  d.grad = call_grad_rule;
  d.communicates = true;  // the graph may hold collectives
  return d;
}

// ---- call_grad ----

ir::InferResult infer_call_grad(const ir::InferContext& ctx) {
  const ir::Graph& graph = *ctx.graph;
  const ir::Subgraph& body = graph.subgraph(graph_attr(ctx.attrs, "graph"));
  const ir::Subgraph& grad = graph.subgraph(graph_attr(ctx.attrs, "grad_graph"));
  check_loop_grad(ctx, body, grad, "call");
  check_call_args(ctx, body);
  ir::InferResult result;
  for (const ir::ExpectedConnection& c : grad.grad_of->expected_outputs) {
    result.outputs.push_back({graph.tensor(c.fwd_tensor).dtype, graph.tensor(c.fwd_tensor).shape});
  }
  return result;
}

size_t call_grad_scratch(const ir::InferContext& ctx) {
  const ir::Graph& graph = *ctx.graph;
  const ir::Subgraph& body = graph.subgraph(graph_attr(ctx.attrs, "graph"));
  return loop_grad_scratch(graph, body, graph.subgraph(graph_attr(ctx.attrs, "grad_graph")), single_run(body));
}

Kernel call_grad_kernel(const KernelContext& ctx) {
  const ir::GraphId body = graph_attr(ctx.op.attrs, "graph");
  return loop_grad_kernel(ctx, body, graph_attr(ctx.op.attrs, "grad_graph"), single_run(ctx.graph.subgraph(body)));
}

OpDef call_grad_def() {
  OpDef d;
  d.name = "call_grad";
  d.min_inputs = 0;
  d.max_inputs = 1u << 17;
  d.attrs = {{"graph", ir::AttrKind::Int, std::nullopt}, {"grad_graph", ir::AttrKind::Int, std::nullopt}};
  d.infer = infer_call_grad;
  d.kernel = call_grad_kernel;
  d.scratch = call_grad_scratch;
  d.communicates = true;
  return d;
}

const OpRegistration call_op{call_def()};
const OpRegistration call_grad_op{call_grad_def()};

}  // namespace

}  // namespace plexus::ops
