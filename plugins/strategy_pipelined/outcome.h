// The result of a step of make_schedule: PLX_OK, or a status with the message the plugin
// writes into the caller's buffer. No C++ exception crosses the ABI (plugin_table.cpp).
#ifndef PLEXUS_STRATEGY_PIPELINED_OUTCOME_H
#define PLEXUS_STRATEGY_PIPELINED_OUTCOME_H

#include <cstddef>
#include <string>
#include <utility>

#include "plexus/plexus.h"

namespace plexus::strategy_pipelined {

struct Outcome {
  plx_status status = PLX_OK;
  std::string message;

  static Outcome ok() { return {}; }
  static Outcome invalid(std::string message) { return {PLX_ERR_INVALID_ARGUMENT, std::move(message)}; }
  bool is_ok() const { return status == PLX_OK; }
};

/// Copies `text` into message[0 .. capacity), truncated and NUL-terminated; nothing when
/// message is NULL or capacity is 0.
void write_message(char* message, size_t capacity, const std::string& text) noexcept;

}  // namespace plexus::strategy_pipelined

#endif  // PLEXUS_STRATEGY_PIPELINED_OUTCOME_H
