// The first step of every cross-worker call: the group's workers send each other the
// calls of the members they host (kind, count, dtype, op, root, buffer kind; no buffers),
// so that every worker holds every member's call and reaches the same agreement verdict
// (collectives_common/agreement.h) and the same data plan. For barrier this exchange is
// the whole collective.
#ifndef PLEXUS_COLLECTIVES_WORKERS_CALL_EXCHANGE_H
#define PLEXUS_COLLECTIVES_WORKERS_CALL_EXCHANGE_H

#include <span>

#include "collectives_common/call.h"
#include "collectives_common/outcome.h"
#include "collectives_workers/group.h"
#include "collectives_workers/transfers.h"

namespace plexus::collectives::workers {

/**
 * Sends `local` (the calls of the members hosted here) to the group's other workers and
 * receives theirs. Returns PLX_OK if every member's call agrees, else
 * PLX_ERR_INVALID_ARGUMENT with the message of describe_disagreement() (the same on every
 * worker). Transfer failures as Transfers.
 */
Outcome exchange_calls(Transfers& transfers, const Group& group, std::span<const CallDescriptor> local);

}  // namespace plexus::collectives::workers

#endif  // PLEXUS_COLLECTIVES_WORKERS_CALL_EXCHANGE_H
