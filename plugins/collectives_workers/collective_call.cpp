#include "collectives_workers/collective_call.h"

#include <vector>

#include "collectives_workers/algorithms.h"
#include "collectives_workers/call_exchange.h"
#include "collectives_common/validation.h"
#include "collectives_workers/transfers.h"

namespace plexus::collectives::workers {
namespace {

Outcome move_data(Transfers& transfers, Group& group, std::span<const CallDescriptor> local,
                  Collective kind) {
  switch (kind) {
    case Collective::all_reduce:
      return split_reduce(transfers, group, local);
    case Collective::reduce_scatter:
      return chain_reduce(transfers, group, local);
    case Collective::all_gather:
      return exchange_blocks(transfers, group, local);
    case Collective::broadcast:
      return send_from_root(transfers, group, local);
    case Collective::barrier:
      return Outcome::ok();  // the exchange of calls was the barrier
  }
  return Outcome::ok();
}

// The leader's part: everything that talks to the other workers. Small reductions are
// done once the calls are in: their data came with them. A transfer failure leaves
// the workers out of step on this group's messages, so the group stays failed (a deadline
// passed in the exchange too: the worker that gave up marked its group failed); a
// disagreement does not (every worker received every envelope, and nothing else was sent).
Outcome lead(Communicator& comm, Group& group, std::span<const CallDescriptor> local,
             Collective kind) {
  if (group.broken()) return group.broken_outcome();
  const std::unique_ptr<Transfers> transfers = comm.transfers(group, kind);
  std::vector<CallDescriptor> calls;
  Outcome outcome = exchange_calls(*transfers, group, local, comm.timeout(), &calls);
  if (outcome.is_ok() && travels_inline(local[0], calls.size())) {
    reduce_exchanged(group, calls, local);
  } else if (outcome.is_ok()) {
    outcome = move_data(*transfers, group, local, kind);
  }
  if (outcome.status == PLX_ERR_TIMEOUT || outcome.status == PLX_ERR_RUNTIME) {
    group.mark_broken(outcome);
  }
  return outcome;
}

}  // namespace

Outcome run_collective(Communicator& comm, const plx_coll_args& args, Collective kind) {
  if (Outcome valid = validate_call(args, kind, comm.hosted()); !valid.is_ok()) return valid;
  Group* group = nullptr;
  if (Outcome found = comm.group({args.group.members, args.group.size}, &group); !found.is_ok()) {
    return found;
  }
  GroupRendezvous& local = group->local();
  const size_t position = local.position_of(args.replica);
  CallGuard busy(local, position);
  if (!busy.entered()) return overlapping_call(kind, group->members(), args.replica);
  std::span<const CallDescriptor> calls;
  const Outcome met = local.arrive(position, describe_call(args, kind), &calls);
  // A local disagreement still goes through the exchange, so that the other workers fail
  // with the same verdict instead of timing out.
  if (!met.is_ok() && met.status != PLX_ERR_INVALID_ARGUMENT) return met;
  if (position == 0) group->outcome = lead(comm, *group, calls, kind);
  local.barrier(position);
  return group->outcome;
}

}  // namespace plexus::collectives::workers
