// The C face of the pipelined strategy: the table returned by the one exported symbol,
// plx_strategy_plugin_v1. make_schedule is strategy_common::run_planner around plan().
#include "device_lists.h"
#include "options.h"
#include "plexus/strategy_plugin.h"
#include "stage_orders.h"
#include "strategy_common/planner_call.h"

namespace plexus::strategy_pipelined {
namespace {

using strategy_common::DeviceLists;
using strategy_common::Outcome;
using strategy_common::Problem;

// Options first (a typo is reported whatever the sizes), then M >= S, then the orders.
Outcome plan(const Problem& p, DeviceLists& out) {
  Flavour flavour = Flavour::one_f_one_b;
  Outcome o = parse_options(p.options, flavour);
  if (o.is_ok()) o = check_micro_batches(p);
  if (o.is_ok()) o = device_lists(p, stage_orders(p, flavour), out);
  return o;
}

plx_status make_schedule(const plx_schedule_problem* problem, plx_schedule_step* const* device_steps,
                         size_t capacity, size_t* device_step_counts, char* message,
                         size_t message_capacity) noexcept {
  return strategy_common::run_planner("pipelined", plan, problem, device_steps, capacity, device_step_counts, message,
                                      message_capacity);
}

const plx_strategy_plugin kTable = {
    sizeof(plx_strategy_plugin),
    PLX_STRATEGY_ABI_VERSION,
    "pipelined",
    make_schedule,
};

}  // namespace
}  // namespace plexus::strategy_pipelined

/** The pipelined strategy's table (strategy_plugin.h); static storage. Thread-safe. */
extern "C" __attribute__((visibility("default"))) const plx_strategy_plugin* plx_strategy_plugin_v1(void) {
  return &plexus::strategy_pipelined::kTable;
}
