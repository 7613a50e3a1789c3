#include "core/ops/graph/bound_graph.h"

#include <algorithm>
#include <cstring>

#include "core/memory/memory_plan.h"
#include "core/ops/kernel_def.h"

namespace plexus::ops {

void Copy::operator()() const { std::memcpy(to, from, bytes); }

void run_all(const std::vector<Copy>& copies) {
  for (const Copy& c : copies) c();
}

void run_all(const std::vector<Kernel>& kernels) {
  for (const Kernel& k : kernels) k();
}

BodyPlan plan_body(const ir::Graph& graph, const ir::Subgraph& body, bool keep_all) {
  BodyPlan plan;
  plan.ops = body.ops;
  const auto end = static_cast<int64_t>(body.ops.size()) + 1;
  std::map<ir::TensorId, memory::BufferRequest> requests;
  const auto touch = [&](ir::TensorId t, int64_t position) {
    const ir::TensorId root = graph.storage_root(t);
    const ir::TensorInfo& info = graph.tensor(root);
    auto [it, fresh] = requests.try_emplace(root, memory::BufferRequest{info.bytes(), position, position, false});
    it->second.persistent =
        keep_all || info.kind == ir::TensorKind::GraphInput || info.kind == ir::TensorKind::Constant;
    it->second.first = std::min(it->second.first, position);
    it->second.last = std::max(it->second.last, position);
  };
  for (ir::TensorId in : body.inputs) touch(in, 0);
  for (size_t k = 0; k < body.ops.size(); ++k) {
    const ir::Op& op = graph.op(body.ops[k]);
    for (ir::TensorId in : op.inputs) touch(in, static_cast<int64_t>(k) + 1);
    for (ir::TensorId out : op.outputs) touch(out, static_cast<int64_t>(k) + 1);
    plan.op_scratch.push_back(scratch_bytes(graph, op));
  }
  for (ir::TensorId out : body.outputs) touch(out, end);
  std::vector<memory::BufferRequest> list;
  for (const auto& [root, request] : requests) list.push_back(request);
  const memory::MemoryPlan mp = memory::plan_memory(list, end + 1);
  size_t i = 0;
  for (const auto& [root, request] : requests) plan.offset[root] = mp.offsets[i++];
  plan.op_scratch_offset = memory::align_up(mp.arena_bytes);
  const size_t largest = plan.op_scratch.empty() ? 0 : *std::max_element(plan.op_scratch.begin(), plan.op_scratch.end());
  plan.bytes = plan.op_scratch_offset + memory::align_up(largest);
  return plan;
}

namespace {

/// The context op k of the bound graph is bound with: the caller's device, replica and
/// collectives, the op's buffers in the plan.
KernelContext inner_context(const KernelContext& ctx, const BoundGraph& b, size_t k) {
  const ir::Op& op = ctx.graph.op(b.plan.ops[k]);
  KernelContext inner{.graph = ctx.graph,
                      .op = op,
                      .scratch = b.plan.op_scratch[k] > 0 ? b.base + b.plan.op_scratch_offset : nullptr,
                      .max_threads = ctx.max_threads,
                      .replica = ctx.replica,
                      .replication_factor = ctx.replication_factor,
                      .micro_batch_counter = ctx.micro_batch_counter,
                      .comm = ctx.comm,
                      .remote = ctx.remote,
                      .notes = ctx.notes,
                      .graph_bindings = ctx.graph_bindings};
  for (ir::TensorId t : op.inputs) {
    inner.inputs.push_back(&ctx.graph.tensor(t));
    inner.in.push_back(b.at(t));
  }
  for (ir::TensorId t : op.outputs) {
    inner.outputs.push_back(&ctx.graph.tensor(t));
    inner.out.push_back(b.at(t));
  }
  return inner;
}

std::shared_ptr<const BoundGraph> bind_new(const KernelContext& ctx, ir::GraphId g, bool keep_all, std::byte* base) {
  auto b = std::make_shared<BoundGraph>();
  b->graph = &ctx.graph;
  b->plan = plan_body(ctx.graph, ctx.graph.subgraph(g), keep_all);
  b->base = base;
  for (const auto& [root, offset] : b->plan.offset) {
    const ir::TensorInfo& t = ctx.graph.tensor(root);
    if (t.kind == ir::TensorKind::Constant) b->constants.push_back({t.data.data(), base + offset, t.data.size()});
  }
  for (size_t k = 0; k < b->plan.ops.size(); ++k) {
    if (Kernel kernel = kernel_def(ctx.graph.op(b->plan.ops[k])).kernel(inner_context(ctx, *b, k))) {
      b->kernels.push_back(std::move(kernel));  // empty: nothing to do (a view)
    }
  }
  return b;
}

}  // namespace

std::shared_ptr<const BoundGraph> GraphBindings::bind(const KernelContext& ctx, ir::GraphId g, bool keep_all,
                                                      std::byte* base) {
  const auto key = std::make_tuple(g, keep_all, base);
  auto it = bound_.find(key);
  if (it == bound_.end()) it = bound_.emplace(key, bind_new(ctx, g, keep_all, base)).first;
  return it->second;
}

std::shared_ptr<const BoundGraph> bind_graph(const KernelContext& ctx, ir::GraphId g, bool keep_all, std::byte* base) {
  return ctx.graph_bindings ? ctx.graph_bindings->bind(ctx, g, keep_all, base) : bind_new(ctx, g, keep_all, base);
}

}  // namespace plexus::ops
