// The data phases of a cross-worker plugin, run by the group's leader on this worker once every
// member's call is known and agreed (call_exchange.h). `local` holds the calls of the
// members hosted here, in member order; the leader reads and writes their buffers (the
// other local members wait in the rendezvous' barrier meanwhile). Each phase returns the
// first transfer failure; on success every local member's recv holds its result.
#ifndef PLEXUS_COLLECTIVES_WORKERS_ALGORITHMS_H
#define PLEXUS_COLLECTIVES_WORKERS_ALGORITHMS_H

#include <span>

#include "collectives_common/call.h"
#include "collectives_common/outcome.h"
#include "collectives_workers/group.h"
#include "collectives_workers/transfers.h"

namespace plexus::collectives::workers {

/**
 * all_reduce and reduce_scatter as a pipelined chain in member order (chain_reduce.cpp):
 * the first worker folds its members into a partial, each next worker folds its members
 * into what it receives, chunk by chunk, and the last finishes the reduction and sends
 * every worker the part of the result its members receive. The sums are thus accumulated
 * from the lowest member up, bit for bit what one process computes.
 */
Outcome chain_reduce(Transfers& transfers, Group& group, std::span<const CallDescriptor> local);

/**
 * all_reduce as a reduce-scatter then an all-gather (split_reduce.cpp): each worker gathers
 * its range of the vector from every member, reduces it in member order (reduce_kernels.h,
 * bit for bit the chain's and one process's result) and sends it to every other worker.
 * Half the chain's time on 2 workers, whose links carry the vector forward then back.
 */
Outcome split_reduce(Transfers& transfers, Group& group, std::span<const CallDescriptor> local);

/**
 * all_reduce and reduce_scatter whose data came with the exchange of calls
 * (call_exchange.h, travels_inline()): `calls` holds every member's call in member order,
 * each with its send (remote ones in the envelopes). Each worker reduces what its members
 * receive over all members in member order (reduce_kernels.h), the same bit for bit as
 * the chain and as one process, and writes it to their recvs (inline_reduce.cpp).
 */
void reduce_exchanged(const Group& group, std::span<const CallDescriptor> calls,
                      std::span<const CallDescriptor> local);

/** Every worker sends its members' blocks to every other worker (all_gather.cpp). */
Outcome exchange_blocks(Transfers& transfers, Group& group, std::span<const CallDescriptor> local);

/** The root's worker sends the root's send to every other worker (broadcast.cpp). */
Outcome send_from_root(Transfers& transfers, Group& group, std::span<const CallDescriptor> local);

/** Copies `bytes` from `source` into every local member's recv that is not `source`. */
void copy_to_local_recvs(std::span<const CallDescriptor> local, const void* source, size_t bytes);

}  // namespace plexus::collectives::workers

#endif  // PLEXUS_COLLECTIVES_WORKERS_ALGORITHMS_H
