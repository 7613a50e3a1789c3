// A communicator of a plugin whose replicas are spread over several processes (workers),
// one per replica block: worker w hosts replicas [w L, (w + 1) L) for L local replicas
// each. It holds what every such plugin keeps (the hosted replicas, the timeout, the abort
// flag, one Group per distinct member list); the plugin adds the transport by deriving
// from it and returning its Transfers for each call.
#ifndef PLEXUS_COLLECTIVES_WORKERS_COMMUNICATOR_H
#define PLEXUS_COLLECTIVES_WORKERS_COMMUNICATOR_H

#include <chrono>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <span>
#include <string>
#include <vector>

#include "collectives_common/abort_flag.h"
#include "collectives_common/outcome.h"
#include "collectives_common/validation.h"
#include "collectives_workers/group.h"
#include "collectives_workers/transfers.h"
#include "plexus/collectives_plugin.h"

namespace plexus::collectives::workers {

/**
 * Checks that `config` (valid, see validate_config) fits a job of `size` workers of which
 * this process is `rank`: R = local_replicas x size and first_local_replica = rank x
 * local_replicas, else PLX_ERR_UNSUPPORTED with a message naming the worker as `worker`
 * says ("MPI rank 1 of 2", "worker 1 of 2 in PLEXUS_CLUSTER").
 */
Outcome check_layout(const plx_comm_config& config, int rank, int size, const std::string& worker);

class Communicator {
 public:
  /** `config` valid and checked by check_layout; `rank` this worker's; messages of a group
   *  are tagged with a hash of its members in [0, tag_limit]. */
  Communicator(const plx_comm_config& config, int rank, int tag_limit);
  virtual ~Communicator() = default;
  Communicator(const Communicator&) = delete;
  Communicator& operator=(const Communicator&) = delete;

  const HostedReplicas& hosted() const { return hosted_; }
  const AbortFlag& abort_flag() const { return abort_; }
  std::chrono::milliseconds timeout() const { return timeout_; }
  int rank() const { return rank_; }

  /**
   * The group of `members` (strictly increasing, with a member hosted here), created on
   * first use. Fails with PLX_ERR_UNSUPPORTED when its tag (a hash of the member list) is
   * taken by another group this worker uses.
   */
  Outcome group(std::span<const int64_t> members, Group** out);

  /** The messages of one call of `kind` on `group`, made by the group's leader here. */
  virtual std::unique_ptr<Transfers> transfers(const Group& group, Collective kind) = 0;

  /** Sets the abort flag (first reason wins) and wakes every local waiter; a transport
   *  that blocks elsewhere also wakes those waits. Thread-safe. */
  virtual void abort(const char* reason);

 private:
  HostedReplicas hosted_;
  std::chrono::milliseconds timeout_;
  int rank_;
  int tag_limit_;
  AbortFlag abort_;
  std::mutex groups_mutex_;
  std::map<std::vector<int64_t>, std::unique_ptr<Group>, MembersLess> groups_;
};

}  // namespace plexus::collectives::workers

#endif  // PLEXUS_COLLECTIVES_WORKERS_COMMUNICATOR_H
