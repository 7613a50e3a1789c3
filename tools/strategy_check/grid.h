// The problems plexus-strategy-check asks a strategy plugin to schedule: for each number of
// stages S, devices D in {1, 2, ceil(S/2), S-1, S} (those in [1, S]), the stages placed on
// the devices in blocks (stage s on device s*D/S), in blocks in reverse device order, and
// round robin (stage s on device s % D), identical placements once; micro-batches M in
// {1, S-1, S, 2S, 10, 16}, or the caller's list; training and inference.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/compile/schedule.h"

namespace plexus::tools::strategy_check {

/// One problem of the grid, and the name of how its stages are placed.
struct Cell {
  compile::ScheduleProblem problem;
  std::string placement;  ///< "all on one", "one per device", "blocks", "reversed", "round robin"
};

/// The grid for `stages` (empty: 1 .. 8) and `micro_batches` (empty: the default set above
/// per S), in order of S, D, placement, M, then training before inference. Pure.
std::vector<Cell> make_grid(const std::vector<int64_t>& stages, const std::vector<int64_t>& micro_batches);

/// "training S=4 D=2 M=8 stages on devices [0,0,1,1] (blocks)": the problem, for messages.
std::string describe(const Cell& cell);

}  // namespace plexus::tools::strategy_check
