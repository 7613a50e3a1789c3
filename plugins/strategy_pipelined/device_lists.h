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

#include <vector>

#include "outcome.h"
#include "problem.h"
#include "stage_orders.h"

namespace plexus::strategy_pipelined {

/// Per device, its steps in order.
using DeviceLists = std::vector<std::vector<plx_schedule_step>>;

/// Places `orders` on the devices of `problem` into `out`. PLX_ERR_INTERNAL if the stage
/// orders themselves cannot run (a bug in stage_orders.cpp).
Outcome device_lists(const Problem& problem, const StageOrders& orders, DeviceLists& out);

}  // namespace plexus::strategy_pipelined

#endif  // PLEXUS_STRATEGY_PIPELINED_DEVICE_LISTS_H
