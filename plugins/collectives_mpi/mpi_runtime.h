// The process's MPI library, as the plugin uses it: initialized once with
// MPI_THREAD_MULTIPLE (unless the application already did), and, if the plugin initialized
// it, finalized at exit once every rank has reached a (timed) exit barrier: 10 minutes
// after successful runs, 10 s after a failed call. A rank that never comes (hung, or dead)
// would hang MPI_Finalize; without it the process exits, mpirun reports the abnormal exit
// and stops the job.
#ifndef PLEXUS_COLLECTIVES_MPI_MPI_RUNTIME_H
#define PLEXUS_COLLECTIVES_MPI_MPI_RUNTIME_H

#include <mpi.h>

#include <string>

#include "collectives_common/outcome.h"

namespace plexus::collectives::mpi {

/**
 * Sets Open MPI's shared-memory eager limit to 8 KiB (OMPI_MCA_btl_vader_eager_limit) unless
 * the environment sets it, so that a 4 KiB call's envelope goes without a handshake. Only
 * affects an MPI_Init that follows; ensure_mpi() calls it. Not thread-safe (setenv).
 */
void use_default_eager_limit();

/**
 * Initializes MPI (MPI_Init_thread with MPI_THREAD_MULTIPLE) unless it is initialized;
 * fails with PLX_ERR_UNSUPPORTED when MPI was finalized or offers less than
 * MPI_THREAD_MULTIPLE (the replicas' threads call MPI concurrently). Thread-safe.
 */
Outcome ensure_mpi();

/** Records that a call failed with peers possibly gone (shortens the exit barrier). */
void note_failure() noexcept;

/**
 * Keeps `comm` allocated until MPI is finalized instead of freeing it, so that its context
 * id is not reused while messages of its failed calls may still arrive (MpiCommunicator's
 * destructor). Thread-safe.
 */
void keep_until_exit(MPI_Comm comm);

/** MPI's text for an error code, e.g. "MPI_ERR_PROC_FAILED: ...". */
std::string mpi_error_text(int code);

}  // namespace plexus::collectives::mpi

#endif  // PLEXUS_COLLECTIVES_MPI_MPI_RUNTIME_H
