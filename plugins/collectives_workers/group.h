// One group (sorted member list) of a cross-worker communicator, as this worker sees it: the
// members split by worker (global replica r lives on worker r / R_local, so each worker's
// members are consecutive in the list), the rendezvous of the members hosted here, the
// tag of the group's messages, and what the local leader (the first member hosted
// here, which does all of this worker's traffic for the group) hands to the others.
#ifndef PLEXUS_COLLECTIVES_WORKERS_GROUP_H
#define PLEXUS_COLLECTIVES_WORKERS_GROUP_H

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "collectives_common/group_rendezvous.h"
#include "collectives_common/outcome.h"

namespace plexus::collectives::workers {

/** The members of a group hosted by one worker: positions [first, first + count). */
struct WorkerMembers {
  int rank = 0;       // the worker's rank in the communicator
  size_t first = 0;   // position of its first member in the group
  size_t count = 0;   // members it hosts
};

class Group {
 public:
  /**
   * `members` strictly increasing, `local_replicas` per worker, `rank` this worker's.
   * `abort` outlives the group.
   */
  Group(std::vector<int64_t> members, int64_t local_replicas, int rank, int tag,
        const AbortFlag& abort, std::chrono::milliseconds timeout);

  std::span<const int64_t> members() const { return members_; }
  int tag() const { return tag_; }
  std::span<const WorkerMembers> workers() const { return workers_; }
  /** Index of this worker in workers(). */
  size_t self() const { return self_; }
  const WorkerMembers& mine() const { return workers_[self_]; }
  /** The members a worker hosts, for messages ("replicas 2,3"). */
  std::span<const int64_t> members_of(const WorkerMembers& worker) const;
  /** The worker entry of `rank`, or nullptr. */
  const WorkerMembers* worker_of_rank(int rank) const;

  /** The rendezvous of the members hosted here (positions relative to mine().first). */
  GroupRendezvous& local() { return local_; }

  /** The leader's verdict for the current call, read by the others after a barrier. */
  Outcome outcome;
  /** Scratch of the leader's data phases (partials, received blocks), kept between calls. */
  std::vector<std::byte> partial;
  std::vector<std::byte> staging;
  /** The envelopes of the exchange of calls (call_exchange.h), one slot per worker. */
  std::vector<std::byte> envelopes;

  /**
   * Set by the leader when a call failed in a way that leaves the workers out of step on
   * this group (a timeout, a lost peer): every later call then fails the same way.
   */
  bool broken() const { return !broken_.is_ok(); }
  Outcome broken_outcome() const;
  void mark_broken(const Outcome& failure) { broken_ = failure; }

 private:
  std::vector<int64_t> members_;
  std::vector<WorkerMembers> workers_;
  size_t self_ = 0;
  int tag_;
  GroupRendezvous local_;
  Outcome broken_;  // touched by the leader only (calls on a group are ordered)
};

}  // namespace plexus::collectives::workers

#endif  // PLEXUS_COLLECTIVES_WORKERS_GROUP_H
