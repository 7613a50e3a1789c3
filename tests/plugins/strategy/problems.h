// Problems and reference orders shared by the strategy plugin tests: where the stages sit
// on the devices (one per device, or several per device), and each strategy's documented
// order, to compare the plugins' schedules against.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/compile/schedule.h"

namespace plexus::compile::strategy_test {

/// How the S stages of a problem are placed on its devices.
enum class Layout {
  one_per_device,  ///< D = S, stage s on device s
  pairs,           ///< D = ceil(S / 2), stages 2k and 2k+1 on device k
  round_robin,     ///< D = min(S, 2), stage s on device s % D (stages 0, 2 on one device)
  all_on_one,      ///< D = 1
};

/// All layouts, for loops.
inline const std::vector<Layout> kLayouts = {Layout::one_per_device, Layout::pairs, Layout::round_robin,
                                             Layout::all_on_one};

/// "one_per_device", ... (for test names).
inline std::string layout_name(Layout layout) {
  switch (layout) {
    case Layout::one_per_device:
      return "one_per_device";
    case Layout::pairs:
      return "pairs";
    case Layout::round_robin:
      return "round_robin";
    case Layout::all_on_one:
      return "all_on_one";
  }
  return "unknown";
}

/// A problem of S stages placed by `layout`, M micro-batches.
inline compile::ScheduleProblem make_problem(int64_t S, int64_t M, bool training, Layout layout) {
  compile::ScheduleProblem p;
  p.num_stages = S;
  p.num_micro_batches = M;
  p.training = training;
  switch (layout) {
    case Layout::one_per_device:
      p.num_devices = S;
      break;
    case Layout::pairs:
      p.num_devices = (S + 1) / 2;
      break;
    case Layout::round_robin:
      p.num_devices = S < 2 ? S : 2;
      break;
    case Layout::all_on_one:
      p.num_devices = 1;
      break;
  }
  for (int64_t s = 0; s < S; ++s) {
    p.stage_device.push_back(layout == Layout::pairs ? s / 2 : s % p.num_devices);
  }
  return p;
}

/// The steps of `stage` in device list `list`, in list order.
inline std::vector<compile::Step> steps_of_stage(const std::vector<compile::Step>& list, int64_t stage) {
  std::vector<compile::Step> steps;
  for (const compile::Step& step : list) {
    if (step.stage == stage) steps.push_back(step);
  }
  return steps;
}

inline compile::Step F(int64_t s, int64_t m) { return {s, m, compile::StepKind::Forward}; }
inline compile::Step B(int64_t s, int64_t m) { return {s, m, compile::StepKind::Backward}; }
inline compile::Step U(int64_t s) { return {s, -1, compile::StepKind::Update}; }

}  // namespace plexus::compile::strategy_test
