// The options string of the pipelined strategy (plx_schedule_problem.options): which order
// each stage follows.
#ifndef PLEXUS_STRATEGY_PIPELINED_OPTIONS_H
#define PLEXUS_STRATEGY_PIPELINED_OPTIONS_H

#include <string>

#include "strategy_common/outcome.h"

namespace plexus::strategy_pipelined {

/// The order each stage follows when training (inference is forwards only either way).
enum class Flavour {
  one_f_one_b,  ///< "" or "1f1b" (default): warm-up, one backward / one forward, cool-down
  fill_drain,   ///< "fill_drain": GPipe, every forward then every backward
};

/**
 * Parses `options` into `out` (untouched on error).
 * @return PLX_OK; PLX_ERR_INVALID_ARGUMENT for any other string, naming it and the accepted
 *         ones.
 * Thread safety: safe.
 */
strategy_common::Outcome parse_options(const std::string& options, Flavour& out);

}  // namespace plexus::strategy_pipelined

#endif  // PLEXUS_STRATEGY_PIPELINED_OPTIONS_H
