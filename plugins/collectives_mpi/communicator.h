// A communicator of the MPI plugin: the cross-worker communicator (collectives_workers)
// over its own MPI communicator, a duplicate of MPI_COMM_WORLD so that its messages never
// meet anyone else's. Each call's messages are MpiTransfers.
#ifndef PLEXUS_COLLECTIVES_MPI_COMMUNICATOR_H
#define PLEXUS_COLLECTIVES_MPI_COMMUNICATOR_H

#include <mpi.h>

#include <atomic>
#include <memory>

#include "collectives_common/outcome.h"
#include "collectives_workers/communicator.h"
#include "plexus/collectives_plugin.h"

namespace plexus::collectives::mpi {

/**
 * Checks that `config` (already valid, see validate_config) matches the MPI job: R =
 * local_replicas x (ranks in MPI_COMM_WORLD) and first_local_replica = rank x
 * local_replicas (else PLX_ERR_UNSUPPORTED), initializes MPI if needed, and duplicates
 * MPI_COMM_WORLD without blocking past max(timeout, 60 s) (every worker must create its
 * communicators in the same order; PLX_ERR_TIMEOUT when one does not come). PLX_ERR_RUNTIME,
 * saying to restart the process, once kMaxKeptCommunicators failed ones are kept. On
 * success *out is the new MPI communicator, with MPI_ERRORS_RETURN.
 */
Outcome open_world(const plx_comm_config& config, MPI_Comm* out);

class MpiCommunicator : public workers::Communicator {
 public:
  /** Takes ownership of `comm` (from open_world). */
  MpiCommunicator(const plx_comm_config& config, MPI_Comm comm);
  /**
   * Frees the MPI communicator, unless a call on it failed or it was aborted: then it is
   * kept until MPI is finalized (keep_until_exit). Messages of the failed calls may still
   * be on their way; Open MPI gives a freed communicator's context id to the next one
   * created, and such a message would then be taken for the new communicator's, out of
   * sequence, and stall its first calls (a new session after a failure timed out).
   */
  ~MpiCommunicator() override;

  std::unique_ptr<workers::Transfers> transfers(const workers::Group& group, Collective kind) override;

 private:
  MPI_Comm comm_;
  std::atomic<bool> failed_{false};  // a call's transfers failed (set by MpiTransfers)
};

}  // namespace plexus::collectives::mpi

#endif  // PLEXUS_COLLECTIVES_MPI_COMMUNICATOR_H
