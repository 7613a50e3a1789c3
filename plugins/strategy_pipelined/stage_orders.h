// The order of each stage's own steps, as if every stage had a device to itself:
//   1F1B (PipeDream-flush; PopART's and PopTorch's pipelining): min(S - s, M) warm-up
//        forwards, then one backward and one forward alternately, then the cool-down
//        backwards, then U(s). Stage s thus holds at most min(S - s, M) micro-batches
//        between their forward and backward (its activation slots);
//   fill-drain (GPipe): F(s, 0..M-1), B(s, 0..M-1), U(s); M slots per stage;
//   inference (either flavour): F(s, 0..M-1).
// device_lists.h then places the stages that share a device on it.
#ifndef PLEXUS_STRATEGY_PIPELINED_STAGE_ORDERS_H
#define PLEXUS_STRATEGY_PIPELINED_STAGE_ORDERS_H

#include <vector>

#include "options.h"
#include "strategy_common/outcome.h"
#include "strategy_common/problem.h"

namespace plexus::strategy_pipelined {

/// Per stage (0 .. S-1), its steps in order.
using StageOrders = std::vector<std::vector<plx_schedule_step>>;

/**
 * Pipelined execution needs M >= S, training or not (seed 003; docs/design.md "Pipelining":
 * with fewer micro-batches than stages the pipeline never fills, and PopTorch refuses it).
 * @return PLX_OK; PLX_ERR_INVALID_ARGUMENT naming M and S when M < S.
 * Thread safety: safe.
 */
strategy_common::Outcome check_micro_batches(const strategy_common::Problem& problem);

/**
 * Each stage's order for `problem` (see the top of this file). Every step of the program
 * appears once; a stage's forwards, and its backwards, are in micro-batch order.
 * Throws std::bad_alloc only. Thread safety: safe.
 */
StageOrders stage_orders(const strategy_common::Problem& problem, Flavour flavour);

}  // namespace plexus::strategy_pipelined

#endif  // PLEXUS_STRATEGY_PIPELINED_STAGE_ORDERS_H
