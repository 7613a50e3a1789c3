// all_reduce across workers as a reduce-scatter then an all-gather, in member order (see
// algorithms.h).
//
// The count elements are cut into one range per worker. Worker k receives range k of every
// other worker's members' sends, reduces range k over all members in member order into its
// first member's recv (reduce_in_member_order: the same bits as the chain and as one
// process), and sends the finished range to every other worker, which receives it straight
// into its first member's recv. Each link then carries (W-1)/W of the vector per member each
// way in the first phase and (W-1)/W of it each way in the second, both directions at once,
// where the chain carries the whole vector forward and then back (bench/README.md,
// "mpi_allreduce_bench").
#include <vector>

#include "collectives_common/reduce_kernels.h"
#include "collectives_workers/algorithms.h"

namespace plexus::collectives::workers {
namespace {

struct Range {
  size_t begin = 0;
  size_t end = 0;
  size_t bytes() const { return (end - begin) * kElementBytes; }
};

// Worker w's share of `count` elements out of `workers`: the same on every worker.
Range range_of(size_t w, size_t count, size_t workers) { return {count * w / workers, count * (w + 1) / workers}; }

std::byte* at(void* buffer, size_t element) { return static_cast<std::byte*>(buffer) + element * kElementBytes; }
const std::byte* at(const void* buffer, size_t element) {
  return static_cast<const std::byte*>(buffer) + element * kElementBytes;
}

// Every member's call in member order, its send pointing at this worker's range: local
// members' own sends, other workers' members' blocks received into group.staging (posted here).
std::vector<CallDescriptor> post_range_receives(Transfers& transfers, Group& group,
                                                std::span<const CallDescriptor> local, Range mine) {
  std::vector<CallDescriptor> calls(group.members().size(), local[0]);
  group.staging.resize((calls.size() - local.size()) * mine.bytes());
  std::byte* block = group.staging.data();
  for (const WorkerMembers& w : group.workers()) {
    for (size_t m = 0; m < w.count; ++m) {
      CallDescriptor& c = calls[w.first + m];
      if (w.rank == group.mine().rank) {
        c = local[m];
        c.send = at(local[m].send, mine.begin);
        continue;
      }
      c.send = block;
      if (mine.bytes() > 0) transfers.post_recv_all(w.rank, block, mine.bytes());
      block += mine.bytes();
    }
  }
  return calls;
}

}  // namespace

Outcome split_reduce(Transfers& transfers, Group& group, std::span<const CallDescriptor> local) {
  const CallDescriptor& call = local[0];
  const std::span<const WorkerMembers> workers = group.workers();
  const Range mine = range_of(group.self(), call.count, workers.size());
  // Phase 1: this worker's range of every member; every other worker's range of ours.
  const std::vector<CallDescriptor> calls = post_range_receives(transfers, group, local, mine);
  for (size_t w = 0; w < workers.size(); ++w) {
    const Range theirs = range_of(w, call.count, workers.size());
    if (w == group.self() || theirs.bytes() == 0) continue;
    for (const CallDescriptor& m : local) transfers.post_send_all(workers[w].rank, at(m.send, theirs.begin), theirs.bytes());
  }
  // Every send of phase 1 is done before a recv (which may be its send) is written.
  if (Outcome scattered = transfers.wait_all(); !scattered.is_ok()) return scattered;
  void* const result[] = {at(call.recv, mine.begin)};
  reduce_in_member_order(call.dtype, call.op, calls, 0, mine.end - mine.begin, result, /*streaming=*/false);
  // Phase 2: the finished ranges, straight into the first member's recv.
  for (size_t w = 0; w < workers.size(); ++w) {
    const Range theirs = range_of(w, call.count, workers.size());
    if (w == group.self()) continue;
    if (mine.bytes() > 0) transfers.post_send_all(workers[w].rank, result[0], mine.bytes());
    if (theirs.bytes() > 0) transfers.post_recv_all(workers[w].rank, at(call.recv, theirs.begin), theirs.bytes());
  }
  if (Outcome gathered = transfers.wait_all(); !gathered.is_ok()) return gathered;
  if (call.count > 0) copy_to_local_recvs(local, call.recv, call.count * kElementBytes);
  return Outcome::ok();
}

}  // namespace plexus::collectives::workers
