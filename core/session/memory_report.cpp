#include "core/session/memory_report.h"

#include <nlohmann/json.hpp>

#include <algorithm>

#include "core/compile/memory_timeline.h"

namespace plexus::session {

namespace {

using json = nlohmann::ordered_json;

json kind_bytes(const std::array<size_t, compile::kNumMemoryKinds>& bytes) {
  json j = json::object();
  for (compile::MemoryKind k : compile::memory_kinds()) j[std::string(compile::memory_kind_name(k))] = bytes[static_cast<size_t>(k)];
  return j;
}

const char* phase_name(compile::StepKind k) {
  return k == compile::StepKind::Forward ? "forward" : k == compile::StepKind::Backward ? "backward" : "update";
}

json steps_json(const ir::Graph& g, const compile::Program& p, const std::vector<compile::MemoryStep>& timeline) {
  json steps = json::array();
  for (size_t i = 0; i < timeline.size(); ++i) {
    const compile::MemoryStep& m = timeline[i];
    steps.push_back({{"step", i},
                     {"label", compile::step_label(m.step) + ": " + compile::action_label(g, p, m.action)},
                     {"stage", m.step.stage},
                     {"micro_batch", m.step.micro_batch},
                     {"phase", phase_name(m.step.kind)},
                     {"position", m.position},
                     {"bytes", kind_bytes(m.bytes)}});
  }
  return steps;
}

/// The peak: the first step of the largest total and the buffers live there, largest first.
json peak_json(const ir::Graph& g, const compile::Program& p, size_t device, const std::vector<compile::MemoryStep>& timeline,
               const std::set<ir::TensorId>& optimizer_state) {
  const auto top = std::max_element(timeline.begin(), timeline.end(),
                                    [](const compile::MemoryStep& a, const compile::MemoryStep& b) { return a.total() < b.total(); });
  std::optional<compile::RunningAction> running;
  if (top != timeline.end()) running = compile::RunningAction{static_cast<int32_t>(top->step.stage), top->position};
  json tensors = json::array();
  size_t bytes = p.devices[device].scratch_bytes;
  for (const compile::LiveBuffer& b : compile::live_buffers(g, p, device, running)) {
    bytes += b.bytes;
    tensors.push_back({{"name", g.tensor(b.root).name},
                       {"kind", compile::memory_kind_name(compile::memory_kind(g, b.root, optimizer_state))},
                       {"bytes", b.bytes},
                       {"stage", b.stage},
                       {"copies", b.copies},
                       {"persistent", b.persistent}});
  }
  return {{"step", top == timeline.end() ? -1 : top - timeline.begin()},
          {"bytes", bytes},
          {"scratch_bytes", p.devices[device].scratch_bytes},
          {"tensors", tensors}};
}

/// Per-replica storage of the variables on `device` (remote variables: device 0, which
/// counts the replica's remote buffers).
json variables_json(const Session& s, size_t device, const std::set<ir::TensorId>& optimizer_state) {
  const ir::Graph& g = s.graph();
  const compile::Program& p = s.program();
  json vars = json::array();
  for (size_t i = 0; i < g.num_tensors(); ++i) {
    const auto t = static_cast<ir::TensorId>(i);
    const ir::TensorInfo& info = g.tensor(t);
    const bool remote = info.kind == ir::TensorKind::RemoteVariable;
    if (!remote && info.kind != ir::TensorKind::Variable) continue;
    const auto home = p.home_stage.find(t);
    const size_t on = remote || home == p.home_stage.end() ? 0 : static_cast<size_t>(p.placement.stage_device[static_cast<size_t>(home->second)]);
    if (on != device) continue;
    const VariableStorage st = s.variable_storage(t);
    const size_t full = info.sharding ? static_cast<size_t>(ir::numel(info.sharding->full_shape)) * ir::dtype_size(info.dtype)
                                      : info.bytes();
    vars.push_back({{"name", info.name},
                    {"kind", compile::memory_kind_name(compile::memory_kind(g, t, optimizer_state))},
                    {"device_bytes", st.device_bytes},
                    {"remote_bytes", st.remote_bytes},
                    {"shard_over", st.shard_over},
                    {"full_bytes", full}});
  }
  return vars;
}

json device_json(const Session& s, size_t d, const std::set<ir::TensorId>& optimizer_state) {
  const ir::Graph& g = s.graph();
  const compile::Program& p = s.program();
  const std::vector<compile::MemoryStep> timeline = compile::memory_timeline(g, p, s.schedule().at(d), d, optimizer_state);
  const runtime::DeviceMemoryStats m = s.memory_stats(d);
  json stages = json::array();
  for (size_t st = 0; st < p.stages.size(); ++st) {
    if (static_cast<size_t>(p.stages[st].device) == d) stages.push_back(st);
  }
  json kinds = json::array();
  for (compile::MemoryKind k : compile::memory_kinds()) kinds.push_back(compile::memory_kind_name(k));
  return {{"device", d},
          {"stages", stages},
          {"arena_bytes", m.arena_bytes},
          {"planned_peak_bytes", m.planned_peak_bytes},
          {"variable_bytes", m.variable_bytes},
          {"scratch_bytes", p.devices[d].scratch_bytes},
          {"remote_buffer_bytes", m.remote_buffer_bytes},
          {"offloaded_bytes", m.offloaded_bytes},
          {"kinds", kinds},
          {"steps", steps_json(g, p, timeline)},
          {"peak", peak_json(g, p, d, timeline, optimizer_state)},
          {"variables", variables_json(s, d, optimizer_state)}};
}

}  // namespace

json memory_report(const Session& session) {
  const std::set<ir::TensorId> optimizer_state = compile::optimizer_state_roots(session.graph());
  json devices = json::array();
  for (int64_t d = 0; d < session.devices_per_replica(); ++d) {
    devices.push_back(device_json(session, static_cast<size_t>(d), optimizer_state));
  }
  return {{"schema", "plexus.memory_report"},
          {"version", kMemoryReportVersion},
          {"replication_factor", session.replication_factor()},
          {"devices_per_replica", session.devices_per_replica()},
          {"training", session.training()},
          {"micro_batches", session.micro_batches()},
          {"execution_strategy", session.strategy_name()},
          {"devices", devices}};
}

}  // namespace plexus::session
