// The problem of one make_schedule call (strategy_plugin.h), checked and copied out of the C
// structs so that a strategy keeps no pointer into its arguments.
#ifndef PLEXUS_STRATEGY_COMMON_PROBLEM_H
#define PLEXUS_STRATEGY_COMMON_PROBLEM_H

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "plexus/strategy_plugin.h"
#include "strategy_common/outcome.h"

namespace plexus::strategy_common {

/// A checked plx_schedule_problem, owned. A value type; not shared between threads.
struct Problem {
  int64_t num_stages = 0;             ///< S >= 1
  int64_t num_devices = 0;            ///< D >= 1
  std::vector<int64_t> stage_device;  ///< [S], each in [0, D)
  int64_t num_micro_batches = 0;      ///< M >= 1
  bool training = false;              ///< forward, backward and update steps; else forward only
  std::string options;                ///< the strategy's options, "" for its defaults

  /// Steps device `d` runs: (stages on d) x (2M + 1) when training, x M otherwise.
  size_t steps_on_device(int64_t d) const;
};

/**
 * Checks the arguments of make_schedule and copies the problem into `out`.
 *
 * @param problem            The caller's problem. Borrowed for the call.
 * @param device_steps       [D] lists of `capacity` steps each. Only checked, not written.
 * @param capacity           Steps each list holds.
 * @param device_step_counts [D] counts. Only checked, not written.
 * @param out                Receives the copy; untouched on error.
 * @return PLX_OK; PLX_ERR_INVALID_ARGUMENT naming what is wrong: a NULL pointer,
 *         struct_size smaller than ABI version 1's, S, D or M outside [1, 2^24], a stage on
 *         a device outside [0, D), no list for a device that holds a stage, or `capacity`
 *         smaller than a device's steps.
 * Thread safety: safe; reads its arguments only.
 */
Outcome read_problem(const plx_schedule_problem* problem, plx_schedule_step* const* device_steps, size_t capacity,
                     const size_t* device_step_counts, Problem& out);

}  // namespace plexus::strategy_common

#endif  // PLEXUS_STRATEGY_COMMON_PROBLEM_H
