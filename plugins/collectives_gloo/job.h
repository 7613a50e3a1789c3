// The Gloo job this process belongs to: the workers of the cluster definition (PLEXUS_CLUSTER
// or TF_CONFIG, which Plexus reads and passes in plx_comm_config: the plugin never reads the
// environment), this worker's rank, and how its workers meet: worker 0's key-value store
// (kv_store.h) on the port of its entry, or Gloo's file store in the definition's
// "rendezvous" folder. Without a definition the job is this process alone, on loopback.
#ifndef PLEXUS_COLLECTIVES_GLOO_JOB_H
#define PLEXUS_COLLECTIVES_GLOO_JOB_H

#include <gloo/context.h>

#include <chrono>
#include <memory>
#include <string>
#include <vector>

#include "collectives_common/outcome.h"
#include "plexus/collectives_plugin.h"

namespace plexus::collectives::gloo_plugin {

/** "host:port" split at its last colon ("[::1]:29500" gives "::1" and "29500"). */
struct Address {
  std::string host;
  std::string port;
};
Address split_address(const std::string& host_port);

struct Job {
  std::vector<std::string> workers;  ///< "host:port" per worker, in rank order
  int rank = 0;
  std::string rendezvous;            ///< a shared folder, or "" for worker 0's store
  std::string source;                ///< "PLEXUS_CLUSTER", "TF_CONFIG" or "" (one process)

  int size() const { return static_cast<int>(workers.size()); }
  /** "worker 1 of 2 in PLEXUS_CLUSTER (10.0.0.2:29500)", for messages. */
  std::string describe(int worker) const;
};

/**
 * The job of `config`'s cluster definition (valid: validate_config passed), or this process
 * alone when it carries none and hosts every replica. A job of several workers without the
 * workers' addresses is refused naming PLEXUS_CLUSTER and TF_CONFIG: PLX_ERR_UNSUPPORTED when
 * the caller passed no definition, PLX_ERR_INVALID_ARGUMENT naming struct_size when the
 * caller's config (plugin ABI 1) ends before the definition's fields. Thread-safe.
 */
Outcome job_of_config(const plx_comm_config& config, Job* out);

/**
 * Connects this worker to every other worker of `job` (Gloo's connectFullMesh over TCP,
 * listening on this worker's host only) and returns the context, whose calls time out after
 * `timeout`. Every communicator is a context of its own, met under a key prefix counted
 * per process, so the workers must create their communicators in the same order (as
 * sessions are created). Waits up to `connect_timeout` for the others; PLX_ERR_TIMEOUT
 * naming the rendezvous and what was missing, PLX_ERR_RUNTIME for other transport errors.
 */
Outcome connect_job(const Job& job, std::chrono::milliseconds timeout, std::chrono::milliseconds connect_timeout,
                    std::shared_ptr<::gloo::Context>* out);

/**
 * Keeps the connections of a destroyed communicator's `context` open for `grace` before
 * closing them, as MPI keeps a freed communicator's peers undisturbed: a worker still
 * waiting in a call this worker never made then times out naming the missing replica,
 * instead of seeing the connection closed. Contexts whose grace is over are closed on the
 * next call. Thread-safe.
 */
void linger(std::shared_ptr<::gloo::Context> context, std::chrono::milliseconds grace);

}  // namespace plexus::collectives::gloo_plugin

#endif  // PLEXUS_COLLECTIVES_GLOO_JOB_H
