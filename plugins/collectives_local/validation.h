// Argument checks done by the caller alone, before any rendezvous: a call that fails here
// returns at once with PLX_ERR_INVALID_ARGUMENT and never meets the other members (they
// time out, or are woken by the abort the runtime issues when a replica fails).
#ifndef PLEXUS_COLLECTIVES_LOCAL_VALIDATION_H
#define PLEXUS_COLLECTIVES_LOCAL_VALIDATION_H

#include "collectives_common/call.h"
#include "communicator.h"
#include "collectives_common/outcome.h"
#include "plexus/collectives_plugin.h"

namespace plexus::collectives::local {

/**
 * Checks a communicator configuration (and out_comm): NULL pointers, struct_size,
 * R >= 1, local range inside [0, R), timeout > 0, and the local plugin's own limit: it
 * serves single-process jobs only (local_replicas == R), else PLX_ERR_UNSUPPORTED.
 */
Outcome validate_config(const plx_comm_config* config, plx_comm** out_comm);

/**
 * Checks one call's arguments (args non-NULL with a large enough struct_size, checked by
 * the caller): the group (non-empty, strictly increasing, inside [0, R)), the calling
 * replica (hosted here and a member), and for data-moving collectives dtype, op, buffer
 * kind, root, sizes, NULL buffers and overlapping buffers.
 */
Outcome validate_call(const plx_coll_args& args, Collective kind, const HostedReplicas& hosted);

}  // namespace plexus::collectives::local

#endif  // PLEXUS_COLLECTIVES_LOCAL_VALIDATION_H
