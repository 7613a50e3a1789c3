#include "sharded_order.h"

#include <cstdint>

namespace plexus::strategy_sharded {

using strategy_common::DeviceLists;
using strategy_common::Outcome;
using strategy_common::Problem;

Outcome check_options(const Problem& p) {
  if (!p.options.empty()) {
    return Outcome::invalid("unknown option '" + p.options +
                            "' for the sharded strategy; accepted: '' (it takes none)");
  }
  return Outcome::ok();
}

DeviceLists sharded_order(const Problem& p) {
  DeviceLists lists(static_cast<size_t>(p.num_devices));
  auto add = [&](int64_t stage, int64_t micro_batch, plx_step_kind kind) {
    lists[static_cast<size_t>(p.stage_device[static_cast<size_t>(stage)])].push_back({stage, micro_batch, kind});
  };
  for (int64_t m = 0; m < p.num_micro_batches; ++m) {
    for (int64_t s = 0; s < p.num_stages; ++s) add(s, m, PLX_STEP_FORWARD);
    if (!p.training) continue;
    for (int64_t s = p.num_stages; s-- > 0;) add(s, m, PLX_STEP_BACKWARD);
  }
  if (p.training) {
    for (int64_t s = 0; s < p.num_stages; ++s) add(s, -1, PLX_STEP_UPDATE);
  }
  return lists;
}

}  // namespace plexus::strategy_sharded
