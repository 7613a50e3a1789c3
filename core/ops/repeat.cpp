// repeat(args...; graph, count) (PopXL ops.repeat, user guide "Graphs"): runs subgraph
// `graph` `count` times. Its first k inputs are loop-carried, k being the number of its
// outputs: output j of one iteration is input j of the next, of the same type; the other
// inputs are the same every iteration. The op's outputs are the last iteration's outputs
// (with count 0, the carried arguments). Not unrolled: the body's kernels are bound once,
// to buffers of a plan of its own (core/memory/memory_plan.h) inside the op's scratch, so
// compile time and planned bytes do not depend on count. Inputs are passed by value.
// No gradient yet: autodiff through a repeat is refused, naming it.
#include <algorithm>
#include <cstring>
#include <map>

#include "core/ir/graph.h"
#include "core/memory/memory_plan.h"

namespace plexus::ops {

namespace {

using ir::TensorId;

/// Where the body's buffers lie in the op's scratch: one per storage root, by the body's
/// liveness (position 0: the arguments are copied in; op k runs at k + 1; the outputs are
/// read at the last position), then the body ops' shared scratch, then a staging area for
/// the carried values.
struct BodyPlan {
  std::vector<ir::OpId> ops;
  std::map<TensorId, size_t> offset;  ///< storage root -> offset
  size_t op_scratch_offset = 0;
  size_t staging_offset = 0;
  size_t bytes = 0;
};

const ir::Subgraph& body_of(const ir::Graph& graph, const ir::Attributes& attrs) {
  return graph.subgraph(static_cast<ir::GraphId>(attrs.get_int("graph")));
}

BodyPlan plan_body(const ir::Graph& graph, const ir::Subgraph& body) {
  BodyPlan plan;
  plan.ops = body.ops;
  const auto end = static_cast<int64_t>(body.ops.size()) + 1;
  std::map<TensorId, memory::BufferRequest> requests;
  const auto touch = [&](TensorId t, int64_t position) {
    const TensorId root = graph.storage_root(t);
    const ir::TensorInfo& info = graph.tensor(root);
    auto [it, fresh] = requests.try_emplace(root, memory::BufferRequest{info.bytes(), position, position, false});
    it->second.persistent = info.kind == ir::TensorKind::GraphInput || info.kind == ir::TensorKind::Constant;
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
  size_t carried = 0;
  for (TensorId out : body.outputs) {
    touch(out, end);
    carried += memory::align_up(graph.tensor(out).bytes());
  }
  std::vector<memory::BufferRequest> list;
  for (const auto& [root, request] : requests) list.push_back(request);
  const memory::MemoryPlan mp = memory::plan_memory(list, end + 1);
  size_t i = 0;
  for (const auto& [root, request] : requests) plan.offset[root] = mp.offsets[i++];
  plan.op_scratch_offset = memory::align_up(mp.arena_bytes);
  plan.staging_offset = plan.op_scratch_offset + memory::align_up(op_scratch);
  plan.bytes = plan.staging_offset + carried;
  return plan;
}

ir::InferResult infer_repeat(const ir::InferContext& ctx) {
  const ir::Graph& graph = *ctx.graph;
  const auto id = static_cast<ir::GraphId>(ctx.attrs.get_int("graph"));
  const ir::Subgraph& body = graph.subgraph(id);
  const ir::GraphId caller = graph.current_graph();
  if (id == caller || graph.calls(id, caller)) {
    ctx.fail(ir::ErrorCode::InvalidArgument, "graph '" + graph.graph_name(caller) + "' cannot repeat graph '" +
                                                 body.name + "': it would run itself (graphs cannot recurse)");
  }
  if (ctx.attrs.get_int("count") < 0) {
    ctx.fail(ir::ErrorCode::InvalidArgument, "count " + std::to_string(ctx.attrs.get_int("count")) + " must be >= 0");
  }
  if (ctx.inputs.size() != body.inputs.size() || body.outputs.size() > body.inputs.size()) {
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
  ir::InferResult result;
  for (size_t j = 0; j < body.outputs.size(); ++j) {
    const ir::TensorInfo& out = graph.tensor(body.outputs[j]);
    const ir::TensorInfo& carried = graph.tensor(body.inputs[j]);
    if (out.dtype != carried.dtype || out.shape != carried.shape) {
      ctx.fail(ir::ErrorCode::ShapeMismatch, "output " + std::to_string(j) + " of graph '" + body.name + "' is " +
                                                 out.type_string() + ", but it feeds input '" + carried.name +
                                                 "', which is " + carried.type_string());
    }
    result.outputs.push_back({out.dtype, out.shape});
  }
  result.scratch_bytes = plan_body(graph, body).bytes;
  return result;
}

/// The body's kernels, bound once to the plan's buffers in `ctx.scratch`.
std::vector<ir::Kernel> bind_body(const ir::KernelContext& ctx, const BodyPlan& plan) {
  const auto at = [&](TensorId t) { return ctx.scratch + plan.offset.at(ctx.graph.storage_root(t)); };
  std::vector<ir::Kernel> kernels;
  for (ir::OpId id : plan.ops) {
    const ir::Op& op = ctx.graph.op(id);
    ir::KernelContext inner{.graph = ctx.graph,
                            .op = op,
                            .scratch = op.scratch_bytes > 0 ? ctx.scratch + plan.op_scratch_offset : nullptr,
                            .max_threads = ctx.max_threads,
                            .replica = ctx.replica,
                            .replication_factor = ctx.replication_factor,
                            .micro_batch_counter = ctx.micro_batch_counter,
                            .comm = ctx.comm,
                            .remote = ctx.remote,
                            .notes = ctx.notes};
    for (TensorId t : op.inputs) {
      inner.inputs.push_back(&ctx.graph.tensor(t));
      inner.in.push_back(at(t));
    }
    for (TensorId t : op.outputs) {
      inner.outputs.push_back(&ctx.graph.tensor(t));
      inner.out.push_back(at(t));
    }
    kernels.push_back(op.def->kernel(inner));
  }
  return kernels;
}

/// A copy of `bytes` bytes from one buffer to another.
struct Copy {
  const std::byte* from;
  std::byte* to;
  size_t bytes;
  void operator()() const { std::memcpy(to, from, bytes); }
};

ir::Kernel repeat_kernel(const ir::KernelContext& ctx) {
  const ir::Subgraph& body = body_of(ctx.graph, ctx.op.attrs);
  const BodyPlan plan = plan_body(ctx.graph, body);
  const auto at = [&](TensorId t) { return ctx.scratch + plan.offset.at(ctx.graph.storage_root(t)); };
  std::vector<Copy> setup, carry_out, carry_in, finish;
  for (const auto& [root, offset] : plan.offset) {
    const ir::TensorInfo& t = ctx.graph.tensor(root);
    if (t.kind == ir::TensorKind::Constant) setup.push_back({t.data.data(), ctx.scratch + offset, t.data.size()});
  }
  for (size_t i = 0; i < body.inputs.size(); ++i) setup.push_back({ctx.in[i], at(body.inputs[i]), ctx.inputs[i]->bytes()});
  const int64_t count = ctx.op.attrs.get_int("count");
  size_t staged = plan.staging_offset;
  for (size_t j = 0; j < body.outputs.size(); ++j) {
    const size_t bytes = ctx.outputs[j]->bytes();
    std::byte* stage = ctx.scratch + staged;
    staged += memory::align_up(bytes);
    carry_out.push_back({at(body.outputs[j]), stage, bytes});
    carry_in.push_back({stage, at(body.inputs[j]), bytes});
    finish.push_back({count == 0 ? at(body.inputs[j]) : at(body.outputs[j]), ctx.out[j], bytes});
  }
  return [setup, carry_out, carry_in, finish, count, kernels = bind_body(ctx, plan)] {
    for (const Copy& c : setup) c();
    for (int64_t n = 0; n < count; ++n) {
      if (n > 0) {  // last iteration's outputs become this one's carried inputs (staged: they may overlap)
        for (const Copy& c : carry_out) c();
        for (const Copy& c : carry_in) c();
      }
      for (const ir::Kernel& k : kernels) k();
    }
    for (const Copy& c : finish) c();
  };
}

ir::OpDef repeat_def() {
  ir::OpDef d;
  d.name = "repeat";
  d.min_inputs = 0;
  d.max_inputs = 1u << 16;
  d.attrs = {{"graph", ir::AttrKind::Int, std::nullopt}, {"count", ir::AttrKind::Int, std::nullopt}};
  d.infer = infer_repeat;
  d.kernel = repeat_kernel;
  d.communicates = true;  // the body may hold collectives
  return d;
}

const ir::OpRegistration repeat_op{repeat_def()};

}  // namespace

}  // namespace plexus::ops
