#include "options.h"

namespace plexus::strategy_pipelined {

using strategy_common::Outcome;

Outcome parse_options(const std::string& options, Flavour& out) {
  if (options.empty() || options == "1f1b") {
    out = Flavour::one_f_one_b;
  } else if (options == "fill_drain") {
    out = Flavour::fill_drain;
  } else {
    return Outcome::invalid("unknown option '" + options +
                            "' for the pipelined strategy; accepted: '' or '1f1b' (one forward one backward, the "
                            "default), 'fill_drain' (GPipe: every forward, then every backward)");
  }
  return Outcome::ok();
}

}  // namespace plexus::strategy_pipelined
