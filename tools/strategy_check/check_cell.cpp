#include "tools/strategy_check/check_cell.h"

#include <algorithm>
#include <exception>

#include "core/ir/error.h"

namespace plexus::tools::strategy_check {

namespace {

// The figures of a passing schedule from its analysis.
CellResult passed(const compile::ScheduleProblem& p, const compile::Schedule& schedule,
                  const compile::ScheduleAnalysis& analysis) {
  CellResult r;
  size_t steps = 0;
  for (const auto& device : schedule) steps += device.size();
  r.makespan = analysis.makespan;
  const double device_time = static_cast<double>(p.num_devices) * static_cast<double>(analysis.makespan);
  r.bubble = device_time > 0 ? 1.0 - static_cast<double>(steps) / device_time : 0.0;
  r.peak_in_flight = analysis.slots.empty() ? 0 : *std::max_element(analysis.slots.begin(), analysis.slots.end());
  return r;
}

}  // namespace

CellResult check_cell(const compile::Strategy& strategy, const Cell& cell, const std::string& options) {
  try {
    const compile::Schedule schedule = strategy.unchecked_schedule(cell.problem, options);
    return passed(cell.problem, schedule, compile::check_schedule(cell.problem, schedule, strategy.name()));
  } catch (const ir::Error& e) {
    const bool refused = e.code() == ir::ErrorCode::InvalidArgument;
    return CellResult{refused ? Verdict::refused : Verdict::fail, e.what()};
  } catch (const std::exception& e) {
    return CellResult{Verdict::fail, std::string("unexpected error: ") + e.what()};
  }
}

}  // namespace plexus::tools::strategy_check
