// The point-to-point messages of one collective call between this worker and the group's
// other workers: the one thing a cross-worker plugin supplies (MPI's Isend/Irecv, Gloo's
// unbound buffers, ...). Everything above it (the exchange of calls, the member-order
// chain reduction, all_gather, broadcast: algorithms.h) is written once against this.
//
// Contract for an implementation: messages between two workers within one group arrive in
// the order they were posted (MPI's tag ordering, one TCP connection per pair); a receive
// may be posted longer than the message it matches, which then fills its beginning (the
// exchange of calls receives every envelope into a slot of fixed size); wait()
// never hangs: it gives up when nothing completed for the communicator's timeout, when the
// communicator is aborted, or when the transport reports a lost peer, and records the
// first failure, which every later wait returns. Every failure names the group and the
// replicas and workers it was waiting for (fail(), describe_peers()).
#ifndef PLEXUS_COLLECTIVES_WORKERS_TRANSFERS_H
#define PLEXUS_COLLECTIVES_WORKERS_TRANSFERS_H

#include <cstddef>
#include <string>
#include <vector>

#include "collectives_common/call.h"
#include "collectives_common/outcome.h"
#include "collectives_workers/group.h"

namespace plexus::collectives::workers {

/** Largest single message; longer transfers are split by post_send_all / post_recv_all. */
inline constexpr size_t kMaxMessageBytes = size_t{1} << 20;

class Transfers {
 public:
  using Id = size_t;

  virtual ~Transfers() = default;
  Transfers(const Transfers&) = delete;
  Transfers& operator=(const Transfers&) = delete;

  /** Posts one message (bytes <= kMaxMessageBytes) to / from worker `rank` (a receive takes
   *  a message of at most `bytes`); the id is for wait(). `data` stays valid until the message completed or the Transfers is destroyed. */
  virtual Id post_send(int rank, const void* data, size_t bytes) = 0;
  virtual Id post_recv(int rank, void* data, size_t bytes) = 0;
  /** Waits for one message (the others progress meanwhile). */
  virtual Outcome wait(Id id) = 0;
  /** Waits for every message posted so far. */
  virtual Outcome wait_all() = 0;

  /** Posts `bytes` as consecutive messages of at most kMaxMessageBytes. */
  void post_send_all(int rank, const void* data, size_t bytes);
  void post_recv_all(int rank, void* data, size_t bytes);

  /** "replica 1 (MPI rank 1) and replicas 2,3 (MPI rank 2)": the workers `ranks` with the
   *  replicas of the group they host, each named by peer_name(). */
  std::string describe_peers(const std::vector<int>& ranks) const;

 protected:
  Transfers(const Group& group, Collective kind) : group_(group), kind_(kind) {}

  /** Records the first failure as "<kind> on group {..}: <what>"; later ones are dropped. */
  void fail(plx_status status, const std::string& what);
  /** The first failure recorded (ok until then). */
  const Outcome& failure() const { return failure_; }
  /** How the transport names worker `rank`: "MPI rank 1", "worker 1 at host:port". */
  virtual std::string peer_name(int rank) const = 0;
  /** Called once, with the first failure's status (the MPI plugin shortens its exit
   *  barrier when a peer may be gone). */
  virtual void on_failure(plx_status /*status*/) {}

  const Group& group_;
  const Collective kind_;

 private:
  Outcome failure_;
};

}  // namespace plexus::collectives::workers

#endif  // PLEXUS_COLLECTIVES_WORKERS_TRANSFERS_H
