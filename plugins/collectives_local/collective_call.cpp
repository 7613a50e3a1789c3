#include "collective_call.h"

#include "collectives_common/messages.h"
#include "collectives_common/validation.h"

namespace plexus::collectives::local {

Outcome run_collective(Communicator& comm, const plx_coll_args& args, Collective kind,
                       DataPhase phase) {
  if (Outcome valid = validate_call(args, kind, comm.hosted()); !valid.is_ok()) return valid;
  GroupRendezvous& group = comm.group({args.group.members, args.group.size});
  const size_t position = group.position_of(args.replica);
  CallGuard busy(group, position);
  if (!busy.entered()) return overlapping_call(kind, group.members(), args.replica);
  std::span<const CallDescriptor> calls;
  if (Outcome met = group.arrive(position, describe_call(args, kind), &calls); !met.is_ok()) {
    return met;
  }
  if (phase != nullptr) {
    phase(group, position, calls);
    group.barrier(position);  // the others may still be reading this member's buffers
  }
  return Outcome::ok();
}

}  // namespace plexus::collectives::local
