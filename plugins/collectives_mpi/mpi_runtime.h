// The process's MPI library, as the plugin uses it: initialized once with
// MPI_THREAD_MULTIPLE (unless the application already did), and, if the plugin initialized
// it, finalized at exit once every rank has reached a (timed) exit barrier: 10 minutes
// after successful runs, 10 s after a failed call. A rank that never comes (hung, or dead)
// would hang MPI_Finalize; without it the process exits, mpirun reports the abnormal exit
// and stops the job.
#ifndef PLEXUS_COLLECTIVES_MPI_MPI_RUNTIME_H
#define PLEXUS_COLLECTIVES_MPI_MPI_RUNTIME_H

#include <mpi.h>

#include <cstddef>
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

/**
 * How many communicators keep_until_exit keeps before comm_create refuses new ones. Each
 * kept one holds an Open MPI context id (the ob1 PML carries it in a 16-bit header field:
 * 65,535 per process, the application's communicators included) and the late messages of
 * its failed calls, each at most one eager send per peer (8 KiB in shared memory as this
 * plugin sets it, 64 KiB over TCP; larger ones wait for a handshake that never comes): at
 * most 64 x 64 KiB x 8 peers = 32 MiB at 9 ranks, and 64 of the 65,535 ids. A process
 * whose collectives failed 64 times is in a job that keeps losing workers; its launcher
 * restarts it from a checkpoint long before.
 */
inline constexpr size_t kMaxKeptCommunicators = 64;

/**
 * OK while fewer than kMaxKeptCommunicators are kept; else PLX_ERR_RUNTIME with a message
 * that gives the count and says to restart the process. Thread-safe.
 */
Outcome check_kept_bound();

/** MPI's text for an error code, e.g. "MPI_ERR_PROC_FAILED: ...". */
std::string mpi_error_text(int code);

}  // namespace plexus::collectives::mpi

#endif  // PLEXUS_COLLECTIVES_MPI_MPI_RUNTIME_H
