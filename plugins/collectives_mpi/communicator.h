// A communicator of the MPI plugin: this worker's replicas, its own MPI communicator
// (a duplicate of MPI_COMM_WORLD, so that its messages never meet anyone else's), the
// abort flag, and one Group per distinct member list, created on first use.
#ifndef PLEXUS_COLLECTIVES_MPI_COMMUNICATOR_H
#define PLEXUS_COLLECTIVES_MPI_COMMUNICATOR_H

#include <mpi.h>

#include <chrono>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <span>
#include <vector>

#include "collectives_common/abort_flag.h"
#include "collectives_common/outcome.h"
#include "collectives_common/validation.h"
#include "group.h"
#include "plexus/collectives_plugin.h"

namespace plexus::collectives::mpi {

/**
 * Checks that `config` (already valid, see validate_config) matches the MPI job: R =
 * local_replicas x (ranks in MPI_COMM_WORLD) and first_local_replica = rank x
 * local_replicas (else PLX_ERR_UNSUPPORTED), initializes MPI if needed, and duplicates
 * MPI_COMM_WORLD without blocking past max(timeout, 60 s) (every worker must create its
 * communicators in the same order; PLX_ERR_TIMEOUT when one does not come). On success *out is the new MPI communicator, with
 * MPI_ERRORS_RETURN.
 */
Outcome open_world(const plx_comm_config& config, MPI_Comm* out);

class Communicator {
 public:
  /** Takes ownership of `comm` (from open_world). */
  Communicator(const plx_comm_config& config, MPI_Comm comm);
  ~Communicator();
  Communicator(const Communicator&) = delete;
  Communicator& operator=(const Communicator&) = delete;

  const HostedReplicas& hosted() const { return hosted_; }
  const AbortFlag& abort_flag() const { return abort_; }
  std::chrono::milliseconds timeout() const { return timeout_; }
  MPI_Comm mpi() const { return comm_; }

  /**
   * The group of `members` (strictly increasing, with a member hosted here), created on
   * first use. Fails with PLX_ERR_UNSUPPORTED when its MPI tag (a hash of the member list)
   * is taken by another group this worker uses.
   */
  Outcome group(std::span<const int64_t> members, Group** out);

  /** Sets the abort flag (first reason wins) and wakes every local waiter. */
  void abort(const char* reason);

 private:
  HostedReplicas hosted_;
  std::chrono::milliseconds timeout_;
  MPI_Comm comm_;
  int rank_ = 0;
  int tag_limit_ = 32767;  // MPI_TAG_UB, at least 32767
  AbortFlag abort_;
  std::mutex groups_mutex_;
  std::map<std::vector<int64_t>, std::unique_ptr<Group>, MembersLess> groups_;
};

}  // namespace plexus::collectives::mpi

#endif  // PLEXUS_COLLECTIVES_MPI_COMMUNICATOR_H
