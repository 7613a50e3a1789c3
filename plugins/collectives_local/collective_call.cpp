#include "collective_call.h"

#include "collectives_common/messages.h"
#include "validation.h"

namespace plexus::collectives::local {
namespace {

CallDescriptor describe_call(const plx_coll_args& args, Collective kind) {
  CallDescriptor call;
  call.kind = kind;
  call.replica = args.replica;
  call.send = args.send;
  call.recv = args.recv;
  call.count = args.count;
  call.dtype = args.dtype;
  call.op = args.op;
  call.root = args.root;
  call.buffer_kind = args.buffer_kind;
  return call;
}

// Marks the caller busy on the group for the duration of the call.
class BusyGuard {
 public:
  BusyGuard(GroupRendezvous& group, size_t position)
      : group_(group), position_(position), entered_(group.begin_call(position)) {}
  ~BusyGuard() {
    if (entered_) group_.end_call(position_);
  }
  BusyGuard(const BusyGuard&) = delete;
  BusyGuard& operator=(const BusyGuard&) = delete;
  bool entered() const { return entered_; }

 private:
  GroupRendezvous& group_;
  size_t position_;
  bool entered_;
};

}  // namespace

Outcome run_collective(Communicator& comm, const plx_coll_args& args, Collective kind,
                       DataPhase phase) {
  if (Outcome valid = validate_call(args, kind, comm.hosted()); !valid.is_ok()) return valid;
  GroupRendezvous& group = comm.group({args.group.members, args.group.size});
  const size_t position = group.position_of(args.replica);
  BusyGuard busy(group, position);
  if (!busy.entered()) {
    return Outcome::error(PLX_ERR_INVALID_ARGUMENT,
                          call_prefix(kind, group.members()) + ": replica " +
                              std::to_string(args.replica) +
                              " already has a call in flight on this group (a replica makes "
                              "one call at a time)");
  }
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
