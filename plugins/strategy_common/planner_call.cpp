#include "strategy_common/planner_call.h"

#include <algorithm>
#include <cstdio>
#include <new>
#include <string>

namespace plexus::strategy_common {

namespace {

Outcome plan_and_write(const char* strategy, Planner plan, const plx_schedule_problem* problem,
                       plx_schedule_step* const* device_steps, size_t capacity, size_t* device_step_counts) {
  Problem p;
  Outcome o = read_problem(problem, device_steps, capacity, device_step_counts, p);
  if (!o.is_ok()) return o;
  DeviceLists lists;
  o = plan(p, lists);
  if (!o.is_ok()) return o;
  if (static_cast<int64_t>(lists.size()) != p.num_devices) {
    return Outcome::internal(std::string(strategy) + " strategy planned " + std::to_string(lists.size()) +
                             " device lists for " + std::to_string(p.num_devices) + " devices");
  }
  for (size_t d = 0; d < lists.size(); ++d) {
    if (lists[d].size() > capacity) {
      return Outcome::internal(std::string(strategy) + " strategy planned " + std::to_string(lists[d].size()) +
                               " steps for device " + std::to_string(d) + ", capacity " + std::to_string(capacity));
    }
  }
  for (size_t d = 0; d < lists.size(); ++d) {
    std::copy(lists[d].begin(), lists[d].end(), device_steps[d]);
    device_step_counts[d] = lists[d].size();
  }
  return o;
}

// "<what> in the <strategy> strategy plugin", without allocating (for the catch blocks).
void write_failure(char* message, size_t capacity, const char* what, const char* strategy) noexcept {
  if (message != nullptr && capacity > 0) {
    std::snprintf(message, capacity, "%s in the %s strategy plugin", what, strategy);
  }
}

}  // namespace

plx_status run_planner(const char* strategy, Planner plan, const plx_schedule_problem* problem,
                       plx_schedule_step* const* device_steps, size_t capacity, size_t* device_step_counts,
                       char* message, size_t message_capacity) noexcept {
  try {
    const Outcome o = plan_and_write(strategy, plan, problem, device_steps, capacity, device_step_counts);
    if (!o.is_ok()) write_message(message, message_capacity, o.message);
    return o.status;
  } catch (const std::bad_alloc&) {
    write_failure(message, message_capacity, "out of memory", strategy);
    return PLX_ERR_RUNTIME;
  } catch (...) {
    write_failure(message, message_capacity, "internal error", strategy);
    return PLX_ERR_INTERNAL;
  }
}

}  // namespace plexus::strategy_common
