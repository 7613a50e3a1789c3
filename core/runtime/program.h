// Compilation of an IR into what every device of a session runs: the op schedule, the
// memory plan, and where each stream copy happens. Positions: 0 is "host-to-device loads",
// op number k of the schedule runs at position k+1, a device-to-host copy runs at the
// position of the last op before it was added.
#pragma once

#include <cstddef>
#include <vector>

#include "core/ir/graph.h"
#include "core/memory/memory_plan.h"

namespace plexus::runtime {

struct Program {
  std::vector<ir::OpId> schedule;
  /// Arena offset of each tensor's buffer (aliases share their root's offset); SIZE_MAX for
  /// remote variables, which live in remote buffers.
  std::vector<size_t> tensor_offset;
  /// Arena offset of each op's scratch space (0 bytes when the op needs none).
  std::vector<size_t> scratch_offset;
  memory::MemoryPlan plan;
  size_t num_positions() const { return schedule.size() + 1; }
};

/// Schedules the ops in creation order, which is a topological order that also honours
/// in-place semantics (an op sees its inputs as they were when it was added, as in PopXL)
/// and in_sequence, and plans memory by liveness.
Program compile(const ir::Graph& graph);

/// Position of a device-to-host stream's copy.
size_t d2h_position(const ir::Stream& stream);

}  // namespace plexus::runtime
