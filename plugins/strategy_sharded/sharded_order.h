// Sharded execution (PopTorch's ShardedExecution): one micro-batch at a time through every
// stage, so only one device works at any moment:
//   for m in 0 .. M-1:  F(0,m) .. F(S-1,m), then (training) B(S-1,m) .. B(0,m);
//   then (training)     U(0) .. U(S-1).
// Each device runs the steps of its stages in that global order. Any M >= 1 works, and
// every stage needs one activation slot.
#ifndef PLEXUS_STRATEGY_SHARDED_SHARDED_ORDER_H
#define PLEXUS_STRATEGY_SHARDED_SHARDED_ORDER_H

#include <vector>

#include "outcome.h"
#include "problem.h"

namespace plexus::strategy_sharded {

/// The sharded strategy takes no options: anything but "" is PLX_ERR_INVALID_ARGUMENT.
Outcome check_options(const Problem& problem);

/// Per device, its steps in order.
std::vector<std::vector<plx_schedule_step>> sharded_order(const Problem& problem);

}  // namespace plexus::strategy_sharded

#endif  // PLEXUS_STRATEGY_SHARDED_SHARDED_ORDER_H
