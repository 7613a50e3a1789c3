// One cell of plexus-strategy-check's grid: ask the strategy plugin for its schedule of the
// cell's problem, run the core's check_schedule over it, and say what happened.
#pragma once

#include <cstdint>
#include <string>

#include "core/compile/strategy.h"
#include "tools/strategy_check/grid.h"

namespace plexus::tools::strategy_check {

/// What a cell's check found.
enum class Verdict {
  pass,     ///< the plugin's schedule follows every rule
  fail,     ///< it breaks a rule, or the plugin failed otherwise than by refusing the problem
  refused,  ///< the plugin refused the problem (PLX_ERR_INVALID_ARGUMENT, with its message)
};

/// The outcome of one cell.
struct CellResult {
  Verdict verdict = Verdict::pass;
  std::string message;         ///< fail: check_schedule's or the plugin's error; refused: the plugin's message
  int64_t makespan = 0;        ///< pass: simulated time units of the whole schedule (one per step)
  double bubble = 0;           ///< pass: fraction of device time idle in the simulation
  int64_t peak_in_flight = 0;  ///< pass: most micro-batches between forward and backward of one stage
};

/// Asks `strategy` for its schedule of `cell` with `options` and checks it
/// (compile::check_schedule). Never throws for what the plugin does: every error is a
/// CellResult (a crash inside the plugin is not caught).
CellResult check_cell(const compile::Strategy& strategy, const Cell& cell, const std::string& options);

}  // namespace plexus::tools::strategy_check
