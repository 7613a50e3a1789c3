// The first step of every cross-worker call: the group's workers send each other the
// calls of the members they host (kind, count, dtype, op, root, buffer kind; no buffer
// addresses), so that every worker holds every member's call and reaches the same
// agreement verdict (collectives_common/agreement.h) and the same data plan. For barrier
// this exchange is the whole collective.
//
// The calls travel in one envelope per pair of workers, which for a small reduction also
// carries the data: the sender's members' send buffers ride behind its calls, so the call
// costs one message each way and no round trip before the data (travels_inline()). Every
// envelope is received into a slot of fixed size (the sender's calls plus
// kInlinePayloadBytes), whatever the sender asked for, so a member whose call differs
// (another count, dtype or collective) sends nothing the receiver has not posted: the
// mismatch is found by every receiver of its envelope, no message is left over, and the
// group stays usable.
//
// With the data in the first message, a worker that arrives after another gave up (timed
// out) would find that worker's data waiting and succeed alone. So every envelope carries
// the moment its sender stops waiting for the others' (its wall clock plus its timeout),
// and a call whose envelopes were not all in by the earliest of these fails with
// PLX_ERR_TIMEOUT on every worker, as the one that gave up did. The exchange's timeout
// thus counts from each worker's arrival, not from the last message that completed. This
// assumes the workers' clocks agree to well within the timeout (one host, or hosts kept in
// step by NTP).
#ifndef PLEXUS_COLLECTIVES_WORKERS_CALL_EXCHANGE_H
#define PLEXUS_COLLECTIVES_WORKERS_CALL_EXCHANGE_H

#include <chrono>
#include <cstddef>
#include <span>
#include <vector>

#include "collectives_common/call.h"
#include "collectives_common/outcome.h"
#include "collectives_workers/group.h"
#include "collectives_workers/transfers.h"

namespace plexus::collectives::workers {

/** Room for data behind the calls in every envelope, in bytes. */
inline constexpr size_t kInlinePayloadBytes = size_t{64} << 10;

/**
 * True when the data of `call` (agreed by all `members` of its group) travels in the
 * envelopes: an all_reduce or reduce_scatter whose members' sends together fit
 * kInlinePayloadBytes. Depends on the call and the group size only, so it is the same on
 * every worker once the calls agree.
 */
bool travels_inline(const CallDescriptor& call, size_t members);

/**
 * Sends `local` (the calls of the members hosted here, in member order) to the group's
 * other workers and receives theirs, each in one envelope; when the local calls agree
 * and travel_inline(), the members' sends ride along. On return `*calls` holds every
 * member's call in member order (when the exchange itself succeeded): the local ones as
 * given, the remote ones without buffers, except that a remote member's `send` points at
 * its data in group.envelopes (valid until the group's next call) when its worker sent
 * it. Returns PLX_OK if every member's call agrees, else PLX_ERR_INVALID_ARGUMENT with the
 * message of describe_disagreement() (the same on every worker); PLX_ERR_TIMEOUT naming the
 * worker whose deadline (its arrival plus its timeout; `timeout` is this worker's) passed
 * before every envelope was in. Transfer failures as Transfers. Run by the group's leader on this
 * worker only.
 */
Outcome exchange_calls(Transfers& transfers, Group& group, std::span<const CallDescriptor> local,
                       std::chrono::milliseconds timeout, std::vector<CallDescriptor>* calls);

}  // namespace plexus::collectives::workers

#endif  // PLEXUS_COLLECTIVES_WORKERS_CALL_EXCHANGE_H
