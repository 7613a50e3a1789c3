// Workers (seed 002): where a session's replicas are in a multi-process job, and the
// launcher's view of this process (PLX_API_VERSION 8).
#include <cstddef>
#include <string>

#include "abi/src/handles.h"
#include "abi/src/struct_size.h"
#include "core/runtime/workers.h"

using namespace plexus;
using abi::guarded;
using abi::require;

extern "C" {

PLX_API plx_status plx_session_get_replicas(const plx_session* session, plx_replica_info* out) {
  return guarded([&] {
    require(session, "plx_session_get_replicas", "session");
    require(out, "plx_session_get_replicas", "out");
    const session::Session& s = *session->session;
    plx_replica_info full{};
    full.replication_factor = s.replication_factor();
    full.num_workers = s.options().num_workers;
    full.worker_index = s.options().worker_index;
    full.first_local_replica = s.hosted_replicas().first;
    full.local_replicas = s.hosted_replicas().count;
    abi::write_struct(*out, full, {abi::end_of(&plx_replica_info::local_replicas)}, "plx_session_get_replicas: out");
  });
}

PLX_API plx_status plx_workers_read_environment(int64_t* out_num_workers, int64_t* out_worker_index) {
  return guarded([&] {
    require(out_num_workers, "plx_workers_read_environment", "out_num_workers");
    require(out_worker_index, "plx_workers_read_environment", "out_worker_index");
    const runtime::WorkerPlace place = runtime::workers_from_environment();
    *out_num_workers = place.count;
    *out_worker_index = place.index;
  });
}

}  // extern "C"
