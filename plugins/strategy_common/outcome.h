// The result of one step of a strategy's make_schedule: PLX_OK, or an error status with the
// message the plugin writes into the caller's buffer (strategy_plugin.h). Plugins return
// Outcomes instead of throwing, so that no C++ exception crosses the ABI (planner_call.h).
#ifndef PLEXUS_STRATEGY_COMMON_OUTCOME_H
#define PLEXUS_STRATEGY_COMMON_OUTCOME_H

#include <cstddef>
#include <string>
#include <utility>

#include "plexus/types.h"

namespace plexus::strategy_common {

/// A status and, unless PLX_OK, the UTF-8 message explaining it. A value type; not shared.
struct Outcome {
  plx_status status = PLX_OK;
  std::string message;  ///< empty on success

  /// Success.
  static Outcome ok() { return {}; }
  /// PLX_ERR_INVALID_ARGUMENT with `message` (a problem the strategy cannot serve).
  static Outcome invalid(std::string message) { return {PLX_ERR_INVALID_ARGUMENT, std::move(message)}; }
  /// PLX_ERR_INTERNAL with `message` (a bug in the plugin itself).
  static Outcome internal(std::string message) { return {PLX_ERR_INTERNAL, std::move(message)}; }
  /// True for PLX_OK.
  bool is_ok() const { return status == PLX_OK; }
};

/**
 * Copies `text` into message[0 .. capacity), truncated to capacity - 1 bytes and
 * NUL-terminated (the caller's buffer of make_schedule). Does nothing when `message` is
 * NULL or `capacity` is 0. Truncation may cut a UTF-8 sequence; messages are ASCII.
 * Thread safety: safe; writes only `message`.
 */
void write_message(char* message, size_t capacity, const std::string& text) noexcept;

}  // namespace plexus::strategy_common

#endif  // PLEXUS_STRATEGY_COMMON_OUTCOME_H
