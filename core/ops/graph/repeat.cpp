// repeat(args...; graph, count, sliced, stacked) (PopXL ops.repeat, user guide "Graphs"):
// runs subgraph `graph` `count` times. Its first k inputs not listed in `sliced` are
// loop-carried, k being the number of its outputs less `stacked`: output j < k of one
// iteration is the j-th carried input of the next, of the same type. The inputs listed in
// `sliced` take one slice of their argument per iteration: the argument is [count] + the input's shape and
// iteration n reads slice n (a scan's input; how a host_load inside a repeated PopXL graph
// reads one transfer per iteration). The other inputs are the same every iteration. The
// op's outputs are the last iteration's k carried outputs (with count 0, the carried
// arguments), then the last `stacked` outputs of the body stacked over the iterations,
// each [count] + its shape (a scan's output; a host_store inside the body). Not unrolled:
// the body's kernels are bound once, to buffers of a plan of its own
// (core/memory/memory_plan.h) inside the op's scratch, so compile time and planned bytes do
// not depend on count. Inputs are passed by value.
//
// Its gradient, repeat_grad(args..., dys...; graph, grad_graph, count, sliced, stacked), runs
// the body forward again and its gradient graph, last iteration first (core/ops/graph/loop.cpp).
#include <algorithm>

#include "core/ir/graph.h"
#include "core/ops/graph/loop.h"
#include "core/ops/op_def.h"

namespace plexus::ops {

namespace {

/// The loop of a repeat with attributes `attrs`; `body` must pass check_repeat_args.
Loop loop_of(const ir::Attributes& attrs, const ir::Subgraph& body) {
  Loop loop;
  loop.carried = body.outputs.size() - static_cast<size_t>(attrs.get_int("stacked"));
  loop.sliced.assign(body.inputs.size(), false);
  for (int64_t i : attrs.get_ints("sliced")) loop.sliced[static_cast<size_t>(i)] = true;
  for (size_t i = 0; i < body.inputs.size() && loop.carried_input.size() < loop.carried; ++i) {
    if (!loop.sliced[i]) loop.carried_input.push_back(i);
  }
  loop.count = attrs.get_int("count");
  return loop;
}

/// The type argument i must have: the body input's, with a leading [count] when sliced.
ir::Shape argument_shape(const ir::TensorInfo& input, bool sliced, int64_t count) {
  ir::Shape shape = input.shape;
  if (sliced) shape.insert(shape.begin(), count);
  return shape;
}

void check_loop_attrs(const ir::InferContext& ctx, const ir::Subgraph& body) {
  const int64_t stacked = ctx.attrs.get_int("stacked");
  if (stacked < 0 || static_cast<size_t>(stacked) > body.outputs.size()) {
    ctx.fail(ir::ErrorCode::InvalidArgument, "stacked " + std::to_string(stacked) + " must be in [0, " +
                                                 std::to_string(body.outputs.size()) + "], the outputs of graph '" +
                                                 body.name + "'");
  }
  if (ctx.attrs.get_int("count") == 0 && (stacked > 0 || !ctx.attrs.get_ints("sliced").empty())) {
    ctx.fail(ir::ErrorCode::InvalidArgument, "count 0 with sliced inputs or stacked outputs: they would have no "
                                             "iteration to hold (tensors have no empty dimension)");
  }
  std::vector<bool> seen(body.inputs.size(), false);
  for (int64_t i : ctx.attrs.get_ints("sliced")) {
    if (i < 0 || i >= static_cast<int64_t>(body.inputs.size()) || seen[static_cast<size_t>(i)]) {
      ctx.fail(ir::ErrorCode::InvalidArgument, "sliced input " + std::to_string(i) + " of graph '" + body.name +
                                                   "' must be a distinct input in [0, " +
                                                   std::to_string(body.inputs.size()) + ")");
    }
    seen[static_cast<size_t>(i)] = true;
  }
  const size_t carried = body.outputs.size() - static_cast<size_t>(stacked);
  const size_t unsliced = body.inputs.size() - ctx.attrs.get_ints("sliced").size();
  if (carried > unsliced) {
    ctx.fail(ir::ErrorCode::InvalidArgument, "graph '" + body.name + "' has " + std::to_string(unsliced) +
                                                 " inputs that are not sliced and " + std::to_string(carried) +
                                                 " carried outputs (at most one per input: the loop-carried ones first)");
  }
}

void check_repeat_args(const ir::InferContext& ctx, const ir::Subgraph& body) {
  const ir::Graph& graph = *ctx.graph;
  if (ctx.attrs.get_int("count") < 0) {
    ctx.fail(ir::ErrorCode::InvalidArgument, "count " + std::to_string(ctx.attrs.get_int("count")) + " must be >= 0");
  }
  if (ctx.inputs.size() < body.inputs.size()) {
    ctx.fail(ir::ErrorCode::InvalidArgument, "graph '" + body.name + "' has " + std::to_string(body.inputs.size()) +
                                                 " inputs, the op " + std::to_string(ctx.inputs.size()) + " arguments");
  }
  check_loop_attrs(ctx, body);
  const Loop loop = loop_of(ctx.attrs, body);
  for (size_t i = 0; i < body.inputs.size(); ++i) {
    const ir::TensorInfo& in = graph.tensor(body.inputs[i]);
    const ir::Shape shape = argument_shape(in, loop.sliced[i], loop.count);
    if (in.dtype != ctx.dtype(i) || shape != ctx.shape(i)) {
      const std::string type = loop.sliced[i] ? std::string(ir::dtype_name(in.dtype)) + ir::shape_string(shape) + " (sliced: one " +
                                                    in.type_string() + " per iteration)"
                                              : in.type_string();
      ctx.fail(ir::ErrorCode::ShapeMismatch, "argument " + std::to_string(i) + " for input '" + in.name + "' of graph '" +
                                                 body.name + "', which is " + type);
    }
  }
  for (size_t j = 0; j < loop.carried; ++j) {
    const ir::TensorInfo& out = graph.tensor(body.outputs[j]);
    const ir::TensorInfo& carried = graph.tensor(body.inputs[loop.carried_input[j]]);
    if (out.dtype != carried.dtype || out.shape != carried.shape) {
      ctx.fail(ir::ErrorCode::ShapeMismatch, "output " + std::to_string(j) + " of graph '" + body.name + "' is " +
                                                 out.type_string() + ", but it feeds input '" + carried.name +
                                                 "', which is " + carried.type_string());
    }
  }
}

ir::InferResult infer_repeat(const ir::InferContext& ctx) {
  const ir::Graph& graph = *ctx.graph;
  const ir::GraphId id = graph_attr(ctx.attrs, "graph");
  const ir::Subgraph& body = graph.subgraph(id);
  const ir::GraphId caller = graph.current_graph();
  if (id == caller || graph.calls(id, caller)) {
    ctx.fail(ir::ErrorCode::InvalidArgument, "graph '" + graph.graph_name(caller) + "' cannot repeat graph '" +
                                                 body.name + "': it would run itself (graphs cannot recurse)");
  }
  if (ctx.inputs.size() != body.inputs.size()) {
    ctx.fail(ir::ErrorCode::InvalidArgument, "graph '" + body.name + "' has " + std::to_string(body.inputs.size()) +
                                                 " inputs, the op " + std::to_string(ctx.inputs.size()) + " arguments");
  }
  check_repeat_args(ctx, body);
  const Loop loop = loop_of(ctx.attrs, body);
  ir::InferResult result;
  for (size_t j = 0; j < body.outputs.size(); ++j) {
    const ir::TensorInfo& out = graph.tensor(body.outputs[j]);
    result.outputs.push_back({out.dtype, argument_shape(out, j >= loop.carried, loop.count)});
  }
  return result;
}

/// repeat's scratch: its body's plan and the carried values.
size_t repeat_scratch(const ir::InferContext& ctx) {
  const ir::Graph& graph = *ctx.graph;
  const ir::Subgraph& body = graph.subgraph(graph_attr(ctx.attrs, "graph"));
  return loop_scratch(graph, body, loop_of(ctx.attrs, body));
}

Kernel repeat_kernel(const KernelContext& ctx) {
  const ir::GraphId body = graph_attr(ctx.op.attrs, "graph");
  return loop_kernel(ctx, body, loop_of(ctx.op.attrs, ctx.graph.subgraph(body)));
}

std::vector<ir::TensorId> repeat_grad_rule(ir::GradContext& ctx) { return loop_grad_rule(ctx, "repeat_grad"); }

/// The attributes of repeat and repeat_grad that say how the loop meets its body.
std::vector<ir::AttrSpec> loop_attrs() {
  return {{"graph", ir::AttrKind::Int, std::nullopt},
          {"count", ir::AttrKind::Int, std::nullopt},
          {"sliced", ir::AttrKind::Ints, std::vector<int64_t>{}},
          {"stacked", ir::AttrKind::Int, int64_t{0}}};
}

OpDef repeat_def() {
  OpDef d;
  d.name = "repeat";
  d.min_inputs = 0;
  d.max_inputs = 1u << 16;
  d.attrs = loop_attrs();
  d.infer = infer_repeat;
  d.kernel = repeat_kernel;
  d.scratch = repeat_scratch;
  d.grad = repeat_grad_rule;
  d.communicates = true;  // the body may hold collectives
  return d;
}

// ---- repeat_grad ----

ir::InferResult infer_repeat_grad(const ir::InferContext& ctx) {
  const ir::Graph& graph = *ctx.graph;
  const ir::Subgraph& body = graph.subgraph(graph_attr(ctx.attrs, "graph"));
  const ir::Subgraph& grad = graph.subgraph(graph_attr(ctx.attrs, "grad_graph"));
  check_loop_grad(ctx, body, grad, "repeat");
  check_repeat_args(ctx, body);
  const Loop loop = loop_of(ctx.attrs, body);
  ir::InferResult result;
  for (const ir::ExpectedConnection& c : grad.grad_of->expected_outputs) {
    const ir::TensorInfo& in = graph.tensor(c.fwd_tensor);
    result.outputs.push_back({in.dtype, argument_shape(in, loop.sliced[index_of(body.inputs, c.fwd_tensor)], loop.count)});
  }
  return result;
}

size_t repeat_grad_scratch(const ir::InferContext& ctx) {
  const ir::Graph& graph = *ctx.graph;
  const ir::Subgraph& body = graph.subgraph(graph_attr(ctx.attrs, "graph"));
  const ir::Subgraph& grad = graph.subgraph(graph_attr(ctx.attrs, "grad_graph"));
  return loop_grad_scratch(graph, body, grad, loop_of(ctx.attrs, body));
}

Kernel repeat_grad_kernel(const KernelContext& ctx) {
  const ir::GraphId body = graph_attr(ctx.op.attrs, "graph");
  return loop_grad_kernel(ctx, body, graph_attr(ctx.op.attrs, "grad_graph"),
                          loop_of(ctx.op.attrs, ctx.graph.subgraph(body)));
}

OpDef repeat_grad_def() {
  OpDef d;
  d.name = "repeat_grad";
  d.min_inputs = 0;
  d.max_inputs = 1u << 17;
  d.attrs = loop_attrs();
  d.attrs.push_back({"grad_graph", ir::AttrKind::Int, std::nullopt});
  d.infer = infer_repeat_grad;
  d.kernel = repeat_grad_kernel;
  d.scratch = repeat_grad_scratch;
  d.communicates = true;
  return d;
}

const OpRegistration repeat_op{repeat_def()};
const OpRegistration repeat_grad_op{repeat_grad_def()};

}  // namespace

}  // namespace plexus::ops
