// The buffers live on a device at a point of its schedule, from the compiled program
// (program.h): what the memory limit pass names at a device's planned peak and what the
// memory report (core/session/memory_report.h) splits by kind at every step.
//
// A device's memory is its persistent block, its scratch area and, per stage placed on
// it, `slots` copies of the stage's slot region. The plan reserves each slot region for
// the region's peak and does not fix which micro-batch a slot holds at a given moment, so
// at an action of stage s the planned bytes are: the persistent block; the slot running
// the action at its live bytes at the action's timeline position; every other slot region
// of the device (s's other slots, the other stages' slots) at its peak. Their maximum over
// the device's actions is DevicePlan::planned_peak_bytes less the scratch area.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <vector>

#include "core/compile/program.h"
#include "core/ir/graph.h"

namespace plexus::compile {

/// One buffer live on a device.
struct LiveBuffer {
  ir::TensorId root;
  size_t bytes;              ///< in all its copies
  int32_t stage = -1;        ///< the stage of its slot region or accumulator; -1: a variable or constant
  int64_t copies = 1;        ///< slot regions holding a copy (1 in the persistent block)
  bool persistent = false;   ///< in the persistent block (variables, constants, accumulators)
};

/// Where a device is in its schedule: the stage whose action runs and the action's
/// position in the stage's timeline [forward | backward | update] (StagePlan).
struct RunningAction {
  int32_t stage = 0;
  int64_t position = 0;
};

/// The first timeline position where stage `plan`'s slot region holds its peak bytes.
int64_t slot_peak_position(const StagePlan& plan);

/// The buffers live on device `device` (of one replica) of `program` compiled from
/// `graph`: as the header says with `running`, and every slot region at its peak without
/// (the tensors behind the planned peak). Largest first, ties in plan order. Their bytes
/// plus the device's scratch_bytes are the planned bytes live there. Throws
/// std::out_of_range for a device out of range, or a running stage out of range or placed
/// on another device. Pure.
std::vector<LiveBuffer> live_buffers(const ir::Graph& graph, const Program& program, size_t device,
                                     const std::optional<RunningAction>& running = std::nullopt);

}  // namespace plexus::compile
