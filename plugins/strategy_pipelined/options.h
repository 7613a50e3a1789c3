// The options string of the pipelined strategy: which order each stage follows.
#ifndef PLEXUS_STRATEGY_PIPELINED_OPTIONS_H
#define PLEXUS_STRATEGY_PIPELINED_OPTIONS_H

#include <string>

#include "outcome.h"

namespace plexus::strategy_pipelined {

enum class Flavour {
  one_f_one_b,  ///< "" or "1f1b" (default): warm-up, one backward / one forward, cool-down
  fill_drain,   ///< "fill_drain": GPipe, every forward then every backward
};

/// Parses `options` into `out`; an unknown string is PLX_ERR_INVALID_ARGUMENT naming it and
/// the accepted ones.
Outcome parse_options(const std::string& options, Flavour& out);

}  // namespace plexus::strategy_pipelined

#endif  // PLEXUS_STRATEGY_PIPELINED_OPTIONS_H
