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
// Its gradient, repeat_grad(args..., dys...; graph, grad_graph, count, sliced, stacked), runs the body
// forward again from the arguments keeping each iteration's carried inputs (count of them:
// the stash grows with count, as a loop's activations must), then, last iteration first,
// runs the body once more from that iteration's inputs (its activations) and the body's
// gradient graph (graph autodiff, core/ir/graph_autodiff.h) on them: the carried inputs'
// gradients feed the iteration before, a sliced input's gradient is that iteration's slice
// of its gradient, a stacked output's gradient slice feeds that iteration, the other
// inputs' gradients are summed over the iterations in that order (the unrolled loop's
// autodiff gives the same bits). A body that writes an input in place is differentiated
// as if the input kept its value.
#include <algorithm>
#include <cstring>
#include <map>

#include "core/ir/graph.h"
#include "core/ops/op_def.h"
#include "core/ir/graph_autodiff.h"
#include "core/memory/memory_plan.h"

namespace plexus::ops {

namespace {

using ir::TensorId;

/// Where a graph's buffers lie, from some base: one per storage root, by the graph's
/// liveness (position 0: the inputs are filled; op k runs at k + 1; the outputs are read
/// at the last position), or each its own with `keep_all` (a gradient reads them after
/// the run); then the ops' shared scratch.
struct BodyPlan {
  std::vector<ir::OpId> ops;
  std::map<TensorId, size_t> offset;  ///< storage root -> offset
  size_t op_scratch_offset = 0;
  size_t bytes = 0;
};

BodyPlan plan_body(const ir::Graph& graph, const ir::Subgraph& body, bool keep_all) {
  BodyPlan plan;
  plan.ops = body.ops;
  const auto end = static_cast<int64_t>(body.ops.size()) + 1;
  std::map<TensorId, memory::BufferRequest> requests;
  const auto touch = [&](TensorId t, int64_t position) {
    const TensorId root = graph.storage_root(t);
    const ir::TensorInfo& info = graph.tensor(root);
    auto [it, fresh] = requests.try_emplace(root, memory::BufferRequest{info.bytes(), position, position, false});
    it->second.persistent =
        keep_all || info.kind == ir::TensorKind::GraphInput || info.kind == ir::TensorKind::Constant;
    it->second.first = std::min(it->second.first, position);
    it->second.last = std::max(it->second.last, position);
  };
  for (TensorId in : body.inputs) touch(in, 0);
  size_t op_scratch = 0;
  for (size_t k = 0; k < body.ops.size(); ++k) {
    const ir::Op& op = graph.op(body.ops[k]);
    for (TensorId in : op.inputs) touch(in, static_cast<int64_t>(k) + 1);
    for (TensorId out : op.outputs) touch(out, static_cast<int64_t>(k) + 1);
    op_scratch = std::max(op_scratch, scratch_bytes(graph, op));
  }
  for (TensorId out : body.outputs) touch(out, end);
  std::vector<memory::BufferRequest> list;
  for (const auto& [root, request] : requests) list.push_back(request);
  const memory::MemoryPlan mp = memory::plan_memory(list, end + 1);
  size_t i = 0;
  for (const auto& [root, request] : requests) plan.offset[root] = mp.offsets[i++];
  plan.op_scratch_offset = memory::align_up(mp.arena_bytes);
  plan.bytes = plan.op_scratch_offset + memory::align_up(op_scratch);
  return plan;
}

/// A copy of `bytes` bytes from one buffer to another.
struct Copy {
  const std::byte* from;
  std::byte* to;
  size_t bytes;
  void operator()() const { std::memcpy(to, from, bytes); }
};

void run_all(const std::vector<Copy>& copies) {
  for (const Copy& c : copies) c();
}

void run_all(const std::vector<Kernel>& kernels) {
  for (const Kernel& k : kernels) k();
}

/// A graph's kernels bound once to the buffers of its plan at `base`, and the copies that
/// put its constants in place before a run (the base is op scratch, which other ops share).
struct BoundGraph {
  const ir::Graph* graph = nullptr;
  BodyPlan plan;
  std::byte* base = nullptr;
  std::vector<Kernel> kernels;
  std::vector<Copy> constants;

  std::byte* at(TensorId t) const { return base + plan.offset.at(graph->storage_root(t)); }
};

BoundGraph bind_graph(const KernelContext& ctx, const ir::Subgraph& g, bool keep_all, std::byte* base) {
  BoundGraph b{&ctx.graph, plan_body(ctx.graph, g, keep_all), base, {}, {}};
  for (const auto& [root, offset] : b.plan.offset) {
    const ir::TensorInfo& t = ctx.graph.tensor(root);
    if (t.kind == ir::TensorKind::Constant) b.constants.push_back({t.data.data(), base + offset, t.data.size()});
  }
  for (ir::OpId id : b.plan.ops) {
    const ir::Op& op = ctx.graph.op(id);
    KernelContext inner{.graph = ctx.graph,
                            .op = op,
                            .scratch = scratch_bytes(ctx.graph, op) > 0 ? base + b.plan.op_scratch_offset : nullptr,
                            .max_threads = ctx.max_threads,
                            .replica = ctx.replica,
                            .replication_factor = ctx.replication_factor,
                            .micro_batch_counter = ctx.micro_batch_counter,
                            .comm = ctx.comm,
                            .remote = ctx.remote,
                            .notes = ctx.notes};
    for (TensorId t : op.inputs) {
      inner.inputs.push_back(&ctx.graph.tensor(t));
      inner.in.push_back(b.at(t));
    }
    for (TensorId t : op.outputs) {
      inner.outputs.push_back(&ctx.graph.tensor(t));
      inner.out.push_back(b.at(t));
    }
    if (Kernel kernel = kernel_def(op).kernel(inner)) b.kernels.push_back(std::move(kernel));  // empty: nothing to do (a view)
  }
  return b;
}

/// How a repeat's arguments and results meet its body (attributes sliced and stacked).
struct Loop {
  size_t carried = 0;                ///< outputs 0..carried-1 are loop-carried
  std::vector<size_t> carried_input;  ///< per carried output: the input it feeds
  std::vector<bool> sliced;          ///< per body input: one slice of the argument per iteration
  int64_t count = 0;

  /// The carried output feeding input i, or `carried` when none does.
  size_t carried_slot(size_t i) const {
    return static_cast<size_t>(std::find(carried_input.begin(), carried_input.end(), i) - carried_input.begin());
  }
};

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

/// Bytes of the carried values (one aligned buffer each).
size_t carried_bytes(const ir::Graph& graph, const ir::Subgraph& body, const Loop& loop) {
  size_t bytes = 0;
  for (size_t j = 0; j < loop.carried; ++j) bytes += memory::align_up(graph.tensor(body.outputs[j]).bytes());
  return bytes;
}

/// Copies that move the body's carried outputs into its carried inputs through `staging`
/// (an output may live in another carried input's buffer).
void add_carry(const BoundGraph& body, const ir::Subgraph& g, const Loop& loop, std::byte* staging,
               std::vector<Copy>& out, std::vector<Copy>& in) {
  for (size_t j = 0; j < loop.carried; ++j) {
    const size_t bytes = body.graph->tensor(g.outputs[j]).bytes();
    out.push_back({body.at(g.outputs[j]), staging, bytes});
    in.push_back({staging, body.at(g.inputs[loop.carried_input[j]]), bytes});
    staging += memory::align_up(bytes);
  }
}

/// A copy of one iteration's slice: from slice n of an argument [count, ...] (a sliced
/// input, a stacked output's gradient) or to slice n of a result (a stacked output, a
/// sliced input's gradient); `copy` names slice 0.
struct SliceCopy {
  Copy copy;
  bool source_moves;
  void operator()(int64_t n) const {
    const size_t shift = static_cast<size_t>(n) * copy.bytes;
    if (source_moves) {
      Copy{copy.from + shift, copy.to, copy.bytes}();
    } else {
      Copy{copy.from, copy.to + shift, copy.bytes}();
    }
  }
};

void run_all(const std::vector<SliceCopy>& copies, int64_t n) {
  for (const SliceCopy& c : copies) c(n);
}

/// The copies of the arguments into the body: whole ones into `whole` (once), sliced ones
/// into `slices` (per iteration).
void add_arguments(const KernelContext& ctx, const BoundGraph& body, const ir::Subgraph& g, const Loop& loop,
                   std::vector<Copy>& whole, std::vector<SliceCopy>& slices) {
  for (size_t i = 0; i < g.inputs.size(); ++i) {
    const size_t bytes = ctx.graph.tensor(g.inputs[i]).bytes();
    if (loop.sliced[i]) {
      slices.push_back({{ctx.in[i], body.at(g.inputs[i]), bytes}, true});
    } else {
      whole.push_back({ctx.in[i], body.at(g.inputs[i]), bytes});
    }
  }
}

/// Position of t in `list`.
size_t index_of(const std::vector<TensorId>& list, TensorId t) {
  return static_cast<size_t>(std::find(list.begin(), list.end(), t) - list.begin());
}

ir::GraphId graph_attr(const ir::Attributes& attrs, const char* name) {
  return static_cast<ir::GraphId>(attrs.get_int(name));
}

// ---- repeat ----

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
  return plan_body(graph, body, false).bytes + carried_bytes(graph, body, loop_of(ctx.attrs, body));
}

Kernel repeat_kernel(const KernelContext& ctx) {
  const ir::Subgraph& g = ctx.graph.subgraph(graph_attr(ctx.op.attrs, "graph"));
  const Loop loop = loop_of(ctx.op.attrs, g);
  BoundGraph body = bind_graph(ctx, g, false, ctx.scratch);
  std::vector<Copy> setup = body.constants, carry_out, carry_in, finish;
  std::vector<SliceCopy> slices, stacks;
  add_arguments(ctx, body, g, loop, setup, slices);
  add_carry(body, g, loop, ctx.scratch + body.plan.bytes, carry_out, carry_in);
  for (size_t j = 0; j < g.outputs.size(); ++j) {
    const size_t bytes = ctx.graph.tensor(g.outputs[j]).bytes();
    if (j >= loop.carried) {
      stacks.push_back({{body.at(g.outputs[j]), ctx.out[j], bytes}, false});
    } else {
      const TensorId last = loop.count == 0 ? g.inputs[loop.carried_input[j]] : g.outputs[j];
      finish.push_back({body.at(last), ctx.out[j], bytes});
    }
  }
  return [setup, carry_out, carry_in, slices, stacks, finish, count = loop.count, kernels = std::move(body.kernels)] {
    run_all(setup);
    for (int64_t n = 0; n < count; ++n) {
      if (n > 0) {  // last iteration's outputs become this one's carried inputs
        run_all(carry_out);
        run_all(carry_in);
      }
      run_all(slices, n);
      run_all(kernels);
      run_all(stacks, n);
    }
    run_all(finish);
  };
}

/// The float outputs of the body: the ones whose gradients repeat_grad takes.
std::vector<TensorId> float_outputs(const ir::Graph& graph, const ir::Subgraph& body) {
  std::vector<TensorId> out;
  for (TensorId t : body.outputs) {
    if (graph.tensor(t).dtype == ir::DType::Float32) out.push_back(t);
  }
  return out;
}

std::vector<TensorId> repeat_grad_rule(ir::GradContext& ctx) {
  const ir::Op op = ctx.op;  // a copy: the ops added below grow the op lists
  const ir::GraphId body_id = graph_attr(op.attrs, "graph");
  const ir::Subgraph body = ctx.graph.subgraph(body_id);
  const std::vector<TensorId> provided = float_outputs(ctx.graph, body);
  const ir::GraphId grad = ir::autodiff_graph(ctx.graph, body_id, provided);
  std::vector<TensorId> inputs = op.inputs;
  for (TensorId out : provided) {
    const size_t j = index_of(body.outputs, out);
    TensorId dy = ctx.output_grads[j];
    if (dy == ir::kNoTensor) {  // no gradient reaches this output: zeros
      ir::Attributes shape;
      const ir::Shape s = ctx.shape(op.outputs[j]);
      shape.set("shape", std::vector<int64_t>(s.begin(), s.end()));
      const float zero = 0.0f;
      std::vector<std::byte> bytes(sizeof zero);
      std::memcpy(bytes.data(), &zero, sizeof zero);
      dy = ctx.add("expand", {ctx.graph.add_constant(ir::DType::Float32, {}, std::move(bytes))}, std::move(shape));
    }
    inputs.push_back(dy);
  }
  ir::Attributes attrs;
  attrs.set("graph", int64_t{body_id});
  attrs.set("grad_graph", int64_t{grad});
  for (const char* name : {"count", "stacked"}) attrs.set(name, op.attrs.get_int(name));
  attrs.set("sliced", op.attrs.get_ints("sliced"));
  const std::vector<TensorId> grads = ctx.graph.add_op("repeat_grad", inputs, std::move(attrs));
  std::vector<TensorId> result(op.inputs.size(), ir::kNoTensor);
  const std::vector<ir::ExpectedConnection>& outs = ctx.graph.subgraph(grad).grad_of->expected_outputs;
  for (size_t k = 0; k < outs.size(); ++k) {
    const size_t i = index_of(body.inputs, outs[k].fwd_tensor);
    if (ctx.needs_grad[i]) result[i] = grads[k];
  }
  return result;
}

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

/// Offsets of repeat_grad's scratch: the body (every buffer its own), the gradient graph,
/// the stash of each iteration's carried inputs, staging for the carry, the gradients of
/// the carried outputs, and the sums of the other inputs' gradients.
struct GradLayout {
  size_t grad_graph = 0, stash = 0, staging = 0, carried = 0, sums = 0, bytes = 0;
  size_t carried_step = 0;       ///< bytes of one iteration's carried values
  std::vector<size_t> sum_offset;  ///< per body input, from `sums`
};

GradLayout grad_layout(const ir::Graph& graph, const ir::Subgraph& body, const ir::Subgraph& grad, const Loop& loop) {
  GradLayout l;
  l.carried_step = carried_bytes(graph, body, loop);
  l.grad_graph = plan_body(graph, body, true).bytes;
  l.stash = l.grad_graph + plan_body(graph, grad, false).bytes;
  l.staging = l.stash + l.carried_step * static_cast<size_t>(loop.count);
  l.carried = l.staging + l.carried_step;
  l.sums = l.carried + l.carried_step;
  size_t sums = 0;
  for (TensorId in : body.inputs) {
    l.sum_offset.push_back(sums);
    sums += memory::align_up(graph.tensor(in).bytes());
  }
  l.bytes = l.sums + sums;
  return l;
}

ir::InferResult infer_repeat_grad(const ir::InferContext& ctx) {
  const ir::Graph& graph = *ctx.graph;
  const ir::Subgraph& body = graph.subgraph(graph_attr(ctx.attrs, "graph"));
  const ir::Subgraph& grad = graph.subgraph(graph_attr(ctx.attrs, "grad_graph"));
  if (!grad.grad_of || grad.grad_of->forward != graph_attr(ctx.attrs, "graph")) {
    ctx.fail(ir::ErrorCode::InvalidArgument, "graph '" + grad.name + "' is not the gradient graph of '" + body.name + "'");
  }
  check_repeat_args(ctx, body);
  const size_t dys = float_outputs(graph, body).size();
  if (ctx.inputs.size() != body.inputs.size() + dys) {
    ctx.fail(ir::ErrorCode::InvalidArgument, "takes the " + std::to_string(body.inputs.size()) +
                                                 " arguments of the repeat and " + std::to_string(dys) +
                                                 " output gradients");
  }
  const Loop loop = loop_of(ctx.attrs, body);
  ir::InferResult result;
  for (const ir::ExpectedConnection& c : grad.grad_of->expected_outputs) {
    const ir::TensorInfo& in = graph.tensor(c.fwd_tensor);
    result.outputs.push_back({in.dtype, argument_shape(in, loop.sliced[index_of(body.inputs, c.fwd_tensor)], loop.count)});
  }
  return result;
}

/// repeat_grad's scratch: its layout (grad_layout).
size_t repeat_grad_scratch(const ir::InferContext& ctx) {
  const ir::Graph& graph = *ctx.graph;
  const ir::Subgraph& body = graph.subgraph(graph_attr(ctx.attrs, "graph"));
  const ir::Subgraph& grad = graph.subgraph(graph_attr(ctx.attrs, "grad_graph"));
  return grad_layout(graph, body, grad, loop_of(ctx.attrs, body)).bytes;
}

/// repeat_grad's kernel: the copies and kernels of its loops, bound once.
struct RepeatGrad {
  int64_t count = 0;
  std::vector<Copy> setup;                  ///< constants, whole arguments, the carried outputs' gradients
  std::vector<SliceCopy> slices;            ///< sliced arguments -> the body, per iteration
  std::vector<std::pair<std::byte*, size_t>> clear;  ///< sums to zero before the loops
  std::vector<Kernel> body, grad;
  std::vector<Copy> carry_out, carry_in;
  std::vector<Copy> stash;                  ///< carried inputs -> stash slot 0 (shifted per iteration)
  std::vector<Copy> feed;                   ///< the carried gradients and body buffers -> the gradient graph's inputs
  std::vector<SliceCopy> feed_slices;       ///< the stacked outputs' gradient slices -> the gradient graph's inputs
  std::vector<SliceCopy> sliced_grads;      ///< the sliced inputs' gradients -> their slice of the result
  std::vector<Copy> carried_back;           ///< carried inputs' gradients -> the carried gradients
  std::vector<std::pair<std::byte*, size_t>> no_gradient;  ///< carried gradients no output gives: zeroed
  struct Sum {
    const float* from;
    float* to;
    size_t count;
  };
  std::vector<Sum> sums;
  std::vector<Copy> finish;
  size_t step_bytes = 0;

  void operator()() const {
    for (const auto& [p, bytes] : clear) std::memset(p, 0, bytes);
    run_all(setup);
    for (int64_t n = 0; n < count; ++n) {
      if (n > 0) {
        run_all(carry_out);
        run_all(carry_in);
      }
      for (const Copy& c : stash) Copy{c.from, c.to + static_cast<size_t>(n) * step_bytes, c.bytes}();
      run_all(slices, n);
      run_all(body);
    }
    for (int64_t n = count; n-- > 0;) {
      for (const Copy& c : stash) Copy{c.to + static_cast<size_t>(n) * step_bytes, const_cast<std::byte*>(c.from), c.bytes}();
      run_all(slices, n);
      run_all(body);  // this iteration's activations
      run_all(feed);
      run_all(feed_slices, n);
      run_all(grad);
      run_all(sliced_grads, n);
      run_all(carried_back);
      for (const auto& [p, bytes] : no_gradient) std::memset(p, 0, bytes);
      for (const Sum& s : sums) {
        for (size_t i = 0; i < s.count; ++i) s.to[i] += s.from[i];
      }
    }
    run_all(finish);
  }
};

/// Binds the carried values: stash, staging, the carried gradients and the gradient graph's
/// outputs for carried inputs.
void bind_carried(RepeatGrad& k, const BoundGraph& body, const BoundGraph& grad, const ir::Subgraph& b,
                  const ir::Subgraph& g, const Loop& loop, const GradLayout& l, std::byte* scratch) {
  add_carry(body, b, loop, scratch + l.staging, k.carry_out, k.carry_in);
  const auto& outs = g.grad_of->expected_outputs;
  size_t offset = 0;
  for (size_t j = 0; j < loop.carried; ++j) {
    const size_t bytes = body.graph->tensor(b.outputs[j]).bytes();
    std::byte* carried = scratch + l.carried + offset;
    const TensorId input = b.inputs[loop.carried_input[j]];
    k.stash.push_back({body.at(input), scratch + l.stash + offset, bytes});
    size_t q = 0;
    while (q < outs.size() && outs[q].fwd_tensor != input) ++q;
    if (q < outs.size()) {
      k.carried_back.push_back({grad.at(g.outputs[q]), carried, bytes});
    } else {
      k.no_gradient.emplace_back(carried, bytes);
    }
    offset += memory::align_up(bytes);
  }
}

/// repeat_grad's kernel while its parts are bound: the body, the gradient graph, where things are.
struct GradBinding {
  const KernelContext& ctx;
  const ir::Subgraph& b;  ///< the body
  const ir::Subgraph& g;  ///< its gradient graph
  Loop loop;
  GradLayout l;
  BoundGraph body, grad;

  /// The gradient buffer of carried output j.
  std::byte* carried_at(size_t j) const {
    size_t offset = 0;
    for (size_t o = 0; o < j; ++o) offset += memory::align_up(ctx.graph.tensor(b.outputs[o]).bytes());
    return ctx.scratch + l.carried + offset;
  }
  /// Where the gradient of output j arrives: the op's argument after the body's arguments.
  const std::byte* output_grad(size_t j) const {
    const std::vector<TensorId> provided = float_outputs(ctx.graph, b);
    return ctx.in[b.inputs.size() + index_of(provided, b.outputs[j])];
  }
};

/// The gradient graph's inputs: the carried outputs' gradients (set once, then carried
/// back), a stacked output's gradient slice per iteration, the body's buffers.
void bind_grad_inputs(RepeatGrad& k, const GradBinding& x) {
  for (size_t j = 0; j < x.loop.carried; ++j) {
    if (x.ctx.graph.tensor(x.b.outputs[j]).dtype != ir::DType::Float32) continue;
    k.setup.push_back({x.output_grad(j), x.carried_at(j), x.ctx.graph.tensor(x.b.outputs[j]).bytes()});
  }
  const auto& ins = x.g.grad_of->expected_inputs;
  for (size_t q = 0; q < ins.size(); ++q) {
    const TensorId t = ins[q].fwd_tensor;
    const size_t bytes = x.ctx.graph.tensor(t).bytes();
    std::byte* to = x.grad.at(x.g.inputs[q]);
    if (ins[q].type != ir::ConnectionType::FwdGrad) {
      k.feed.push_back({x.body.at(t), to, bytes});
    } else if (const size_t j = index_of(x.b.outputs, t); j < x.loop.carried) {
      k.feed.push_back({x.carried_at(j), to, bytes});
    } else {
      k.feed_slices.push_back({{x.output_grad(j), to, bytes}, true});
    }
  }
}

/// The op's results: carried inputs' gradients from the carried buffers, sliced inputs'
/// gradients a slice per iteration, the others summed over the iterations.
void bind_grad_outputs(RepeatGrad& k, const GradBinding& x) {
  const auto& outs = x.g.grad_of->expected_outputs;
  for (size_t q = 0; q < outs.size(); ++q) {
    const size_t i = index_of(x.b.inputs, outs[q].fwd_tensor);
    const size_t bytes = x.ctx.graph.tensor(outs[q].fwd_tensor).bytes();
    if (const size_t j = x.loop.carried_slot(i); j < x.loop.carried) {
      k.finish.push_back({x.carried_at(j), x.ctx.out[q], bytes});
    } else if (x.loop.sliced[i]) {
      k.sliced_grads.push_back({{x.grad.at(x.g.outputs[q]), x.ctx.out[q], bytes}, false});
    } else {
      std::byte* sum = x.ctx.scratch + x.l.sums + x.l.sum_offset[i];
      k.clear.emplace_back(sum, bytes);
      k.sums.push_back({reinterpret_cast<const float*>(x.grad.at(x.g.outputs[q])), reinterpret_cast<float*>(sum),
                        bytes / sizeof(float)});
      k.finish.push_back({sum, x.ctx.out[q], bytes});
    }
  }
}

Kernel repeat_grad_kernel(const KernelContext& ctx) {
  const ir::Graph& graph = ctx.graph;
  const ir::Subgraph& b = graph.subgraph(graph_attr(ctx.op.attrs, "graph"));
  const ir::Subgraph& g = graph.subgraph(graph_attr(ctx.op.attrs, "grad_graph"));
  const Loop loop = loop_of(ctx.op.attrs, b);
  const GradLayout l = grad_layout(graph, b, g, loop);
  GradBinding x{ctx, b, g, loop, l, bind_graph(ctx, b, true, ctx.scratch), bind_graph(ctx, g, false, ctx.scratch + l.grad_graph)};
  RepeatGrad k;
  k.count = loop.count;
  k.step_bytes = l.carried_step;
  k.setup = x.body.constants;
  k.setup.insert(k.setup.end(), x.grad.constants.begin(), x.grad.constants.end());
  add_arguments(ctx, x.body, b, loop, k.setup, k.slices);
  bind_grad_inputs(k, x);
  bind_carried(k, x.body, x.grad, b, g, loop, l, ctx.scratch);
  bind_grad_outputs(k, x);
  k.body = std::move(x.body.kernels);
  k.grad = std::move(x.grad.kernels);
  return k;
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
