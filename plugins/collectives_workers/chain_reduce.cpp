// all_reduce / reduce_scatter across workers, in member order (see algorithms.h).
//
// The reduced vector has `total` elements: count for all_reduce, g * count for
// reduce_scatter (member p receives block p). It is cut into chunks of kChunkBytes of
// partial; worker k of the chain receives chunk c from worker k-1, folds its own members
// into it and sends it on while chunk c+1 is in flight, so every link is busy at once. The
// last worker finishes each chunk and sends each worker the elements its members receive:
// all of them for all_reduce, its members' blocks for reduce_scatter.
#include <algorithm>
#include <cstring>

#include "collectives_workers/algorithms.h"
#include "collectives_common/reduce_kernels.h"

namespace plexus::collectives::workers {
namespace {

// Small enough that a 256 KiB call is 4 chunks in flight at once, large enough that the
// per-message cost stays small next to the copy (bench/README.md, "mpi_allreduce_bench").
constexpr size_t kChunkBytes = size_t{64} << 10;

struct Range {
  size_t begin = 0;
  size_t end = 0;
};

Range intersect(Range a, Range b) {
  const size_t begin = std::max(a.begin, b.begin);
  return {begin, std::max(begin, std::min(a.end, b.end))};
}

// The plan every worker derives from the agreed call alone.
struct Plan {
  Collective kind;
  size_t count;   // elements per member, as in the call
  size_t total;   // elements reduced
  size_t partial_bytes;  // per partial element
  size_t chunk;   // elements per chunk

  // The elements of the result the members of `worker` receive.
  Range range_of(const WorkerMembers& worker) const {
    if (kind == Collective::all_reduce) return {0, total};
    return {worker.first * count, (worker.first + worker.count) * count};
  }
};

Plan plan_of(const Group& group, const CallDescriptor& call) {
  Plan plan{call.kind, call.count, call.count, partial_element_bytes(call.dtype, call.op), 0};
  if (call.kind == Collective::reduce_scatter) plan.total = group.members().size() * call.count;
  plan.chunk = kChunkBytes / plan.partial_bytes;
  return plan;
}

// Where the finished elements of `range` go on this worker: element e at base + (e - origin).
struct ResultBuffer {
  std::byte* base = nullptr;
  size_t origin = 0;
  std::byte* at(size_t element) const { return base + (element - origin) * kElementBytes; }
};

ResultBuffer result_buffer(Group& group, const Plan& plan, std::span<const CallDescriptor> local,
                           bool last) {
  if (plan.kind == Collective::all_reduce) return {static_cast<std::byte*>(local[0].recv), 0};
  // reduce_scatter: the last worker finishes everything, the others receive their blocks.
  const Range mine = plan.range_of(group.mine());
  const Range held = last ? Range{0, plan.total} : mine;
  group.staging.resize((held.end - held.begin) * kElementBytes);
  return {group.staging.data(), held.begin};
}

void deliver_locally(const Group& group, const Plan& plan, std::span<const CallDescriptor> local,
                     const ResultBuffer& result) {
  const size_t bytes = plan.count * kElementBytes;
  if (bytes == 0) return;  // count 0: recv may be NULL
  if (plan.kind == Collective::all_reduce) {
    copy_to_local_recvs(local, result.base, bytes);
    return;
  }
  for (size_t j = 0; j < local.size(); ++j) {
    std::memcpy(local[j].recv, result.at((group.mine().first + j) * plan.count), bytes);
  }
}

}  // namespace

Outcome chain_reduce(Transfers& transfers, Group& group, std::span<const CallDescriptor> local) {
  const CallDescriptor& call = local[0];
  const Plan plan = plan_of(group, call);
  const std::span<const WorkerMembers> workers = group.workers();
  const size_t k = group.self();
  const bool first = k == 0;
  const bool last = k + 1 == workers.size();
  const size_t g = group.members().size();
  group.partial.resize(plan.total * plan.partial_bytes);
  std::byte* partial = group.partial.data();
  const ResultBuffer result = result_buffer(group, plan, local, last);
  const Range mine = plan.range_of(group.mine());

  // Partials may arrive early (into scratch); results are received into a member's recv,
  // which may be its send (in place), so each is posted only once that chunk is folded.
  std::vector<Transfers::Id> arrivals;
  for (size_t begin = 0; !first && begin < plan.total; begin += plan.chunk) {
    const size_t n = std::min(plan.total - begin, plan.chunk);
    arrivals.push_back(transfers.post_recv(workers[k - 1].rank, partial + begin * plan.partial_bytes,
                                           n * plan.partial_bytes));
  }
  size_t c = 0;
  for (size_t begin = 0; begin < plan.total; begin += plan.chunk, ++c) {
    const Range chunk{begin, std::min(plan.total, begin + plan.chunk)};
    const size_t n = chunk.end - chunk.begin;
    std::byte* slice = partial + chunk.begin * plan.partial_bytes;
    if (!first) {
      if (Outcome arrived = transfers.wait(arrivals[c]); !arrived.is_ok()) return arrived;
    }
    fold_partial(call.dtype, call.op, first ? nullptr : slice, local, chunk.begin, n, slice);
    if (!last) {
      transfers.post_send(workers[k + 1].rank, slice, n * plan.partial_bytes);
      const Range wanted = intersect(chunk, mine);
      if (wanted.end > wanted.begin) {
        transfers.post_recv(workers.back().rank, result.at(wanted.begin),
                            (wanted.end - wanted.begin) * kElementBytes);
      }
      continue;
    }
    finish_partial(call.dtype, call.op, g, slice, n, result.at(chunk.begin));
    for (const WorkerMembers& worker : workers.first(workers.size() - 1)) {
      const Range wanted = intersect(chunk, plan.range_of(worker));
      if (wanted.end > wanted.begin) {
        transfers.post_send(worker.rank, result.at(wanted.begin),
                            (wanted.end - wanted.begin) * kElementBytes);
      }
    }
  }
  if (Outcome done = transfers.wait_all(); !done.is_ok()) return done;
  deliver_locally(group, plan, local, result);
  return Outcome::ok();
}

}  // namespace plexus::collectives::workers
