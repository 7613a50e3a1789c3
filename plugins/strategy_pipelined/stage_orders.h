// The order of each stage's own steps, as if every stage had a device to itself:
//   1F1B (PipeDream-flush, PopART):  min(S - s, M) warm-up forwards, then one backward and
//        one forward alternately, then the cool-down backwards, then U(s);
//   fill-drain (GPipe):              F(s, 0..M-1), B(s, 0..M-1), U(s);
//   inference (either flavour):      F(s, 0..M-1).
// device_lists.cpp then places the stages that share a device on it.
#ifndef PLEXUS_STRATEGY_PIPELINED_STAGE_ORDERS_H
#define PLEXUS_STRATEGY_PIPELINED_STAGE_ORDERS_H

#include <vector>

#include "options.h"
#include "outcome.h"
#include "problem.h"

namespace plexus::strategy_pipelined {

/// Per stage, its steps in order.
using StageOrders = std::vector<std::vector<plx_schedule_step>>;

/// Training needs M >= S (PopTorch's rule: with fewer micro-batches than stages the
/// pipeline never fills); PLX_ERR_INVALID_ARGUMENT otherwise.
Outcome check_micro_batches(const Problem& problem);

StageOrders stage_orders(const Problem& problem, Flavour flavour);

}  // namespace plexus::strategy_pipelined

#endif  // PLEXUS_STRATEGY_PIPELINED_STAGE_ORDERS_H
