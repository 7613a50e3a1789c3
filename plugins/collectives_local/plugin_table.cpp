// The C face of the local collectives plugin: the table returned by the one exported
// symbol, plx_collectives_plugin_v1. Every entry is noexcept: a C++ exception never
// crosses the ABI; an internal failure becomes a status and a message.
#include "algorithms.h"
#include "collective_call.h"
#include "communicator.h"
#include "collectives_common/c_entry.h"
#include "plexus/collectives_plugin.h"
#include "collectives_common/validation.h"

// The opaque handle of the ABI is the communicator itself.
struct plx_comm final : plexus::collectives::local::Communicator {
  using Communicator::Communicator;
};

namespace plexus::collectives::local {
namespace {

// The local plugin's own limit: every replica is a thread of this process.
Outcome check_single_process(const plx_comm_config& config) {
  if (config.local_replicas == config.replication_factor) return Outcome::ok();
  return Outcome::error(
      PLX_ERR_UNSUPPORTED,
      "comm_create: the local collectives plugin serves only single-process jobs (every "
      "replica a thread of this process), but this process hosts " +
          std::to_string(config.local_replicas) + " of " +
          std::to_string(config.replication_factor) +
          " replicas; use a multi-process plugin such as mpi");
}

constexpr const char* kName = "local";

plx_status comm_create(const plx_comm_config* config, plx_comm** out_comm, char* message,
                       size_t message_capacity) noexcept {
  return guarded(kName, message, message_capacity, [&] {
    Outcome valid = validate_config(config, out_comm);
    if (valid.is_ok()) valid = check_single_process(*config);
    if (valid.is_ok()) *out_comm = new plx_comm(*config);
    return valid;
  });
}

void comm_destroy(plx_comm* comm) noexcept { delete comm; }

template <Collective kind, DataPhase phase>
plx_status collective(plx_comm* comm, const plx_coll_args* args) noexcept {
  return guarded_collective(kName, kind, comm, args, [](Communicator& c, const plx_coll_args& a) {
    return run_collective(c, a, kind, phase);
  });
}

void abort_comm(plx_comm* comm, const char* reason) noexcept { guarded_abort(comm, reason); }

const plx_collectives_plugin kTable = {
    sizeof(plx_collectives_plugin),
    PLX_COLLECTIVES_ABI_VERSION,
    kName,
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
