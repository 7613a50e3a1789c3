// Running a subgraph as an op (core/ops/graph/loop.h): the loop's kernel and its gradient's.
//
// The gradient runs the body forward again from the arguments keeping each iteration's
// carried inputs (count of them: the stash grows with count, as a loop's activations must),
// then, last iteration first, runs the body once more from that iteration's inputs (its
// activations) and the body's gradient graph (graph autodiff, core/ir/graph_autodiff.h) on
// them: the carried inputs' gradients feed the iteration before, a sliced input's gradient
// is that iteration's slice of its gradient, a stacked output's gradient slice feeds that
// iteration, the other inputs' gradients are summed over the iterations in that order (the
// unrolled loop's autodiff gives the same bits). A body that writes an input in place is
// differentiated as if the input kept its value.
#include "core/ops/graph/loop.h"

#include <algorithm>
#include <cstring>
#include <memory>

#include "core/ir/graph_autodiff.h"
#include "core/memory/memory_plan.h"
#include "core/ops/graph/bound_graph.h"

namespace plexus::ops {

using ir::TensorId;

size_t Loop::carried_slot(size_t i) const {
  return static_cast<size_t>(std::find(carried_input.begin(), carried_input.end(), i) - carried_input.begin());
}

Loop single_run(const ir::Subgraph& body) {
  Loop loop;
  loop.sliced.assign(body.inputs.size(), false);
  loop.count = 1;
  return loop;
}

ir::GraphId graph_attr(const ir::Attributes& attrs, const char* name) {
  return static_cast<ir::GraphId>(attrs.get_int(name));
}

size_t index_of(const std::vector<TensorId>& list, TensorId t) {
  return static_cast<size_t>(std::find(list.begin(), list.end(), t) - list.begin());
}

void check_loop_grad(const ir::InferContext& ctx, const ir::Subgraph& body, const ir::Subgraph& grad,
                     const std::string& what) {
  if (!grad.grad_of || grad.grad_of->forward != graph_attr(ctx.attrs, "graph")) {
    ctx.fail(ir::ErrorCode::InvalidArgument, "graph '" + grad.name + "' is not the gradient graph of '" + body.name + "'");
  }
  const size_t dys = float_outputs(*ctx.graph, body).size();
  if (ctx.inputs.size() != body.inputs.size() + dys) {
    ctx.fail(ir::ErrorCode::InvalidArgument, "takes the " + std::to_string(body.inputs.size()) + " arguments of the " +
                                                 what + " and " + std::to_string(dys) + " output gradients");
  }
}

namespace {

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

void run_slices(const std::vector<SliceCopy>& copies, int64_t n) {
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


}  // namespace

size_t loop_scratch(const ir::Graph& graph, const ir::Subgraph& body, const Loop& loop) {
  return plan_body(graph, body, false).bytes + carried_bytes(graph, body, loop);
}

Kernel loop_kernel(const KernelContext& ctx, ir::GraphId body_id, const Loop& loop) {
  const ir::Subgraph& g = ctx.graph.subgraph(body_id);
  const std::shared_ptr<const BoundGraph> body = bind_graph(ctx, body_id, false, ctx.scratch);
  std::vector<Copy> setup = body->constants, carry_out, carry_in, finish;
  std::vector<SliceCopy> slices, stacks;
  add_arguments(ctx, *body, g, loop, setup, slices);
  add_carry(*body, g, loop, ctx.scratch + body->plan.bytes, carry_out, carry_in);
  for (size_t j = 0; j < g.outputs.size(); ++j) {
    const size_t bytes = ctx.graph.tensor(g.outputs[j]).bytes();
    if (j >= loop.carried) {
      stacks.push_back({{body->at(g.outputs[j]), ctx.out[j], bytes}, false});
    } else {
      const TensorId last = loop.count == 0 ? g.inputs[loop.carried_input[j]] : g.outputs[j];
      finish.push_back({body->at(last), ctx.out[j], bytes});
    }
  }
  return [setup, carry_out, carry_in, slices, stacks, finish, count = loop.count, body] {
    run_all(setup);
    for (int64_t n = 0; n < count; ++n) {
      if (n > 0) {  // last iteration's outputs become this one's carried inputs
        run_all(carry_out);
        run_all(carry_in);
      }
      run_slices(slices, n);
      run_all(body->kernels);
      run_slices(stacks, n);
    }
    run_all(finish);
  };
}

std::vector<TensorId> float_outputs(const ir::Graph& graph, const ir::Subgraph& body) {
  std::vector<TensorId> out;
  for (TensorId t : body.outputs) {
    if (graph.tensor(t).dtype == ir::DType::Float32) out.push_back(t);
  }
  return out;
}

std::vector<TensorId> loop_grad_rule(ir::GradContext& ctx, const std::string& grad_type) {
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
  ir::Attributes attrs = op.attrs;
  attrs.set("grad_graph", int64_t{grad});
  const std::vector<TensorId> grads = ctx.graph.add_op(grad_type, inputs, std::move(attrs));
  std::vector<TensorId> result(op.inputs.size(), ir::kNoTensor);
  const std::vector<ir::ExpectedConnection>& outs = ctx.graph.subgraph(grad).grad_of->expected_outputs;
  for (size_t k = 0; k < outs.size(); ++k) {
    const size_t i = index_of(body.inputs, outs[k].fwd_tensor);
    if (ctx.needs_grad[i]) result[i] = grads[k];
  }
  return result;
}

namespace {

/// Offsets of the gradient's scratch: the body (every buffer its own), the gradient graph,
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


/// The gradient's kernel: the copies of its loops and the graphs it runs, bound once.
struct LoopGrad {
  int64_t count = 0;
  std::vector<Copy> setup;                  ///< constants, whole arguments, the carried outputs' gradients
  std::vector<SliceCopy> slices;            ///< sliced arguments -> the body, per iteration
  std::vector<std::pair<std::byte*, size_t>> clear;  ///< sums to zero before the loops
  std::shared_ptr<const BoundGraph> body, grad;
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
      run_slices(slices, n);
      run_all(body->kernels);
    }
    for (int64_t n = count; n-- > 0;) {
      for (const Copy& c : stash) Copy{c.to + static_cast<size_t>(n) * step_bytes, const_cast<std::byte*>(c.from), c.bytes}();
      run_slices(slices, n);
      run_all(body->kernels);  // this iteration's activations
      run_all(feed);
      run_slices(feed_slices, n);
      run_all(grad->kernels);
      run_slices(sliced_grads, n);
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
void bind_carried(LoopGrad& k, const BoundGraph& body, const BoundGraph& grad, const ir::Subgraph& b,
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

/// The gradient's kernel while its parts are bound: the body, the gradient graph, where things are.
struct GradBinding {
  const KernelContext& ctx;
  const ir::Subgraph& b;  ///< the body
  const ir::Subgraph& g;  ///< its gradient graph
  Loop loop;
  GradLayout l;
  std::shared_ptr<const BoundGraph> body, grad;

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
void bind_grad_inputs(LoopGrad& k, const GradBinding& x) {
  for (size_t j = 0; j < x.loop.carried; ++j) {
    if (x.ctx.graph.tensor(x.b.outputs[j]).dtype != ir::DType::Float32) continue;
    k.setup.push_back({x.output_grad(j), x.carried_at(j), x.ctx.graph.tensor(x.b.outputs[j]).bytes()});
  }
  const auto& ins = x.g.grad_of->expected_inputs;
  for (size_t q = 0; q < ins.size(); ++q) {
    const TensorId t = ins[q].fwd_tensor;
    const size_t bytes = x.ctx.graph.tensor(t).bytes();
    std::byte* to = x.grad->at(x.g.inputs[q]);
    if (ins[q].type != ir::ConnectionType::FwdGrad) {
      k.feed.push_back({x.body->at(t), to, bytes});
    } else if (const size_t j = index_of(x.b.outputs, t); j < x.loop.carried) {
      k.feed.push_back({x.carried_at(j), to, bytes});
    } else {
      k.feed_slices.push_back({{x.output_grad(j), to, bytes}, true});
    }
  }
}

/// The op's results: carried inputs' gradients from the carried buffers, sliced inputs'
/// gradients a slice per iteration, the others summed over the iterations.
void bind_grad_outputs(LoopGrad& k, const GradBinding& x) {
  const auto& outs = x.g.grad_of->expected_outputs;
  for (size_t q = 0; q < outs.size(); ++q) {
    const size_t i = index_of(x.b.inputs, outs[q].fwd_tensor);
    const size_t bytes = x.ctx.graph.tensor(outs[q].fwd_tensor).bytes();
    if (const size_t j = x.loop.carried_slot(i); j < x.loop.carried) {
      k.finish.push_back({x.carried_at(j), x.ctx.out[q], bytes});
    } else if (x.loop.sliced[i]) {
      k.sliced_grads.push_back({{x.grad->at(x.g.outputs[q]), x.ctx.out[q], bytes}, false});
    } else if (x.loop.count == 1) {  // nothing to sum (a call): the gradient itself, -0.0 kept
      k.finish.push_back({x.grad->at(x.g.outputs[q]), x.ctx.out[q], bytes});
    } else {
      std::byte* sum = x.ctx.scratch + x.l.sums + x.l.sum_offset[i];
      k.clear.emplace_back(sum, bytes);
      k.sums.push_back({reinterpret_cast<const float*>(x.grad->at(x.g.outputs[q])), reinterpret_cast<float*>(sum),
                        bytes / sizeof(float)});
      k.finish.push_back({sum, x.ctx.out[q], bytes});
    }
  }
}

}  // namespace

size_t loop_grad_scratch(const ir::Graph& graph, const ir::Subgraph& body, const ir::Subgraph& grad,
                         const Loop& loop) {
  return grad_layout(graph, body, grad, loop).bytes;
}

Kernel loop_grad_kernel(const KernelContext& ctx, ir::GraphId body_id, ir::GraphId grad_id, const Loop& loop) {
  const ir::Graph& graph = ctx.graph;
  const ir::Subgraph& b = graph.subgraph(body_id);
  const ir::Subgraph& g = graph.subgraph(grad_id);
  const GradLayout l = grad_layout(graph, b, g, loop);
  GradBinding x{ctx, b, g, loop, l, bind_graph(ctx, body_id, true, ctx.scratch),
                bind_graph(ctx, grad_id, false, ctx.scratch + l.grad_graph)};
  LoopGrad k;
  k.count = loop.count;
  k.step_bytes = l.carried_step;
  k.setup = x.body->constants;
  k.setup.insert(k.setup.end(), x.grad->constants.begin(), x.grad->constants.end());
  add_arguments(ctx, *x.body, b, loop, k.setup, k.slices);
  bind_grad_inputs(k, x);
  bind_carried(k, *x.body, *x.grad, b, g, loop, l, ctx.scratch);
  bind_grad_outputs(k, x);
  k.body = x.body;
  k.grad = x.grad;
  return k;
}

}  // namespace plexus::ops
