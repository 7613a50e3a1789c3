// The C face every collectives plugin shares: its entries are noexcept, so a C++ exception
// never crosses the ABI; an internal failure becomes a status and a message.
#ifndef PLEXUS_COLLECTIVES_COMMON_C_ENTRY_H
#define PLEXUS_COLLECTIVES_COMMON_C_ENTRY_H

#include <new>
#include <string>

#include "collectives_common/call.h"
#include "collectives_common/messages.h"
#include "collectives_common/outcome.h"
#include "plexus/collectives_plugin.h"

namespace plexus::collectives {

/** Writes `outcome`'s message (if any) and returns its status. */
inline plx_status report(const Outcome& outcome, char* message, size_t capacity) {
  if (!outcome.is_ok()) write_message(message, capacity, outcome.message);
  return outcome.status;
}

/**
 * Runs `body()` (returning an Outcome) for an entry of the plugin named `plugin`, writing
 * failures to message/capacity: std::bad_alloc becomes PLX_ERR_RUNTIME ("out of memory in
 * the <plugin> collectives plugin"), anything else PLX_ERR_INTERNAL.
 */
template <typename Body>
plx_status guarded(const char* plugin, char* message, size_t capacity, Body body) noexcept {
  try {
    return report(body(), message, capacity);
  } catch (const std::bad_alloc&) {
    write_message(message, capacity,
                  std::string("out of memory in the ") + plugin + " collectives plugin");
    return PLX_ERR_RUNTIME;
  } catch (...) {
    write_message(message, capacity,
                  std::string("internal error in the ") + plugin + " collectives plugin");
    return PLX_ERR_INTERNAL;
  }
}

/**
 * One collective entry: refuses args that cannot even be read (NULL or a struct_size too
 * small: nowhere safe to write a message) and a NULL comm, then runs
 * run(*comm, *args) -> Outcome under guarded().
 */
template <typename Comm, typename Run>
plx_status guarded_collective(const char* plugin, Collective kind, Comm* comm,
                              const plx_coll_args* args, Run run) noexcept {
  if (args == nullptr || args->struct_size < sizeof(plx_coll_args)) {
    return PLX_ERR_INVALID_ARGUMENT;
  }
  return guarded(plugin, args->message, args->message_capacity, [&] {
    if (comm == nullptr) {
      return Outcome::error(PLX_ERR_INVALID_ARGUMENT,
                            std::string(collective_name(kind)) + ": comm is NULL");
    }
    return run(*comm, *args);
  });
}

/** The abort entry: comm->abort(reason) unless comm is NULL; a failure to lock is dropped
 *  (nothing more can be done from there). */
template <typename Comm>
void guarded_abort(Comm* comm, const char* reason) noexcept {
  if (comm == nullptr) return;
  try {
    comm->abort(reason);
  } catch (...) {
  }
}

}  // namespace plexus::collectives

#endif  // PLEXUS_COLLECTIVES_COMMON_C_ENTRY_H
