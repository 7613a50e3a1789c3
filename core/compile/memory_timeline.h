// A device's planned memory over its schedule, split by kind (memory_kind.h): its
// schedule steps (schedule.h) expanded into the actions each runs, with the bytes
// live_buffers.h counts at each action, plus the scratch area. The memory report
// (core/session/memory_report.h, docs/profiling.md) is made of these.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <set>
#include <string>
#include <vector>

#include "core/compile/live_buffers.h"
#include "core/compile/memory_kind.h"
#include "core/compile/program.h"
#include "core/compile/schedule.h"
#include "core/ir/graph.h"

namespace plexus::compile {

/// One action of a device's schedule and the planned bytes live while it runs.
struct MemoryStep {
  Step step;              ///< the schedule step the action belongs to
  Action action;
  int64_t position = 0;   ///< the action's position in its stage's timeline
  std::array<size_t, kNumMemoryKinds> bytes{};  ///< per MemoryKind, in bytes
  size_t total() const;   ///< the sum over kinds
};

/// The actions of `steps` (device `device`'s schedule of `program`) in order, each with
/// the bytes of live_buffers(graph, program, device, {its stage, its position}) by kind
/// (`optimizer_state`: optimizer_state_roots(graph)) and the device's scratch_bytes as
/// scratch. A step whose phase has no action adds nothing. The maximum total over the
/// result is the device's planned_peak_bytes when every timeline position of its stages
/// is run by some step (as in every valid schedule). Throws std::out_of_range for a step
/// of a stage out of range.
std::vector<MemoryStep> memory_timeline(const ir::Graph& graph, const Program& program, const std::vector<Step>& steps,
                                        size_t device, const std::set<ir::TensorId>& optimizer_state);

/// "matmul 'h1'", "load stream 'images'", "send 'x' to stage 1", "receive 'x' from stage
/// 0", "accumulate 'W0_grad'", "load offloaded 'm'", "all-reduce bucket 0 (3 tensors)"...:
/// what `action` of `program` does, in words.
std::string action_label(const ir::Graph& graph, const Program& program, const Action& action);

/// "fwd stage 0 mb 1", "bwd stage 1 mb 0", "upd stage 0".
std::string step_label(const Step& step);

}  // namespace plexus::compile
