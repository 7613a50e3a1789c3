// Schedules of pipelined and sharded execution (seed 003; docs/design.md "Pipelining"): for
// every device of a replica, the ordered steps it runs (forward / backward of a stage on a
// micro-batch, update of a stage). Schedules come from strategy plugins
// (strategy_plugin.h) or, for one device, from trivial_schedule(); check_schedule()
// enforces the dependency rules before anything runs, and the simulation that proves
// progress also sizes the buffers the run needs.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <utility>
#include <vector>

namespace plexus::compile {

enum class StepKind : int32_t { Forward = 0, Backward = 1, Update = 2 };  ///< = PLX_STEP_*

struct Step {
  int64_t stage = 0;
  int64_t micro_batch = 0;  ///< -1 for Update
  StepKind kind = StepKind::Forward;
  bool operator==(const Step&) const = default;
};

/// "F(2,5)", "B(0,1)", "U(3)".
std::string step_name(const Step& s);

struct ScheduleProblem {
  int64_t num_stages = 1;
  int64_t num_devices = 1;
  std::vector<int64_t> stage_device;  ///< [S]
  int64_t num_micro_batches = 1;
  bool training = true;
};

/// Per device, the steps in the order it runs them.
using Schedule = std::vector<std::vector<Step>>;

/// What a valid schedule needs at run time, from simulating it.
struct ScheduleAnalysis {
  /// Per stage: most micro-batches between their forward and backward at once (1 when not
  /// training): the number of activation slots the stage needs.
  std::vector<int64_t> slots;
  /// Simulated time of each step (one unit per step; waits inserted), per device, in order.
  std::vector<std::vector<int64_t>> start_time;
  int64_t makespan = 0;  ///< simulated units until the last step ends
};

/// Checks the problem itself: S, D, M >= 1, one device in [0, D) per stage. Throws
/// ir::Error(InvalidArgument) naming the bad field.
void check_problem(const ScheduleProblem& problem);

/// One device runs every step in order: forward and backward of each micro-batch, then the
/// updates (the default schedule for one device per replica).
Schedule trivial_schedule(const ScheduleProblem& problem);

/// Checks `schedule` against the rules of strategy_plugin.h (coverage, order, forward,
/// backward, update, progress) and returns its analysis. Throws ir::Error(Plugin) naming
/// `source` (the strategy), the broken rule and the offending step. Rules forward, backward
/// and update are reported when a step is listed after, on its own device, a step it waits
/// for; a wait that can never end across devices is rule 'progress'. Checks the problem
/// first (check_problem).
ScheduleAnalysis check_schedule(const ScheduleProblem& problem, const Schedule& schedule, const std::string& source);

}  // namespace plexus::compile
