// A communicator of the Gloo plugin: the cross-worker communicator (collectives_workers)
// over a Gloo context of its own (every worker connected to every other over TCP, job.h).
// Each call's messages are GlooTransfers; abort also wakes the waits they block in.
#ifndef PLEXUS_COLLECTIVES_GLOO_COMMUNICATOR_H
#define PLEXUS_COLLECTIVES_GLOO_COMMUNICATOR_H

#include <gloo/context.h>

#include <memory>
#include <mutex>
#include <set>

#include "collectives_workers/communicator.h"
#include "job.h"
#include "plexus/collectives_plugin.h"

namespace plexus::collectives::gloo_plugin {

class GlooTransfers;

/**
 * Reads the job from the environment, checks that `config` (valid, see validate_config)
 * matches it (R = local_replicas x workers, first_local_replica = rank x local_replicas;
 * else PLX_ERR_UNSUPPORTED) and connects to the other workers (connect_job), waiting at
 * least 60 s for them. On success *job and *context are the communicator's.
 */
Outcome open_job(const plx_comm_config& config, Job* job, std::shared_ptr<::gloo::Context>* context);

class GlooCommunicator : public workers::Communicator {
 public:
  GlooCommunicator(const plx_comm_config& config, Job job, std::shared_ptr<::gloo::Context> context);
  /** Leaves the context's connections open for the timeout (at most 2 minutes; linger) before they close. */
  ~GlooCommunicator() override;

  std::unique_ptr<workers::Transfers> transfers(const workers::Group& group, Collective kind) override;
  void abort(const char* reason) override;

  ::gloo::Context& context() { return *context_; }
  const Job& job() const { return job_; }

  /** Called by GlooTransfers for its lifetime, so that abort() reaches its waits. */
  void enlist(GlooTransfers* transfers);
  void dismiss(GlooTransfers* transfers);

 private:
  Job job_;
  std::shared_ptr<::gloo::Context> context_;
  std::mutex active_mutex_;
  std::set<GlooTransfers*> active_;
};

}  // namespace plexus::collectives::gloo_plugin

#endif  // PLEXUS_COLLECTIVES_GLOO_COMMUNICATOR_H
