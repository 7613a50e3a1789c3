// The C face of the sharded strategy: the table returned by the one exported symbol,
// plx_strategy_plugin_v1. make_schedule is strategy_common::run_planner around plan().
#include "plexus/strategy_plugin.h"
#include "sharded_order.h"
#include "strategy_common/planner_call.h"

namespace plexus::strategy_sharded {
namespace {

using strategy_common::DeviceLists;
using strategy_common::Outcome;
using strategy_common::Problem;

Outcome plan(const Problem& p, DeviceLists& out) {
  Outcome o = check_options(p);
  if (o.is_ok()) out = sharded_order(p);
  return o;
}

plx_status make_schedule(const plx_schedule_problem* problem, plx_schedule_step* const* device_steps,
                         size_t capacity, size_t* device_step_counts, char* message,
                         size_t message_capacity) noexcept {
  return strategy_common::run_planner("sharded", plan, problem, device_steps, capacity, device_step_counts, message,
                                      message_capacity);
}

const plx_strategy_plugin kTable = {
    sizeof(plx_strategy_plugin),
    PLX_STRATEGY_ABI_VERSION,
    "sharded",
    make_schedule,
};

}  // namespace
}  // namespace plexus::strategy_sharded

/** The sharded strategy's table (strategy_plugin.h); static storage. Thread-safe. */
extern "C" __attribute__((visibility("default"))) const plx_strategy_plugin* plx_strategy_plugin_v1(void) {
  return &plexus::strategy_sharded::kTable;
}
