#include "collectives_workers/call_exchange.h"

#include <cstdint>
#include <type_traits>
#include <vector>

#include "collectives_common/agreement.h"

namespace plexus::collectives::workers {
namespace {

// A call on the wire: fixed widths, no pointers. Every worker runs the same build of the
// plugin on the same architecture (one job), so the layout is shared as is.
struct WireCall {
  int32_t kind;
  int32_t dtype;
  int32_t op;
  int32_t buffer_kind;
  int64_t replica;
  int64_t count;
  int64_t root;
};
static_assert(std::is_trivially_copyable_v<WireCall> && sizeof(WireCall) == 40);

WireCall to_wire(const CallDescriptor& call) {
  return {static_cast<int32_t>(call.kind), call.dtype,   call.op,
          call.buffer_kind,                call.replica, static_cast<int64_t>(call.count),
          call.root};
}

CallDescriptor from_wire(const WireCall& wire) {
  CallDescriptor call;
  call.kind = static_cast<Collective>(wire.kind);
  call.dtype = wire.dtype;
  call.op = wire.op;
  call.buffer_kind = wire.buffer_kind;
  call.replica = wire.replica;
  call.count = static_cast<size_t>(wire.count);
  call.root = wire.root;
  return call;
}

}  // namespace

Outcome exchange_calls(Transfers& transfers, const Group& group, std::span<const CallDescriptor> local) {
  const size_t members = group.members().size();
  std::vector<WireCall> wire(members);
  const WorkerMembers& mine = group.mine();
  for (size_t j = 0; j < local.size(); ++j) wire[mine.first + j] = to_wire(local[j]);
  for (const WorkerMembers& worker : group.workers()) {
    if (worker.rank == mine.rank) continue;
    transfers.post_send_all(worker.rank, &wire[mine.first], mine.count * sizeof(WireCall));
    transfers.post_recv_all(worker.rank, &wire[worker.first], worker.count * sizeof(WireCall));
  }
  if (Outcome done = transfers.wait_all(); !done.is_ok()) return done;
  std::vector<CallDescriptor> all(members);
  for (size_t p = 0; p < members; ++p) {
    all[p] = p >= mine.first && p < mine.first + mine.count ? local[p - mine.first]
                                                             : from_wire(wire[p]);
  }
  if (calls_agree(all)) return Outcome::ok();
  return Outcome::error(PLX_ERR_INVALID_ARGUMENT, describe_disagreement(group.members(), all));
}

}  // namespace plexus::collectives::workers
