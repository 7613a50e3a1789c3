// The C face of the local collectives plugin: the table returned by the one exported
// symbol, plx_collectives_plugin_v1. Every entry is noexcept: a C++ exception never
// crosses the ABI; an internal failure becomes a status and a message.
#include <new>

#include "algorithms.h"
#include "collective_call.h"
#include "communicator.h"
#include "collectives_common/messages.h"
#include "plexus/collectives_plugin.h"
#include "validation.h"

// The opaque handle of the ABI is the communicator itself.
struct plx_comm final : plexus::collectives::local::Communicator {
  using Communicator::Communicator;
};

namespace plexus::collectives::local {
namespace {

constexpr const char* kOutOfMemory = "out of memory in the local collectives plugin";
constexpr const char* kInternal = "internal error in the local collectives plugin";

plx_status comm_create(const plx_comm_config* config, plx_comm** out_comm, char* message,
                       size_t message_capacity) noexcept {
  try {
    const Outcome valid = validate_config(config, out_comm);
    if (!valid.is_ok()) {
      write_message(message, message_capacity, valid.message);
      return valid.status;
    }
    *out_comm = new plx_comm(*config);
    return PLX_OK;
  } catch (const std::bad_alloc&) {
    write_message(message, message_capacity, kOutOfMemory);
    return PLX_ERR_RUNTIME;
  } catch (...) {
    write_message(message, message_capacity, kInternal);
    return PLX_ERR_INTERNAL;
  }
}

void comm_destroy(plx_comm* comm) noexcept { delete comm; }

// One entry per collective: checks what must be checked before args can even be read,
// then runs the call and reports its outcome.
template <Collective kind, DataPhase phase>
plx_status collective(plx_comm* comm, const plx_coll_args* args) noexcept {
  if (args == nullptr || args->struct_size < sizeof(plx_coll_args)) {
    return PLX_ERR_INVALID_ARGUMENT;  // nowhere safe to write a message
  }
  try {
    Outcome outcome = comm == nullptr
                          ? Outcome::error(PLX_ERR_INVALID_ARGUMENT,
                                           std::string(collective_name(kind)) + ": comm is NULL")
                          : run_collective(*comm, *args, kind, phase);
    if (!outcome.is_ok()) write_message(args->message, args->message_capacity, outcome.message);
    return outcome.status;
  } catch (const std::bad_alloc&) {
    write_message(args->message, args->message_capacity, kOutOfMemory);
    return PLX_ERR_RUNTIME;
  } catch (...) {
    write_message(args->message, args->message_capacity, kInternal);
    return PLX_ERR_INTERNAL;
  }
}

void abort_comm(plx_comm* comm, const char* reason) noexcept {
  if (comm == nullptr) return;
  try {
    comm->abort(reason);
  } catch (...) {
    // Locking failed (std::system_error); nothing more can be done from here.
  }
}

const plx_collectives_plugin kTable = {
    sizeof(plx_collectives_plugin),
    PLX_COLLECTIVES_ABI_VERSION,
    "local",
    comm_create,
    comm_destroy,
    collective<Collective::all_reduce, all_reduce_phase>,
    collective<Collective::all_gather, all_gather_phase>,
    collective<Collective::reduce_scatter, reduce_scatter_phase>,
    collective<Collective::broadcast, broadcast_phase>,
    collective<Collective::barrier, nullptr>,
    abort_comm,
};

}  // namespace
}  // namespace plexus::collectives::local

extern "C" __attribute__((visibility("default"))) const plx_collectives_plugin*
plx_collectives_plugin_v1(void) {
  return &plexus::collectives::local::kTable;
}
