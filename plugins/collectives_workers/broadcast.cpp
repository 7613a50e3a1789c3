// broadcast across workers: the root's worker sends the root's send to every other
// worker's leader, which receives it into its own recv; then each worker's leader copies
// it to its other members' recvs.
#include <algorithm>

#include "collectives_workers/algorithms.h"

namespace plexus::collectives::workers {

Outcome send_from_root(Transfers& transfers, Group& group, std::span<const CallDescriptor> local) {
  const CallDescriptor& call = local[0];
  const size_t bytes = call.count * kElementBytes;
  const std::span<const int64_t> members = group.members();
  const auto root =
      static_cast<size_t>(std::lower_bound(members.begin(), members.end(), call.root) -
                          members.begin());
  const WorkerMembers& mine = group.mine();
  const void* source = call.recv;
  if (root >= mine.first && root < mine.first + mine.count) {
    source = local[root - mine.first].send;
    for (const WorkerMembers& worker : group.workers()) {
      if (worker.rank != mine.rank) transfers.post_send_all(worker.rank, source, bytes);
    }
  } else {
    for (const WorkerMembers& worker : group.workers()) {
      if (root >= worker.first && root < worker.first + worker.count) {
        transfers.post_recv_all(worker.rank, call.recv, bytes);
      }
    }
  }
  if (Outcome done = transfers.wait_all(); !done.is_ok()) return done;
  copy_to_local_recvs(local, source, bytes);
  return Outcome::ok();
}

}  // namespace plexus::collectives::workers
