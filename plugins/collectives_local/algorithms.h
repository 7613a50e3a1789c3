// The data phases of the collectives, one file each (DataPhase in collective_call.h).
// barrier has none: the rendezvous is the barrier.
#ifndef PLEXUS_COLLECTIVES_LOCAL_ALGORITHMS_H
#define PLEXUS_COLLECTIVES_LOCAL_ALGORITHMS_H

#include <cstddef>
#include <span>

#include "collectives_common/call.h"
#include "collectives_common/group_rendezvous.h"

namespace plexus::collectives::local {

/** Reduce-scatter + all-gather over shared memory (all_reduce.cpp). */
void all_reduce_phase(GroupRendezvous& group, size_t position,
                      std::span<const CallDescriptor> calls);

/** Every member copies every member's send into its recv (all_gather.cpp). */
void all_gather_phase(GroupRendezvous& group, size_t position,
                      std::span<const CallDescriptor> calls);

/** Member p reduces everyone's block p into its recv (reduce_scatter.cpp). */
void reduce_scatter_phase(GroupRendezvous& group, size_t position,
                          std::span<const CallDescriptor> calls);

/** Every member copies the root's send into its recv (broadcast.cpp). */
void broadcast_phase(GroupRendezvous& group, size_t position,
                     std::span<const CallDescriptor> calls);

}  // namespace plexus::collectives::local

#endif  // PLEXUS_COLLECTIVES_LOCAL_ALGORITHMS_H
