// Sharded execution (PopTorch's ShardedExecution): one micro-batch at a time through every
// stage, so only one device works at any moment. The global order is
//   for m in 0 .. M-1:  F(0,m) .. F(S-1,m), then (training) B(S-1,m) .. B(0,m);
//   then (training)     U(0) .. U(S-1),
// and each device runs the steps of its stages in that order. Any M >= 1 works, and every
// stage needs one activation slot.
#ifndef PLEXUS_STRATEGY_SHARDED_SHARDED_ORDER_H
#define PLEXUS_STRATEGY_SHARDED_SHARDED_ORDER_H

#include "strategy_common/outcome.h"
#include "strategy_common/planner_call.h"
#include "strategy_common/problem.h"

namespace plexus::strategy_sharded {

/**
 * The sharded strategy takes no options.
 * @return PLX_OK for ""; PLX_ERR_INVALID_ARGUMENT naming any other string.
 * Thread safety: safe.
 */
strategy_common::Outcome check_options(const strategy_common::Problem& problem);

/**
 * Per device of `problem`, its steps in the global order above. Throws std::bad_alloc only.
 * Thread safety: safe.
 */
strategy_common::DeviceLists sharded_order(const strategy_common::Problem& problem);

}  // namespace plexus::strategy_sharded

#endif  // PLEXUS_STRATEGY_SHARDED_SHARDED_ORDER_H
