// The shape every collective call shares: validate, find the group, rendezvous (which
// also checks agreement, timeout and abort), run the collective's data phase, and a final
// barrier so that nobody returns while another member may still read its buffers.
#ifndef PLEXUS_COLLECTIVES_LOCAL_COLLECTIVE_CALL_H
#define PLEXUS_COLLECTIVES_LOCAL_COLLECTIVE_CALL_H

#include <cstddef>
#include <span>

#include "collectives_common/call.h"
#include "communicator.h"
#include "collectives_common/group_rendezvous.h"
#include "collectives_common/outcome.h"
#include "plexus/collectives_plugin.h"

namespace plexus::collectives::local {

/**
 * The data movement of one collective, run by member `position` once every member's call
 * is known (calls[i] is member i's). It may call group.barrier(position) between steps;
 * it must not fail. NULL for barrier, which is the rendezvous alone.
 */
using DataPhase = void (*)(GroupRendezvous& group, size_t position,
                           std::span<const CallDescriptor> calls);

/** Runs one call of `kind` for args->replica. May throw std::bad_alloc before the rendezvous. */
Outcome run_collective(Communicator& comm, const plx_coll_args& args, Collective kind,
                       DataPhase phase);

}  // namespace plexus::collectives::local

#endif  // PLEXUS_COLLECTIVES_LOCAL_COLLECTIVE_CALL_H
