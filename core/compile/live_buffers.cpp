#include "core/compile/live_buffers.h"

#include <algorithm>
#include <stdexcept>
#include <string>

namespace plexus::compile {

namespace {

/// Appends the pieces of `plan` (stage `stage`) live at `position`, `copies` times each.
void add_pieces(const StagePlan& plan, int32_t stage, int64_t position, int64_t copies, std::vector<LiveBuffer>& out) {
  if (copies <= 0) return;
  for (const SlotPiece& p : plan.slot_pieces) {
    if (p.first <= position && position <= p.last) {
      out.push_back({p.root, p.bytes * static_cast<size_t>(copies), stage, copies, false});
    }
  }
}

/// Throws std::out_of_range unless `running` (when given) names a stage of `program` that
/// runs on `device`: the action of another device's stage would be silently ignored.
void check_running(const Program& program, size_t device, const std::optional<RunningAction>& running) {
  if (!running) return;
  const auto stage = static_cast<size_t>(running->stage);
  if (running->stage < 0 || stage >= program.stages.size()) {
    throw std::out_of_range("live_buffers: the running action's stage " + std::to_string(running->stage) +
                            " is not one of the program's " + std::to_string(program.stages.size()) + " stages");
  }
  if (static_cast<size_t>(program.stages[stage].device) != device) {
    throw std::out_of_range("live_buffers: the running action's stage " + std::to_string(running->stage) +
                            " runs on device " + std::to_string(program.stages[stage].device) + ", not on device " +
                            std::to_string(device));
  }
}

}  // namespace

int64_t slot_peak_position(const StagePlan& plan) {
  const std::vector<size_t>& bytes = plan.slot_plan.live_bytes;
  if (bytes.empty()) return 0;
  return static_cast<int64_t>(std::max_element(bytes.begin(), bytes.end()) - bytes.begin());
}

std::vector<LiveBuffer> live_buffers(const ir::Graph& graph, const Program& program, size_t device,
                                     const std::optional<RunningAction>& running) {
  const DevicePlan& d = program.devices.at(device);
  check_running(program, device, running);
  std::vector<LiveBuffer> live;
  for (const auto& [root, offset] : d.persistent_offset) live.push_back({root, graph.tensor(root).bytes(), -1, 1, true});
  for (size_t s = 0; s < program.stages.size(); ++s) {
    const StagePlan& sp = program.stages[s];
    if (static_cast<size_t>(sp.device) != device) continue;
    const auto stage = static_cast<int32_t>(s);
    for (const auto& [root, offset] : sp.accumulator) live.push_back({root, graph.tensor(root).bytes(), stage, 1, true});
    const int64_t peak = slot_peak_position(sp);
    if (running && running->stage == stage) {
      add_pieces(sp, stage, running->position, 1, live);
      add_pieces(sp, stage, peak, sp.slots - 1, live);
    } else {
      add_pieces(sp, stage, peak, sp.slots, live);
    }
  }
  std::stable_sort(live.begin(), live.end(), [](const LiveBuffer& a, const LiveBuffer& b) { return a.bytes > b.bytes; });
  return live;
}

}  // namespace plexus::compile
