#include "core/compile/memory_timeline.h"

#include <map>
#include <numeric>
#include <utility>

namespace plexus::compile {

namespace {

using Bytes = std::array<size_t, kNumMemoryKinds>;

std::string quoted(const ir::Graph& g, ir::TensorId t) { return "'" + g.tensor(t).name + "'"; }

/// The bytes by kind live on `device` while `running` runs.
Bytes bytes_by_kind(const ir::Graph& g, const Program& p, size_t device, const RunningAction& running,
                    const std::set<ir::TensorId>& optimizer_state) {
  Bytes bytes{};
  for (const LiveBuffer& b : live_buffers(g, p, device, running)) {
    bytes[static_cast<size_t>(memory_kind(g, b.root, optimizer_state))] += b.bytes;
  }
  bytes[static_cast<size_t>(MemoryKind::Scratch)] += p.devices.at(device).scratch_bytes;
  return bytes;
}

}  // namespace

size_t MemoryStep::total() const { return std::accumulate(bytes.begin(), bytes.end(), size_t{0}); }

std::vector<MemoryStep> memory_timeline(const ir::Graph& graph, const Program& program, const std::vector<Step>& steps,
                                        size_t device, const std::set<ir::TensorId>& optimizer_state) {
  std::map<std::pair<int64_t, int64_t>, Bytes> cache;  // (stage, position) -> bytes: micro-batches repeat them
  std::vector<MemoryStep> timeline;
  for (const Step& step : steps) {
    const StagePlan& sp = program.stages.at(static_cast<size_t>(step.stage));
    const auto phase = static_cast<size_t>(step.kind);
    for (size_t i = 0; i < sp.actions[phase].size(); ++i) {
      const auto position = static_cast<int64_t>(sp.first_position[phase] + i);
      auto [it, fresh] = cache.try_emplace({step.stage, position});
      if (fresh) {
        it->second = bytes_by_kind(graph, program, device, {static_cast<int32_t>(step.stage), position}, optimizer_state);
      }
      timeline.push_back({step, sp.actions[phase][i], position, it->second});
    }
  }
  return timeline;
}

std::string action_label(const ir::Graph& g, const Program& p, const Action& a) {
  switch (a.kind) {
    case ActionKind::LoadStream:
      return "load stream '" + g.stream(a.index).name + "'";
    case ActionKind::StoreStream:
      return "store stream '" + g.stream(a.index).name + "'";
    case ActionKind::Receive: {
      const ChannelPlan& c = p.channels.at(static_cast<size_t>(a.index));
      return "receive " + quoted(g, c.root) + " from stage " + std::to_string(c.from_stage);
    }
    case ActionKind::Send: {
      const ChannelPlan& c = p.channels.at(static_cast<size_t>(a.index));
      return "send " + quoted(g, c.root) + " to stage " + std::to_string(c.to_stage);
    }
    case ActionKind::Accumulate:
      return "accumulate " + quoted(g, a.index);
    case ActionKind::LoadOffloaded:
      return "load offloaded " + quoted(g, a.index);
    case ActionKind::StoreOffloaded:
      return "store offloaded " + quoted(g, a.index);
    case ActionKind::RunOp:
      break;
  }
  const ir::Op& op = g.op(a.index);
  return op.schema->name + " '" + op.name + "'";
}

std::string step_label(const Step& step) {
  const std::string stage = "stage " + std::to_string(step.stage);
  switch (step.kind) {
    case StepKind::Forward:
      return "fwd " + stage + " mb " + std::to_string(step.micro_batch);
    case StepKind::Backward:
      return "bwd " + stage + " mb " + std::to_string(step.micro_batch);
    case StepKind::Update:
      break;
  }
  return "upd " + stage;
}

}  // namespace plexus::compile
