// The path of one call through a cross-worker plugin (MPI, Gloo): validate, find the group, meet the other
// members hosted here (collectives_common/group_rendezvous.h), let the group's leader on
// this worker (its first member hosted here) exchange the calls with the other workers and
// move the data (call_exchange.h, algorithms.h), then hand its verdict to the others.
#ifndef PLEXUS_COLLECTIVES_WORKERS_COLLECTIVE_CALL_H
#define PLEXUS_COLLECTIVES_WORKERS_COLLECTIVE_CALL_H

#include "collectives_common/call.h"
#include "collectives_common/outcome.h"
#include "collectives_workers/communicator.h"
#include "plexus/collectives_plugin.h"

namespace plexus::collectives::workers {

/** Runs one call of `kind` for args->replica. May throw std::bad_alloc. */
Outcome run_collective(Communicator& comm, const plx_coll_args& args, Collective kind);

}  // namespace plexus::collectives::workers

#endif  // PLEXUS_COLLECTIVES_WORKERS_COLLECTIVE_CALL_H
