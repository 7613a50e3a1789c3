// The C face of the pipelined strategy: the table returned by the one exported symbol,
// plx_strategy_plugin_v1. make_schedule is noexcept: a C++ exception never crosses the
// ABI, and the caller's lists and counts are written only on success.
#include <algorithm>
#include <new>

#include "device_lists.h"
#include "options.h"
#include "outcome.h"
#include "plexus/strategy_plugin.h"
#include "problem.h"
#include "stage_orders.h"

namespace plexus::strategy_pipelined {
namespace {

Outcome plan(const plx_schedule_problem* problem, plx_schedule_step* const* device_steps, size_t capacity,
             size_t* device_step_counts) {
  Problem p;
  Flavour flavour = Flavour::one_f_one_b;
  Outcome o = read_problem(problem, device_steps, capacity, device_step_counts, p);
  if (o.is_ok()) o = parse_options(p.options, flavour);
  if (o.is_ok()) o = check_micro_batches(p);
  DeviceLists lists;
  if (o.is_ok()) o = device_lists(p, stage_orders(p, flavour), lists);
  if (!o.is_ok()) return o;
  for (size_t d = 0; d < lists.size(); ++d) {
    std::copy(lists[d].begin(), lists[d].end(), device_steps[d]);
    device_step_counts[d] = lists[d].size();
  }
  return o;
}

plx_status make_schedule(const plx_schedule_problem* problem, plx_schedule_step* const* device_steps,
                         size_t capacity, size_t* device_step_counts, char* message,
                         size_t message_capacity) noexcept {
  try {
    const Outcome o = plan(problem, device_steps, capacity, device_step_counts);
    if (!o.is_ok()) write_message(message, message_capacity, o.message);
    return o.status;
  } catch (const std::bad_alloc&) {
    write_message(message, message_capacity, "out of memory in the pipelined strategy plugin");
    return PLX_ERR_RUNTIME;
  } catch (...) {
    write_message(message, message_capacity, "internal error in the pipelined strategy plugin");
    return PLX_ERR_INTERNAL;
  }
}

const plx_strategy_plugin kTable = {
    sizeof(plx_strategy_plugin),
    PLX_STRATEGY_ABI_VERSION,
    "pipelined",
    make_schedule,
};

}  // namespace
}  // namespace plexus::strategy_pipelined

extern "C" __attribute__((visibility("default"))) const plx_strategy_plugin* plx_strategy_plugin_v1(void) {
  return &plexus::strategy_pipelined::kTable;
}
