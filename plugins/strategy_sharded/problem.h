// The problem of one make_schedule call, checked and copied out of the C structs (the
// plugin keeps no pointer into its arguments).
#ifndef PLEXUS_STRATEGY_SHARDED_PROBLEM_H
#define PLEXUS_STRATEGY_SHARDED_PROBLEM_H

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "outcome.h"
#include "plexus/strategy_plugin.h"

namespace plexus::strategy_sharded {

struct Problem {
  int64_t num_stages = 0;             ///< S
  int64_t num_devices = 0;            ///< D
  std::vector<int64_t> stage_device;  ///< [S], each in [0, D)
  int64_t num_micro_batches = 0;      ///< M
  bool training = false;
  std::string options;

  /// Steps device d runs: (stages on d) x (2M + 1) when training, x M otherwise.
  size_t steps_on_device(int64_t d) const;
};

/**
 * Checks the arguments of make_schedule and copies the problem into `out`: non-NULL
 * pointers, struct_size, S, D, M >= 1, every stage on a device in [0, D), a non-NULL list
 * for every device that holds a stage, and `capacity` large enough for each device's steps.
 * A failure is PLX_ERR_INVALID_ARGUMENT naming what is wrong.
 */
Outcome read_problem(const plx_schedule_problem* problem, plx_schedule_step* const* device_steps, size_t capacity,
                     const size_t* device_step_counts, Problem& out);

}  // namespace plexus::strategy_sharded

#endif  // PLEXUS_STRATEGY_SHARDED_PROBLEM_H
