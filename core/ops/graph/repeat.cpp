// repeat(args...; graph, count) (PopXL ops.repeat, user guide "Graphs"): runs subgraph
// `graph` `count` times. Its first k inputs are loop-carried, k being the number of its
// outputs: output j of one iteration is input j of the next, of the same type; the other
// inputs are the same every iteration. The op's outputs are the last iteration's outputs
// (with count 0, the carried arguments). Not unrolled: the body's kernels are bound once,
// to buffers of a plan of its own (core/memory/memory_plan.h) inside the op's scratch, so
// compile time and planned bytes do not depend on count. Inputs are passed by value.
//
// Its gradient, repeat_grad(args..., dys...; graph, grad_graph, count), runs the body
// forward again from the arguments keeping each iteration's carried inputs (count of them:
// the stash grows with count, as a loop's activations must), then, last iteration first,
// runs the body once more from that iteration's inputs (its activations) and the body's
// gradient graph (graph autodiff, core/ir/graph_autodiff.h) on them: the carried inputs'
// gradients feed the iteration before, the other inputs' gradients are summed over the
// iterations in that order (the unrolled loop's autodiff gives the same bits). A body that
// writes an input in place is differentiated as if the input kept its value.
#include <algorithm>
#include <cstring>
#include <map>

#include "core/ir/graph.h"
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
    op_scratch = std::max(op_scratch, op.scratch_bytes);
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

void run_all(const std::vector<ir::Kernel>& kernels) {
  for (const ir::Kernel& k : kernels) k();
}

/// A graph's kernels bound once to the buffers of its plan at `base`, and the copies that
/// put its constants in place before a run (the base is op scratch, which other ops share).
struct BoundGraph {
  const ir::Graph* graph = nullptr;
  BodyPlan plan;
  std::byte* base = nullptr;
  std::vector<ir::Kernel> kernels;
  std::vector<Copy> constants;

  std::byte* at(TensorId t) const { return base + plan.offset.at(graph->storage_root(t)); }
};

BoundGraph bind_graph(const ir::KernelContext& ctx, const ir::Subgraph& g, bool keep_all, std::byte* base) {
  BoundGraph b{&ctx.graph, plan_body(ctx.graph, g, keep_all), base, {}, {}};
  for (const auto& [root, offset] : b.plan.offset) {
    const ir::TensorInfo& t = ctx.graph.tensor(root);
    if (t.kind == ir::TensorKind::Constant) b.constants.push_back({t.data.data(), base + offset, t.data.size()});
  }
  for (ir::OpId id : b.plan.ops) {
    const ir::Op& op = ctx.graph.op(id);
    ir::KernelContext inner{.graph = ctx.graph,
                            .op = op,
                            .scratch = op.scratch_bytes > 0 ? base + b.plan.op_scratch_offset : nullptr,
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
    if (ir::Kernel kernel = op.def->kernel(inner)) b.kernels.push_back(std::move(kernel));  // empty: nothing to do (a view)
  }
  return b;
}

/// Bytes of the carried values (one aligned buffer each).
size_t carried_bytes(const ir::Graph& graph, const ir::Subgraph& body) {
  size_t bytes = 0;
  for (TensorId out : body.outputs) bytes += memory::align_up(graph.tensor(out).bytes());
  return bytes;
}

/// Copies that move the body's outputs into its carried inputs through `staging` (an
/// output may live in another carried input's buffer).
void add_carry(const BoundGraph& body, const ir::Subgraph& g, std::byte* staging, std::vector<Copy>& out,
               std::vector<Copy>& in) {
  for (size_t j = 0; j < g.outputs.size(); ++j) {
    const size_t bytes = body.graph->tensor(g.outputs[j]).bytes();
    out.push_back({body.at(g.outputs[j]), staging, bytes});
    in.push_back({staging, body.at(g.inputs[j]), bytes});
    staging += memory::align_up(bytes);
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

void check_repeat_args(const ir::InferContext& ctx, const ir::Subgraph& body) {
  const ir::Graph& graph = *ctx.graph;
  if (ctx.attrs.get_int("count") < 0) {
    ctx.fail(ir::ErrorCode::InvalidArgument, "count " + std::to_string(ctx.attrs.get_int("count")) + " must be >= 0");
  }
  if (ctx.inputs.size() < body.inputs.size() || body.outputs.size() > body.inputs.size()) {
    ctx.fail(ir::ErrorCode::InvalidArgument, "graph '" + body.name + "' has " + std::to_string(body.inputs.size()) +
                                                 " inputs and " + std::to_string(body.outputs.size()) +
                                                 " outputs (at most one per input: the loop-carried ones first)");
  }
  for (size_t i = 0; i < body.inputs.size(); ++i) {
    const ir::TensorInfo& in = graph.tensor(body.inputs[i]);
    if (in.dtype != ctx.dtype(i) || in.shape != ctx.shape(i)) {
      ctx.fail(ir::ErrorCode::ShapeMismatch, "argument " + std::to_string(i) + " for input '" + in.name + "' of graph '" +
                                                 body.name + "', which is " + in.type_string());
    }
  }
  for (size_t j = 0; j < body.outputs.size(); ++j) {
    const ir::TensorInfo& out = graph.tensor(body.outputs[j]);
    const ir::TensorInfo& carried = graph.tensor(body.inputs[j]);
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
  ir::InferResult result;
  for (TensorId out : body.outputs) result.outputs.push_back({graph.tensor(out).dtype, graph.tensor(out).shape});
  result.scratch_bytes = plan_body(graph, body, false).bytes + carried_bytes(graph, body);
  return result;
}

ir::Kernel repeat_kernel(const ir::KernelContext& ctx) {
  const ir::Subgraph& g = ctx.graph.subgraph(graph_attr(ctx.op.attrs, "graph"));
  BoundGraph body = bind_graph(ctx, g, false, ctx.scratch);
  std::vector<Copy> setup = body.constants, carry_out, carry_in, finish;
  for (size_t i = 0; i < g.inputs.size(); ++i) setup.push_back({ctx.in[i], body.at(g.inputs[i]), ctx.inputs[i]->bytes()});
  add_carry(body, g, ctx.scratch + body.plan.bytes, carry_out, carry_in);
  const int64_t count = ctx.op.attrs.get_int("count");
  for (size_t j = 0; j < g.outputs.size(); ++j) {
    finish.push_back({count == 0 ? body.at(g.inputs[j]) : body.at(g.outputs[j]), ctx.out[j], ctx.outputs[j]->bytes()});
  }
  return [setup, carry_out, carry_in, finish, count, kernels = std::move(body.kernels)] {
    run_all(setup);
    for (int64_t n = 0; n < count; ++n) {
      if (n > 0) {  // last iteration's outputs become this one's carried inputs
        run_all(carry_out);
        run_all(carry_in);
      }
      run_all(kernels);
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
  attrs.set("count", op.attrs.get_int("count"));
  const std::vector<TensorId> grads = ctx.graph.add_op("repeat_grad", inputs, std::move(attrs));
  std::vector<TensorId> result(op.inputs.size(), ir::kNoTensor);
  const std::vector<ir::ExpectedConnection>& outs = ctx.graph.subgraph(grad).grad_of->expected_outputs;
  for (size_t k = 0; k < outs.size(); ++k) {
    const size_t i = index_of(body.inputs, outs[k].fwd_tensor);
    if (ctx.needs_grad[i]) result[i] = grads[k];
  }
  return result;
}

ir::OpDef repeat_def() {
  ir::OpDef d;
  d.name = "repeat";
  d.min_inputs = 0;
  d.max_inputs = 1u << 16;
  d.attrs = {{"graph", ir::AttrKind::Int, std::nullopt}, {"count", ir::AttrKind::Int, std::nullopt}};
  d.infer = infer_repeat;
  d.kernel = repeat_kernel;
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

GradLayout grad_layout(const ir::Graph& graph, const ir::Subgraph& body, const ir::Subgraph& grad, int64_t count) {
  GradLayout l;
  l.carried_step = carried_bytes(graph, body);
  l.grad_graph = plan_body(graph, body, true).bytes;
  l.stash = l.grad_graph + plan_body(graph, grad, false).bytes;
  l.staging = l.stash + l.carried_step * static_cast<size_t>(count);
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
  ir::InferResult result;
  for (const ir::ExpectedConnection& c : grad.grad_of->expected_outputs) {
    result.outputs.push_back({graph.tensor(c.fwd_tensor).dtype, graph.tensor(c.fwd_tensor).shape});
  }
  result.scratch_bytes = grad_layout(graph, body, grad, ctx.attrs.get_int("count")).bytes;
  return result;
}

/// repeat_grad's kernel: the copies and kernels of its loops, bound once.
struct RepeatGrad {
  int64_t count = 0;
  std::vector<Copy> setup;                  ///< constants, arguments, the outputs' gradients
  std::vector<std::pair<std::byte*, size_t>> clear;  ///< sums to zero before the loops
  std::vector<ir::Kernel> body, grad;
  std::vector<Copy> carry_out, carry_in;
  std::vector<Copy> stash;                  ///< carried inputs -> stash slot 0 (shifted per iteration)
  std::vector<Copy> feed;                   ///< the carried gradients and body buffers -> the gradient graph's inputs
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
      run_all(body);
    }
    for (int64_t n = count; n-- > 0;) {
      for (const Copy& c : stash) Copy{c.to + static_cast<size_t>(n) * step_bytes, const_cast<std::byte*>(c.from), c.bytes}();
      run_all(body);  // this iteration's activations
      run_all(feed);
      run_all(grad);
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
                  const ir::Subgraph& g, const GradLayout& l, std::byte* scratch) {
  add_carry(body, b, scratch + l.staging, k.carry_out, k.carry_in);
  const auto& outs = g.grad_of->expected_outputs;
  size_t offset = 0;
  for (size_t j = 0; j < b.outputs.size(); ++j) {
    const size_t bytes = body.graph->tensor(b.outputs[j]).bytes();
    std::byte* carried = scratch + l.carried + offset;
    k.stash.push_back({body.at(b.inputs[j]), scratch + l.stash + offset, bytes});
    size_t q = 0;
    while (q < outs.size() && outs[q].fwd_tensor != b.inputs[j]) ++q;
    if (q < outs.size()) {
      k.carried_back.push_back({grad.at(g.outputs[q]), carried, bytes});
    } else {
      k.no_gradient.emplace_back(carried, bytes);
    }
    offset += memory::align_up(bytes);
  }
}

ir::Kernel repeat_grad_kernel(const ir::KernelContext& ctx) {
  const ir::Graph& graph = ctx.graph;
  const ir::Subgraph& b = graph.subgraph(graph_attr(ctx.op.attrs, "graph"));
  const ir::Subgraph& g = graph.subgraph(graph_attr(ctx.op.attrs, "grad_graph"));
  RepeatGrad k;
  k.count = ctx.op.attrs.get_int("count");
  const GradLayout l = grad_layout(graph, b, g, k.count);
  k.step_bytes = l.carried_step;
  BoundGraph body = bind_graph(ctx, b, true, ctx.scratch);
  BoundGraph grad = bind_graph(ctx, g, false, ctx.scratch + l.grad_graph);
  k.setup = body.constants;
  k.setup.insert(k.setup.end(), grad.constants.begin(), grad.constants.end());
  for (size_t i = 0; i < b.inputs.size(); ++i) k.setup.push_back({ctx.in[i], body.at(b.inputs[i]), ctx.inputs[i]->bytes()});
  const std::vector<TensorId> provided = float_outputs(graph, b);
  const auto carried_at = [&](size_t j) {  // the gradient buffer of body output j
    size_t offset = 0;
    for (size_t o = 0; o < j; ++o) offset += memory::align_up(graph.tensor(b.outputs[o]).bytes());
    return ctx.scratch + l.carried + offset;
  };
  for (size_t q = 0; q < provided.size(); ++q) {
    const size_t j = index_of(b.outputs, provided[q]);
    k.setup.push_back({ctx.in[b.inputs.size() + q], carried_at(j), graph.tensor(provided[q]).bytes()});
  }
  bind_carried(k, body, grad, b, g, l, ctx.scratch);
  const auto& ins = g.grad_of->expected_inputs;
  for (size_t q = 0; q < ins.size(); ++q) {
    const TensorId t = ins[q].fwd_tensor;
    const std::byte* from = ins[q].type == ir::ConnectionType::FwdGrad ? carried_at(index_of(b.outputs, t)) : body.at(t);
    k.feed.push_back({from, grad.at(g.inputs[q]), graph.tensor(t).bytes()});
  }
  const auto& outs = g.grad_of->expected_outputs;
  for (size_t q = 0; q < outs.size(); ++q) {
    const size_t i = index_of(b.inputs, outs[q].fwd_tensor);
    const size_t bytes = graph.tensor(outs[q].fwd_tensor).bytes();
    if (i < b.outputs.size()) {
      k.finish.push_back({carried_at(i), ctx.out[q], bytes});
    } else {
      std::byte* sum = ctx.scratch + l.sums + l.sum_offset[i];
      k.clear.emplace_back(sum, bytes);
      k.sums.push_back({reinterpret_cast<const float*>(grad.at(g.outputs[q])), reinterpret_cast<float*>(sum),
                        bytes / sizeof(float)});
      k.finish.push_back({sum, ctx.out[q], bytes});
    }
  }
  k.body = std::move(body.kernels);
  k.grad = std::move(grad.kernels);
  return k;
}

ir::OpDef repeat_grad_def() {
  ir::OpDef d;
  d.name = "repeat_grad";
  d.min_inputs = 0;
  d.max_inputs = 1u << 17;
  d.attrs = {{"graph", ir::AttrKind::Int, std::nullopt},
             {"grad_graph", ir::AttrKind::Int, std::nullopt},
             {"count", ir::AttrKind::Int, std::nullopt}};
  d.infer = infer_repeat_grad;
  d.kernel = repeat_grad_kernel;
  d.communicates = true;
  return d;
}

const ir::OpRegistration repeat_op{repeat_def()};
const ir::OpRegistration repeat_grad_op{repeat_grad_def()};

}  // namespace

}  // namespace plexus::ops
