// Which relus run as their producer's epilogue, and the rewrite that fuses them
// (relu_fusion.h).
#include "core/compile/relu_fusion.h"

#include <algorithm>

#include "core/ir/op_schema.h"

namespace plexus::compile {

namespace {

/// The fused op running `producer` with a relu epilogue, or nullptr when none is registered.
const ir::OpSchema* fused_def(const ir::Op& producer) {
  return ir::OpSchemaRegistry::instance().find(producer.schema->name + "_relu");
}

/// Whether relu op `relu` fuses into the producer of its input; its producer when it does.
bool fuses(const ir::Graph& g, const std::vector<int32_t>& op_stage, ir::OpId relu, ir::OpId& producer) {
  const ir::Op& r = g.op(relu);
  const ir::TensorId t = r.inputs[0];
  producer = g.tensor(t).producer;
  if (producer < 0) return false;
  const ir::Op& p = g.op(producer);
  const auto stage = [&op_stage](ir::OpId o) { return op_stage[static_cast<size_t>(o)]; };
  return fused_def(p) != nullptr && p.outputs.size() == 1 && stage(producer) == stage(relu) && p.phase == r.phase &&
         g.storage_root(t) == t && g.consumers(t) == std::vector<ir::OpId>{relu} && !g.streamed(t);
}

}  // namespace

std::vector<ReluFusion> plan_relu_fusions(const ir::Graph& graph, const std::vector<int32_t>& op_stage) {
  std::vector<ReluFusion> fusions;
  for (size_t o = 0; o < graph.num_ops(); ++o) {
    const auto relu = static_cast<ir::OpId>(o);
    ir::OpId producer = -1;
    if (graph.op(relu).schema->name == "relu" && fuses(graph, op_stage, relu, producer)) fusions.push_back({producer, relu});
  }
  return fusions;
}

size_t fuse_relu_epilogues(ir::Graph& graph, const std::vector<int32_t>& op_stage) {
  size_t made = 0;
  for (const ReluFusion& f : plan_relu_fusions(graph, op_stage)) {
    graph.rewrite_op(f.producer, fused_def(graph.op(f.producer))->name);
    graph.rewrite_op(f.relu, "alias");
    ++made;
  }
  return made;
}

}  // namespace plexus::compile
