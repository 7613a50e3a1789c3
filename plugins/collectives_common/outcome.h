// The result of an internal step: PLX_OK, or an error status with its message. The C
// table (plugin_table.cpp) turns it into the return value and args->message.
#ifndef PLEXUS_COLLECTIVES_COMMON_OUTCOME_H
#define PLEXUS_COLLECTIVES_COMMON_OUTCOME_H

#include <string>
#include <utility>

#include "plexus/types.h"

namespace plexus::collectives {

struct Outcome {
  plx_status status = PLX_OK;
  std::string message;  // empty on success

  static Outcome ok() { return {}; }
  static Outcome error(plx_status status, std::string message) {
    return {status, std::move(message)};
  }
  bool is_ok() const { return status == PLX_OK; }
};

}  // namespace plexus::collectives

#endif  // PLEXUS_COLLECTIVES_COMMON_OUTCOME_H
