// The C face of the MPI collectives plugin: the table of the cross-worker layer
// (collectives_workers/plugin_table.h) with MPI's communicator.
#include "collectives_workers/plugin_table.h"
#include "communicator.h"

namespace plexus::collectives::mpi {
namespace {

constexpr char kName[] = "mpi";

Outcome open(const plx_comm_config& config, std::unique_ptr<workers::Communicator>* out) {
  MPI_Comm world = MPI_COMM_NULL;
  Outcome opened = open_world(config, &world);
  if (opened.is_ok()) *out = std::make_unique<MpiCommunicator>(config, world);
  return opened;
}

}  // namespace
}  // namespace plexus::collectives::mpi

extern "C" __attribute__((visibility("default"))) const plx_collectives_plugin*
plx_collectives_plugin_v1(void) {
  using namespace plexus::collectives;
  return workers::worker_plugin_table<mpi::kName, mpi::open>();
}
