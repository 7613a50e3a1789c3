// A communicator of the local plugin: the replicas it serves, the abort flag, and one
// GroupRendezvous per distinct member list, created on first use and kept until the
// communicator is destroyed (a replica may use several groups, in any order).
#ifndef PLEXUS_COLLECTIVES_LOCAL_COMMUNICATOR_H
#define PLEXUS_COLLECTIVES_LOCAL_COMMUNICATOR_H

#include <chrono>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <span>
#include <vector>

#include "collectives_common/abort_flag.h"
#include "collectives_common/group_rendezvous.h"
#include "collectives_common/validation.h"
#include "plexus/collectives_plugin.h"

namespace plexus::collectives::local {

class Communicator {
 public:
  /** `config` must have passed validate_config(). */
  explicit Communicator(const plx_comm_config& config);
  Communicator(const Communicator&) = delete;
  Communicator& operator=(const Communicator&) = delete;

  const HostedReplicas& hosted() const { return hosted_; }
  const AbortFlag& abort_flag() const { return abort_; }

  /** The rendezvous of `members` (strictly increasing), created on first use. */
  GroupRendezvous& group(std::span<const int64_t> members);

  /** Sets the abort flag (first reason wins) and wakes every waiter of every group. */
  void abort(const char* reason);

 private:
  HostedReplicas hosted_;
  std::chrono::milliseconds timeout_;
  AbortFlag abort_;
  std::mutex groups_mutex_;
  std::map<std::vector<int64_t>, std::unique_ptr<GroupRendezvous>, MembersLess> groups_;
};

}  // namespace plexus::collectives::local

#endif  // PLEXUS_COLLECTIVES_LOCAL_COMMUNICATOR_H
