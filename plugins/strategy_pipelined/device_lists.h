// From stage orders to device lists. Each stage's steps get the start time they would have
// if every stage had a device to itself (unit-time steps, each starting once its stage's
// previous step and what it waits for have ended). A device runs the steps of its stages
// sorted by that time; ties go to backwards first (they free activations), then to the
// older micro-batch. With one stage per device the list is the stage order itself; with
// several, the stages interleave so the pipeline fills. The order is deadlock-free: a step
// starts strictly after everything it waits for, so every device list is a subsequence of
// one global order that respects every dependency.
#ifndef PLEXUS_STRATEGY_PIPELINED_DEVICE_LISTS_H
#define PLEXUS_STRATEGY_PIPELINED_DEVICE_LISTS_H

#include "stage_orders.h"
#include "strategy_common/outcome.h"
#include "strategy_common/planner_call.h"
#include "strategy_common/problem.h"

namespace plexus::strategy_pipelined {

/**
 * Places `orders` (one per stage of `problem`, from stage_orders) on the devices of
 * `problem`: out[d] receives the steps of the stages on device d, each stage's steps in its
 * own order. Every stage, even on a shared device, keeps its slots.
 * @return PLX_OK; PLX_ERR_INTERNAL if the stage orders themselves cannot run (a bug in
 *         stage_orders.cpp). `out` is untouched on error. Throws std::bad_alloc only.
 * Thread safety: safe.
 */
strategy_common::Outcome device_lists(const strategy_common::Problem& problem, const StageOrders& orders,
                                      strategy_common::DeviceLists& out);

}  // namespace plexus::strategy_pipelined

#endif  // PLEXUS_STRATEGY_PIPELINED_DEVICE_LISTS_H
