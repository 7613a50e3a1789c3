// The C face of the MPI collectives plugin: the table returned by the one exported
// symbol, plx_collectives_plugin_v1. Every entry is noexcept (collectives_common/c_entry.h).
#include "collectives_common/c_entry.h"
#include "collectives_common/validation.h"
#include "collectives_workers/collective_call.h"
#include "communicator.h"
#include "plexus/collectives_plugin.h"

// The opaque handle of the ABI is the communicator itself.
struct plx_comm final : plexus::collectives::mpi::MpiCommunicator {
  using MpiCommunicator::MpiCommunicator;
};

namespace plexus::collectives::mpi {
namespace {

constexpr const char* kName = "mpi";

plx_status comm_create(const plx_comm_config* config, plx_comm** out_comm, char* message,
                       size_t message_capacity) noexcept {
  return guarded(kName, message, message_capacity, [&] {
    Outcome valid = validate_config(config, out_comm);
    MPI_Comm world = MPI_COMM_NULL;
    if (valid.is_ok()) valid = open_world(*config, &world);
    if (valid.is_ok()) *out_comm = new plx_comm(*config, world);
    return valid;
  });
}

void comm_destroy(plx_comm* comm) noexcept { delete comm; }

template <Collective kind>
plx_status collective(plx_comm* comm, const plx_coll_args* args) noexcept {
  return guarded_collective(kName, kind, comm, args, [](workers::Communicator& c, const plx_coll_args& a) {
    return workers::run_collective(c, a, kind);
  });
}

void abort_comm(plx_comm* comm, const char* reason) noexcept { guarded_abort(comm, reason); }

const plx_collectives_plugin kTable = {
    sizeof(plx_collectives_plugin),
    PLX_COLLECTIVES_ABI_VERSION,
    kName,
    comm_create,
    comm_destroy,
    collective<Collective::all_reduce>,
    collective<Collective::all_gather>,
    collective<Collective::reduce_scatter>,
    collective<Collective::broadcast>,
    collective<Collective::barrier>,
    abort_comm,
};

}  // namespace
}  // namespace plexus::collectives::mpi

extern "C" __attribute__((visibility("default"))) const plx_collectives_plugin*
plx_collectives_plugin_v1(void) {
  return &plexus::collectives::mpi::kTable;
}
