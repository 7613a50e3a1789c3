#include "core/compile/memory_kind.h"

namespace plexus::compile {

std::string_view memory_kind_name(MemoryKind kind) {
  switch (kind) {
    case MemoryKind::Variables:
      return "variables";
    case MemoryKind::Activations:
      return "activations";
    case MemoryKind::Gradients:
      return "gradients";
    case MemoryKind::OptimizerState:
      return "optimizer_state";
    case MemoryKind::StreamSlots:
      return "stream_slots";
    case MemoryKind::Scratch:
      return "scratch";
  }
  return "?";
}

std::array<MemoryKind, kNumMemoryKinds> memory_kinds() {
  return {MemoryKind::Variables,      MemoryKind::Activations, MemoryKind::Gradients,
          MemoryKind::OptimizerState, MemoryKind::StreamSlots, MemoryKind::Scratch};
}

std::set<ir::TensorId> optimizer_state_roots(const ir::Graph& graph) {
  std::set<ir::TensorId> roots;
  for (const ir::Op& op : graph.ops()) {
    for (int input : op.schema->optimizer_state_inputs) {
      if (static_cast<size_t>(input) < op.inputs.size()) roots.insert(graph.storage_root(op.inputs[static_cast<size_t>(input)]));
    }
  }
  return roots;
}

MemoryKind memory_kind(const ir::Graph& graph, ir::TensorId root, const std::set<ir::TensorId>& optimizer_state) {
  const ir::TensorInfo& t = graph.tensor(root);
  if (optimizer_state.count(root)) return MemoryKind::OptimizerState;
  switch (t.kind) {
    case ir::TensorKind::Variable:
    case ir::TensorKind::RemoteVariable:
    case ir::TensorKind::Constant:
      return MemoryKind::Variables;
    case ir::TensorKind::StreamInput:
      return MemoryKind::StreamSlots;
    case ir::TensorKind::OpOutput:
      return graph.op(t.producer).phase == ir::Phase::Forward ? MemoryKind::Activations : MemoryKind::Gradients;
    case ir::TensorKind::GraphInput:
      break;
  }
  return MemoryKind::Activations;
}

}  // namespace plexus::compile
