// all_gather across workers: the leader gathers its members' sends into its own recv at
// their positions, sends that block to every other worker and receives theirs at theirs,
// then copies the whole result to the other local members.
#include <cstring>

#include "collectives_workers/algorithms.h"

namespace plexus::collectives::workers {

Outcome exchange_blocks(Transfers& transfers, Group& group, std::span<const CallDescriptor> local) {
  const size_t bytes = local[0].count * kElementBytes;
  auto* gathered = static_cast<std::byte*>(local[0].recv);
  const WorkerMembers& mine = group.mine();
  for (size_t j = 0; j < local.size(); ++j) {
    if (bytes > 0) std::memcpy(gathered + (mine.first + j) * bytes, local[j].send, bytes);
  }
  for (const WorkerMembers& worker : group.workers()) {
    if (worker.rank == mine.rank) continue;
    transfers.post_send_all(worker.rank, gathered + mine.first * bytes, mine.count * bytes);
    transfers.post_recv_all(worker.rank, gathered + worker.first * bytes, worker.count * bytes);
  }
  if (Outcome done = transfers.wait_all(); !done.is_ok()) return done;
  copy_to_local_recvs(local, gathered, group.members().size() * bytes);
  return Outcome::ok();
}

void copy_to_local_recvs(std::span<const CallDescriptor> local, const void* source, size_t bytes) {
  if (bytes == 0) return;
  for (const CallDescriptor& call : local) {
    if (call.recv != source) std::memcpy(call.recv, source, bytes);
  }
}

}  // namespace plexus::collectives::workers
