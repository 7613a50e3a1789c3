// The C call of make_schedule (strategy_plugin.h) around a strategy's planner, the same for
// every strategy: check and copy the problem, plan, and write the caller's lists and counts
// only on success. No C++ exception crosses the ABI.
#ifndef PLEXUS_STRATEGY_COMMON_PLANNER_CALL_H
#define PLEXUS_STRATEGY_COMMON_PLANNER_CALL_H

#include <cstddef>
#include <vector>

#include "plexus/strategy_plugin.h"
#include "strategy_common/outcome.h"
#include "strategy_common/problem.h"

namespace plexus::strategy_common {

/// Per device (0 .. D-1), its steps in the order it runs them.
using DeviceLists = std::vector<std::vector<plx_schedule_step>>;

/**
 * A strategy's planner: fills `out` with D lists for a checked `problem`, or returns
 * PLX_ERR_INVALID_ARGUMENT (a problem or options it cannot serve) with a message. It may
 * throw (std::bad_alloc, or anything for a bug); run_planner turns that into a status.
 * Must be safe to call from several threads at once.
 */
using Planner = Outcome (*)(const Problem& problem, DeviceLists& out);

/**
 * The body of a plugin's make_schedule: the arguments are those of plx_make_schedule_fn.
 * Reads the problem (read_problem), runs `plan`, checks that it returned D lists that fit
 * `capacity`, then copies them to device_steps[d] and their sizes to device_step_counts[d].
 *
 * @param strategy Short name of the strategy for messages, e.g. "pipelined". Static.
 * @param plan     The strategy's planner.
 * @return PLX_OK; PLX_ERR_INVALID_ARGUMENT (from read_problem or `plan`);
 *         PLX_ERR_RUNTIME (out of memory); PLX_ERR_INTERNAL (`plan` threw or returned
 *         lists that do not fit). On error the message is written to `message` and the
 *         caller's lists and counts are untouched.
 * Thread safety: safe if `plan` is.
 */
plx_status run_planner(const char* strategy, Planner plan, const plx_schedule_problem* problem,
                       plx_schedule_step* const* device_steps, size_t capacity, size_t* device_step_counts,
                       char* message, size_t message_capacity) noexcept;

}  // namespace plexus::strategy_common

#endif  // PLEXUS_STRATEGY_COMMON_PLANNER_CALL_H
